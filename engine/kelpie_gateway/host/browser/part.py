"""What a part of the Chromium renderer is, and what the parts share (docs/host.md "Layout of the host").

A **part** (:class:`Part`) is a piece of :class:`~kelpie_gateway.host.browser.ChromiumRenderer` that serves
native endpoints and follows the browser's events. It declares each endpoint where it handles it, with
:func:`endpoint`: a built-in endpoint by its method name (CONTRACT.md §3), an extension by its descriptor
(CONTRACT.md §2: ``name``, ``method``, ``inputSchema``, ``mutates`` …), so the descriptor and its handler
stand side by side. The renderer installs every part of ``kelpie_gateway.host.parts.PARTS`` (the one list),
registers its endpoints and tells it, in list order:

* :meth:`Part.launched` — a browser context is new (start, relaunch, reattach), before any tab;
* :meth:`Part.attached` — a tab has a new page (adopted, or given a fresh page after its renderer crashed),
  before it navigates; a part may add what the tab waits for first to :attr:`Tab.pending`;
* :meth:`Part.navigated` — the tab's main frame navigated (a new document, or a same-document change);
* :meth:`Part.crashed` — the tab's renderer crashed;
* :meth:`Part.closed` — the tab is gone (closed, or gone with its browser).

A part keeps its own per-tab state in :attr:`Tab.state` (keyed by its state's class). Handlers may raise:
the renderer's ``call`` answers :class:`~kelpie_gateway.host.renderer.Refused` with its result and any other
exception as ``RENDERER_FAILED``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from playwright.async_api import BrowserContext, Dialog, Page

from kelpie_gateway.host.renderer import Endpoint, JsonObject

if TYPE_CHECKING:
    from .chromium import ChromiumRenderer

DEFAULT_TIMEOUT_MS = 10_000
"""A call's ``timeoutMs`` when it has none (CONTRACT.md §3's default)."""
_MARK = "_kelpie_endpoint"
S = TypeVar("S")
H = TypeVar("H", bound=Callable[..., Awaitable[JsonObject]])


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
    dialog: Dialog | None = None
    """The JavaScript dialog open in the tab (it blocks the renderer until answered): set and cleared by
    the dialogs part (``host/extensions/dialogs.py``), read by the others."""
    dialog_waiters: set[asyncio.Future[None]] = field(default_factory=set, repr=False)
    """Futures the dialogs part resolves when a dialog opens (a wait that must not sit behind it)."""
    pending: list[asyncio.Future[Any]] = field(default_factory=list, repr=False)
    """What the parts started when the tab got its page and the tab waits for (bounded) before navigating."""
    state: dict[type, Any] = field(default_factory=dict, repr=False)
    """Per part, its own per-tab state, keyed by the state's class (:func:`state_of`)."""


def state_of(tab: Tab, kind: type[S]) -> S:
    """The tab's ``kind`` state (made on first use: ``kind()``)."""
    found = tab.state.get(kind)
    if found is None:
        found = tab.state[kind] = kind()
    return found


def endpoint(spec: str | JsonObject) -> Callable[[H], H]:
    """Mark a :class:`Part` method as the handler of a native endpoint: ``spec`` is the endpoint's method
    name (a built-in endpoint) or an extension descriptor whose ``method`` names it."""

    def mark(handler: H) -> H:
        setattr(handler, _MARK, spec)
        return handler

    return mark


class Part:
    """A piece of the Chromium renderer; see the module docstring. Subclasses mark their handlers with
    :func:`endpoint` and override the event hooks they need (each does nothing by default)."""

    descriptors: ClassVar[tuple[JsonObject, ...]] = ()
    """The extension descriptors the part serves, in declaration order (what the gateway config lists)."""
    handlers: ClassVar[tuple[tuple[str, str], ...]] = ()
    """``(native method, attribute)`` of each marked handler, in declaration order."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        marked: dict[str, str | JsonObject] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                spec = getattr(value, _MARK, None)
                if spec is not None:
                    marked[attr] = spec
        cls.handlers = tuple((s if isinstance(s, str) else str(s["method"]), a) for a, s in marked.items())
        cls.descriptors = tuple(s for s in marked.values() if not isinstance(s, str))

    def __init__(self, renderer: ChromiumRenderer) -> None:
        self.renderer = renderer

    def endpoints(self) -> dict[str, Endpoint]:
        """``{native method: bound handler}`` for the renderer to register."""
        return {method: getattr(self, attr) for method, attr in self.handlers}

    async def launched(self, context: BrowserContext) -> None:
        """A browser context is new (before any tab of it is adopted)."""

    def attached(self, tab: Tab) -> None:
        """``tab`` has a new page (adopted, or revived after a crash), before it navigates."""

    def navigated(self, tab: Tab) -> None:
        """``tab``'s main frame navigated (``tab.generation`` already bumped)."""

    def crashed(self, tab: Tab) -> None:
        """``tab``'s renderer crashed (``tab.crashed`` already set)."""

    def closed(self, tab: Tab) -> None:
        """``tab`` is gone: closed by anyone, or gone with its browser."""


def timeout_ms(params: Mapping[str, Any]) -> int:
    """The call's ``timeoutMs`` (the gateway's deadline, milliseconds; 10,000 when absent or unusable)."""
    value = params.get("timeoutMs")
    return value if isinstance(value, int) and value > 0 else DEFAULT_TIMEOUT_MS


def deadline(params: Mapping[str, Any]) -> float:
    """The loop time at which the call's ``timeoutMs`` (the gateway's deadline) runs out, from now."""
    return asyncio.get_running_loop().time() + timeout_ms(params) / 1000


def playwright_timeout(params: Mapping[str, Any]) -> float:
    """Playwright's own timeout: a little past the gateway deadline, so the host's deadline fires first and
    the late reply still arrives (and retires) well within the retirement grace
    (``kelpie_gateway.host.parts.RETIREMENT_GRACE_MS``)."""
    return float(timeout_ms(params) + 1_000)


def short(exc: object, limit: int = 300) -> str:
    """The first line of ``exc`` (or its type's name), at most ``limit`` characters: for messages and logs."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def quiet(aw: Awaitable[Any]) -> None:
    """Await ``aw``, ignoring whatever it raises (best-effort cleanup)."""
    try:
        await aw
    except Exception:
        return
