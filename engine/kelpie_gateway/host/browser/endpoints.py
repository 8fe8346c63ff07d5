"""The built-in endpoints of the Chromium renderer: tabs, navigation and the screenshot (CONTRACT.md §3;
docs/host.md "Native endpoints", "Navigate: load, then the first layout").

| endpoint | what it does |
|---|---|
| ``get-tabs`` | every tab: ``tabId``, ``generation``, ``url``, ``title``, ``active``, ``crashed`` |
| ``switch-tab`` | ``page.bring_to_front()``; the tab becomes the selected one |
| ``new-tab`` | a new page (selected), then ``goto(url, wait_until="load")`` and the first layout |
| ``close-tab`` | ``page.close()`` |
| ``navigate`` | ``goto(url, wait_until="load")`` (a crashed tab first gets a fresh page), then the first layout; a navigation that ends in a download answers at once with ``download`` (the downloads part's object) |
| ``screenshot`` | viewport PNG; ``width``/``height`` read from the PNG header |

``browser-control-evaluate`` is the isolated world's (``world.py``). A call naming no tab acts on the
selected one; an unknown tab is ``TAB_NOT_FOUND`` and a crashed one ``RENDERER_FAILED`` (``switch-tab``,
``close-tab`` and ``navigate`` take a crashed tab), both with nothing run.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import struct
from collections.abc import Mapping
from typing import Any, Final

from playwright.async_api import Error as PlaywrightError

from kelpie_gateway import WORLD_NAME
from kelpie_gateway.host.renderer import JsonObject, PageNotMade, fail

from .chromium import Part, endpoint
from .common import Tab, deadline, playwright_timeout, quiet, short
from .world import World

FIRST_LAYOUT = "void (document.documentElement && document.documentElement.getBoundingClientRect())"
"""Run in the tab's world once a navigation reached ``load``: it waits behind a rendering update Chromium
already queued for the new document, or else makes the document's style and layout itself. Either way the
first rendering of a loaded document is paid by ``tab.navigate`` (or ``tabs.open`` with a url), never by
whichever call comes next (docs/host.md "Navigate: load, then the first layout")."""
FIRST_LAYOUT_MARGIN_S = 0.5
"""How much of a navigation's ``timeoutMs`` the first-layout wait leaves unused, so that a document busy
after ``load`` still gets its navigation answered (as loaded) before the gateway's deadline."""
DOWNLOAD_EVENT_PATIENCE_S = 1.0
"""After ``goto`` failed, how long its ``download`` event may take to arrive (Playwright rejects ``goto`` with
"Download is starting" and tells the page's ``download`` event separately)."""
DOWNLOAD_BEGUN: Final = {"state": "in-progress"}
"""What ``navigate`` answers as ``download`` when the navigation ended in a download: the downloads part
(``extensions/downloads.py``) replaces it with that download's own object (``{id, name, state, bytes?,
sha256?, mimeType, resource, url, tabId}``); only a renderer without that part answers it as it is."""


def _swallow(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome (its error is expected and nobody waits for it)."""
    if not future.cancelled():
        future.exception()


class TabEndpoints(Part):
    """The built-in endpoints of the module docstring."""

    @endpoint("get-tabs")
    async def get_tabs(self, params: Mapping[str, Any]) -> JsonObject:
        tabs = []
        listed = list(self.renderer.pages)
        # At once, not one after the other: each title read waits (at most 2 s) for a renderer that may be
        # busy (a page opening windows: 21 tabs read in turn could take 42 s, past tabs.list's deadline).
        titles = await asyncio.gather(*(self._title(tab) for tab in listed))
        for tab, title in zip(listed, titles, strict=True):
            tabs.append(
                {
                    "tabId": tab.tab_id,
                    "generation": tab.generation,
                    "url": tab.page.url,
                    "title": title,
                    "active": tab.tab_id == self.renderer.pages.selected,
                    "crashed": tab.crashed,
                    **({"popupsClosed": tab.popups_closed} if tab.popups_closed else {}),
                }
            )
        return {"success": True, "tabs": tabs}

    @staticmethod
    async def _title(tab: Tab) -> str:
        if tab.dialog is None and not tab.crashed:
            with contextlib.suppress(Exception):
                tab.title = await asyncio.wait_for(tab.page.title(), 2.0)
        return tab.title

    @endpoint("switch-tab")
    async def switch_tab(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self.renderer.pages.named(params, live=False)
        await tab.page.bring_to_front()
        self.renderer.pages.selected = tab.tab_id
        return {"success": True, "tabId": tab.tab_id, "generation": tab.generation}

    @endpoint("new-tab")
    async def new_tab(self, params: Mapping[str, Any]) -> JsonObject:
        pages = self.renderer.pages
        until = deadline(params)
        try:
            page = await pages.new_page("a new tab")
        except PageNotMade as exc:  # every page it made was closed: no tab was opened
            return fail("RENDERER_FAILED", f"{exc}; no tab was opened: try again", mayHaveCompleted=False)
        tab = pages.adopt(page)
        pages.selected = tab.tab_id
        await pages.ready(tab)
        url = params.get("url")
        opened = isinstance(url, str) and url and url != "about:blank"
        answer: JsonObject = {"success": True, "tabId": tab.tab_id, "generation": tab.generation}
        if opened:
            if await self._goto_or_download(tab, str(url), params):  # a download: the tab stays blank
                answer["download"] = dict(DOWNLOAD_BEGUN)
            else:
                await self._first_layout(tab, until)
        return answer

    @endpoint("close-tab")
    async def close_tab(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self.renderer.pages.named(params, live=False)
        if tab.crashed:
            with contextlib.suppress(Exception):
                await tab.page.close(run_before_unload=False)
        else:
            await tab.page.close()
        self.renderer.pages.on_close(tab)
        return {"success": True}

    @endpoint("navigate")
    async def navigate(self, params: Mapping[str, Any]) -> JsonObject:
        until = deadline(params)  # before a crashed tab's revival: it counts against timeoutMs too
        tab = self.renderer.pages.named(params, live=False)
        url = params.get("url")
        if not isinstance(url, str):
            return fail("RENDERER_FAILED", "navigate needs a url", mayHaveCompleted=False)
        if tab.crashed or tab.frame_crashed:  # Playwright cannot navigate a page it believes crashed
            try:
                await self.renderer.pages.revive(tab)
            except (PlaywrightError, PageNotMade) as exc:  # before the navigation: nothing of it ran
                return fail(
                    "RENDERER_FAILED",
                    f"tab {tab.tab_id} crashed and could not be given a new page ({short(exc)}); "
                    "tab.navigate tries again, tabs.close closes it",
                    mayHaveCompleted=False,
                )
        if await self._goto_or_download(tab, url, params):
            return {
                "success": True,
                "tabId": tab.tab_id,
                "generation": tab.generation,
                "url": tab.page.url,
                "download": dict(DOWNLOAD_BEGUN),  # the downloads part puts its record here
            }
        await self._first_layout(tab, until)
        return {"success": True, "tabId": tab.tab_id, "generation": tab.generation, "url": tab.page.url}

    async def _goto_or_download(self, tab: Tab, url: str, params: Mapping[str, Any]) -> bool:
        """``goto(url, wait_until="load")``, answered early when the tab starts a download first (the URL
        is itself one, or the page starts one while it loads): True then. Issue 27: Playwright's ``goto``
        failed with "Download is starting" for the first and waited out its whole timeout for the second.
        What becomes of the file is the downloads part's (issue 32); the goto still running is abandoned
        (its answer is dropped). Playwright errors other than the download's propagate as before."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()

        def on_download(_download: Any) -> None:
            if not started.done():
                started.set_result(None)

        page = tab.page
        page.on("download", on_download)
        goto = asyncio.ensure_future(page.goto(url, wait_until="load", timeout=playwright_timeout(params)))
        try:
            first: set[asyncio.Future[Any]] = {goto, started}
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if not started.done() and goto.done() and goto.exception() is not None:
                # "Download is starting": the download event may come a moment after goto's error.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(started), DOWNLOAD_EVENT_PATIENCE_S)
            if started.done():
                if not goto.done():
                    goto.cancel()
                goto.add_done_callback(_swallow)
                return True
            await goto
            return False
        finally:
            page.remove_listener("download", on_download)

    async def _first_layout(self, tab: Tab, until: float) -> None:
        """After ``load``: wait until the document has had its first style and layout (:data:`FIRST_LAYOUT`),
        bounded by the navigation's deadline (``until``, loop time) less :data:`FIRST_LAYOUT_MARGIN_S`.
        Best effort: a document still busy then, a JavaScript dialog open or opening (it blocks the
        renderer until someone answers it: the caller must get the navigation's answer to do that), or a
        world that cannot be had, leaves the navigation answered as loaded, and the layout to whichever
        call comes next, as before."""
        loop = asyncio.get_running_loop()
        left = until - FIRST_LAYOUT_MARGIN_S - loop.time()
        world = self.renderer.part(World)
        if left <= 0 or tab.crashed or tab.dialog is not None or world is None:
            return

        async def lay_out() -> None:
            document = await world.world(tab, WORLD_NAME)
            await document.cdp.send(
                "Runtime.evaluate",
                {"expression": FIRST_LAYOUT, "contextId": document.context_id, "returnByValue": True},
            )

        waited = self.renderer.spawn(quiet(lay_out()))  # may finish after us (busy page, dialog)
        dialog: asyncio.Future[None] = loop.create_future()
        tab.dialog_waiters.add(dialog)
        try:
            await asyncio.wait({waited, dialog}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            tab.dialog_waiters.discard(dialog)
            dialog.cancel()

    @endpoint("screenshot")
    async def screenshot(self, params: Mapping[str, Any]) -> JsonObject:
        tab = self.renderer.pages.named(params)
        png = await tab.page.screenshot(type="png", full_page=False, timeout=playwright_timeout(params))
        width, height = struct.unpack(">II", png[16:24])  # PNG IHDR
        return {
            "success": True,
            "mimeType": "image/png",
            "data": base64.b64encode(png).decode("ascii"),
            "width": width,
            "height": height,
        }
