"""The reference host's renderer: headless Chromium driven by Playwright (ARCHITECTURE.md, transport rules).

:class:`ChromiumRenderer` implements every native endpoint the host advertises. ``call(method, params)``
never raises: it returns the native result ``{"success": true, ...}`` or
``{"success": false, "error": {"code", "message"}}`` (CONTRACT.md §3, "Native endpoint results").

* Tabs are Playwright pages of one browser context. Tab ids are host strings (``t1``, ``t2`` …) that are
  never reused; ``generation`` is an int bumped on every main-frame navigation (new document or
  same-document), on renderer crash, and is reported by ``get-tabs``.
* ``browser-control-evaluate`` runs the gateway's fixed script in the isolated world
  ``KelpieBrowserControl`` of the tab's main frame: CDP ``Page.createIsolatedWorld`` once per document,
  then ``Runtime.evaluate`` with ``contextId``, ``returnByValue`` and ``awaitPromise``. Each tab's one
  CDP session registers :func:`kelpie_gateway.new_document_script` before the tab navigates, so Chromium
  makes the world of every new top-level document as the document is created and installs the snapshot,
  click and type bundles there; the host asks for the world's context id when the document commits,
  while it still loads. A script whose bundle the world holds is sent in its short form
  (:func:`kelpie_gateway.kept_script`), else whole; a script never depends on any of this (it installs
  its own bundle when the world lacks it), and a context that vanished in between is created again
  (docs/host.md "Fixed scripts: one world per document").
* The browser side calls ``on_invalidate(tab_id)`` (= ``gateway.invalidate_refs``) on main-frame
  navigation, tab close and renderer crash, and ``on_closed(tab_id)`` (= ``gateway.advance({"tabClosed"})``)
  once when a tab is gone for good: closed by a client, by the page, by the host ending stuck work
  (:meth:`close_target`), or with its browser.
* JavaScript dialogs are never auto-dismissed: ``page.on("dialog")`` keeps the open dialog per tab, and
  the ``dialog-observe`` / ``dialog-accept`` / ``dialog-dismiss`` endpoints (the host's recovery
  extensions) answer it while a command that opened it is still outstanding. A dialog nobody handles is
  dismissed by the host after ``dialog_timeout_s`` so a forgotten dialog cannot wedge the renderer.
* The site policy (``host/policy.py``) decides which origins the browser may request: with a restrictive
  policy, ``context.route`` aborts (and logs) every request to a refused origin and each tab gets the
  policy's CDP redirect guard; with the default policy nothing is routed.
* ``register(method, handler)`` adds native endpoints (the rich extensions, ``host/extensions.py``);
  ``page_of(tabId)`` / ``newest_page()`` give them the tab's Playwright page.
* Faults (CONTRACT.md §5 v1.1, docs/host.md "Liveness"): a renderer crash marks the tab ``crashed``
  (reported by ``get-tabs``; evaluate and screenshot refuse it with nothing run) and tells the listener
  registered with :meth:`ChromiumRenderer.on_gone` at once; ``navigate`` recovers the tab in a fresh page
  under the same tab id (generation bumped), ``close-tab`` closes it. If Chromium exits, the listener
  hears ``None`` (after every tab was reported closed to ``on_closed``); the relaunch starts at once and
  the next call waits for it through :meth:`available` (new tabs, every ref invalidated, one log line),
  within the call's own deadline, or answers ``BROWSER_UNAVAILABLE`` with ``mayHaveCompleted:false`` when
  Chromium cannot be started or is not back by then (each later call tries again). An attached browser (``cdp_endpoint``) is
  never started by the host: it is reattached at the same endpoint instead, and until it answers there
  again every call is ``BROWSER_UNAVAILABLE`` (``mayHaveCompleted:false``). :meth:`stop_script`
  (CDP ``Runtime.terminateExecution``) and :meth:`close_target` end a script that never yields.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import shutil
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Dialog,
    Frame,
    Page,
    Playwright,
    Route,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import (
    NATIVE_ENDPOINTS,
    bundle_missing,
    bundle_slot,
    kept_script,
    new_document_script,
    preload_script,
)

if TYPE_CHECKING:
    from .policy import RedirectGuard

JsonObject = dict[str, Any]

WORLD_NAME = "KelpieBrowserControl"
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
DEFAULT_CHROMIUM = "/usr/bin/chromium"
PRELOADED = ("snapshot", "click", "type")
"""The bundles every new top-level document's world gets as the document is created: what an agent's
first calls on a page are (a snapshot, then clicks and typing); the rich extensions' bundles install
with their first script."""
NEW_DOCUMENT = new_document_script(PRELOADED)
"""Registered once per tab (``Page.addScriptToEvaluateOnNewDocument`` with ``worldName``): Chromium makes
the world of every new top-level document and runs this in it before any page script (docs/host.md
"Fixed scripts: one world per document"). A constant text: compiled once per renderer process."""
PRELOAD = preload_script(PRELOADED)
"""The same installation run with ``Runtime.evaluate`` when a document commits that was created before the
tab's registration took effect (a popup's first document)."""
FIRST_LAYOUT = "void (document.documentElement && document.documentElement.getBoundingClientRect())"
"""Run in the tab's world once a navigation reached ``load``: it waits behind a rendering update Chromium
already queued for the new document, or else makes the document's style and layout itself. Either way the
first rendering of a loaded document is paid by ``tab.navigate`` (or ``tabs.open`` with a url), never by
whichever call comes next (docs/host.md "Navigate: load, then the first layout")."""
FIRST_LAYOUT_MARGIN_S = 0.5
"""How much of a navigation's ``timeoutMs`` the first-layout wait leaves unused, so that a document busy
after ``load`` still gets its navigation answered (as loaded) before the gateway's deadline."""
VIEWPORT = {"width": 1280, "height": 800}


def fail(code: str, message: str, **extra: Any) -> JsonObject:
    """A native failure result ``{"success": false, "error": {code, message}, ...extra}``."""
    return {"success": False, "error": {"code": code, "message": message}, **extra}


BIRTH_PATIENCE_S = 4.0
"""How long one attempt to make a page may take (a healthy one takes well under a second, even on a loaded
machine); two attempts fit in the default 10 s deadline of the call that needs the page."""


class PageNotMade(Exception):
    """A new page could not be made: each attempt was born with a renderer that died (nothing remains of
    it; ``ChromiumRenderer._new_page``)."""


Gone = Callable[[str | None], None]
"""Listener told that a tab's renderer crashed (its tab id) or that the browser exited (None)."""


class Renderer(Protocol):
    """What the driver needs from a renderer: one native endpoint call that never raises, and the means
    to end stuck work (both return False when there was nothing to act on; neither raises)."""

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject: ...

    async def stop_script(self, tab_id: str | None) -> bool: ...

    async def close_target(self, tab_id: str | None) -> bool: ...

    def on_gone(self, listener: Gone) -> None: ...

    def available(self) -> Awaitable[JsonObject | None] | None:
        """None when a browser is there to run a call; else an awaitable that brings one back (a relaunch
        or reattach after the browser exited) and resolves to None once it is back, or to the
        ``BROWSER_UNAVAILABLE`` result (``mayHaveCompleted:false``) when it cannot be. The driver awaits it
        before starting a call, so it knows whether anything could have run (docs/contract-notes.md,
        "Reference host: closed tabs and a missing browser")."""
        ...

    async def close(self) -> None: ...


class NoRenderer:
    """``--browser none``: the no-CEF fallback. The gateway advertises no native endpoint, so this is
    only reached by a bug; it answers ``BROWSER_UNAVAILABLE`` truthfully."""

    description = "none (browserAvailable:false)"

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        return fail(
            "BROWSER_UNAVAILABLE",
            f"this host runs without a browser; {method!r} is not available",
            mayHaveCompleted=False,
        )

    async def stop_script(self, tab_id: str | None) -> bool:
        return False

    async def close_target(self, tab_id: str | None) -> bool:
        return False

    def on_gone(self, listener: Gone) -> None:
        return None

    def available(self) -> Awaitable[JsonObject | None] | None:
        return None

    async def close(self) -> None:
        return None


@dataclass
class World:
    """A document's isolated world: the tab's CDP session, the world's execution context id, and the
    bundle slots the host expects the world to hold (:func:`kelpie_gateway.kept_script`: a script whose
    slot is here is sent in its short form; a world that turns out not to hold it drops it)."""

    cdp: CDPSession
    context_id: int
    kept: set[str] = field(default_factory=set)


@dataclass
class Tab:
    """One Playwright page as the gateway sees it."""

    tab_id: str
    page: Page
    generation: int = 0
    cdp: CDPSession | None = None
    session: asyncio.Future[CDPSession] | None = field(default=None, repr=False)
    registered: bool = False  # NEW_DOCUMENT runs in this page's new documents (set once it is registered)
    frame_id: str | None = None  # the main frame's CDP id, fetched once per session
    worlds: dict[str, asyncio.Future[World]] = field(default_factory=dict)
    title: str = ""
    dialog: Dialog | None = None
    dialog_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    dialog_waiters: set[asyncio.Future[None]] = field(default_factory=set, repr=False)  # _first_layout
    ready: asyncio.Future[Any] | None = field(default=None, repr=False)
    crashed: bool = False


def find_chromium(explicit: str | None) -> str | None:
    """The executable to launch: ``explicit``, else ``/usr/bin/chromium`` if present, else None (Playwright's)."""
    if explicit:
        return explicit
    if shutil.which(DEFAULT_CHROMIUM):
        return DEFAULT_CHROMIUM
    return None


class ChromiumRenderer:
    """Headless Chromium with one context; see the module docstring for the endpoint rules."""

    def __init__(
        self,
        *,
        executable: str | None,
        on_invalidate: Callable[[str], None],
        log: Callable[[str], None],
        on_closed: Callable[[str], None] | None = None,
        dialog_timeout_s: float = 60.0,
        guard: RedirectGuard | None = None,
        viewport: Mapping[str, int] | None = None,
        headless: bool = True,
        user_data_dir: str | None = None,
        cdp_endpoint: str | None = None,
    ) -> None:
        self.viewport = dict(viewport or VIEWPORT)  # serve --viewport WxH
        self.headless = headless
        self.user_data_dir = user_data_dir
        self.cdp_endpoint = cdp_endpoint
        self.executable = executable
        self.on_invalidate = on_invalidate
        self.on_closed = on_closed
        self.log = log
        self.dialog_timeout_s = dialog_timeout_s
        self.guard = guard
        self.description = "chromium"
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._tabs: dict[str, Tab] = {}
        self._by_page: dict[int, Tab] = {}
        self._next_id = 1
        self._selected: str | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self._first_url: str | None = None
        self._gone: list[Gone] = []
        self._browser_lost = False
        self._closing = False
        # Pages born while the host makes one (_new_page): claimed by their maker, the rest adopted after.
        self._making = 0
        self._born: dict[int, Page] = {}
        self._born_dead: set[int] = set()
        self._birth_died: asyncio.Future[None] | None = None
        self._relaunch_lock = asyncio.Lock()
        self._relaunch_failed: tuple[float, str] | None = None  # (loop time, why) of the last failed launch
        self._handlers: dict[str, Callable[[Mapping[str, Any]], Awaitable[JsonObject]]] = {
            "get-tabs": self._get_tabs,
            "switch-tab": self._switch_tab,
            "new-tab": self._new_tab,
            "close-tab": self._close_tab,
            "navigate": self._navigate,
            "screenshot": self._screenshot,
            "browser-control-evaluate": self._evaluate,
            "dialog-observe": self._dialog_observe,
            "dialog-accept": self._dialog_accept,
            "dialog-dismiss": self._dialog_dismiss,
        }

    @property
    def methods(self) -> list[str]:
        """The native endpoints this renderer implements (the gateway's ``nativeMethods``)."""
        return list(self._handlers)

    def register(self, method: str, handler: Callable[[Mapping[str, Any]], Awaitable[JsonObject]]) -> None:
        """Add native endpoint ``method`` (a host extension's handler; it may raise: :meth:`call` turns
        exceptions into ``RENDERER_FAILED`` results)."""
        self._handlers[method] = handler

    def page_of(self, tab_id: str) -> Page | None:
        """The Playwright page of tab ``tab_id``, or None."""
        tab = self._tabs.get(tab_id)
        return tab.page if tab is not None else None

    def refusal(self, tab_id: Any) -> JsonObject | None:
        """None when ``tab_id`` names a live tab; else the refusal the built-in natives answer, with nothing
        run (``mayHaveCompleted:false``): ``TAB_NOT_FOUND``, or ``RENDERER_FAILED`` for a tab whose renderer
        crashed (``tab.navigate`` or ``tabs.close`` recovers it). Extensions check it before acting."""
        if not isinstance(tab_id, str):
            return fail("TAB_NOT_FOUND", f"no tab {tab_id!r}", mayHaveCompleted=False)
        tab = self._live_tab({"tabId": tab_id})
        return tab if isinstance(tab, dict) else None

    def newest_page(self) -> Page | None:
        """The page of the most recently opened tab, or None."""
        return next(reversed(self._tabs.values())).page if self._tabs else None

    @property
    def context(self) -> BrowserContext | None:
        return self._context

    # ----------------------------------------------------------------- lifecycle
    async def start(self, first_url: str | None) -> None:
        """Start the browser, route-block non-loopback traffic and open ``first_url`` in the first tab.

        Three ways (issue 14): launch Chromium with a temporary profile (default; ``headless`` False for
        ``--headed``), launch it on a persistent profile (``user_data_dir``: its first window's page is the
        first tab), or attach over CDP to a Chromium already running (``cdp_endpoint``: its open pages
        become tabs, the host opens ``first_url`` in a new one, and :meth:`close` only disconnects)."""
        self._first_url = first_url
        self._pw = await async_playwright().start()
        await self._launch()

    async def _launch(self) -> None:
        assert self._pw is not None
        chromium = self._pw.chromium
        options: dict[str, Any] = {"headless": self.headless, "args": list(CHROMIUM_FLAGS)}
        if self.executable:
            options["executable_path"] = self.executable
        where = self.executable or "playwright-managed"
        if self.cdp_endpoint:
            self._browser = await chromium.connect_over_cdp(self.cdp_endpoint)
            contexts = self._browser.contexts
            self._context = contexts[0] if contexts else await self._browser.new_context()
            where = f"attached over CDP at {self.cdp_endpoint}; never closed by this host"
        elif self.user_data_dir:
            self._context = await chromium.launch_persistent_context(
                self.user_data_dir,
                viewport=self.viewport,  # type: ignore[arg-type]
                **options,
            )
            self._browser = self._context.browser
            where += f"; profile {self.user_data_dir}"
        else:
            self._browser = await chromium.launch(**options)
            self._context = await self._browser.new_context(viewport=self.viewport)  # type: ignore[arg-type]
        version = self._browser.version if self._browser is not None else "?"
        mode = "attached" if self.cdp_endpoint else "headless" if self.headless else "headed"
        self.description = f"chromium {version} {mode} ({where})"
        if self._browser is not None:
            browser = self._browser
            browser.on("disconnected", lambda _b: self._on_disconnected(browser))
        if self.guard is not None:
            await self._context.route("**/*", self._route)
        self._context.on("page", self._on_page)
        existing = [self._adopt(page) for page in self._context.pages]
        if existing and not self.cdp_endpoint:
            tab = existing[0]  # a persistent profile's first window
        else:
            tab = self._adopt(await self._context.new_page())
        self._selected = tab.tab_id
        await self._ready(tab)
        if self._first_url:
            await tab.page.goto(self._first_url, wait_until="load")

    def on_gone(self, listener: Gone) -> None:
        """Register ``listener(tab_id)`` for renderer crashes, ``listener(None)`` for a browser exit."""
        self._gone.append(listener)

    def _tell_gone(self, tab_id: str | None) -> None:
        for listener in self._gone:
            try:
                listener(tab_id)
            except Exception as exc:  # a listener bug must not stop the others
                self.log(f"renderer-gone listener failed: {type(exc).__name__}: {_short(exc)}")

    def _on_disconnected(self, browser: Browser) -> None:
        if self._closing or browser is not self._browser:
            return
        self._browser_lost = True
        if self.cdp_endpoint:
            self.log(
                f"attached browser at {self.cdp_endpoint} went away: pending work retired; this host does not "
                "start it, and reattaches when it answers there again (each request tries)"
            )
        else:
            self.log("browser exited: pending work retired; relaunching it (the next request waits for it)")
        tabs = list(self._tabs.values())
        self._tabs.clear()
        self._by_page.clear()
        self._selected = None
        for tab in tabs:
            self._clear_dialog(tab)
            self.on_invalidate(tab.tab_id)
            self._report_closed(tab.tab_id)  # before the pending work is cancelled: nothing to reconcile
        self._tell_gone(None)
        # Start at once so the next request finds a browser; if this fails, the next request tries again.
        self._spawn(self._relaunch(eager=True))

    async def _relaunch(self, *, eager: bool = False) -> JsonObject | None:
        """After a browser exit: launch Chromium again (None), or a BROWSER_UNAVAILABLE result. A request
        arriving within :data:`RELAUNCH_BACKOFF_S` of a failed attempt is answered at once, not made to
        wait for another launch that would fail the same way; later requests try again."""
        loop = asyncio.get_running_loop()
        async with self._relaunch_lock:
            if not self._browser_lost:
                return None
            failed = self._relaunch_failed
            if not eager and failed is not None and loop.time() - failed[0] < RELAUNCH_BACKOFF_S:
                return _unavailable(failed[1], self.cdp_endpoint)
            old = self._browser
            try:
                if old is not None:
                    with contextlib.suppress(Exception):
                        await old.close()
                try:
                    await self._launch()
                except PlaywrightError as exc:
                    if "closed" not in str(exc).lower():
                        raise
                    # The Playwright driver went with the browser: start a new one, once.
                    with contextlib.suppress(Exception):
                        if self._pw is not None:
                            await self._pw.stop()
                    self._pw = await async_playwright().start()
                    await self._launch()
            except Exception as exc:
                why = f"{type(exc).__name__}: {_short(exc, 200)}"
                self._relaunch_failed = (loop.time(), why)
                self.log(f"browser {'reattach' if self.cdp_endpoint else 'relaunch'} failed: {why}")
                return _unavailable(why, self.cdp_endpoint)
            self._browser_lost = False
            self._relaunch_failed = None
            self.log(
                f"browser {'reattached' if self.cdp_endpoint else 'relaunched'}: {self.description}; "
                f"new tabs {', '.join(self._tabs)}, refs invalidated"
            )
            return None

    def available(self) -> Awaitable[JsonObject | None] | None:
        """See :meth:`Renderer.available`: None while the browser is up; after it exited, the relaunch (or
        reattach) — the one already under way, or a new attempt, or at once the last failure's answer
        within :data:`RELAUNCH_BACKOFF_S` of it."""
        return self._relaunch() if self._browser_lost else None

    async def stop_script(self, tab_id: str | None) -> bool:
        """CDP ``Runtime.terminateExecution`` on ``tab_id``'s target: ends the JavaScript running there
        (the page's handler and the fixed script). False when there is no such live tab."""
        tab = self._tabs.get(tab_id) if tab_id is not None else None
        if tab is None or tab.crashed or self._context is None:
            return False
        try:
            session = tab.cdp
            if session is None:
                session = await asyncio.wait_for(self._context.new_cdp_session(tab.page), 2.0)
            await asyncio.wait_for(session.send("Runtime.terminateExecution"), 2.0)
        except Exception as exc:
            self.log(f"could not stop the script in tab {tab.tab_id}: {_short(exc)}")
            return False
        self.log(f"stopped the script in tab {tab.tab_id} (Runtime.terminateExecution)")
        return True

    async def close_target(self, tab_id: str | None) -> bool:
        """Close ``tab_id``'s page without unload handlers (its renderer goes with it)."""
        tab = self._tabs.get(tab_id) if tab_id is not None else None
        if tab is None:
            return False
        with contextlib.suppress(Exception):
            await asyncio.wait_for(tab.page.close(run_before_unload=False), 5.0)
        self._on_close(tab)
        self.log(f"closed tab {tab.tab_id}: its script did not stop")
        return True

    async def close(self) -> None:
        """Close the browser this host launched; an attached one (``cdp_endpoint``) is only disconnected:
        it keeps running with its tabs."""
        self._closing = True
        if not self.cdp_endpoint:
            with contextlib.suppress(Exception):
                if self._browser is not None:
                    await self._browser.close()
                elif self._context is not None:
                    await self._context.close()
        with contextlib.suppress(Exception):
            if self._pw is not None:
                await self._pw.stop()

    async def _route(self, route: Route) -> None:
        """The site policy on every request's first hop (redirect hops: the tab's guard)."""
        assert self.guard is not None
        request = route.request
        reason = self.guard.policy.refusal(request.url)
        if reason is None:
            await route.continue_()
            return
        await route.abort("blockedbyclient")
        page: Page | None = None
        kind = request.resource_type
        with contextlib.suppress(Exception):  # service-worker requests have no frame
            page = request.frame.page
            if request.is_navigation_request():
                main = request.frame == page.main_frame
                kind = "document (main frame)" if main else "document (subframe)"
        tab = self._by_page.get(id(page)) if page is not None else None
        if page is not None:
            self.guard.note_blocked(page, tab.tab_id if tab else "?", kind, request.url, reason)

    async def _ready(self, tab: Tab) -> None:
        """Wait (bounded) until the tab's policy guard is attached and its session registered
        :data:`NEW_DOCUMENT`, before the tab navigates."""
        for pending in (tab.ready, tab.session):
            if pending is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(pending), 5.0)

    # ----------------------------------------------------------------- browser events
    def _on_page(self, page: Page) -> None:
        if not self._making:
            self._adopt(page)
            return
        # The host is making a page (_new_page): this may be it (its maker binds it), one born with a
        # renderer that died (never a tab), or another page's popup (adopted once the making is over).
        key = id(page)
        self._born[key] = page
        page.once("crash", lambda _page: self._birth_failed(key))
        page.once("close", lambda _page: self._birth_failed(key))

    def _birth_failed(self, key: int) -> None:
        if key not in self._born:  # settled already (a page born dead, closed by _settle_births)
            return
        self._born_dead.add(key)
        died = self._birth_died
        if died is not None and not died.done():
            died.set_result(None)

    def _adopt(self, page: Page) -> Tab:
        existing = self._by_page.get(id(page))
        if existing is not None:
            return existing
        tab = Tab(f"t{self._next_id}", page)
        self._next_id += 1
        self._tabs[tab.tab_id] = tab
        self._by_page[id(page)] = tab
        self._listen(tab)
        if self._selected is None:
            self._selected = tab.tab_id
        if self._context is not None:
            self._start_session(tab)  # before its first navigation, so that every document is prepared
        if self.guard is not None and self._context is not None:
            tab.ready = asyncio.ensure_future(self.guard.attach(self._context, page, tab.tab_id))
            tab.ready.add_done_callback(lambda done: done.cancelled() or done.exception())
        return tab

    def _listen(self, tab: Tab) -> None:
        page = tab.page
        page.on("framenavigated", lambda frame: self._on_navigated(tab, frame) if tab.page is page else None)
        page.on("crash", lambda _page: self._on_crash(tab) if tab.page is page else None)
        page.on("close", lambda _page: self._on_close(tab) if tab.page is page else None)
        page.on("dialog", lambda dialog: self._on_dialog(tab, dialog) if tab.page is page else None)

    def _on_navigated(self, tab: Tab, frame: Frame) -> None:
        if frame != tab.page.main_frame:
            return
        tab.generation += 1
        # A new document: its world is made now, while it loads (a same-document change finds it as it was).
        tab.worlds.clear()
        if not tab.crashed and self._context is not None:
            self._prepare(tab)
        self.on_invalidate(tab.tab_id)

    def _on_crash(self, tab: Tab) -> None:
        if self._tabs.get(tab.tab_id) is not tab or tab.crashed:
            return
        tab.generation += 1
        tab.worlds.clear()
        tab.cdp, tab.frame_id, tab.session, tab.registered = None, None, None, False
        tab.crashed = True
        self._clear_dialog(tab)
        self.log(f"renderer crashed in tab {tab.tab_id}: tab.navigate or tabs.close recovers it")
        self.on_invalidate(tab.tab_id)
        self._tell_gone(tab.tab_id)

    async def _revive(self, tab: Tab) -> None:
        """A crashed tab gets a fresh page under the same tab id (Playwright refuses a crashed page).
        Raises :class:`PageNotMade` (nothing changed) or PlaywrightError."""
        assert self._context is not None
        page = await self._new_page(f"tab {tab.tab_id}")
        old = tab.page
        self._by_page.pop(id(old), None)
        tab.page, tab.crashed, tab.cdp, tab.frame_id = page, False, None, None
        tab.session, tab.registered = None, False
        tab.worlds.clear()
        tab.generation += 1
        self._by_page[id(page)] = tab
        self._listen(tab)
        self._start_session(tab)
        if self.guard is not None:
            tab.ready = asyncio.ensure_future(self.guard.attach(self._context, page, tab.tab_id))
            tab.ready.add_done_callback(lambda done: done.cancelled() or done.exception())
        await self._ready(tab)
        with contextlib.suppress(Exception):
            await old.close(run_before_unload=False)
        self.log(f"tab {tab.tab_id} recovered from its crash in a new page")

    async def _new_page(self, purpose: str) -> Page:
        """A new page of the context for ``purpose`` (a new tab, a crashed tab's replacement), not yet a
        tab: the caller binds it. Right after renderers die, Chromium can hand a new page a renderer
        process that died with the others (its spare renderer) before the browser noticed: the page is
        born, then crashes or closes, and ``new_page`` raises "Target crashed" or never returns. Nothing
        of the request has run then, so the page is made once more; if that one is born dead too,
        :class:`PageNotMade` is raised (PlaywrightError for any other failure). Pages born dead are closed
        and never become tabs; a page another page opened meanwhile (a popup) is adopted as usual once the
        making is over."""
        for attempt in range(2):
            self._making += 1
            made: asyncio.Future[Page] | None = None
            try:
                made = await self._page_once()
            finally:
                self._making -= 1
                self._settle_births(made)
            if made is not None:
                return made.result()
            self.log(
                f"{purpose}: its new page's renderer died as it was created"
                + ("" if attempt else "; one more")
            )
        raise PageNotMade(f"the new page's renderer died as it was created, twice ({purpose})")

    async def _page_once(self) -> asyncio.Future[Page] | None:
        """One ``new_page``, raced against a page born meanwhile dying and :data:`BIRTH_PATIENCE_S` (twice
        that more when a page was announced alive meanwhile: a healthy page made slowly on a loaded
        machine): the done future of the page, or None when it was born dead or never came (Chromium
        sometimes never answers for a page whose renderer died before the page was announced; a late
        answer is closed, and that close is the host's own, not a birth that died).
        Raises PlaywrightError for any other failure."""
        assert self._context is not None
        loop = asyncio.get_running_loop()
        if self._birth_died is None or self._birth_died.done():
            self._birth_died = loop.create_future()
        died = self._birth_died
        before = set(self._born)
        making = asyncio.ensure_future(self._context.new_page())
        waits: set[asyncio.Future[Any]] = {making, died}
        await asyncio.wait(waits, timeout=BIRTH_PATIENCE_S, return_when=asyncio.FIRST_COMPLETED)
        if (
            not making.done()
            and not died.done()
            and any(key not in before and key not in self._born_dead for key in self._born)
        ):  # a page was announced alive meanwhile: a slow machine, not a dead renderer; let it finish
            await asyncio.wait(waits, timeout=2 * BIRTH_PATIENCE_S, return_when=asyncio.FIRST_COMPLETED)
        if making.done():
            exc = making.exception()
            if exc is None:
                page = making.result()
                if id(page) not in self._born_dead and not page.is_closed():
                    self._born.pop(id(page), None)  # claimed: the caller binds it
                    return making
                return None
            if "crash" in str(exc).lower() or "closed" in str(exc).lower():
                return None
            raise exc

        def close_late(done: asyncio.Future[Page]) -> None:  # new_page answering after all: not a tab
            if not done.cancelled() and done.exception() is None:
                page = done.result()
                self._born.pop(id(page), None)  # the host's own close: not a birth that died (_birth_failed)
                self._spawn(self._quiet(page.close(run_before_unload=False)))

        making.add_done_callback(close_late)
        return None

    def _settle_births(self, made: asyncio.Future[Page] | None) -> None:
        """Once no page is being made: close the pages born dead, adopt the others (popups)."""
        if self._making:
            return
        born, dead = self._born, self._born_dead
        self._born, self._born_dead = {}, set()
        for key, page in born.items():
            if made is not None and made.result() is page:
                continue
            if key in dead or page.is_closed():
                self._spawn(self._quiet(page.close(run_before_unload=False)))
            else:
                self._adopt(page)

    def _spawn(self, aw: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run ``aw`` in the background (kept referenced until it is done); returns its task."""
        task = asyncio.ensure_future(aw)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _on_close(self, tab: Tab) -> None:
        known = self._tabs.get(tab.tab_id) is tab
        if known:
            del self._tabs[tab.tab_id]
        self._by_page.pop(id(tab.page), None)
        self._clear_dialog(tab)
        if self._selected == tab.tab_id:
            self._selected = next(iter(self._tabs), None)
        self.on_invalidate(tab.tab_id)
        if known:
            self._report_closed(tab.tab_id)

    def _report_closed(self, tab_id: str) -> None:
        """Tell the gateway that ``tab_id`` is gone for good (closed by anyone, or its browser exited)."""
        if self.on_closed is not None:
            try:
                self.on_closed(tab_id)
            except Exception as exc:  # a listener bug must not break the browser's event handling
                self.log(f"tab-closed listener failed: {type(exc).__name__}: {_short(exc)}")

    def _on_dialog(self, tab: Tab, dialog: Dialog) -> None:
        self._clear_dialog(tab)
        tab.dialog = dialog
        self.log(f"dialog opened in tab {tab.tab_id}: {dialog.type}")
        for waiter in tab.dialog_waiters:  # a dialog blocks the renderer: nothing waits behind it
            if not waiter.done():
                waiter.set_result(None)
        loop = asyncio.get_running_loop()
        tab.dialog_timer = loop.call_later(self.dialog_timeout_s, self._expire_dialog, tab, dialog)

    def _expire_dialog(self, tab: Tab, dialog: Dialog) -> None:
        if tab.dialog is dialog:
            tab.dialog = None
            self.log(
                f"dialog in tab {tab.tab_id} unhandled for {self.dialog_timeout_s:g} s: dismissed by the host"
            )
            self._spawn(self._quiet(dialog.dismiss()))

    @staticmethod
    async def _quiet(aw: Awaitable[Any]) -> None:
        with contextlib.suppress(Exception):
            await aw

    def _clear_dialog(self, tab: Tab) -> None:
        if tab.dialog_timer is not None:
            tab.dialog_timer.cancel()
            tab.dialog_timer = None
        tab.dialog = None

    # ----------------------------------------------------------------- endpoint plumbing
    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        """Run native endpoint ``method`` once with ``params``; never raises (errors are results)."""
        handler = self._handlers.get(method)
        if handler is None:
            return fail("RENDERER_FAILED", f"this host has no native endpoint {method!r}")
        if self._browser_lost:  # it exited after :meth:`available` said it was there: nothing is run
            what = "reattaches to" if self.cdp_endpoint else "starts"
            return fail(
                "BROWSER_UNAVAILABLE",
                f"the browser exited just before this call; nothing was run; the host {what} it on the next call",
                mayHaveCompleted=False,
            )
        try:
            return await handler(params)
        except PlaywrightError as exc:
            return fail("RENDERER_FAILED", _short(exc))
        except Exception as exc:  # the renderer boundary: errors are values
            return fail("RENDERER_FAILED", f"{type(exc).__name__}: {_short(exc)}")

    def _tab(self, params: Mapping[str, Any]) -> Tab | JsonObject:
        tab_id = params.get("tabId")
        if tab_id is None:
            tab_id = self._selected
        tab = self._tabs.get(tab_id) if isinstance(tab_id, str) else None
        if tab is None:
            return fail("TAB_NOT_FOUND", f"no tab {tab_id!r}", mayHaveCompleted=False)
        return tab

    def _live_tab(self, params: Mapping[str, Any]) -> Tab | JsonObject:
        """:meth:`_tab`, refusing a crashed tab before anything runs."""
        tab = self._tab(params)
        if isinstance(tab, Tab) and tab.crashed:
            return fail(
                "RENDERER_FAILED",
                f"the renderer of tab {tab.tab_id} crashed; tab.navigate or tabs.close recovers it",
                mayHaveCompleted=False,
                crashed=True,  # an observation of the tab: settles RECONCILE_REQUIRED (contract-notes.md)
            )
        return tab

    async def _title(self, tab: Tab) -> str:
        if tab.dialog is None and not tab.crashed:
            with contextlib.suppress(Exception):
                tab.title = await asyncio.wait_for(tab.page.title(), 2.0)
        return tab.title

    # ----------------------------------------------------------------- tabs
    async def _get_tabs(self, params: Mapping[str, Any]) -> JsonObject:
        tabs = []
        for tab in list(self._tabs.values()):
            title = await self._title(tab)
            tabs.append(
                {
                    "tabId": tab.tab_id,
                    "generation": tab.generation,
                    "url": tab.page.url,
                    "title": title,
                    "active": tab.tab_id == self._selected,
                    "crashed": tab.crashed,
                }
            )
        return {"success": True, "tabs": tabs}

    async def _switch_tab(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self._tab(params)
        if isinstance(tab, dict):
            return tab
        await tab.page.bring_to_front()
        self._selected = tab.tab_id
        return {"success": True, "tabId": tab.tab_id, "generation": tab.generation}

    async def _new_tab(self, params: Mapping[str, Any]) -> JsonObject:
        deadline = _deadline(params)
        try:
            page = await self._new_page("a new tab")
        except PageNotMade as exc:  # every page it made was closed: no tab was opened
            return fail("RENDERER_FAILED", f"{exc}; no tab was opened: try again", mayHaveCompleted=False)
        tab = self._adopt(page)
        self._selected = tab.tab_id
        await self._ready(tab)
        url = params.get("url")
        if isinstance(url, str) and url and url != "about:blank":
            await page.goto(url, wait_until="load", timeout=_timeout(params))
            await self._first_layout(tab, deadline)
        return {"success": True, "tabId": tab.tab_id, "generation": tab.generation}

    async def _close_tab(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self._tab(params)
        if isinstance(tab, dict):
            return tab
        if tab.crashed:
            with contextlib.suppress(Exception):
                await tab.page.close(run_before_unload=False)
        else:
            await tab.page.close()
        self._on_close(tab)
        return {"success": True}

    async def _navigate(self, params: Mapping[str, Any]) -> JsonObject:
        deadline = _deadline(params)  # before a crashed tab's revival: it counts against timeoutMs too
        tab = self._tab(params)
        if isinstance(tab, dict):
            return tab
        url = params.get("url")
        if not isinstance(url, str):
            return fail("RENDERER_FAILED", "navigate needs a url", mayHaveCompleted=False)
        if tab.crashed:
            try:
                await self._revive(tab)
            except (PlaywrightError, PageNotMade) as exc:  # before the navigation: nothing of it ran
                return fail(
                    "RENDERER_FAILED",
                    f"tab {tab.tab_id} crashed and could not be given a new page ({_short(exc)}); "
                    "tab.navigate tries again, tabs.close closes it",
                    mayHaveCompleted=False,
                )
        await tab.page.goto(url, wait_until="load", timeout=_timeout(params))
        await self._first_layout(tab, deadline)
        return {"success": True, "tabId": tab.tab_id, "generation": tab.generation, "url": tab.page.url}

    async def _first_layout(self, tab: Tab, deadline: float) -> None:
        """After ``load``: wait until the document has had its first style and layout (:data:`FIRST_LAYOUT`),
        bounded by the navigation's deadline (``deadline``, loop time) less :data:`FIRST_LAYOUT_MARGIN_S`.
        Best effort: a document still busy then, a JavaScript dialog open or opening (it blocks the
        renderer until someone answers it: the caller must get the navigation's answer to do that), or a
        world that cannot be had, leaves the navigation answered as loaded, and the layout to whichever
        call comes next, as before."""
        loop = asyncio.get_running_loop()
        left = deadline - FIRST_LAYOUT_MARGIN_S - loop.time()
        if left <= 0 or tab.crashed or tab.dialog is not None:
            return

        async def lay_out() -> None:
            world = await self._world(tab, WORLD_NAME)
            await world.cdp.send(
                "Runtime.evaluate",
                {"expression": FIRST_LAYOUT, "contextId": world.context_id, "returnByValue": True},
            )

        waited = self._spawn(self._quiet(lay_out()))  # may finish after us (busy page, dialog)
        dialog: asyncio.Future[None] = loop.create_future()
        tab.dialog_waiters.add(dialog)
        try:
            await asyncio.wait({waited, dialog}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            tab.dialog_waiters.discard(dialog)
            dialog.cancel()

    async def _screenshot(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self._live_tab(params)
        if isinstance(tab, dict):
            return tab
        png = await tab.page.screenshot(type="png", full_page=False, timeout=_timeout(params))
        width, height = struct.unpack(">II", png[16:24])  # PNG IHDR
        return {
            "success": True,
            "mimeType": "image/png",
            "data": base64.b64encode(png).decode("ascii"),
            "width": width,
            "height": height,
        }

    # ----------------------------------------------------------------- fixed scripts
    def _prepare(self, tab: Tab, name: str = WORLD_NAME) -> asyncio.Future[World]:
        """Start making world ``name`` for the tab's current document (kept in ``tab.worlds`` until the
        next main-frame navigation, crash or a vanished context) and return its future."""
        made = asyncio.ensure_future(self._make_world(tab, name))
        made.add_done_callback(lambda done: done.cancelled() or done.exception())  # awaited when used
        tab.worlds[name] = made
        return made

    def _start_session(self, tab: Tab) -> asyncio.Future[CDPSession]:
        """Open the tab's CDP session (one per page, reused) and register :data:`NEW_DOCUMENT` there."""
        tab.session = asyncio.ensure_future(self._open_session(tab))
        tab.session.add_done_callback(lambda done: done.cancelled() or done.exception())  # awaited when used
        return tab.session

    async def _open_session(self, tab: Tab) -> CDPSession:
        assert self._context is not None
        page = tab.page
        session = await self._context.new_cdp_session(page)
        if tab.page is not page:  # replaced (crash) meanwhile
            with contextlib.suppress(Exception):
                await session.detach()
            raise PlaywrightError("the tab's page was replaced")
        tab.cdp, tab.frame_id = session, None
        # Best effort: without it each document gets its bundles when it commits (PRELOAD), or with its
        # first script. Page.enable is what makes Chromium run a session's new-document scripts.
        with contextlib.suppress(PlaywrightError):
            await session.send("Page.enable")
            await session.send(
                "Page.addScriptToEvaluateOnNewDocument", {"source": NEW_DOCUMENT, "worldName": WORLD_NAME}
            )
            tab.registered = tab.page is page
        return session

    async def _session_of(self, tab: Tab) -> CDPSession:
        made = tab.session
        if made is None or (made.done() and (made.cancelled() or made.exception() is not None)):
            made = self._start_session(tab)
        return await asyncio.shield(made)

    async def _make_world(self, tab: Tab, name: str) -> World:
        page = tab.page
        registered = tab.registered  # this document was created with NEW_DOCUMENT in place
        cdp = await self._session_of(tab)
        if tab.page is not page or tab.cdp is not cdp:
            raise PlaywrightError("the tab's page was replaced")
        for attempt in range(2):
            if tab.frame_id is None:
                tree = await cdp.send("Page.getFrameTree")
                tab.frame_id = str(tree["frameTree"]["frame"]["id"])
            try:
                # The world of that name in the current document: the one NEW_DOCUMENT ran in, if it did.
                made = await cdp.send(
                    "Page.createIsolatedWorld",
                    {"frameId": tab.frame_id, "worldName": name, "grantUniveralAccess": False},
                )
                break
            except PlaywrightError:
                if attempt:
                    raise
                tab.frame_id = None  # ask the frame tree again, once
        world = World(cdp, int(made["executionContextId"]))
        if name == WORLD_NAME:
            if not registered:
                # Best effort: a failure here only means the first script compiles its own bundle.
                try:
                    await cdp.send(
                        "Runtime.evaluate",
                        {"expression": PRELOAD, "contextId": world.context_id, "returnByValue": True},
                    )
                except PlaywrightError:
                    return world
            world.kept.update(bundle_slot(bundle) for bundle in PRELOADED)
        return world

    async def _world(self, tab: Tab, name: str) -> World:
        """World ``name`` of the tab's current document (made at most once per document)."""
        made = tab.worlds.get(name)
        if made is None or (made.done() and (made.cancelled() or made.exception() is not None)):
            made = self._prepare(tab, name)
        return await asyncio.shield(made)

    async def _evaluate(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self._live_tab(params)
        if isinstance(tab, dict):
            return tab
        script = params.get("script")
        if not isinstance(script, str):
            return fail("RENDERER_FAILED", "browser-control-evaluate needs a script", mayHaveCompleted=False)
        world_name = str(params.get("world") or WORLD_NAME)
        generation = tab.generation  # the document the script runs in (reported when it did not change)
        short = kept_script(script)  # (slot, expression): the script without its bundle
        for attempt in range(2):
            world = await self._world(tab, world_name)
            try:
                reply = await self._run_script(world, script, short)
            except PlaywrightError as exc:
                # The document changed between world creation and evaluation: nothing ran; once more.
                if "Cannot find context" in str(exc) and attempt == 0:
                    tab.worlds.pop(world_name, None)
                    continue
                return fail("RENDERER_FAILED", _short(exc))
            details = reply.get("exceptionDetails")
            if details:
                text = details.get("exception", {}).get("description") or details.get("text") or "exception"
                return fail("RENDERER_FAILED", f"the fixed script threw: {_short(text)}")
            answer: JsonObject = {"success": True, "value": reply.get("result", {}).get("value")}
            if tab.generation == generation:
                answer["generation"] = generation
            return answer
        return fail("RENDERER_FAILED", "the tab's document kept changing", mayHaveCompleted=False)

    @staticmethod
    async def _run_script(world: World, script: str, short: tuple[str, str] | None) -> JsonObject:
        """``Runtime.evaluate`` of the script in ``world``, exactly once: its short form when the world is
        expected to hold its bundle; if it does not after all (that form then ran nothing), the whole
        script. Raises PlaywrightError as ``CDPSession.send`` does."""
        params = {"contextId": world.context_id, "returnByValue": True, "awaitPromise": True}
        if short is not None and short[0] in world.kept:
            reply: JsonObject = await world.cdp.send("Runtime.evaluate", {"expression": short[1], **params})
            if reply.get("exceptionDetails") or not bundle_missing(
                reply.get("result", {}).get("value"), short[0]
            ):
                return reply
            world.kept.discard(short[0])
        reply = await world.cdp.send("Runtime.evaluate", {"expression": script, **params})
        if short is not None and not reply.get("exceptionDetails"):
            world.kept.add(short[0])  # the script's loader found or installed it
        return reply

    # ----------------------------------------------------------------- dialogs (recovery extensions)
    async def _dialog_observe(self, params: Mapping[str, Any]) -> JsonObject:
        wanted = params.get("tabId")
        if wanted is not None and (refused := self.refusal(wanted)) is not None:
            return refused
        dialogs = [
            {
                "tabId": tab.tab_id,
                "type": tab.dialog.type,
                "message": tab.dialog.message,
                "defaultValue": tab.dialog.default_value,
            }
            for tab in self._tabs.values()
            if tab.dialog is not None and (wanted is None or wanted == tab.tab_id)
        ]
        return {"success": True, "dialogs": dialogs}

    async def _dialog_close(self, params: Mapping[str, Any], accept: bool) -> JsonObject:
        tab = self._live_tab(params)
        if isinstance(tab, dict):
            return tab
        dialog = tab.dialog
        if dialog is None:
            return fail("RENDERER_FAILED", f"no dialog is open in tab {tab.tab_id}", mayHaveCompleted=False)
        self._clear_dialog(tab)
        info = {"tabId": tab.tab_id, "type": dialog.type, "message": dialog.message}
        if accept:
            prompt = params.get("promptText")
            await dialog.accept(prompt if isinstance(prompt, str) else None)
        else:
            await dialog.dismiss()
        return {"success": True, "handled": "accepted" if accept else "dismissed", **info}

    async def _dialog_accept(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._dialog_close(params, True)

    async def _dialog_dismiss(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._dialog_close(params, False)


RELAUNCH_BACKOFF_S = 5.0
"""After a failed relaunch, requests within this many seconds get BROWSER_UNAVAILABLE at once."""


def _unavailable(why: str, cdp_endpoint: str | None = None) -> JsonObject:
    if cdp_endpoint:  # not ours to start: the user's browser must come back at its endpoint
        message = (
            f"the attached browser at {cdp_endpoint} is gone and could not be reattached ({why}); nothing was "
            "run; this host does not start it: the host reattaches once it answers there again"
        )
    else:
        message = f"the browser exited and could not be relaunched ({why}); nothing was run"
    return fail("BROWSER_UNAVAILABLE", message, mayHaveCompleted=False)


def _timeout_ms(params: Mapping[str, Any]) -> int:
    """The call's ``timeoutMs`` (the gateway's deadline, milliseconds; 10,000 when absent or unusable)."""
    value = params.get("timeoutMs")
    return value if isinstance(value, int) and value > 0 else 10_000


def _deadline(params: Mapping[str, Any]) -> float:
    """The loop time at which the call's ``timeoutMs`` (the gateway's deadline) runs out, from now."""
    return asyncio.get_running_loop().time() + _timeout_ms(params) / 1000


def _timeout(params: Mapping[str, Any]) -> float:
    """Playwright's own timeout: a little past the gateway deadline, so the host's deadline fires first and
    the late reply still arrives (and retires) well within the retirement grace (:data:`RETIREMENT_GRACE_MS`)."""
    return float(_timeout_ms(params) + 1_000)


def _short(exc: object, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


DIALOG_EXTENSIONS: list[JsonObject] = [
    {
        "name": "dialog_observe",
        "method": "dialog-observe",
        "description": "List the JavaScript dialogs (alert, confirm, prompt, beforeunload) open in the browser, "
        "optionally for one tab. Reachable while a click that opened a dialog is still outstanding.",
        "inputSchema": {
            "type": "object",
            "properties": {"tabId": {"type": "string", "minLength": 1, "maxLength": 64}},
            "additionalProperties": False,
        },
        "mutates": False,
        "recovery": True,
    },
    {
        "name": "dialog_accept",
        "method": "dialog-accept",
        "description": "Accept (OK) the JavaScript dialog open in a tab; promptText answers a prompt().",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tabId": {"type": "string", "minLength": 1, "maxLength": 64},
                "promptText": {"type": "string", "maxLength": 10000},
            },
            "required": ["tabId"],
            "additionalProperties": False,
        },
        "mutates": True,
        "recovery": True,
    },
    {
        "name": "dialog_dismiss",
        "method": "dialog-dismiss",
        "description": "Dismiss (Cancel) the JavaScript dialog open in a tab.",
        "inputSchema": {
            "type": "object",
            "properties": {"tabId": {"type": "string", "minLength": 1, "maxLength": 64}},
            "required": ["tabId"],
            "additionalProperties": False,
        },
        "mutates": True,
        "recovery": True,
    },
]


RETIREMENT_GRACE_MS = 2_000
"""The host's ``retirementGraceMs``: a cancelled dispatch is overdue ``timeoutMs`` + 2 s after it began;
the driver then stops it (terminateExecution, then closing the target after 1 s), so no page holds a lane
longer than ``timeoutMs`` + 5 s (ARCHITECTURE.md, host rules 1.1)."""


def gateway_config(*, browser: bool) -> JsonObject:
    """The gateway config the reference host creates (CONTRACT.md §2)."""
    if not browser:
        return {"nativeMethods": [], "browserAvailable": False, "fixedReader": False, "realm": "isolated"}
    return {
        "nativeMethods": [*NATIVE_ENDPOINTS, *(e["method"] for e in DIALOG_EXTENSIONS)],
        "targeting": "direct",
        "browserAvailable": True,
        "fixedReader": True,
        "allowActions": True,
        "requireAuthorization": True,
        "realm": "isolated",
        "extensions": DIALOG_EXTENSIONS,
        "retirementGraceMs": RETIREMENT_GRACE_MS,
    }
