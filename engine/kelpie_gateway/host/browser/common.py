"""What the pieces of the Chromium renderer share (docs/host.md "Layout of the host"): :class:`Tab`, the
hooks a part hears (:class:`TabHooks`), what the tabs need from their renderer (:class:`Owner`), and small
helpers for deadlines, messages and best-effort cleanup.

A part keeps its own per-tab state in :attr:`Tab.state` (keyed by its state's class, :func:`state_of`), so
a new part adds no field here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from playwright.async_api import BrowserContext, CDPSession, Dialog, Page

from kelpie_gateway import redact_urls_in
from kelpie_gateway.host.renderer import RendererEvents

DEFAULT_TIMEOUT_MS = 10_000
"""A call's ``timeoutMs`` when it has none (CONTRACT.md §3's default)."""
S = TypeVar("S")


@dataclass(eq=False)
class Tab:
    """One Playwright page as the gateway sees it: its host id (``t1``, ``t2`` … never reused), its
    ``generation`` (bumped on every main-frame navigation and on a renderer crash), and what the parts keep
    for it."""

    tab_id: str
    page: Page
    generation: int = 0
    title: str = ""
    crashed: bool = False
    popups_closed: int = 0
    """Popups this tab opened past the host's ``--max-popups``, closed as they opened (``get-tabs``
    reports it as ``popupsClosed``)."""
    ended: bool = False
    """``crashed`` because the host ended the tab's page (its script did not stop; docs/host.md "Liveness"),
    not because its renderer died: the tab stays, and ``tab.navigate`` gives it a fresh page."""
    frame_crashed: bool = False
    """An out-of-process frame's renderer crashed: Playwright then treats the whole page as crashed (no
    ``goto``, no ``evaluate``) while its main frame runs on, read and acted on over CDP; the next
    ``navigate`` gives the tab a fresh page (docs/host.md "Frames: every frame in its own world")."""
    main_gone: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set when the tab's own CDP session hears its main frame's renderer crash (``Inspector.targetCrashed``)."""
    cdp: CDPSession | None = None
    """The tab's CDP session (one per page), opened by the isolated world part; None until it is open and
    after a crash. Whoever needs a session to the tab's target (stopping a script) uses this one."""
    dialog: Dialog | None = None
    """The JavaScript dialog open in the tab (it blocks the renderer until answered): set and cleared by
    the dialogs part (``host/extensions/dialogs.py``), read by the others."""
    dialog_waiters: set[asyncio.Future[None]] = field(default_factory=set, repr=False)
    """Futures the dialogs part resolves when a dialog opens (a wait that must not sit behind it)."""
    pending: list[asyncio.Future[Any]] = field(default_factory=list, repr=False)
    """What the parts started when the tab got its page and the tab waits for (bounded) before navigating."""
    state: dict[type, Any] = field(default_factory=dict, repr=False)
    """Per part, its own per-tab state, keyed by the state's class (:func:`state_of`)."""


@dataclass(frozen=True)
class LaneOptions:
    """The operator's choices for the read-only lane's network reads (docs/host.md "The read-only lane"):
    ``full_urls`` (``--network-urls full``: query values and fragments shown, credentials still redacted)
    and ``bodies`` (``--network-bodies``: text response bodies, at most 64 KiB each, on request)."""

    full_urls: bool = False
    bodies: bool = False


def state_of(tab: Tab, kind: type[S]) -> S:
    """The tab's ``kind`` state (made on first use: ``kind()``)."""
    found = tab.state.get(kind)
    if found is None:
        found = tab.state[kind] = kind()
    return found


class TabHooks(Protocol):
    """What a part hears, in the renderer's part order (each does nothing unless the part says otherwise)."""

    async def launched(self, context: BrowserContext) -> None:
        """A browser context is new (start, relaunch, reattach), before any tab of it is adopted."""
        ...

    def attached(self, tab: Tab) -> None:
        """``tab`` has a new page (adopted, or revived after a crash), before it navigates; a part may add
        what the tab waits for first to :attr:`Tab.pending`."""
        ...

    def navigated(self, tab: Tab) -> None:
        """``tab``'s main frame navigated (``tab.generation`` already bumped)."""
        ...

    def crashed(self, tab: Tab) -> None:
        """``tab``'s renderer crashed (``tab.crashed`` already set)."""
        ...

    def closed(self, tab: Tab) -> None:
        """``tab`` is gone: closed by anyone, or gone with its browser."""
        ...


class Owner(Protocol):
    """What the tabs (``pages.py``) need from their renderer."""

    log: Callable[[str], None]
    events: RendererEvents

    @property
    def parts(self) -> Sequence[TabHooks]: ...

    @property
    def context(self) -> BrowserContext | None: ...

    def spawn(self, aw: Awaitable[Any]) -> asyncio.Future[Any]: ...

    def tell_closed(self, tab_id: str) -> None: ...

    def tell_gone(self, tab_id: str | None) -> None: ...


def timeout_ms(params: Mapping[str, Any]) -> int:
    """The call's ``timeoutMs`` (the gateway's deadline, milliseconds; 10,000 when absent or unusable)."""
    value = params.get("timeoutMs")
    return value if isinstance(value, int) and value > 0 else DEFAULT_TIMEOUT_MS


def deadline(params: Mapping[str, Any]) -> float:
    """The loop time at which the call's ``timeoutMs`` (the gateway's deadline) runs out, from now."""
    return asyncio.get_running_loop().time() + timeout_ms(params) / 1000


def playwright_timeout(params: Mapping[str, Any]) -> float:
    """Playwright's own timeout: a little past the gateway deadline, so the host's deadline fires first and
    the late reply still arrives (and retires) well within the retirement grace (the gateway's
    ``retirementGraceMs``, 5000 ms unless ``--retirement-grace-ms`` says otherwise)."""
    return float(timeout_ms(params) + 1_000)


def short(exc: object, limit: int = 300) -> str:
    """The first line of ``exc`` (or its type's name), at most ``limit`` characters, every URL in it
    redacted (``kelpie_gateway.redact_urls_in``: a Playwright error quotes the URL it failed at): for
    messages and logs."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = redact_urls_in(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def quiet(aw: Awaitable[Any]) -> None:
    """Await ``aw``, ignoring whatever it raises (best-effort cleanup)."""
    try:
        await aw
    except Exception:
        return
