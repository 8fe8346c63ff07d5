"""The main-frame navigations that failed, per tab, for the site policy (docs/host.md "Site policy").

A redirect to a refused ``https:`` origin fails in the browser with ``net::ERR_TUNNEL_CONNECTION_FAILED``
and the tab never commits the refused URL, so a navigation's result cannot name it from the tab's URL.
With a restrictive policy this part listens to the context's failed requests and remembers, per tab, the
URL of the last main-frame navigation request that failed; ``PolicyRenderer`` (``host/policy.py``) asks the
policy's proxy whether it refused that URL, to answer ``NOT_AUTHORIZED`` naming its origin. Playwright
reports only failures for it (no cost per successful request); with the default policy nothing listens.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from playwright.async_api import BrowserContext, Request

from .chromium import Part
from .common import state_of

ERROR_PAGE = "chrome-error://"
ERROR_PAGE_WAIT_S = 2.0
"""How long a refused navigation's answer waits for the browser's error page to commit."""


@dataclass
class _Failed:
    at: float = -1.0
    url: str = ""


class PolicyStops(Part):
    """See the module docstring."""

    async def launched(self, context: BrowserContext) -> None:
        policy = self.renderer.policy
        if policy is not None and policy.restrictive:
            context.on("requestfailed", self._failed)

    def _failed(self, request: Request) -> None:
        try:  # a worker's request has no frame
            frame = request.frame
            main = request.is_navigation_request() and frame.parent_frame is None
            page = frame.page
        except Exception:
            return
        tab = self.renderer.pages.of_page(page) if main else None
        if tab is not None:
            failed = state_of(tab, _Failed)
            failed.at, failed.url = time.monotonic(), request.url

    async def error_page_shown(self, tab_id: str | None) -> None:
        """Wait, at most :data:`ERROR_PAGE_WAIT_S`, until the tab's main frame shows the browser's error page
        (it commits after the navigation's failure is reported; a navigation started before would be
        interrupted by it)."""
        pages = self.renderer.pages
        tab = pages.get(tab_id) if tab_id is not None else pages.newest()
        if tab is None or tab.page.url.startswith(ERROR_PAGE):
            return
        with contextlib.suppress(Exception):
            await tab.page.wait_for_url(
                lambda url: url.startswith(ERROR_PAGE), timeout=ERROR_PAGE_WAIT_S * 1000
            )

    def failed_since(self, tab_id: str | None, since: float) -> str | None:
        """The URL at which the main-frame navigation of ``tab_id`` (None: the newest tab) failed after
        ``since`` (``time.monotonic()``), else None."""
        pages = self.renderer.pages
        tab = pages.get(tab_id) if tab_id is not None else pages.newest()
        if tab is None:
            return None
        failed = state_of(tab, _Failed)
        return failed.url if failed.at >= since else None
