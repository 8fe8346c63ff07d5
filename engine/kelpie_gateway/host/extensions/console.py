"""The console and the page's errors, captured per tab from the moment it opens (docs/host.md "The read-only
lane"): ``console_messages`` and ``page_errors``, read-only and bounded.

Capture: the context's Playwright ``console`` and ``weberror`` events (listened to when the context is made,
so a popup's first messages are caught too, and messages of its frames and workers), routed to the tab of
their page. Per tab a ring of the newest :data:`CONSOLE_RING` messages (each text at most
:data:`TEXT_MAX` characters) and of the newest :data:`ERRORS_RING` errors (message and stack bounded); a
text is cut by ``redaction.cut_text``, which drops a URL the cut runs through (half a URL could show part of
its userinfo or of a value, its ``@`` or ``=`` cut away). URLs
in texts, stacks and source locations are redacted as the network read redacts them
(``redaction.redact_text``; ``--network-urls full`` keeps all but credentials). A tab whose renderer crashed
can still be read: what it logged before is what one wants to know then.

Console text is the page's own output, like page text: the host does not claim it is value-free against a
page that logs what a person typed into it (docs/contract-notes.md "The read-only lane").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext, ConsoleMessage, WebError

from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.browser.common import Tab, state_of
from kelpie_gateway.host.renderer import JsonObject

from .base import TAB, Extension, schema
from .journal import SINCE, Early, Ring, adopt, limit_schema, tab_state
from .redaction import cut_text, redact_text

CONSOLE_RING = 1_000
ERRORS_RING = 200
TEXT_MAX = 2_000
STACK_MAX = 4_000
READ_DEFAULT = 100
READ_MAX = 1_000

LEVELS = ("debug", "info", "warning", "error")
LEVEL_OF = {"debug": "debug", "warning": "warning", "error": "error", "assert": "error"}
"""Console message types by level (DevTools' levels); every other type (log, info, dir, table, trace, …) is
``info``."""


@dataclass(slots=True)
class Message:
    type: str
    text: str
    cut: int
    url: str
    line: int
    column: int
    time: float
    worker: bool


@dataclass(slots=True)
class PageError:
    name: str
    message: str
    stack: str
    cut: bool
    url: str
    line: int
    column: int
    time: float


@dataclass
class ConsoleState:
    """A tab's captured console and errors."""

    messages: Ring[Message] = field(default_factory=lambda: Ring(CONSOLE_RING))
    errors: Ring[PageError] = field(default_factory=lambda: Ring(ERRORS_RING))


def _now_ms() -> float:
    return round(time.time() * 1000, 3)


def _line(value: Any) -> int:
    """A 0-based line or column as the browser reports it, 1-based (0: unknown)."""
    return value + 1 if isinstance(value, int) and value >= 0 else 0


class Console(Extension):
    """``console_messages`` and ``page_errors``; see the module docstring."""

    def __init__(self, renderer: Any) -> None:
        super().__init__(renderer)
        self._early: Early[ConsoleState] = Early(ConsoleState)

    # ----------------------------------------------------------------- capture
    async def launched(self, context: BrowserContext) -> None:
        context.on("console", self._on_console)
        context.on("weberror", self._on_error)

    def attached(self, tab: Tab) -> None:
        adopt(tab, self._early, ConsoleState)

    def _state(self, page: Any) -> ConsoleState | None:
        return tab_state(self.renderer.pages, self._early, page, ConsoleState)

    def _on_console(self, message: ConsoleMessage) -> None:
        state = self._state(message.page)
        if state is None:
            return
        text = message.text
        cut = max(0, len(text) - TEXT_MAX)
        location = message.location
        stamp = message.timestamp
        state.messages.add(
            Message(
                message.type,
                cut_text(text, TEXT_MAX) if cut else text,
                cut,
                str(location.get("url") or ""),
                _line(location.get("lineNumber")),
                _line(location.get("columnNumber")),
                round(stamp, 3) if isinstance(stamp, int | float) and stamp > 0 else _now_ms(),
                message.worker is not None,
            )
        )

    def _on_error(self, error: WebError) -> None:
        state = self._state(error.page)
        if state is None:
            return
        exc = error.error
        message, stack = str(exc.message or ""), str(exc.stack or "")
        cut = len(message) > TEXT_MAX or len(stack) > STACK_MAX
        location: Mapping[str, Any] = error.location or {}
        state.errors.add(
            PageError(
                str(exc.name or ""),
                cut_text(message, TEXT_MAX),
                cut_text(stack, STACK_MAX),
                cut,
                str(location.get("url") or ""),
                _line(location.get("line")),
                _line(location.get("column")),
                _now_ms(),
            )
        )

    # ----------------------------------------------------------------- reads
    def _read_state(self, params: Mapping[str, Any]) -> tuple[str, ConsoleState]:
        tab = self.renderer.pages.tab(params.get("tabId"))  # a crashed tab is read too
        return tab.tab_id, state_of(tab, ConsoleState)

    @endpoint(
        {
            "name": "console_messages",
            "method": "console-messages",
            "description": "Read the tab's console since it opened (read-only): each message's level (debug, "
            "info, warning, error), type, text (at most 2000 characters), source url, line and column, and "
            "time. The tab keeps its newest 1000 messages; pass next as since to read only newer ones. "
            "URLs in texts have their query values redacted.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "since": SINCE,
                    "levels": {
                        "type": "array",
                        "items": {"enum": list(LEVELS)},
                        "minItems": 1,
                        "uniqueItems": True,
                        "description": "only these levels (default: all)",
                    },
                    "limit": limit_schema(READ_DEFAULT, READ_MAX),
                },
                ["tabId"],
            ),
            "mutates": False,
        }
    )
    async def console_messages(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, since?, levels?, limit?}`` → ``{tabId, messages, next, more, dropped, truncated}``
        (``truncated``: how many of the answered messages were cut to 2,000 characters)."""
        tab_id, state = self._read_state(params)
        wanted = set(params.get("levels") or LEVELS)
        full = self.renderer.lane.full_urls
        page = state.messages.read(
            int(params.get("since") or 0),
            int(params.get("limit") or READ_DEFAULT),
            lambda m: LEVEL_OF.get(m.type, "info") in wanted,
        )
        messages = []
        for seq, m in page.entries:
            item: JsonObject = {
                "seq": seq,
                "level": LEVEL_OF.get(m.type, "info"),
                "type": m.type,
                "text": redact_text(m.text, full=full),
                "url": redact_text(m.url, full=full),
                "line": m.line,
                "column": m.column,
                "time": m.time,
            }
            if m.cut:
                item["truncated"] = m.cut
            if m.worker:
                item["worker"] = True
            messages.append(item)
        truncated = sum(1 for _seq, m in page.entries if m.cut)
        return {
            "success": True,
            "tabId": tab_id,
            "messages": messages,
            **page.cursor(),
            "truncated": truncated,
        }

    @endpoint(
        {
            "name": "page_errors",
            "method": "page-errors",
            "description": "Read the tab's uncaught exceptions and unhandled promise rejections since it opened "
            "(read-only): name, message, stack (bounded), source url, line and column, and time. The tab keeps "
            "its newest 200; pass next as since to read only newer ones.",
            "inputSchema": schema(
                {"tabId": TAB, "since": SINCE, "limit": limit_schema(READ_DEFAULT, ERRORS_RING)},
                ["tabId"],
            ),
            "mutates": False,
        }
    )
    async def page_errors(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, since?, limit?}`` → ``{tabId, errors, next, more, dropped}``."""
        tab_id, state = self._read_state(params)
        full = self.renderer.lane.full_urls
        page = state.errors.read(int(params.get("since") or 0), int(params.get("limit") or READ_DEFAULT))
        errors = []
        for seq, e in page.entries:
            item: JsonObject = {
                "seq": seq,
                "name": e.name,
                "message": redact_text(e.message, full=full),
                "stack": redact_text(e.stack, full=full),
                "url": redact_text(e.url, full=full),
                "line": e.line,
                "column": e.column,
                "time": e.time,
            }
            if e.cut:
                item["truncated"] = True
            errors.append(item)
        return {"success": True, "tabId": tab_id, "errors": errors, **page.cursor()}
