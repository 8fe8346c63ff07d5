"""The browser's lifecycle: launch, attach, relaunch after an exit, close (docs/host.md "Browser",
"Liveness"; CONTRACT.md §5 v1.1).

Three ways to get a browser (issue 14): launch Chromium with a temporary profile (default; ``headless``
False for ``--headed``), launch it on a persistent profile (``user_data_dir``: its first window's page is the
first tab), or attach over CDP to a Chromium already running (``cdp_endpoint``: its open pages become tabs,
the host opens the first URL in a new one, and :meth:`Lifecycle.close` only disconnects).

If Chromium exits, every tab is reported closed, the event sink hears ``renderer_gone(None)``, and the
relaunch starts at once; the next call waits for it through :meth:`Lifecycle.available` (new tabs, every ref
invalidated, one log line), within the call's own deadline, or is answered ``BROWSER_UNAVAILABLE`` with
``mayHaveCompleted:false`` when Chromium cannot be started or is not back by then (each later call tries
again, after :data:`RELAUNCH_BACKOFF_S`). An attached browser is never started by the host: it is
reattached at the same endpoint instead, and until it answers there again every call is
``BROWSER_UNAVAILABLE``.

With a restrictive site policy (``proxy``: the policy proxy's server, ``host/policy_proxy.py``) every request
of the browser goes through that proxy: a launched Chromium gets :func:`proxy_flags` (``--proxy-server``,
no bypass for loopback, WebRTC without UDP that is not proxied); an attached one cannot be given flags, so
the host works in a browser context of its own whose ``proxy`` is the same server (its own tabs only: the
attached browser's other tabs are not under the policy and are not adopted; docs/host.md "Site policy").
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway.host.renderer import JsonObject, fail

from .common import TabHooks, short
from .pages import Pages

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
DEFAULT_CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
PROXY_BYPASS = "<-loopback>"
"""Chromium's proxy bypass list under a policy: ``<-loopback>`` removes loopback from the implicit bypass
list, so requests to ``127.0.0.0/8``, ``localhost`` and ``[::1]`` go through the proxy too."""
RELAUNCH_BACKOFF_S = 5.0
"""After a failed relaunch, requests within this many seconds get BROWSER_UNAVAILABLE at once."""


def find_chromium(explicit: str | None) -> str | None:
    """The executable to launch: ``explicit``, else ``/usr/bin/chromium`` if present, else None (Playwright's)."""
    if explicit:
        return explicit
    if shutil.which(DEFAULT_CHROMIUM):
        return DEFAULT_CHROMIUM
    return None


def proxy_flags(proxy: str) -> list[str]:
    """Chromium's flags for a browser whose every request goes through ``proxy`` (``http://127.0.0.1:PORT``):
    no direct connection to anything, loopback included, and WebRTC's UDP off (ICE only through the proxy,
    which takes no UDP: ``disable_non_proxied_udp``)."""
    return [
        f"--proxy-server={proxy}",
        f"--proxy-bypass-list={PROXY_BYPASS}",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]


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
    """The Playwright driver, the browser and its one context of a renderer (``ChromiumRenderer``)."""

    def __init__(
        self,
        renderer: LifecycleOwner,
        *,
        executable: str | None,
        viewport: Mapping[str, int] | None,
        headless: bool,
        user_data_dir: str | None,
        cdp_endpoint: str | None,
        proxy: str | None = None,
    ) -> None:
        self.renderer = renderer
        self.proxy = proxy
        self.executable = executable
        self.viewport = dict(viewport or VIEWPORT)  # serve --viewport WxH
        self.headless = headless
        self.user_data_dir = user_data_dir
        self.cdp_endpoint = cdp_endpoint
        self.description = "chromium"
        self.context: BrowserContext | None = None
        self.lost = False
        """The browser exited (or went away) and is not back yet."""
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._first_url: str | None = None
        self._closing = False
        self._relaunch_lock = asyncio.Lock()
        self._relaunch_failed: tuple[float, str] | None = None  # (loop time, why) of the last failed launch

    async def start(self, first_url: str | None) -> None:
        """Start the browser (one of the three ways of the module docstring) and open ``first_url`` in the
        first tab."""
        self._first_url = first_url
        self._pw = await async_playwright().start()
        await self._launch()

    async def _launch(self) -> None:
        assert self._pw is not None
        chromium = self._pw.chromium
        flags = [*CHROMIUM_FLAGS, *(proxy_flags(self.proxy) if self.proxy else ())]
        options: dict[str, Any] = {"headless": self.headless, "args": flags}
        if self.executable:
            options["executable_path"] = self.executable
        where = self.executable or "playwright-managed"
        if self.cdp_endpoint:
            self._browser = await chromium.connect_over_cdp(self.cdp_endpoint)
            contexts = self._browser.contexts
            if self.proxy:  # flags cannot be given to a running browser: a proxied context of our own
                self.context = await self._browser.new_context(
                    proxy={"server": self.proxy, "bypass": PROXY_BYPASS},
                    viewport=self.viewport,  # type: ignore[arg-type]
                )
            else:
                self.context = contexts[0] if contexts else await self._browser.new_context()
            where = f"attached over CDP at {self.cdp_endpoint}; never closed by this host"
            if self.proxy:
                where += "; in a context of its own, through the site policy's proxy"
        elif self.user_data_dir:
            self.context = await chromium.launch_persistent_context(
                self.user_data_dir,
                viewport=self.viewport,  # type: ignore[arg-type]
                **options,
            )
            self._browser = self.context.browser
            where += f"; profile {self.user_data_dir}"
        else:
            self._browser = await chromium.launch(**options)
            self.context = await self._browser.new_context(viewport=self.viewport)  # type: ignore[arg-type]
        version = self._browser.version if self._browser is not None else "?"
        mode = "attached" if self.cdp_endpoint else "headless" if self.headless else "headed"
        self.description = f"chromium {version} {mode} ({where})"
        if self._browser is not None:
            browser = self._browser
            browser.on("disconnected", lambda _b: self._on_disconnected(browser))
        context = self.context
        for part in self.renderer.parts:
            await part.launched(context)
        pages = self.renderer.pages
        context.on("page", pages.on_page)
        existing = [pages.adopt(page) for page in context.pages]
        # A persistent profile's first window is the first tab; else (an attached browser too) a new page.
        tab = existing[0] if existing and not self.cdp_endpoint else pages.adopt(await context.new_page())
        pages.selected = tab.tab_id
        await pages.ready(tab)
        if self._first_url:
            await tab.page.goto(self._first_url, wait_until="load")

    def _on_disconnected(self, browser: Browser) -> None:
        if self._closing or browser is not self._browser:
            return
        self.lost = True
        log = self.renderer.log
        if self.cdp_endpoint:
            log(
                f"attached browser at {self.cdp_endpoint} went away: pending work retired; this host does not "
                "start it, and reattaches when it answers there again (each request tries)"
            )
        else:
            log("browser exited: pending work retired; relaunching it (the next request waits for it)")
        self.renderer.pages.forget_all()
        self.renderer.tell_gone(None)
        # Start at once so the next request finds a browser; if this fails, the next request tries again.
        self.renderer.spawn(self._relaunch(eager=True))

    async def _relaunch(self, *, eager: bool = False) -> JsonObject | None:
        """After a browser exit: launch Chromium again (None), or a BROWSER_UNAVAILABLE result. A request
        arriving within :data:`RELAUNCH_BACKOFF_S` of a failed attempt is answered at once, not made to
        wait for another launch that would fail the same way; later requests try again."""
        loop = asyncio.get_running_loop()
        log = self.renderer.log
        async with self._relaunch_lock:
            if not self.lost:
                return None
            failed = self._relaunch_failed
            if not eager and failed is not None and loop.time() - failed[0] < RELAUNCH_BACKOFF_S:
                return self._unavailable(failed[1])
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
                why = f"{type(exc).__name__}: {short(exc, 200)}"
                self._relaunch_failed = (loop.time(), why)
                log(f"browser {'reattach' if self.cdp_endpoint else 'relaunch'} failed: {why}")
                return self._unavailable(why)
            self.lost = False
            self._relaunch_failed = None
            log(
                f"browser {'reattached' if self.cdp_endpoint else 'relaunched'}: {self.description}; "
                f"new tabs {', '.join(self.renderer.pages.ids())}, refs invalidated"
            )
            return None

    def _unavailable(self, why: str) -> JsonObject:
        if self.cdp_endpoint:  # not ours to start: the user's browser must come back at its endpoint
            message = (
                f"the attached browser at {self.cdp_endpoint} is gone and could not be reattached ({why}); "
                "nothing was run; this host does not start it: the host reattaches once it answers there again"
            )
        else:
            message = f"the browser exited and could not be relaunched ({why}); nothing was run"
        return fail("BROWSER_UNAVAILABLE", message, mayHaveCompleted=False)

    def available(self) -> Awaitable[JsonObject | None] | None:
        """See ``Renderer.available``: None while the browser is up; after it exited, the relaunch (or
        reattach) — the one already under way, or a new attempt, or at once the last failure's answer
        within :data:`RELAUNCH_BACKOFF_S` of it."""
        return self._relaunch() if self.lost else None

    async def close(self) -> None:
        """Close the browser this host launched; an attached one (``cdp_endpoint``) is only disconnected:
        it keeps running with its tabs."""
        self._closing = True
        if not self.cdp_endpoint:
            with contextlib.suppress(Exception):
                if self._browser is not None:
                    await self._browser.close()
                elif self.context is not None:
                    await self.context.close()
        with contextlib.suppress(Exception):
            if self._pw is not None:
                await self._pw.stop()
