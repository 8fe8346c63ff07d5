"""The site policy in the browser: the part that routes the browser's requests through the policy
(``host/policy.py``; docs/host.md "Site policy").

With a restrictive policy (the renderer's ``guard``), ``context.route`` aborts (and logs) every request's
first hop to a refused origin — subframes, ``window.open`` popups, subresources — and each tab gets the
guard's CDP ``Fetch`` interception, which sees redirect hops, before it navigates. With the default policy
nothing is routed (no cost per request).
"""

from __future__ import annotations

import asyncio
import contextlib

from playwright.async_api import BrowserContext, Page, Route

from .chromium import Part
from .common import Tab


class SiteRouting(Part):
    """See the module docstring."""

    async def launched(self, context: BrowserContext) -> None:
        if self.renderer.guard is not None:
            await context.route("**/*", self._route)

    def attached(self, tab: Tab) -> None:
        guard, context = self.renderer.guard, self.renderer.context
        if guard is not None and context is not None:
            attached = asyncio.ensure_future(guard.attach(context, tab.page, tab.tab_id))
            attached.add_done_callback(lambda done: done.cancelled() or done.exception())
            tab.pending.append(attached)

    async def _route(self, route: Route) -> None:
        """The site policy on every request's first hop (redirect hops: the tab's guard)."""
        guard = self.renderer.guard
        assert guard is not None
        request = route.request
        reason = guard.policy.refusal(request.url)
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
        tab = self.renderer.pages.of_page(page)
        if page is not None:
            guard.note_blocked(page, tab.tab_id if tab else "?", kind, request.url, reason)
