"""The tabs of the Chromium renderer: page births, adoption, navigation, crash, revival and close
(docs/host.md "Native endpoints", "Liveness").

* Tabs are Playwright pages of one browser context (:class:`~kelpie_gateway.host.browser.common.Tab`). Tab ids
  are host strings (``t1``, ``t2`` …) that are never reused; every page the context opens becomes one
  (popups too), and the first one adopted is the selected tab.
* ``generation`` is bumped on every main-frame navigation (new document or same-document) and on a renderer
  crash. Each event goes to the parts (``navigated``/``crashed``/``closed``) and then to the renderer's
  event sink: ``refs_invalidated`` on main-frame navigation, close and crash; ``tab_closed`` once when a tab
  is gone for good (closed by a client, by the page, by the host ending stuck work, or with its browser);
  ``renderer_gone`` on a crash.
* A crashed tab stays (``crashed``) until :meth:`Pages.revive` gives it a fresh page under the same id
  (``tab.navigate``) or it is closed. :meth:`Pages.live` refuses it before anything runs.
* **Births.** Right after renderers die, Chromium can hand a new page a renderer process that died with the
  others: :meth:`Pages.new_page` makes the page once more, and pages born dead never become tabs.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from playwright.async_api import Frame, Page

from kelpie_gateway.host.renderer import PageNotMade, Refused, fail, shown_tab

from .common import Owner, Tab, quiet, short

DEFAULT_MAX_POPUPS = 20
"""``--max-popups``: how many of one tab's popups may be open at once; later ones are closed as they open."""
BIRTH_PATIENCE_S = 4.0
"""How long one attempt to make a page may take (a healthy one takes well under a second, even on a loaded
machine); two attempts fit in the default 10 s deadline of the call that needs the page."""
READY_PATIENCE_S = 5.0
"""How long a new tab waits for each of :attr:`Tab.pending` before it navigates anyway."""
CRASH_JUDGE_S = 2.0
"""How long the host asks the main frame's renderer whether it lives when Playwright reports the page
crashed (:meth:`Pages._judge_crash`); no answer by then counts as a crash."""


class Pages:
    """The renderer's tabs, by id and by page; see the module docstring.

    ``ids``: where tab numbers come from — one counter per host, shared by every context's renderer, so a
    tab id is never reused and names one tab of one context (``--isolation per-client``: another client's
    tab id is ``TAB_NOT_FOUND`` here). ``unknown_hint``: said after ``no tab …`` for an id this renderer
    never had (a fresh context says why the client's old tabs are gone).
    ``max_popups``: ``--max-popups`` (:meth:`_adopt_born`)."""

    def __init__(
        self, renderer: Owner, ids: Iterator[int] | None = None, *, max_popups: int = DEFAULT_MAX_POPUPS
    ) -> None:
        self.renderer = renderer
        self.max_popups = max_popups
        self._popup_of: dict[int, Tab] = {}  # a new page (id) -> the tab whose page opened it
        self._opener_of: dict[str, str] = {}  # an open popup's tab id -> its opener's tab id
        self._tabs: dict[str, Tab] = {}
        self._by_page: dict[int, Tab] = {}
        self._ids = ids if ids is not None else itertools.count(1)
        self._issued: set[str] = set()
        self.unknown_hint = ""
        self.selected: str | None = None
        # Pages born while the host makes one (new_page): claimed by their maker, the rest adopted after.
        self._making = 0
        self._born: dict[int, Page] = {}
        self._born_dead: set[int] = set()
        self._birth_died: asyncio.Future[None] | None = None
        self._let_go: set[int] = set()  # pages the host ended for tabs it keeps (end_page): not their events

    # ----------------------------------------------------------------- lookups
    def __iter__(self) -> Iterator[Tab]:
        return iter(list(self._tabs.values()))

    def __len__(self) -> int:
        return len(self._tabs)

    def ids(self) -> list[str]:
        return list(self._tabs)

    def get(self, tab_id: str | None) -> Tab | None:
        """The tab ``tab_id`` names, or None."""
        return self._tabs.get(tab_id) if tab_id is not None else None

    def of_page(self, page: Page | None) -> Tab | None:
        """The tab of ``page``, or None."""
        return self._by_page.get(id(page)) if page is not None else None

    def newest(self) -> Tab | None:
        """The most recently opened tab, or None."""
        return next(reversed(self._tabs.values())) if self._tabs else None

    def tab(self, tab_id: Any) -> Tab:
        """The tab ``tab_id`` names; raises :class:`Refused` ``TAB_NOT_FOUND`` (``mayHaveCompleted:false``)."""
        tab = self._tabs.get(tab_id) if isinstance(tab_id, str) else None
        if tab is None:
            hint = self.unknown_hint if isinstance(tab_id, str) and tab_id not in self._issued else ""
            raise Refused(fail("TAB_NOT_FOUND", f"no tab {shown_tab(tab_id)}{hint}", mayHaveCompleted=False))
        return tab

    def live(self, tab_id: Any) -> Tab:
        """:meth:`tab`, also refusing a tab whose renderer crashed (``RENDERER_FAILED``, nothing run; it
        observes the tab, so it settles ``RECONCILE_REQUIRED``: docs/contract-notes.md)."""
        tab = self.tab(tab_id)
        if tab.crashed:
            what = (
                f"the host ended the page of tab {tab.tab_id} (a script in it did not stop)"
                if tab.ended
                else f"the renderer of tab {tab.tab_id} crashed"
            )
            raise Refused(
                fail(
                    "RENDERER_FAILED",
                    f"{what}; tab.navigate recovers it in a fresh page, tabs.close closes it",
                    mayHaveCompleted=False,
                    crashed=True,
                )
            )
        return tab

    def named(self, params: Mapping[str, Any], *, live: bool = True) -> Tab:
        """The tab a built-in endpoint's ``params`` name (``tabId``, else the selected tab): :meth:`live`,
        or :meth:`tab` with ``live=False``."""
        tab_id = params.get("tabId")
        if tab_id is None:
            tab_id = self.selected
        return self.live(tab_id) if live else self.tab(tab_id)

    # ----------------------------------------------------------------- adoption
    def adopt(self, page: Page) -> Tab:
        """The tab of ``page``, made now (a new id, the parts attached) if it has none."""
        existing = self._by_page.get(id(page))
        if existing is not None:
            return existing
        tab = Tab(f"t{next(self._ids)}", page)
        self._issued.add(tab.tab_id)
        self._tabs[tab.tab_id] = tab
        self._by_page[id(page)] = tab
        self._listen(tab)
        if self.selected is None:
            self.selected = tab.tab_id
        self._attach(tab)
        return tab

    def _attach(self, tab: Tab) -> None:
        tab.pending = []
        for part in self.renderer.parts:
            part.attached(tab)

    def _listen(self, tab: Tab) -> None:
        page = tab.page
        page.on(
            "popup", lambda popup: self._popup_of.__setitem__(id(popup), tab) if tab.page is page else None
        )
        page.on("framenavigated", lambda frame: self._on_navigated(tab, frame) if tab.page is page else None)
        page.on("crash", lambda _page: self._on_crash(tab) if self._current(tab, page) else None)
        page.on("close", lambda _page: self.on_close(tab) if self._current(tab, page) else None)

    def _current(self, tab: Tab, page: Page) -> bool:
        """``page`` is ``tab``'s, and not one the host ended for a tab it keeps (:meth:`end_page`)."""
        return tab.page is page and id(page) not in self._let_go

    async def ready(self, tab: Tab) -> None:
        """Wait (bounded) for what the parts started when the tab got its page (its policy guard attached,
        its session's new-document script registered), before the tab navigates."""
        for pending in tab.pending:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(pending), READY_PATIENCE_S)

    # ----------------------------------------------------------------- events of a tab
    def _on_navigated(self, tab: Tab, frame: Frame) -> None:
        if frame != tab.page.main_frame:
            return
        tab.generation += 1
        for part in self.renderer.parts:
            part.navigated(tab)
        self.renderer.events.refs_invalidated(tab.tab_id)

    def _on_crash(self, tab: Tab) -> None:
        if self._tabs.get(tab.tab_id) is not tab or tab.crashed:
            return
        self.renderer.spawn(self._judge_crash(tab, tab.page))

    async def _judge_crash(self, tab: Tab, page: Page) -> None:
        """Playwright reports the page crashed when any of its targets did, an out-of-process frame's
        included. The tab crashed only when its main frame's renderer did: it did not while the tab's own
        session still gets an answer from it (before that session hears the crash, within
        :data:`CRASH_JUDGE_S`). A frame's crash leaves the tab readable and actionable over CDP
        (``tab.frame_crashed``: the next navigate gives it a fresh page)."""
        alive = await self._main_frame_alive(tab)
        if tab.page is not page or self._tabs.get(tab.tab_id) is not tab or tab.crashed:
            return
        if alive:
            if not tab.frame_crashed:
                self.renderer.log(
                    f"a frame's renderer crashed in tab {tab.tab_id}: its refs are refused, the tab's others "
                    "still work; the next tab.navigate gives the tab a fresh page"
                )
            tab.frame_crashed = True
            return
        self._crashed(tab)

    async def _main_frame_alive(self, tab: Tab) -> bool:
        session = tab.cdp
        if session is None or tab.main_gone.is_set():
            return False
        probe = asyncio.ensure_future(
            session.send("Runtime.evaluate", {"expression": "0", "returnByValue": True})
        )
        gone = asyncio.ensure_future(tab.main_gone.wait())
        try:
            await asyncio.wait({probe, gone}, timeout=CRASH_JUDGE_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in (probe, gone):
                if not waiting.done():
                    waiting.cancel()
                waiting.add_done_callback(lambda done: done.cancelled() or done.exception())
        return (
            probe.done()
            and not probe.cancelled()
            and probe.exception() is None
            and not tab.main_gone.is_set()
        )

    def _crashed(self, tab: Tab) -> None:
        tab.generation += 1
        tab.crashed = True
        for part in self.renderer.parts:
            part.crashed(tab)
        self.renderer.log(f"renderer crashed in tab {tab.tab_id}: tab.navigate or tabs.close recovers it")
        self.renderer.events.refs_invalidated(tab.tab_id)
        self.renderer.tell_gone(tab.tab_id)

    def on_close(self, tab: Tab) -> None:
        """``tab``'s page closed (whoever closed it): the tab is gone for good."""
        known = self._tabs.get(tab.tab_id) is tab
        if known:
            del self._tabs[tab.tab_id]
            self._opener_of.pop(tab.tab_id, None)
        self._by_page.pop(id(tab.page), None)
        self._let_go.discard(id(tab.page))
        for part in self.renderer.parts:
            part.closed(tab)
        if self.selected == tab.tab_id:
            self.selected = next(iter(self._tabs), None)
        self.renderer.events.refs_invalidated(tab.tab_id)
        if known:
            self.renderer.tell_closed(tab.tab_id)

    def forget_all(self) -> None:
        """The browser is gone: every tab is reported closed (before its pending work is cancelled, so
        nothing is left to reconcile)."""
        tabs = list(self._tabs.values())
        self._tabs.clear()
        self._by_page.clear()
        self._let_go.clear()
        self._popup_of.clear()
        self._opener_of.clear()
        self.selected = None
        for tab in tabs:
            for part in self.renderer.parts:
                part.closed(tab)
            self.renderer.events.refs_invalidated(tab.tab_id)
            self.renderer.tell_closed(tab.tab_id)

    async def revive(self, tab: Tab) -> None:
        """A crashed tab gets a fresh page under the same tab id (Playwright refuses a crashed page).
        Raises :class:`PageNotMade` (nothing changed) or PlaywrightError."""
        page = await self.new_page(f"tab {tab.tab_id}")
        old = tab.page
        self._by_page.pop(id(old), None)
        tab.page, tab.crashed, tab.ended, tab.frame_crashed = page, False, False, False
        tab.main_gone = asyncio.Event()
        tab.generation += 1
        self._by_page[id(page)] = tab
        self._listen(tab)
        self._attach(tab)
        await self.ready(tab)
        with contextlib.suppress(Exception):
            await old.close(run_before_unload=False)
        self._let_go.discard(id(old))  # while it is referenced its id names no other page
        self.renderer.log(f"tab {tab.tab_id} recovered from its crash in a new page")

    async def stop_script(self, tab_id: str | None) -> bool:
        """CDP ``Runtime.terminateExecution`` on ``tab_id``'s target: ends the JavaScript running there
        (the page's handler and the fixed script), through the tab's session or a new one. False when there
        is no such live tab."""
        tab = self.get(tab_id)
        context = self.renderer.context
        if tab is None or tab.crashed or context is None:
            return False
        try:
            session = tab.cdp
            if session is None:
                session = await asyncio.wait_for(context.new_cdp_session(tab.page), 2.0)
            await asyncio.wait_for(session.send("Runtime.terminateExecution"), 2.0)
        except Exception as exc:
            self.renderer.log(f"could not stop the script in tab {tab.tab_id}: {short(exc)}")
            return False
        self.renderer.log(f"stopped the script in tab {tab.tab_id} (Runtime.terminateExecution)")
        return True

    def end_page(self, tab_id: str | None) -> bool:
        """End ``tab_id``'s page for good while **keeping the tab** (issue 27: the host closed the agent's
        tab; with a stalled browser, ``tabs.list`` was empty afterwards): the tab becomes crashed
        (``ended``; generation bumped, refs invalidated, its pending work answered as after a crash) and its
        page is closed in the background without unload handlers, its renderer going with it.
        ``tab.navigate`` gives the tab a fresh page under the same id, ``tabs.close`` closes it. False when
        there is no such live tab."""
        tab = self.get(tab_id)
        if tab is None or tab.crashed:
            return False
        page = tab.page
        self._let_go.add(id(page))
        tab.generation += 1
        tab.crashed = tab.ended = True
        for part in self.renderer.parts:
            part.crashed(tab)
        self.renderer.log(
            f"ended the page of tab {tab.tab_id}: its script did not stop; the tab stays "
            "(tab.navigate gives it a fresh page, tabs.close closes it)"
        )
        self.renderer.events.refs_invalidated(tab.tab_id)
        self.renderer.tell_gone(tab.tab_id)

        self.renderer.spawn(quiet(page.close(run_before_unload=False)))
        return True

    # ----------------------------------------------------------------- births
    def on_page(self, page: Page) -> None:
        """The context's ``page`` event: a new page is a tab, unless the host is making one, or it is a
        popup past its opener's ``--max-popups`` (:meth:`_adopt_born`). Playwright tells the opener's
        ``popup`` event right after this one, so the decision waits one turn of the loop for it."""
        if not self._making:
            asyncio.get_running_loop().call_soon(self._adopt_born, page)
            return
        # The host is making a page (new_page): this may be it (its maker binds it), one born with a
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

    async def new_page(self, purpose: str) -> Page:
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
            self.renderer.log(
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
        context = self.renderer.context
        assert context is not None
        loop = asyncio.get_running_loop()
        if self._birth_died is None or self._birth_died.done():
            self._birth_died = loop.create_future()
        died = self._birth_died
        before = set(self._born)
        making = asyncio.ensure_future(context.new_page())
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
                self.renderer.spawn(quiet(page.close(run_before_unload=False)))

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
                self.renderer.spawn(quiet(page.close(run_before_unload=False)))
            else:
                self._adopt_born(page)

    def _adopt_born(self, page: Page) -> None:
        """A page the browser opened (not the host) becomes a tab — unless it is a popup and its opener
        has :attr:`max_popups` popups open already: then it is closed at once, without unload handlers,
        and counted on the opener (``popupsClosed`` in ``get-tabs``; one log line when a tab first passes
        the cap). A click that opened 200 windows kept the browser busy making tabs until the click
        timed out and the host closed the agent's tab (issue 27)."""
        opener = self._popup_of.pop(id(page), None)
        if page.is_closed() or id(page) in self._by_page:
            return
        if opener is not None and self._tabs.get(opener.tab_id) is opener:
            open_now = sum(1 for o in self._opener_of.values() if o == opener.tab_id)
            if open_now >= self.max_popups:
                opener.popups_closed += 1
                if opener.popups_closed == 1:
                    self.renderer.log(
                        f"tab {opener.tab_id} opened more than {self.max_popups} popups (--max-popups): "
                        "the rest are closed as they open (tabs.list counts them: popupsClosed)"
                    )
                self.renderer.spawn(quiet(page.close(run_before_unload=False)))
                return
            tab = self.adopt(page)
            self._opener_of[tab.tab_id] = opener.tab_id
            return
        self.adopt(page)
