"""The reference host's rich extensions (ARCHITECTURE.md, "Host rules added in revision 1.1": Rich
extensions): native input semantics declared as extension descriptors (CONTRACT.md §2) and served as
native endpoints of :class:`~kelpie_gateway.host.browser.ChromiumRenderer`.

| name | method | mutates | arguments | result |
|---|---|---|---|---|
| ``press_key`` | ``press-key`` | yes | ``{tabId, key, ref?}`` | ``{pressed: key}`` |
| ``fill`` | ``fill`` | yes | ``{tabId, ref, text}`` | ``{filled: <code points now in the field>}`` |
| ``scroll`` | ``scroll`` | yes | ``{tabId, ref?}`` or ``{tabId, direction?, pages?}`` | ``{scrolled, inView}`` / ``{scrolled, atTop, atBottom}`` |
| ``go_back`` / ``go_forward`` | ``go-back`` / ``go-forward`` | yes | ``{tabId}`` | ``{tabId, generation, url, moved}`` |
| ``wait_for_text`` | ``wait-for-text`` | no | ``{tabId, text, timeoutMs?}`` | ``{found, elapsedMs}`` |

They go through the gateway like any extension: ``extension.call`` / MCP ``kelpie_extension`` or their own
name, the same lanes, the same ``mayHaveCompleted`` rules; a mutating one invalidates its tab's refs when
dispatched, and ``allowActions:false`` or the ``extensionFilter`` hide them. Refs are the gateway's: the
descriptors declare ``refArguments: ["ref"]``, so the gateway refuses a bad ref before dispatch and hands
this host only the captured node (``kelpieCaptured``); every DOM step runs one of the generated reader
scripts (``focus``, ``fill``, ``scroll``, ``find-text``) in the isolated world through the renderer's
``browser-control-evaluate`` endpoint. Keys are trusted CDP key events (Playwright ``keyboard.press``).

Faults (docs/host.md, "Liveness"): every endpoint refuses a tab whose renderer crashed exactly as the
built-in natives do — ``RENDERER_FAILED`` with ``mayHaveCompleted:false`` and nothing run (the dialog
endpoints too) — until ``tab.navigate`` or ``tabs.close`` recovers it; ``wait_for_text`` stops waiting
at once when its tab crashes or closes. A crash while an extension is dispatched is answered by the
driver at once (``RENDERER_FAILED``; an unknown outcome for a mutation).

Bounds: the gateway gives an extension dispatch 10 s (§3's default ``timeoutMs``; ``extension.call`` has
no ``timeoutMs`` of its own), so ``wait_for_text`` waits at most 9 s (default 5 s) and answers
``found:false`` in time; history navigation waits for ``load`` up to 9 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kelpie_gateway import WORLD_NAME, fill_script, find_text_script, focus_script, scroll_script

from .browser import ChromiumRenderer, fail

JsonObject = dict[str, Any]

WORLD = WORLD_NAME
MAX_FILL_CODE_POINTS = 200_000
"""``fill``'s text bound: the same as ``tab.type``'s (CONTRACT.md §3)."""
STEP_TIMEOUT_MS = 9_000
"""What a rich extension may spend inside the gateway's 10 s extension deadline."""
WAIT_DEFAULT_MS = 5_000
WAIT_POLL_S = 0.1
KEY_PATTERN = (
    r"^(?:(?:Control|Shift|Alt|Meta|ControlOrMeta)\+){0,4}"
    r"(?:Enter|Tab|Escape|Backspace|Delete|Insert|Space|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Home|End|"
    r"PageUp|PageDown|F[1-9]|F1[0-2]|[!-~])$"
)

_TAB = {"type": "string", "minLength": 1, "maxLength": 64, "description": "the tab (tabs.list)"}
_REF = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": "an element ref from the latest tab.snapshot",
}


def _schema(properties: dict[str, Any], required: list[str], **extra: Any) -> JsonObject:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


RICH_EXTENSIONS: list[JsonObject] = [
    {
        "name": "press_key",
        "method": "press-key",
        "description": "Press a key in a tab as a user would (trusted key events): Enter, Tab, Escape, Backspace, "
        "Delete, arrows, Home/End, PageUp/PageDown, Space, F1-F12 or one printable character, optionally with "
        "modifiers such as Control+A or Shift+Tab. With ref, that element is focused first.",
        "inputSchema": _schema(
            {"tabId": _TAB, "key": {"type": "string", "pattern": KEY_PATTERN, "maxLength": 64}, "ref": _REF},
            ["tabId", "key"],
        ),
        "mutates": True,
        "refArguments": ["ref"],
    },
    {
        "name": "fill",
        "method": "fill",
        "description": "Replace the whole content of a text field, textarea or editable element with text "
        "(tab.type appends). Number and date/time inputs take text in their own format (42, 2026-11-30, 09:30). "
        "Verified: if the page does not keep the text, the outcome is unknown (EFFECT_NOT_OBSERVED).",
        "inputSchema": _schema(
            {
                "tabId": _TAB,
                "ref": _REF,
                "text": {"type": "string", "maxLength": MAX_FILL_CODE_POINTS},
            },
            ["tabId", "ref", "text"],
        ),
        "mutates": True,
        "refArguments": ["ref"],
    },
    {
        "name": "scroll",
        "method": "scroll",
        "description": "Scroll an element (ref) into view, or scroll the page by 1-10 screens up or down "
        "(default: one screen down). Lazy-loaded content may appear afterwards: take a new snapshot.",
        "inputSchema": _schema(
            {
                "tabId": _TAB,
                "ref": _REF,
                "direction": {"enum": ["up", "down"]},
                "pages": {"type": "integer", "minimum": 1, "maximum": 10},
            },
            ["tabId"],
            dependentSchemas={"ref": {"properties": {"direction": False, "pages": False}}},
        ),
        "mutates": True,
        "refArguments": ["ref"],
    },
    {
        "name": "go_back",
        "method": "go-back",
        "description": "Go back one entry in the tab's history (like the Back button). moved:false when there is "
        "no earlier entry. Refs of the tab are invalidated.",
        "inputSchema": _schema({"tabId": _TAB}, ["tabId"]),
        "mutates": True,
    },
    {
        "name": "go_forward",
        "method": "go-forward",
        "description": "Go forward one entry in the tab's history (like the Forward button). moved:false when "
        "there is no later entry. Refs of the tab are invalidated.",
        "inputSchema": _schema({"tabId": _TAB}, ["tabId"]),
        "mutates": True,
    },
    {
        "name": "wait_for_text",
        "method": "wait-for-text",
        "description": "Wait until text appears in the tab's visible page text (as tab.snapshot reads it; field "
        "values are never searched), at most timeoutMs (default 5000, at most 9000). Answers found:true/false.",
        "inputSchema": _schema(
            {
                "tabId": _TAB,
                "text": {"type": "string", "minLength": 1, "maxLength": 1000},
                "timeoutMs": {"type": "integer", "minimum": 1, "maximum": STEP_TIMEOUT_MS},
            },
            ["tabId", "text"],
        ),
        "mutates": False,
    },
]


def host_config(
    base: JsonObject,
    *,
    read_only: bool = False,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
) -> JsonObject:
    """``base`` (``browser.gateway_config``) plus the rich extensions (when a browser is available),
    ``allowActions:false`` for ``--read-only`` and the operator's ``extensionFilter`` (CONTRACT.md §2)."""
    config = dict(base)
    if config.get("browserAvailable", True):
        config["nativeMethods"] = [*config.get("nativeMethods", []), *(e["method"] for e in RICH_EXTENSIONS)]
        config["extensions"] = [*config.get("extensions", []), *RICH_EXTENSIONS]
    if read_only:
        config["allowActions"] = False
    if include is not None or exclude:
        flt: JsonObject = {}
        if include is not None:
            flt["include"] = list(include)
        if exclude:
            flt["exclude"] = list(exclude)
        config["extensionFilter"] = flt
    return config


def _script_failure(value: Any) -> JsonObject | None:
    """A generated script's ``{error, mayHaveCompleted}`` answer as a native failure result."""
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        err = value["error"]
        return fail(
            str(err.get("code") or "RENDERER_FAILED"),
            str(err.get("message") or "the page refused the action"),
            mayHaveCompleted=value.get("mayHaveCompleted") is not False,
        )
    return None


class RichExtensions:
    """The rich extensions' native endpoints on one :class:`ChromiumRenderer` (see the module docstring)."""

    def __init__(self, renderer: ChromiumRenderer) -> None:
        self.renderer = renderer
        self.handlers: dict[str, Callable[[Mapping[str, Any]], Awaitable[JsonObject]]] = {
            "press-key": self.press_key,
            "fill": self.fill,
            "scroll": self.scroll,
            "go-back": self.go_back,
            "go-forward": self.go_forward,
            "wait-for-text": self.wait_for_text,
        }

    def install(self) -> None:
        """Register every endpoint on the renderer."""
        for method, handler in self.handlers.items():
            self.renderer.register(method, handler)

    # ------------------------------------------------------------ helpers
    async def _evaluate(self, tab_id: str, script: str) -> JsonObject:
        """Run a generated script in the tab's isolated world: ``{success:true, value}`` or a failure."""
        return await self.renderer.call(
            "browser-control-evaluate",
            {"tabId": tab_id, "world": WORLD, "script": script, "timeoutMs": STEP_TIMEOUT_MS},
        )

    async def _run_script(self, tab_id: str, script: str) -> JsonObject:
        """Evaluate and unwrap: ``{success:true, value}`` or the script's own refusal as a failure."""
        result = await self._evaluate(tab_id, script)
        if result.get("success") is not True:
            return result
        failed = _script_failure(result.get("value"))
        return failed if failed is not None else result

    @staticmethod
    def _captured(params: Mapping[str, Any]) -> tuple[str, str] | None:
        """``(key, handle)`` of the ref the gateway resolved for this call, or None (no ref given)."""
        captured = params.get("kelpieCaptured")
        if not isinstance(captured, Mapping):
            return None
        handle = (captured.get("handles") or {}).get("ref")
        key = captured.get("key")
        return (str(key), str(handle)) if isinstance(handle, str) and isinstance(key, str) else None

    def _tab_id(self, params: Mapping[str, Any]) -> str | JsonObject:
        """The live tab the call names, or the refusal the built-in natives give with nothing run: an unknown
        tab, or a tab whose renderer crashed (``RENDERER_FAILED``, ``mayHaveCompleted:false``)."""
        tab_id = params.get("tabId")
        refused = self.renderer.refusal(tab_id)
        if refused is not None or not isinstance(tab_id, str):
            return refused or fail("TAB_NOT_FOUND", f"no tab {tab_id!r}", mayHaveCompleted=False)
        return tab_id

    # ------------------------------------------------------------ endpoints
    async def press_key(self, params: Mapping[str, Any]) -> JsonObject:
        tab_id = self._tab_id(params)
        if isinstance(tab_id, dict):
            return tab_id
        key = str(params.get("key"))
        captured = self._captured(params)
        if params.get("ref") is not None and captured is None:
            return fail(
                "RENDERER_FAILED", "the gateway passed no captured node for ref", mayHaveCompleted=False
            )
        if captured is not None:
            focused = await self._run_script(tab_id, focus_script(*captured))
            if focused.get("success") is not True:
                return focused
        page = self.renderer.page_of(tab_id)
        gone = self.renderer.refusal(tab_id)
        if page is None or gone is not None:  # closed or crashed while focusing: the page's handlers ran
            why = (
                gone["error"]
                if gone is not None
                else {"code": "TAB_NOT_FOUND", "message": f"tab {tab_id!r} closed"}
            )
            return fail(why["code"], why["message"], mayHaveCompleted=captured is not None)
        await page.keyboard.press(key)
        return {"success": True, "pressed": key}

    async def fill(self, params: Mapping[str, Any]) -> JsonObject:
        tab_id = self._tab_id(params)
        if isinstance(tab_id, dict):
            return tab_id
        captured = self._captured(params)
        if captured is None:
            return fail(
                "RENDERER_FAILED", "the gateway passed no captured node for ref", mayHaveCompleted=False
            )
        result = await self._run_script(tab_id, fill_script(*captured, str(params.get("text", ""))))
        if result.get("success") is not True:
            return result
        value = result.get("value")
        filled = value.get("filled") if isinstance(value, dict) else None
        if not isinstance(filled, int):
            return fail("RENDERER_FAILED", "the fill script gave no answer")
        return {"success": True, "filled": filled}

    async def scroll(self, params: Mapping[str, Any]) -> JsonObject:
        tab_id = self._tab_id(params)
        if isinstance(tab_id, dict):
            return tab_id
        captured = self._captured(params)
        pages = params.get("pages", 1)
        direction = str(params.get("direction", "down"))
        if captured is not None:
            script = scroll_script(captured[0], captured[1])
        else:
            script = scroll_script(
                None, None, direction=direction, pages=pages if isinstance(pages, int) else 1
            )
        result = await self._run_script(tab_id, script)
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict) or not isinstance(value.get("scrolled"), bool):
            return fail("RENDERER_FAILED", "the scroll script gave no answer")
        return {"success": True, **{k: v for k, v in value.items() if isinstance(v, bool)}}

    async def _history(self, params: Mapping[str, Any], delta: int) -> JsonObject:
        tab_id = self._tab_id(params)
        if isinstance(tab_id, dict):
            return tab_id
        page = self.renderer.page_of(tab_id)
        context = self.renderer.context
        assert page is not None and context is not None
        session = await context.new_cdp_session(page)
        try:
            history = await session.send("Page.getNavigationHistory")
        finally:
            await session.detach()
        index = int(history.get("currentIndex", 0)) + delta
        moved = 0 <= index < len(history.get("entries", []))
        if moved:
            go = page.go_back if delta < 0 else page.go_forward
            await go(wait_until="load", timeout=STEP_TIMEOUT_MS)
        tabs = await self.renderer.call("get-tabs", {})
        for tab in tabs.get("tabs", []):
            if tab.get("tabId") == tab_id:
                return {
                    "success": True,
                    "tabId": tab_id,
                    "generation": tab["generation"],
                    "url": tab["url"],
                    "moved": moved,
                }
        return fail("TAB_NOT_FOUND", f"tab {tab_id!r} closed while moving in its history")

    async def go_back(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._history(params, -1)

    async def go_forward(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._history(params, +1)

    async def wait_for_text(self, params: Mapping[str, Any]) -> JsonObject:
        tab_id = self._tab_id(params)
        if isinstance(tab_id, dict):
            return tab_id
        timeout_ms = params.get("timeoutMs", WAIT_DEFAULT_MS)
        if not isinstance(timeout_ms, int) or not 1 <= timeout_ms <= STEP_TIMEOUT_MS:
            timeout_ms = WAIT_DEFAULT_MS
        script = find_text_script(str(params.get("text", "")))
        started = time.monotonic()
        deadline = started + timeout_ms / 1000
        while True:
            result = await self._evaluate(tab_id, script)
            if result.get("success") is True:
                value = result.get("value")
                if isinstance(value, dict) and value.get("found") is True:
                    return {
                        "success": True,
                        "found": True,
                        "elapsedMs": round((time.monotonic() - started) * 1000),
                    }
            elif (refused := self.renderer.refusal(tab_id)) is not None:
                return refused  # the tab closed or its renderer crashed: no text will appear
            # Anything else (a document being replaced mid-read, a page still loading) is "not yet".
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {
                    "success": True,
                    "found": False,
                    "elapsedMs": round((time.monotonic() - started) * 1000),
                }
            await asyncio.sleep(min(WAIT_POLL_S, remaining))
