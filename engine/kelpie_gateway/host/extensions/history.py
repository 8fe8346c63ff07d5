"""History: ``go_back`` / ``go_forward`` move one entry in the tab's history like the browser's buttons,
waiting for ``load`` (at most 9 s); with no entry to move to, ``moved:false`` and nothing happens
(docs/host.md "Rich extensions")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kelpie_gateway import redact_url
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import STEP_TIMEOUT_MS, TAB, Extension, schema


class History(Extension):
    """``go_back`` and ``go_forward``: ``{tabId}`` → ``{tabId, generation, url, moved}``."""

    @endpoint(
        {
            "name": "go_back",
            "method": "go-back",
            "description": "Go back one entry in the tab's history (like the Back button). moved:false when there "
            "is no earlier entry. Refs of the tab are invalidated.",
            "inputSchema": schema({"tabId": TAB}, ["tabId"]),
            "mutates": True,
        }
    )
    async def go_back(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._move(params, -1)

    @endpoint(
        {
            "name": "go_forward",
            "method": "go-forward",
            "description": "Go forward one entry in the tab's history (like the Forward button). moved:false when "
            "there is no later entry. Refs of the tab are invalidated.",
            "inputSchema": schema({"tabId": TAB}, ["tabId"]),
            "mutates": True,
        }
    )
    async def go_forward(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._move(params, +1)

    async def _move(self, params: Mapping[str, Any], delta: int) -> JsonObject:
        tab = self.tab(params)
        if tab.frame_crashed:  # Playwright refuses to move a page it believes crashed (docs/host.md "Frames")
            return fail(
                "RENDERER_FAILED",
                f"a frame's renderer crashed in tab {tab.tab_id}, and its history cannot be moved; "
                "tab.navigate gives the tab a fresh page",
                mayHaveCompleted=False,
            )
        tab_id, page = tab.tab_id, tab.page
        context = self.renderer.context
        assert context is not None
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
        for listed in tabs.get("tabs", []):
            if listed.get("tabId") == tab_id:
                return {
                    "success": True,
                    "tabId": tab_id,
                    "generation": listed["generation"],
                    "url": redact_url(listed["url"]),  # the engine passes extension results as they are
                    "moved": moved,
                }
        return fail("TAB_NOT_FOUND", f"tab {tab_id!r} closed while moving in its history")
