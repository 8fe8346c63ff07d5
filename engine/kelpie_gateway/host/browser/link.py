"""The host's one browser: the Playwright driver and the browser every context of the host lives in
(docs/host.md "Browser", "Liveness", "Remote browsers"; CONTRACT.md §5 v1.1).

Four ways to get it (issues 14 and 31):

* launch Chromium with a temporary profile (default; ``headless`` False for ``--headed``);
* launch it on a persistent profile (``user_data_dir``): the profile *is* the one context
  (:attr:`BrowserLink.persistent`), so it cannot be split per client;
* attach over CDP to a Chromium already running (``remote.kind == "cdp"``, ``connect_over_cdp``), on
  loopback or anywhere, with the ``--browser-header`` headers;
* connect to a Playwright browser server (``remote.kind == "playwright"``, ``connect``): ``playwright
  run-server``, a grid or a cloud service; with ``--browser-executable`` the server is asked to launch
  that executable (the ``x-playwright-launch-options`` header) unless a header of that name was given.

A link serves many :class:`LinkListener` (one per browser context, ``lifecycle.py``). When the browser goes
away every listener hears :meth:`LinkListener.browser_lost` at once (its pending work is retired), and:

* a **launched** browser is relaunched at once; a call arriving meanwhile waits for it
  (:meth:`BrowserLink.available`, within its own deadline); after a failed relaunch, calls within
  :data:`RELAUNCH_BACKOFF_S` are answered ``BROWSER_UNAVAILABLE`` at once and a later call tries again;
* a **remote** browser (not the host's to start) is reconnected in the background with capped, jittered
  backoff (:func:`~kelpie_gateway.host.remote.backoff_delay`, from 0.5 s doubling to ``backoff_max_s``),
  each attempt and its outcome logged; a call during an attempt waits for it (within its deadline), any
  other call is answered ``BROWSER_UNAVAILABLE`` (``mayHaveCompleted:false``) at once, saying when the next
  attempt is.

Once the browser is back every listener hears :meth:`LinkListener.browser_back` (it makes its context
again). Nothing the link logs or answers holds a header value or an endpoint's credentials
(:class:`~kelpie_gateway.host.remote.Secrets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from kelpie_gateway.host.discovery import DEFAULT_CHROMIUM as DEFAULT_CHROMIUM
from kelpie_gateway.host.discovery import discover, no_browser_message
from kelpie_gateway.host.discovery import find_chromium as find_chromium
from kelpie_gateway.host.remote import RemoteBrowser, Secrets, backoff_delay
from kelpie_gateway.host.renderer import JsonObject, fail

from .common import short
from .direct import DirectCDP, debugging_flags, free_loopback_port

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
VIEWPORT = {"width": 1280, "height": 800}
PROXY_BYPASS = "<-loopback>"
"""Chromium's proxy bypass list under a policy: ``<-loopback>`` removes loopback from the implicit bypass
list, so requests to ``127.0.0.0/8``, ``localhost`` and ``[::1]`` go through the proxy too."""
RELAUNCH_BACKOFF_S = 5.0
"""After a failed relaunch, requests within this many seconds get BROWSER_UNAVAILABLE at once."""
RECONNECT_INITIAL_S = 0.5
"""A remote browser's first reconnect attempt comes this long (jittered) after it went away."""
CONNECT_TIMEOUT_MS = 15_000
"""How long one attempt to reach a remote browser may take."""
LAUNCH_OPTIONS_HEADER = "x-playwright-launch-options"


def proxy_flags(proxy: str) -> list[str]:
    """Chromium's flags for a browser whose every request goes through ``proxy`` (``http://127.0.0.1:PORT``):
    no direct connection to anything, loopback included, and WebRTC's UDP off (ICE only through the proxy,
    which takes no UDP: ``disable_non_proxied_udp``)."""
    return [
        f"--proxy-server={proxy}",
        f"--proxy-bypass-list={PROXY_BYPASS}",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]


def context_proxy(proxy: str) -> dict[str, str]:
    """A browser context's Playwright ``proxy`` option for the policy proxy ``proxy`` (no loopback bypass)."""
    return {"server": proxy, "bypass": PROXY_BYPASS}


class BrowserStartError(RuntimeError):
    """The browser could not be had at start-up; the message (scrubbed of every secret) says which and why."""


class LinkListener(Protocol):
    """What a browser context hears from its link (on the event loop; neither may raise)."""

    def browser_lost(self) -> None:
        """The browser went away: every tab of the context is gone, its pending work answered at once."""
        ...

    def browser_back(self) -> None:
        """The browser is there again (relaunched, reattached, reconnected): make the context again."""
        ...


class BrowserLink:
    """The Playwright driver and the browser of a host; see the module docstring.

    ``executable``: what to launch (None: Playwright's own); for a Playwright server, what it is asked to
    launch when given explicitly (``explicit_executable``). ``viewport``: the persistent profile's (the
    other contexts set their own). ``backoff_max_s``: the longest wait between reconnect attempts to a
    remote browser. ``rand``: the jitter source (tests may fix it). ``proxy``: the site policy's proxy
    (``http://127.0.0.1:PORT``, a restrictive policy) when the browser can reach it (:attr:`reaches_proxy`):
    a browser this host launches — temporary or persistent profile — gets :func:`proxy_flags`, and a
    Playwright server on this machine is asked to launch with them (its launch-options header); an
    attached browser takes no flags (its contexts get the proxy: ``lifecycle.new_context``).
    ``direct_cdp`` (``--direct-cdp``): a browser this host launches also gets a loopback DevTools endpoint,
    and the host its own connection to it (:attr:`direct`; docs/host.md "Direct CDP")."""

    def __init__(
        self,
        *,
        log: Callable[[str], None],
        executable: str | None = None,
        explicit_executable: bool = False,
        headless: bool = True,
        user_data_dir: str | None = None,
        remote: RemoteBrowser | None = None,
        viewport: Mapping[str, int] | None = None,
        backoff_max_s: float = 30.0,
        rand: Callable[[], float] = random.random,
        proxy: str | None = None,
        direct_cdp: bool = False,
    ) -> None:
        self.log = log
        self.proxy = proxy
        self.direct_cdp = direct_cdp
        self.direct: DirectCDP | None = None
        """The host's own CDP connection to the browser it launched (``direct_cdp``); None without one."""
        self._debugging_port: int | None = None
        self.executable = executable
        self.explicit_executable = explicit_executable
        self.headless = headless
        self.user_data_dir = user_data_dir
        self.remote = remote
        self.viewport = dict(viewport or VIEWPORT)
        self.backoff_max_s = backoff_max_s
        self.rand = rand
        self.secrets = remote.secrets() if remote is not None else Secrets()
        self.description = "chromium"
        self.browser: Browser | None = None
        self.persistent: BrowserContext | None = None
        """The persistent profile's context (``user_data_dir``): the one context there is."""
        self.started = False
        self.lost = False
        """The browser went away and is not back yet."""
        self.generation = 0
        """Bumped on every (re)connect: a context made on an older browser is gone."""
        self._pw: Playwright | None = None
        self._closing = False
        self._listeners: list[LinkListener] = []
        self._relaunch_lock = asyncio.Lock()
        self._relaunch_failed: tuple[float, str] | None = None  # (loop time, why) of the last failed launch
        self._attempt: asyncio.Future[JsonObject | None] | None = None  # a reconnect under way (remote)
        self._next_attempt: float | None = None  # loop time of the next scheduled reconnect (remote)
        self._background: set[asyncio.Future[Any]] = set()

    # ----------------------------------------------------------------- what contexts use
    @property
    def attached(self) -> bool:
        """True when the host attached to a Chromium over CDP (its default context holds the user's pages)."""
        return self.remote is not None and self.remote.kind == "cdp"

    @property
    def launched(self) -> bool:
        """True when the host launched the browser itself (and may start it again)."""
        return self.remote is None

    @property
    def reaches_proxy(self) -> bool:
        """The browser can reach this host's loopback (the site policy's proxy): launched here, or attached
        or connected at a loopback endpoint (``RemoteBrowser.on_this_machine``). False for an endpoint on
        another machine: there the policy is the context's request routing (docs/host.md "Site policy")."""
        return self.remote is None or self.remote.on_this_machine

    def listen(self, listener: LinkListener) -> None:
        if listener not in self._listeners:
            self._listeners.append(listener)

    def forget(self, listener: LinkListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def scrub(self, text: str) -> str:
        """``text`` without a header value or an endpoint credential (see ``remote.Secrets``)."""
        return self.secrets.scrub(text)

    def why(self, exc: BaseException, limit: int = 200) -> str:
        """One line for the log and the client: the exception, scrubbed."""
        return self.scrub(f"{type(exc).__name__}: {short(exc, limit)}")

    def what_it_does(self) -> str:
        """``starts`` or ``reconnects to`` (for messages of calls that found the browser gone)."""
        return "starts" if self.launched else "reconnects to"

    # ----------------------------------------------------------------- start
    async def start(self) -> None:
        """Start the Playwright driver and get the browser (one of the ways of the module docstring).
        Raises :class:`BrowserStartError` (its message scrubbed: safe to print) when it cannot."""
        try:
            self._pw = await async_playwright().start()
            await self._connect()
        except Exception as exc:
            raise BrowserStartError(self.scrub(self._start_failure(exc))) from None
        self.started = True

    def _start_failure(self, exc: BaseException) -> str:
        """What :meth:`start` says when it fails: the cause and, for a browser this host launches, the fix in
        the same sentence (where discovery looked when it found nothing; docs/host.md "Which browser")."""
        if self.remote is not None:
            what = "attached browser" if self.attached else "remote browser"
            return f"the {what} at {self.remote.shown} could not be reached: {self.why(exc, 300)}"
        if self.executable is None:
            return no_browser_message(discover(None))
        return (
            f"{self.executable} could not be started ({self.why(exc, 200)}): run `kelpie-gateway doctor` to "
            "see why, or point --browser-executable or CHROME_PATH at another Chromium or Chrome binary"
        )

    async def _connect(self) -> None:
        assert self._pw is not None
        chromium = self._pw.chromium
        remote = self.remote
        self.persistent = None
        if remote is not None and remote.kind == "cdp":
            self.browser = await chromium.connect_over_cdp(
                remote.endpoint, headers=remote.header_dict() or None, timeout=CONNECT_TIMEOUT_MS
            )
            where = (
                f"attached over CDP at {remote.shown}{remote.describe_headers()}; never closed by this host"
            )
            mode = "attached"
        elif remote is not None:
            headers = remote.header_dict()
            wanted = (self.explicit_executable and self.executable) or self.proxy is not None
            if wanted and LAUNCH_OPTIONS_HEADER not in {h.lower() for h in headers}:
                headers[LAUNCH_OPTIONS_HEADER] = json.dumps(self._launch_options(local=False))
            self.browser = await chromium.connect(
                remote.endpoint, headers=headers or None, timeout=CONNECT_TIMEOUT_MS
            )
            where = f"Playwright server at {remote.shown}{remote.describe_headers()}"
            mode = "remote"
        elif self.user_data_dir:
            self._debugging_port = free_loopback_port() if self.direct_cdp else None
            self.persistent = await chromium.launch_persistent_context(
                self.user_data_dir,
                viewport=self.viewport,  # type: ignore[arg-type]
                **self._launch_options(local=True),
            )
            self.browser = self.persistent.browser
            where = f"{self.executable or 'playwright-managed'}; profile {self.user_data_dir}"
            mode = "headless" if self.headless else "headed"
        else:
            self._debugging_port = free_loopback_port() if self.direct_cdp else None
            self.browser = await chromium.launch(**self._launch_options(local=True))
            where = self.executable or "playwright-managed"
            mode = "headless" if self.headless else "headed"
        if self.launched and self._debugging_port is not None:
            await self._connect_direct(self._debugging_port)
        version = self.browser.version if self.browser is not None else "?"
        self.description = f"chromium {version} {mode} ({where})"
        self.generation += 1
        browser = self.browser
        if browser is not None:
            browser.on("disconnected", lambda _b: self._on_disconnected(browser))
        elif self.persistent is not None:  # no Browser object: the context's close is the browser's end
            context = self.persistent
            context.on("close", lambda _c: self._on_disconnected(context))

    async def _connect_direct(self, port: int) -> None:
        """The direct CDP connection to the browser just launched; without it (the port was taken, the
        endpoint did not answer) every script goes through Playwright's sessions, as without the flag."""
        try:
            self.direct = await DirectCDP.connect(port)
            self.log(f"direct CDP: fixed scripts over the browser's DevTools endpoint at 127.0.0.1:{port}")
        except Exception as exc:
            self.direct = None
            self.log(
                f"direct CDP unavailable ({type(exc).__name__}: {short(exc)}): scripts go through Playwright"
            )

    def _launch_options(self, *, local: bool) -> dict[str, Any]:
        """Playwright launch options: the host's flags (and the policy proxy's, :func:`proxy_flags`; with
        ``direct_cdp``, the loopback DevTools endpoint's), headless or not, the executable (Python names for
        a local launch, the protocol's for a Playwright server's launch-options header; there only when
        given explicitly)."""
        flags = [*CHROMIUM_FLAGS, *(proxy_flags(self.proxy) if self.proxy else ())]
        if local and self._debugging_port is not None:
            flags += debugging_flags(self._debugging_port)
        options: dict[str, Any] = {"headless": self.headless, "args": flags}
        if self.executable and (local or self.explicit_executable):
            options["executable_path" if local else "executablePath"] = self.executable
        return options

    # ----------------------------------------------------------------- loss
    def _on_disconnected(self, which: object) -> None:
        if self._closing or which not in (self.browser, self.persistent) or self.lost:
            return
        self.lost = True
        if self.attached:
            assert self.remote is not None
            self.log(
                f"attached browser at {self.remote.shown} went away: pending work retired; this host does "
                "not start it, and reattaches when it answers there again (reconnecting with backoff)"
            )
        elif self.remote is not None:
            self.log(
                f"remote browser at {self.remote.shown} went away: pending work retired; reconnecting "
                "with backoff"
            )
        else:
            self.log("browser exited: pending work retired; relaunching it (the next request waits for it)")
        for listener in list(self._listeners):
            try:
                listener.browser_lost()
            except Exception as exc:  # a listener's bug must not stop the others hearing it
                self.log(f"browser-lost listener failed: {type(exc).__name__}: {short(exc)}")
        if self.launched:
            # Start at once so the next request finds a browser; if this fails, the next request tries again.
            self._spawn(self._relaunch(eager=True))
        else:
            self._spawn(self._reconnect_loop())

    def _back(self) -> None:
        self.lost = False
        self._relaunch_failed = None
        for listener in list(self._listeners):
            try:
                listener.browser_back()
            except Exception as exc:
                self.log(f"browser-back listener failed: {type(exc).__name__}: {short(exc)}")

    async def _close_direct(self) -> None:
        direct, self.direct = self.direct, None
        if direct is not None:
            await direct.close()

    async def _close_old(self) -> None:
        await self._close_direct()
        old, self.browser = self.browser, None
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        elif self.persistent is not None:
            with contextlib.suppress(Exception):
                await self.persistent.close()
        self.persistent = None

    async def _connect_again(self) -> None:
        """One more try to get a browser; a Playwright driver that died with the browser is started again."""
        await self._close_old()
        try:
            await self._connect()
        except PlaywrightError as exc:
            if "closed" not in str(exc).lower() or self._pw is None:
                raise
            with contextlib.suppress(Exception):
                await self._pw.stop()
            self._pw = await async_playwright().start()
            await self._connect()

    async def _relaunch(self, *, eager: bool = False) -> JsonObject | None:
        """After a launched browser's exit: launch Chromium again (None), or a BROWSER_UNAVAILABLE result.
        A request arriving within :data:`RELAUNCH_BACKOFF_S` of a failed attempt is answered at once, not
        made to wait for another launch that would fail the same way; later requests try again."""
        loop = asyncio.get_running_loop()
        async with self._relaunch_lock:
            if not self.lost or self._closing:
                return None
            failed = self._relaunch_failed
            if not eager and failed is not None and loop.time() - failed[0] < RELAUNCH_BACKOFF_S:
                return self._unavailable(failed[1])
            try:
                await self._connect_again()
            except Exception as exc:
                why = self.why(exc)
                self._relaunch_failed = (loop.time(), why)
                self.log(f"browser relaunch failed: {why}")
                return self._unavailable(why)
            self.log(f"browser relaunched: {self.description}; refs invalidated")
            self._back()
            return None

    async def _reconnect_loop(self) -> None:
        """A remote browser went away: try again after 0.5 s, then doubling up to ``backoff_max_s``
        (jittered), until it answers or the host closes. Each attempt is logged."""
        assert self.remote is not None
        loop = asyncio.get_running_loop()
        attempt = 0
        verb = "reattach" if self.attached else "reconnect"
        while self.lost and not self._closing:
            delay = backoff_delay(attempt, RECONNECT_INITIAL_S, self.backoff_max_s, self.rand)
            self._next_attempt = loop.time() + delay
            await asyncio.sleep(delay)
            if self._closing:
                return
            self._next_attempt = None
            self._attempt = loop.create_future()
            try:
                await self._connect_again()
            except Exception as exc:
                why = self.why(exc)
                self._relaunch_failed = (loop.time(), why)
                attempt += 1
                upcoming = backoff_delay(attempt, RECONNECT_INITIAL_S, self.backoff_max_s, lambda: 1.0)
                self.log(
                    f"browser {verb} to {self.remote.shown} failed (attempt {attempt}): {why}; trying again "
                    f"within {upcoming:.1f} s"
                )
                self._attempt.set_result(self._unavailable(why))
                continue
            finally:
                done = self._attempt
                self._attempt = None
                if done is not None and not done.done():
                    done.set_result(None)
            self.log(f"browser {verb}ed: {self.description}; refs invalidated")
            self._back()
            return

    def _unavailable(self, why: str) -> JsonObject:
        if self.remote is not None:  # not ours to start: it must come back at its endpoint
            what = "attached browser" if self.attached else "remote browser"
            verb = "reattach" if self.attached else "reconnect"
            upcoming = ""
            if self._next_attempt is not None:
                left = max(0.0, self._next_attempt - asyncio.get_running_loop().time())
                upcoming = f" (next attempt in {left:.1f} s)"
            message = (
                f"the {what} at {self.remote.shown} is gone and could not be reached ({why}); nothing was "
                f"run; this host does not start it: it tries to {verb} with backoff{upcoming}"
            )
        else:
            message = f"the browser exited and could not be relaunched ({why}); nothing was run"
        return fail("BROWSER_UNAVAILABLE", self.scrub(message), mayHaveCompleted=False)

    def available(self) -> Awaitable[JsonObject | None] | None:
        """None while the browser is up; after it went away, what brings it back: a launched browser's
        relaunch (the one under way, or a new attempt, or at once the last failure's answer within
        :data:`RELAUNCH_BACKOFF_S` of it); a remote browser's reconnect attempt under way, or at once the
        ``BROWSER_UNAVAILABLE`` result (the background loop tries again)."""
        if not self.lost:
            return None
        if self.launched:
            return self._relaunch()
        if self._attempt is not None:
            return asyncio.shield(self._attempt)
        return self._refuse_now()

    async def _refuse_now(self) -> JsonObject | None:
        if not self.lost:
            return None
        failed = self._relaunch_failed
        return self._unavailable(failed[1] if failed else "it went away")

    def _spawn(self, aw: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(aw)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ----------------------------------------------------------------- close
    async def close(self) -> None:
        """Close the browser this host launched; an attached one is only disconnected (it keeps running
        with its tabs); a Playwright server's connection is closed (the server ends what it launched for
        it). Never raises."""
        self._closing = True
        for task in list(self._background):
            task.cancel()
        await self._close_direct()
        with contextlib.suppress(Exception):
            if self.browser is not None and not self.attached:
                await self.browser.close()
            elif self.persistent is not None:
                await self.persistent.close()
        with contextlib.suppress(Exception):
            if self._pw is not None:
                await self._pw.stop()
