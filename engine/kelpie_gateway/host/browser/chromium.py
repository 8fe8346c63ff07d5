"""The reference host's renderer: headless Chromium driven by Playwright, assembled from parts
(ARCHITECTURE.md, transport rules; docs/host.md "Layout of the host").

:class:`ChromiumRenderer` implements :class:`~kelpie_gateway.host.renderer.Renderer`. ``call(method,
params)`` never raises: it returns the native result ``{"success": true, ...}`` or ``{"success": false,
"error": {"code", "message"}}`` (CONTRACT.md §3, "Native endpoint results"). It is made of the browser's
lifecycle (``lifecycle.py``: launch, attach, relaunch, close), its tabs (``pages.py``: births, adoption,
crash, revival, close) and the parts it is given.

A **part** (:class:`Part`) serves native endpoints and follows the browser's events. It declares each
endpoint on the method that handles it, with :func:`endpoint`: a built-in endpoint by its method name
(CONTRACT.md §3), an extension by its descriptor (CONTRACT.md §2: ``name``, ``method``, ``inputSchema``,
``mutates`` …), so the descriptor and its handler stand side by side. The renderer installs the parts of
``kelpie_gateway.host.parts.PARTS`` (the one list: the built-in endpoints, the dialogs, the isolated world,
what the site policy stopped and its routing, the rich extensions), registers their endpoints and tells them, in list order,
the events of ``common.TabHooks`` (a context launched; a tab attached to a page, navigated, crashed,
closed). Handlers may raise: ``call`` answers :class:`~kelpie_gateway.host.renderer.Refused` with its result
and anything else as ``RENDERER_FAILED``.

Browser events go to one sink, set with :meth:`ChromiumRenderer.listen` (the driver): refs invalidated on
main-frame navigation, tab close and renderer crash; a tab closed for good; a renderer crash or the
browser's exit. Faults (CONTRACT.md §5 v1.1, docs/host.md "Liveness"): a crashed tab is refused by every
endpoint with nothing run until ``navigate`` revives it or ``close-tab`` closes it; a browser that exited
is relaunched (or reattached) and :meth:`ChromiumRenderer.available` lets the next call wait for it;
:meth:`~ChromiumRenderer.stop_script` (CDP ``Runtime.terminateExecution``) and
:meth:`~ChromiumRenderer.end_stuck` (the page ended, the tab kept) end a script that never yields.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway.host.policy import SitePolicy
from kelpie_gateway.host.remote import RemoteBrowser
from kelpie_gateway.host.renderer import Endpoint, JsonObject, Refused, RendererEvents, fail

from .common import LaneOptions, Tab, short
from .lifecycle import VIEWPORT, ContextOptions, Lifecycle
from .link import BrowserLink, context_proxy
from .pages import DEFAULT_MAX_POPUPS, Pages

if TYPE_CHECKING:
    from kelpie_gateway.host.files import Files

_MARK = "_kelpie_endpoint"
BROWSER_PATIENCE_S = 1.5
"""How long the browser process may take to answer before a stuck tab is taken for a stalled browser."""
H = TypeVar("H", bound=Callable[..., Awaitable[JsonObject]])


def endpoint(spec: str | JsonObject) -> Callable[[H], H]:
    """Mark a :class:`Part` method as the handler of a native endpoint: ``spec`` is the endpoint's method
    name (a built-in endpoint) or an extension descriptor whose ``method`` names it."""

    def mark(handler: H) -> H:
        setattr(handler, _MARK, spec)
        return handler

    return mark


class Part:
    """A piece of the :class:`ChromiumRenderer`; see the module docstring. Subclasses mark their handlers with
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

    async def around(
        self, method: str, params: Mapping[str, Any], run: Callable[[], Awaitable[JsonObject]]
    ) -> JsonObject:
        """Run a native call: ``run()`` (the handler, or the next part's ``around``) and answer its result,
        which a part may amend (the downloads part waits for a download a click started and reports it).
        Only parts that override it are chained, in :data:`PARTS` order, outermost first; ``run`` never
        raises (its errors are results)."""
        return await run()


P = TypeVar("P", bound=Part)


class _Unheard:
    """The event sink before anyone listens: events are dropped (nothing owns a gateway yet)."""

    def refs_invalidated(self, tab_id: str) -> None:
        return None

    def tab_closed(self, tab_id: str) -> None:
        return None

    def renderer_gone(self, tab_id: str | None) -> None:
        return None


class ChromiumRenderer:
    """One browser context of headless Chromium, made of ``parts``; see the module docstring.

    ``parts``: the part classes to install, in order (``kelpie_gateway.host.parts.PARTS``; tests may give
    fewer). ``link``: the host's browser, shared by every context (``--isolation per-client``); without
    one the renderer makes its own from ``executable``, ``headless``, ``user_data_dir`` and
    ``cdp_endpoint`` (and ``proxy``), and closes it with itself. ``context_options``: what its context is
    made with (``lifecycle.new_context``). ``tab_ids``: the host's tab-number counter (shared by every
    context, so tab ids are unique across clients). ``proxy``: the site policy's proxy server
    (``http://127.0.0.1:PORT``) when the policy is restrictive, for a renderer with a browser of its own
    (with a ``link``, the link and ``context_options`` carry it: ``lifecycle.py``); ``policy``: that policy
    (the parts that report what it stopped, or route requests through it, read it).
    ``dialog_timeout_s``: how long a dialog nobody answers stays open (the dialogs part). ``lane``: the
    operator's read-only lane options (the network read's URLs and bodies).
    ``max_popups``: how many of one tab's popups may be open at once (``--max-popups``; ``Pages``)."""

    def __init__(
        self,
        *,
        log: Callable[[str], None],
        parts: Sequence[type[Part]],
        link: BrowserLink | None = None,
        executable: str | None = None,
        dialog_timeout_s: float = 60.0,
        proxy: str | None = None,
        policy: SitePolicy | None = None,
        files: Files | None = None,
        viewport: Mapping[str, int] | None = None,
        headless: bool = True,
        user_data_dir: str | None = None,
        cdp_endpoint: str | None = None,
        context_options: ContextOptions | None = None,
        tab_ids: Iterator[int] | None = None,
        max_popups: int = DEFAULT_MAX_POPUPS,
        lane: LaneOptions | None = None,
        direct_cdp: bool = False,
    ) -> None:
        self.log = log
        self.lane = lane or LaneOptions()
        self.policy = policy
        self.files = files
        """The host's folders (``host/files.py``): uploads, downloads and their cap; None without them
        (tests), when the file extensions refuse every call."""
        self.dialog_timeout_s = dialog_timeout_s
        self.events: RendererEvents = _Unheard()
        own_link = link is None
        if link is None:  # one renderer, one browser of its own (the other arguments say which)
            link = BrowserLink(
                log=log,
                executable=executable,
                headless=headless,
                user_data_dir=user_data_dir,
                remote=RemoteBrowser("cdp", cdp_endpoint) if cdp_endpoint else None,
                viewport=viewport,
                proxy=proxy,
                direct_cdp=direct_cdp,
            )
        options = context_options or ContextOptions(
            viewport=dict(viewport or VIEWPORT),
            playwright={"proxy": context_proxy(proxy)} if proxy and not user_data_dir else {},
        )
        self.lifecycle = Lifecycle(self, link, options=options, own_link=own_link)
        self.pages = Pages(self, tab_ids, max_popups=max_popups)
        self._background: set[asyncio.Future[Any]] = set()
        self._handlers: dict[str, Endpoint] = {}
        self.parts: tuple[Part, ...] = tuple(kind(self) for kind in parts)
        for part in self.parts:
            for method, handler in part.endpoints().items():
                self.register(method, handler)
        self._around = tuple(p for p in self.parts if type(p).around is not Part.around)

    # ----------------------------------------------------------------- what parts use
    @property
    def methods(self) -> list[str]:
        """The native endpoints this renderer implements (the gateway's ``nativeMethods``)."""
        return list(self._handlers)

    @property
    def description(self) -> str:
        """One line for the operator: version, mode and where the browser is."""
        return self.lifecycle.description

    @property
    def context(self) -> BrowserContext | None:
        return self.lifecycle.context

    def register(self, method: str, handler: Endpoint) -> None:
        """Add native endpoint ``method`` (it may raise: :meth:`call` turns exceptions into
        ``RENDERER_FAILED`` results)."""
        self._handlers[method] = handler

    def part(self, kind: type[P]) -> P | None:
        """The installed part of class ``kind``, or None."""
        return next((part for part in self.parts if isinstance(part, kind)), None)

    def page_of(self, tab_id: str) -> Page | None:
        """The Playwright page of tab ``tab_id``, or None."""
        tab = self.pages.get(tab_id)
        return tab.page if tab is not None else None

    def newest_page(self) -> Page | None:
        """The page of the most recently opened tab, or None."""
        tab = self.pages.newest()
        return tab.page if tab is not None else None

    def failed_since(self, tab_id: str | None, since: float) -> str | None:
        """The URL at which the main-frame navigation of ``tab_id`` (None: the newest tab) failed after
        ``since`` (``time.monotonic()``), else None (``stops.PolicyStops``; only under a restrictive policy)."""
        from .routing import SiteRouting
        from .stops import PolicyStops

        routing = self.part(SiteRouting)
        routed = routing.failed_since(tab_id, since) if routing is not None else None
        if routed is not None:  # a browser on another machine: what its routing refused
            return routed
        stops = self.part(PolicyStops)
        return stops.failed_since(tab_id, since) if stops is not None else None

    async def error_page_shown(self, tab_id: str | None) -> None:
        """Wait (bounded) until the main frame of ``tab_id`` (None: the newest tab) committed the browser's
        error page after a failed navigation (``stops.PolicyStops``)."""
        from .stops import PolicyStops

        stops = self.part(PolicyStops)
        if stops is not None:
            await stops.error_page_shown(tab_id)

    def refusal(self, tab_id: Any) -> JsonObject | None:
        """None when ``tab_id`` names a live tab; else the refusal the built-in natives answer, with nothing
        run (``mayHaveCompleted:false``): ``TAB_NOT_FOUND``, or ``RENDERER_FAILED`` for a tab whose renderer
        crashed (``tab.navigate`` or ``tabs.close`` recovers it)."""
        try:
            self.pages.live(tab_id)
        except Refused as refused:
            return refused.result
        return None

    def spawn(self, aw: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run ``aw`` in the background (kept referenced until it is done); returns its task."""
        task = asyncio.ensure_future(aw)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def tell_closed(self, tab_id: str) -> None:
        """Tell the sink that ``tab_id`` is gone for good (a sink bug must not break the browser's events)."""
        try:
            self.events.tab_closed(tab_id)
        except Exception as exc:
            self.log(f"tab-closed listener failed: {type(exc).__name__}: {short(exc)}")

    def tell_gone(self, tab_id: str | None) -> None:
        """Tell the sink that ``tab_id``'s renderer crashed (None: the browser exited)."""
        try:
            self.events.renderer_gone(tab_id)
        except Exception as exc:
            self.log(f"renderer-gone listener failed: {type(exc).__name__}: {short(exc)}")

    # ----------------------------------------------------------------- the Renderer protocol
    async def start(self, first_url: str | None) -> None:
        """Start the browser and open ``first_url`` in the first tab (``lifecycle.py``)."""
        await self.lifecycle.start(first_url)

    def listen(self, events: RendererEvents) -> None:
        """Report every later browser event to ``events`` (the driver)."""
        self.events = events

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        """Run native endpoint ``method`` once with ``params``; never raises (errors are results)."""
        handler = self._handlers.get(method)
        if handler is None:
            return fail("RENDERER_FAILED", f"this host has no native endpoint {method!r}")
        if self.lifecycle.lost:  # it exited after :meth:`available` said it was there: nothing is run
            what = self.lifecycle.link.what_it_does()
            return fail(
                "BROWSER_UNAVAILABLE",
                f"the browser exited just before this call; nothing was run; the host {what} it on the next call",
                mayHaveCompleted=False,
            )
        if not self._around:
            return await self._run(handler, params)
        run: Callable[[], Awaitable[JsonObject]] = lambda: self._run(handler, params)  # noqa: E731
        for part in reversed(self._around):
            run = functools.partial(self._amend, part, method, params, run)
        return await run()

    @staticmethod
    async def _run(handler: Endpoint, params: Mapping[str, Any]) -> JsonObject:
        try:
            return await handler(params)
        except Refused as refused:
            return refused.result
        except PlaywrightError as exc:
            return fail("RENDERER_FAILED", short(exc))
        except Exception as exc:  # the renderer boundary: errors are values
            return fail("RENDERER_FAILED", f"{type(exc).__name__}: {short(exc)}")

    @staticmethod
    async def _amend(
        part: Part, method: str, params: Mapping[str, Any], run: Callable[[], Awaitable[JsonObject]]
    ) -> JsonObject:
        try:
            return await part.around(method, params, run)
        except Exception as exc:  # a part's bug must not lose the call's answer: errors are values
            return fail("RENDERER_FAILED", f"{type(exc).__name__}: {short(exc)}")

    def available(self) -> Awaitable[JsonObject | None] | None:
        """See :meth:`Renderer.available` (``lifecycle.py``)."""
        return self.lifecycle.available()

    async def stop_script(self, tab_id: str | None) -> bool:
        """CDP ``Runtime.terminateExecution`` on ``tab_id``'s target; False when there is no such live tab."""
        return await self.pages.stop_script(tab_id)

    async def end_stuck(self, tab_id: str | None) -> bool:
        """The script in ``tab_id`` did not stop: end its page **and keep the tab** (``Pages.end_page``:
        crashed, ``tab.navigate`` recovers it) — unless the page is not the host's to end or ending it
        would not help, when the tab is kept as it is: an attached browser's tab is the user's own
        (``--cdp-endpoint``), and a browser that does not answer either (a browser process stopped or
        stalled: a close would only be queued, and the page comes back when the browser does) is left to
        recover. Returns whether the page was ended (docs/host.md "Liveness"; issue 27)."""
        tab = self.pages.get(tab_id)
        if tab is None or tab.crashed:
            return False
        if self.lifecycle.link.attached:
            self.log(
                f"tab {tab.tab_id} is kept as it is: its script did not stop, and an attached browser's tab "
                "is the user's own (the lane is free; a call on that tab waits behind the script)"
            )
            return False
        if not await self._browser_answers():
            self.log(
                f"tab {tab.tab_id} is kept as it is: its script did not stop and the browser itself does not "
                "answer (stalled); the tab works again when the browser does"
            )
            return False
        return self.pages.end_page(tab.tab_id)

    async def _browser_answers(self) -> bool:
        """Whether the browser process answers within :data:`BROWSER_PATIENCE_S` (a cookie read: the browser
        process's own work, no renderer involved)."""
        context = self.context
        if context is None:
            return False
        try:
            await asyncio.wait_for(context.cookies("http://127.0.0.1/"), BROWSER_PATIENCE_S)
        except Exception:
            return False
        return True

    async def close(self) -> None:
        """Close this renderer's browser context (and its own browser, when it has one: the browser this
        host launched is closed, an attached one only disconnected)."""
        await self.lifecycle.close()
