"""The site policy in a browser that cannot reach the policy proxy: the context's request routing
(``host/policy.py``; docs/host.md "Site policy", "What holds per browser").

A browser on another machine (``--browser-endpoint`` or ``--cdp-endpoint`` at a non-loopback host) cannot
reach the proxy on this host's loopback, so its contexts are made with ``ContextOptions.route``
(``lifecycle.py``) and this part applies the policy inside the browser, as the host did before the policy
moved to the network: ``context.route`` aborts (``blockedbyclient``) every request Playwright routes whose
URL the policy refuses — main-frame and subframe documents, popups, subresources, dedicated workers'
fetches — and each tab gets CDP ``Fetch`` interception on its own target, which sees redirect hops too
(``route`` does not). Each refusal logs one line naming the kind and the origin, never a path.

What it does not see (the proxy does): requests of out-of-process frames' own targets after a redirect,
shared and service workers' own targets, WebSocket, preconnect/prefetch, and WebRTC (the remote browser's
flags are not this host's). The authorize step still refuses navigations to a refused URL before anything
is dispatched. With a browser that reaches the proxy, or the default policy, this part does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from playwright.async_api import BrowserContext, CDPSession, Page, Route

from kelpie_gateway.host.policy import SitePolicy, origin_text

from .chromium import Part
from .common import Tab, state_of


@dataclass
class _Stopped:
    at: float = -1.0
    url: str = ""


class SiteRouting(Part):
    """See the module docstring. The last main-frame document each tab's routing refused is remembered
    (:meth:`failed_since`) so ``PolicyRenderer`` can name the refused origin of a stopped navigation."""

    def _policy(self) -> SitePolicy | None:
        policy = self.renderer.policy
        on = policy is not None and policy.restrictive and self.renderer.lifecycle.options.route
        return policy if on else None

    async def launched(self, context: BrowserContext) -> None:
        if self._policy() is not None:
            await context.route("**/*", self._route)

    def attached(self, tab: Tab) -> None:
        context = self.renderer.context
        if self._policy() is not None and context is not None:
            attached = asyncio.ensure_future(self._intercept(context, tab))
            attached.add_done_callback(lambda done: done.cancelled() or done.exception())
            tab.pending.append(attached)

    def failed_since(self, tab_id: str | None, since: float) -> str | None:
        """The URL of the main-frame document the routing refused in ``tab_id`` (None: the newest tab) after
        ``since`` (``time.monotonic()``), else None."""
        pages = self.renderer.pages
        tab = pages.newest() if tab_id is None else pages.get(tab_id)
        stopped = state_of(tab, _Stopped) if tab is not None else _Stopped()
        return stopped.url if stopped.at >= since else None

    def _blocked(self, kind: str, url: str, reason: str, tab_id: str) -> None:
        tab = self.renderer.pages.get(tab_id)
        if tab is not None and kind.startswith("document (main frame)"):
            stopped = state_of(tab, _Stopped)
            stopped.at, stopped.url = time.monotonic(), url
        self.renderer.log(f"site policy: blocked {kind} to {origin_text(url)} in tab {tab_id}: {reason}")

    async def _route(self, route: Route) -> None:
        """The site policy on every routed request's first hop (redirect hops: :meth:`_intercept`)."""
        policy = self._policy()
        request = route.request
        reason = policy.refusal(request.url) if policy is not None else None
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
        self._blocked(kind, request.url, reason, tab.tab_id if tab is not None else "?")

    async def _intercept(self, context: BrowserContext, tab: Tab) -> None:
        """CDP ``Fetch`` on the tab's target, every request and redirect hop decided (once per tab)."""
        session = await context.new_cdp_session(tab.page)
        tree = await session.send("Page.getFrameTree")
        main_frame = str(tree["frameTree"]["frame"]["id"])  # the main frame's id is the target's: stable
        tasks: set[asyncio.Future[Any]] = set()

        def paused(event: Mapping[str, Any]) -> None:
            task = asyncio.ensure_future(self._paused(session, tab.tab_id, main_frame, event))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        session.on("Fetch.requestPaused", paused)
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})

    async def _paused(
        self, session: CDPSession, tab_id: str, main_frame: str, event: Mapping[str, Any]
    ) -> None:
        policy = self._policy()
        request_id = event.get("requestId")
        url = str((event.get("request") or {}).get("url", ""))
        reason = policy.refusal(url) if policy is not None else None
        with contextlib.suppress(Exception):  # the tab may be closing: nothing left to decide
            if reason is None:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            await session.send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
            )
        kind = str(event.get("resourceType") or "request").lower()
        if kind == "document":
            kind += " (main frame)" if event.get("frameId") == main_frame else " (subframe)"
        hop = " redirect" if event.get("redirectedRequestId") else ""
        self._blocked(kind + hop, url, reason or "", tab_id)
