"""One browser context of the host: made on the host's browser, made again after the browser came back,
closed (docs/host.md "Browser", "Liveness", "Parallel agents"; CONTRACT.md §5 v1.1).

The browser itself (launch, attach, connect, relaunch, reconnect) is the :class:`~.link.BrowserLink`'s; a
host has one. A :class:`Lifecycle` is one renderer's context on it: with ``--isolation shared`` the host has
one renderer, with ``per-client`` one per client, all on the same link. Every context is made by
:func:`new_context` — the one place, given the context's :class:`ContextOptions` (what a per-context
setting such as the site policy's network settings plugs into):

* on a persistent profile (``--user-data-dir``) the context is the profile's own (its first window's page
  is the first tab);
* attached over CDP with ``shared`` isolation, the browser's default context (its open pages become tabs,
  the host opens the first URL in a new one) — unless the context has a proxy (below): a running browser's
  default context cannot be given one, so the host works in a context of its own;
* otherwise a new context (``browser.new_context``: own cookies, storage, cache and permissions), its first
  tab opening the first URL.

The site policy (``host/policy.py``, docs/host.md "Site policy") plugs in here. With a restrictive policy
and a browser that can reach the host's loopback (``BrowserLink.reaches_proxy``) every context's
``playwright`` options carry ``proxy`` (:func:`~.link.context_proxy`: the policy proxy, no loopback
bypass), on top of the launch flags a launched browser has (``link.proxy_flags``); the persistent profile's
context has the flags only. A browser on another machine cannot reach that proxy: its contexts are made
with ``route`` and the routing part (``routing.py``) applies the policy to the requests the context's
routing sees.

When the browser goes away every tab is reported closed and the event sink hears ``renderer_gone(None)``;
when it is back the context is made again at once (new tabs, every ref invalidated, one log line), and a
call meanwhile waits for it through :meth:`Lifecycle.available` within its own deadline — or is answered
``BROWSER_UNAVAILABLE`` with ``mayHaveCompleted:false``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from playwright.async_api import BrowserContext

from kelpie_gateway.host.renderer import JsonObject, fail

from .common import TabHooks
from .link import (
    CHROMIUM_FLAGS,
    DEFAULT_CHROMIUM,
    PROXY_BYPASS,
    VIEWPORT,
    BrowserLink,
    BrowserStartError,
    find_chromium,
    proxy_flags,
)
from .pages import Pages

__all__ = [
    "CHROMIUM_FLAGS",
    "DEFAULT_CHROMIUM",
    "PROXY_BYPASS",
    "VIEWPORT",
    "ContextOptions",
    "Lifecycle",
    "find_chromium",
    "new_context",
    "proxy_flags",
]


@dataclass(frozen=True)
class ContextOptions:
    """What one browser context is made with (:func:`new_context`).

    ``viewport``: CSS pixels. ``shared``: the host's one context (``--isolation shared``): on an attached
    browser that is its default context. ``playwright``: further ``browser.new_context`` keyword arguments
    of this context: the site policy's ``proxy`` (``link.context_proxy``) when the browser can reach it.
    ``route``: the site policy is applied by the context's request routing (``routing.py``: a browser on
    another machine, which cannot reach the policy proxy)."""

    viewport: Mapping[str, int] = field(default_factory=lambda: dict(VIEWPORT))
    shared: bool = True
    playwright: Mapping[str, Any] = field(default_factory=dict)
    route: bool = False


async def new_context(link: BrowserLink, options: ContextOptions) -> tuple[BrowserContext, bool]:
    """The one place the host makes a browser context (see the module docstring): ``(context, owned)``;
    ``owned`` False for a context this renderer must not close (the persistent profile's, closed with the
    browser; an attached browser's default one, the user's). Raises PlaywrightError or RuntimeError."""
    if link.persistent is not None:
        return link.persistent, False
    browser = link.browser
    if browser is None:
        raise RuntimeError("no browser")
    if link.attached and options.shared and browser.contexts and "proxy" not in options.playwright:
        return browser.contexts[0], False
    context = await browser.new_context(
        viewport=dict(options.viewport),  # type: ignore[arg-type]
        **dict(options.playwright),
    )
    return context, True


class LifecycleOwner(Protocol):
    """What the lifecycle needs from its renderer."""

    log: Callable[[str], None]

    @property
    def parts(self) -> Sequence[TabHooks]: ...

    @property
    def pages(self) -> Pages: ...

    def spawn(self, aw: Awaitable[Any]) -> asyncio.Future[Any]: ...

    def tell_gone(self, tab_id: str | None) -> None: ...


class Lifecycle:
    """The browser context of a renderer (``ChromiumRenderer``) on the host's :class:`BrowserLink`.
    ``own_link``: the renderer started the link and closes it with itself (one renderer, one browser)."""

    def __init__(
        self,
        renderer: LifecycleOwner,
        link: BrowserLink,
        *,
        options: ContextOptions,
        own_link: bool = False,
    ) -> None:
        self.renderer = renderer
        self.link = link
        self.options = options
        self.own_link = own_link
        self.context: BrowserContext | None = None
        self._owned = False
        self._made_on = 0  # the link generation the context was made on
        self._first_url: str | None = None
        self._started = False
        self._closing = False
        self._reopening: asyncio.Future[JsonObject | None] | None = None

    @property
    def description(self) -> str:
        return self.link.description

    @property
    def lost(self) -> bool:
        """The browser (or this context) is gone and not back yet."""
        return self.link.lost or (self._started and self.context is None)

    async def start(self, first_url: str | None) -> None:
        """Make the context and open ``first_url`` in its first tab (the link is started first when this
        renderer owns it; a link that is down is waited for). Raises :class:`BrowserStartError` when it
        cannot (the message is safe to print: no secret)."""
        self._first_url = first_url
        self.link.listen(self)
        if self.own_link and not self.link.started:
            await self.link.start()
        coming = self.link.available()
        if coming is not None:
            refused = await coming
            if refused is not None:
                raise BrowserStartError(refused["error"]["message"])
        try:
            await self._open()
        except Exception as exc:
            raise BrowserStartError(self.link.why(exc, 300)) from None
        self._started = True

    async def _open(self) -> None:
        context, owned = await new_context(self.link, self.options)
        self.context, self._owned, self._made_on = context, owned, self.link.generation
        for part in self.renderer.parts:
            await part.launched(context)
        pages = self.renderer.pages
        context.on("page", pages.on_page)
        existing = [pages.adopt(page) for page in context.pages]
        # A persistent profile's first window is the first tab; else (an attached browser too) a new page.
        first_is_tab = existing and self.link.persistent is not None
        tab = existing[0] if first_is_tab else pages.adopt(await context.new_page())
        pages.selected = tab.tab_id
        await pages.ready(tab)
        if self._first_url:
            await tab.page.goto(self._first_url, wait_until="load")

    # ----------------------------------------------------------------- the link's events (LinkListener)
    def browser_lost(self) -> None:
        """Every tab is reported closed (before its pending work is cancelled, so nothing is left to
        reconcile), then the sink hears ``renderer_gone(None)``."""
        if self.context is None:
            return
        self.context = None
        self.renderer.pages.forget_all()
        self.renderer.tell_gone(None)

    def browser_back(self) -> None:
        """Make the context again at once, so the next call finds its tabs."""
        if self._started and not self._closing:
            self._reopen()

    def _reopen(self) -> asyncio.Future[JsonObject | None]:
        if self._reopening is None or self._reopening.done():
            self._reopening = asyncio.ensure_future(self._make_again())
            self._reopening.add_done_callback(lambda done: done.cancelled() or done.exception())
        return self._reopening

    async def _make_again(self) -> JsonObject | None:
        if self.context is not None and self._made_on == self.link.generation:
            return None
        try:
            await self._open()
        except Exception as exc:
            self.context = None
            why = self.link.why(exc)
            self.renderer.log(f"browser context could not be made again: {why}")
            return fail(
                "BROWSER_UNAVAILABLE",
                f"the browser came back but this client's browser context could not be made again ({why}); "
                "nothing was run; the next call tries again",
                mayHaveCompleted=False,
            )
        self.renderer.log(
            f"browser context made again: new tabs {', '.join(self.renderer.pages.ids())}, refs invalidated"
        )
        return None

    def available(self) -> Awaitable[JsonObject | None] | None:
        """See ``Renderer.available``: None while the browser and this context are there; else what brings
        them back (the link's relaunch or reconnect, then this context made again)."""
        if self.link.lost:
            return self._after_link(self.link.available())
        if self._reopening is not None and not self._reopening.done():  # its first tab is not there yet
            return asyncio.shield(self._reopening)
        if self._started and (self.context is None or self._made_on != self.link.generation):
            return asyncio.shield(self._reopen())
        return None

    async def _after_link(self, coming: Awaitable[JsonObject | None] | None) -> JsonObject | None:
        if coming is not None:
            refused = await coming
            if refused is not None:
                return refused
        opening = self._reopening is not None and not self._reopening.done()
        if opening or self.context is None or self._made_on != self.link.generation:
            return await asyncio.shield(self._reopen())
        return None

    async def close(self) -> None:
        """Close this context (when it is this renderer's: not a persistent profile's, not an attached
        browser's default one), then the link when this renderer owns it. Never raises."""
        self._closing = True
        self.link.forget(self)
        if self._reopening is not None and not self._reopening.done():
            self._reopening.cancel()
        context, self.context = self.context, None
        if context is not None and self._owned:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(context.close(), 10.0)
        if self.own_link:
            await self.link.close()
