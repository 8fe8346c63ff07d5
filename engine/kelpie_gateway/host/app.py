"""``kelpie-gateway serve``: wires the renderer, the gateway, the driver and the HTTP servers together.

Output (stdout, line-buffered, never a secret): the first line is exactly
``listening http://127.0.0.1:PORT``; then the site, the browser, the admin socket, pairing requests and
one ``tx`` line per transaction (method, tab, outcome, ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from kelpie_gateway.host.audit import DEFAULT_MAX_BYTES, AuditLog
from kelpie_gateway.host.auth import Pairing, PairingFileError, TokenStore, state_dir
from kelpie_gateway.host.browser import BrowserLink, ChromiumRenderer, ContextOptions, find_chromium
from kelpie_gateway.host.browser.common import LaneOptions
from kelpie_gateway.host.browser.link import VIEWPORT, BrowserStartError, context_proxy
from kelpie_gateway.host.browser.pages import DEFAULT_MAX_POPUPS
from kelpie_gateway.host.contexts import (
    DEFAULT_IDLE_S,
    DEFAULT_MAX_CONTEXTS,
    Client,
    DriverSource,
    Isolation,
    Opened,
    SharedDrivers,
)
from kelpie_gateway.host.driver import Driver, GatewayLike
from kelpie_gateway.host.files import Files, FilesError, FilesOptions, compose
from kelpie_gateway.host.parts import PARTS, gateway_config
from kelpie_gateway.host.policy import PolicyError, PolicyRenderer, SitePolicy
from kelpie_gateway.host.policy_proxy import PolicyProxy
from kelpie_gateway.host.remote import RemoteConfigError, parse_headers, remote_browser
from kelpie_gateway.host.renderer import NoRenderer, Renderer
from kelpie_gateway.host.server import (
    HostServer,
    QuietAppRunner,
    admin_app,
    is_loopback_bind,
    set_error_log,
    site_app,
)
from kelpie_gateway.host.settings import ConfigFileError, apply_config, host_settings, load_config_file
from kelpie_gateway.host.tunnel import Tunnel, TunnelConfigError, TunnelOptions


def default_site() -> Path:
    """The built-in fixture site, shipped inside the package (``kelpie_gateway/host/site``; in a source
    checkout a link to ``fixtures/site``)."""
    return Path(__file__).resolve().parent / "site"


@dataclass
class BrowserOptions:
    """What ``serve`` and ``mcp`` share: the site, the browser, the site policy, the gateway settings, the
    audit log (``--audit-log``) and the outbound tunnel (``--connect``, docs/tunnel.md)."""

    site: Path | None = None
    browser: str = "chromium"
    browser_executable: str | None = None
    headed: bool = False
    user_data_dir: str | None = None
    cdp_endpoint: str | None = None
    config_file: Path | None = None
    via_abi: bool = False
    abi_library: str | None = None
    allowed_origins: str | None = None
    blocked_origins: str | None = None
    read_only: bool = False
    observer: bool = False
    network_urls: str = "redacted"
    network_bodies: bool = False
    extensions_include: list[str] | None = None
    extensions_exclude: list[str] = field(default_factory=list)
    tools: str = "compact"
    """``--tools``: the gateway config's ``mcpTools`` (``compact`` or ``full``)."""
    viewport: tuple[int, int] | None = None
    max_popups: int = DEFAULT_MAX_POPUPS
    retirement_grace_ms: int | None = None
    """``--retirement-grace-ms``: the gateway's ``retirementGraceMs`` (None: the engine's, 5000)."""
    files: FilesOptions = field(default_factory=FilesOptions)
    """``--upload-dir``, ``--downloads-dir``, ``--max-download-mb``, ``--max-downloads`` (``host/files.py``)."""
    audit_log: Path | None = None
    audit_max_bytes: int = DEFAULT_MAX_BYTES
    connect: TunnelOptions | None = None
    browser_endpoint: str | None = None
    """``--browser-endpoint``: a Playwright browser server (docs/host.md "Remote browsers")."""
    browser_headers: list[str] = field(default_factory=list)
    """``--browser-header`` specs as given (``Name: value``, ``Name: @file:PATH``, ``Name: @env:VAR``)."""
    browser_backoff_max_s: float = 30.0
    """``--browser-backoff-max``: the longest wait between reconnects to a remote browser."""
    direct_cdp: bool = False
    """``--direct-cdp``: fixed scripts over the host's own CDP connection (docs/host.md "Direct CDP")."""
    isolation: str | None = None
    """``serve --isolation`` (None: the ``--config`` key, else ``shared``)."""
    max_contexts: int | None = None
    context_idle_s: float | None = None


@dataclass
class ServeOptions(BrowserOptions):
    """The ``serve`` command line (see ``kelpie-gateway serve --help``)."""

    port: int = 0
    bind: str = "127.0.0.1"
    approve_pairing: str = "manual"
    pairing_timeout_s: float = 120.0
    pairings_file: Path | None = None
    """None keeps pairings in memory only (``--pairings memory``)."""
    listen: bool = True


def log(message: str) -> None:
    """One line of operator output."""
    print(message, flush=True)


def make_gateway(config: dict[str, Any], *, via_abi: bool, library: str | None) -> GatewayLike:
    """A Python-API gateway, or the C-library adapter for ``--via-abi``."""
    if via_abi:
        from kelpie_gateway.host.abi import AbiGateway

        return AbiGateway(config, library=library)
    from kelpie_gateway import Gateway

    gateway: GatewayLike = Gateway(config)
    return gateway


class StartError(RuntimeError):
    """The browser stack could not start; the message is for the operator (exit status 2 = usage)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class BrowserStack:
    """The site server, the browser, the gateway(s) and the driver(s) of one host process.

    ``gateway``/``driver``/``renderer``: the one context's under ``--isolation shared``; under
    ``per-client`` the front gateway's (no browser: it answers clients over the limit) while every client's
    own are in ``drivers`` (an :class:`~kelpie_gateway.host.contexts.Isolation`)."""

    site_root: Path
    site_url: str
    renderer: Renderer
    gateway: GatewayLike
    driver: Driver
    runners: list[web.AppRunner]
    policy: SitePolicy
    browser_ready: asyncio.Future[None] | None = None
    """With ``start_stack(defer_browser=True)``: resolves when the browser is up; raises
    :class:`StartError` when it could not start (None: the browser was started before returning)."""
    link: BrowserLink | None = None
    drivers: DriverSource | None = None
    isolation: str = "shared"
    files: Files | None = None
    """The upload folders and the downloads folder (a temporary one is removed by :meth:`close`)."""

    @property
    def description(self) -> str:
        """The browser, for the operator's log."""
        if self.link is not None:
            return self.link.description
        return str(getattr(self.renderer, "description", "none"))

    def source(self) -> DriverSource:
        """Where the transports get their driver (one, or one per client)."""
        return self.drivers if self.drivers is not None else SharedDrivers(self.driver)

    proxy: PolicyProxy | None = None
    """The site policy's proxy, which every request of the browser goes through (a restrictive policy and
    a browser that can reach this host's loopback: ``BrowserLink.reaches_proxy``)."""

    def describe_policy(self) -> str:
        """The start-up line of the site policy: what is allowed and blocked, and how it is enforced for
        this kind of browser (docs/host.md "What holds per browser")."""
        line = f"site policy {self.policy.describe()}"
        link = self.link
        if self.proxy is not None:
            if link is not None and link.attached:
                line += (
                    f"; an attached browser: the host works in a context of its own, through the site "
                    f"policy's proxy at {self.proxy.server} (the browser's own tabs are not adopted; WebRTC "
                    "as the browser was started)"
                )
            elif link is not None and link.remote is not None:
                line += (
                    f"; every request of this host's browser contexts goes through its proxy at "
                    f"{self.proxy.server} (the Playwright server is asked to launch with WebRTC UDP off)"
                )
            else:
                line += (
                    f"; every browser request goes through its proxy at {self.proxy.server}; WebRTC UDP off"
                )
        elif link is not None and self.policy.restrictive and not link.reaches_proxy:
            line += (
                "; the browser is on another machine and cannot reach this host's proxy: each browser "
                "context's request routing applies it (redirects seen per tab; WebSocket, workers' own "
                "targets and WebRTC are not)"
            )
        return line

    async def close(self) -> None:
        """Drain late renderer replies (bounded), stop the site server, close every client context, (or
        detach from) the browser and the gateway. Never raises."""
        await self.driver.drain(2.0)
        for runner in reversed(self.runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        if self.drivers is not None:
            with contextlib.suppress(Exception):
                await self.drivers.close()
        await self.renderer.close()
        if self.link is not None:
            await self.link.close()
        if self.proxy is not None:
            await self.proxy.close()
        with contextlib.suppress(Exception):
            self.gateway.close()
        if self.files is not None:
            self.files.close()


@dataclass(frozen=True)
class HostSettings:
    """The host's own settings after the flags and ``--config`` are combined (a flag wins)."""

    isolation: str = "shared"
    max_contexts: int = DEFAULT_MAX_CONTEXTS
    context_idle_s: float = DEFAULT_IDLE_S


def _settings(
    opts: BrowserOptions, browser: bool, files: Files | None = None
) -> tuple[dict[str, Any], HostSettings]:
    """The host's gateway config (``parts.gateway_config``) with the operator's ``--config FILE`` on top,
    and the host's own settings (``--isolation`` … or their config keys). Raises ConfigFileError."""
    config = gateway_config(
        browser=browser,
        read_only=opts.read_only,
        retirement_grace_ms=opts.retirement_grace_ms,
        observer=opts.observer,
        include=opts.extensions_include,
        exclude=opts.extensions_exclude,
        upload_dirs=[str(d) for d in files.upload_dirs] if files is not None else (),
    )
    if opts.tools != "compact":
        config["mcpTools"] = opts.tools
    chosen: dict[str, Any] = {}
    if opts.config_file is not None:
        source = f"--config {opts.config_file}"
        user, chosen = host_settings(load_config_file(opts.config_file), source=source)
        config = apply_config(config, user, source=source)
    settings = HostSettings(
        isolation=opts.isolation or chosen.get("isolation", "shared"),
        max_contexts=opts.max_contexts or chosen.get("maxContexts", DEFAULT_MAX_CONTEXTS),
        context_idle_s=float(opts.context_idle_s or chosen.get("contextIdleS", DEFAULT_IDLE_S)),
    )
    return config, settings


class StartingRenderer:
    """A renderer whose browser is still starting (``kelpie-gateway mcp``): calls wait for the start and,
    if it failed, answer ``BROWSER_UNAVAILABLE`` with ``mayHaveCompleted:false`` (nothing was sent to a
    browser). Everything else is the started renderer's. The engine answers ``server/discover``,
    ``initialize`` and ``tools/list`` without a renderer, so an MCP client is answered at once while
    Chromium starts (docs/host.md "Start-up over stdio"). A client context of ``--isolation per-client``
    is one too while its browser context is made (``message`` says what could not be started)."""

    def __init__(
        self, inner: Any, started: asyncio.Future[None], message: str = "the browser could not be started"
    ) -> None:
        self.inner = inner
        self.started = started
        self.message = message

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _up(self) -> bool:
        try:
            await asyncio.shield(self.started)
        except Exception:
            return False
        return True

    def _refusal(self) -> str:
        """The message of a call the failed start refused: ``message`` and why (a :class:`StartError`'s
        text is scrubbed and ends with its fix, e.g. where no browser was found and what to run)."""
        exc = self.started.exception() if self.started.done() and not self.started.cancelled() else None
        return f"{self.message}: {exc}" if isinstance(exc, StartError) and str(exc) else self.message

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if not await self._up():
            return {
                "success": False,
                "error": {"code": "BROWSER_UNAVAILABLE", "message": self._refusal()},
                "mayHaveCompleted": False,
            }
        result: dict[str, Any] = await self.inner.call(method, params)
        return result

    async def stop_script(self, tab_id: str | None) -> bool:
        return self.started.done() and await self._up() and bool(await self.inner.stop_script(tab_id))

    async def end_stuck(self, tab_id: str | None) -> bool:
        return self.started.done() and await self._up() and bool(await self.inner.end_stuck(tab_id))

    async def close(self) -> None:
        if not self.started.done():
            with contextlib.suppress(BaseException):
                await self.started
        await self.inner.close()


async def start_stack(
    opts: BrowserOptions,
    log: Callable[[str], None],
    *,
    audit: AuditLog | None = None,
    defer_browser: bool = False,
    isolate: bool = False,
    still_paired: Callable[[str], bool] | None = None,
) -> BrowserStack:
    """Start the site server, the browser (launched, on a profile, attached or remote; site policy and
    rich extensions installed) and the gateway. Raises :class:`StartError` (nothing left running) when any
    of them cannot start; no message holds a header value or an endpoint's credentials.
    ``audit``: where the driver records every transaction (``serve --audit-log``).

    ``defer_browser``: return before the browser is up (its calls wait for it, see
    :class:`StartingRenderer`); :attr:`BrowserStack.browser_ready` then tells when it is, or raises
    :class:`StartError` when it could not start (the caller stops the stack).

    ``isolate``: the caller serves many clients (``serve``), so ``--isolation per-client`` may be chosen:
    every client then gets its own browser context and gateway (``host/contexts.py``; ``still_paired``
    tells the sweep whether a bearer's pairing still exists)."""
    try:
        policy = SitePolicy.from_flags(opts.allowed_origins, opts.blocked_origins)
    except PolicyError as exc:
        raise StartError(f"--allowed-origins/--blocked-origins: {exc}", 2) from None
    site_root = opts.site or default_site()
    if not (site_root / "index.html").is_file():
        raise StartError(f"--site {site_root} has no index.html", 2)
    browser = opts.browser != "none"
    try:
        files = Files.open(opts.files)
    except FilesError as exc:
        raise StartError(str(exc), 2) from None
    try:
        return await _start_stack(
            opts, log, policy, site_root, browser, files, audit, defer_browser, isolate, still_paired
        )
    except BaseException:
        files.close()
        raise


async def _start_stack(
    opts: BrowserOptions,
    log: Callable[[str], None],
    policy: SitePolicy,
    site_root: Path,
    browser: bool,
    files: Files,
    audit: AuditLog | None,
    defer_browser: bool,
    isolate: bool,
    still_paired: Callable[[str], bool] | None,
) -> BrowserStack:
    """:func:`start_stack` once the folders are open (the caller closes them when this raises)."""
    try:
        config, settings = _settings(opts, browser, files)
        if opts.via_abi:
            make_gateway(config, via_abi=True, library=opts.abi_library).close()  # refuse early, not late
        else:
            from kelpie_gateway import Gateway, GatewayConfigError

            try:
                Gateway(config).close()
            except GatewayConfigError as exc:
                raise ConfigFileError(f"the gateway refused the config: {exc}") from None
    except (ConfigFileError, RuntimeError) as exc:
        raise StartError(str(exc), 2) from None
    per_client = settings.isolation == "per-client"
    if per_client and not isolate:
        raise StartError(
            "--isolation per-client is for serve: kelpie-gateway mcp serves one client (the process that "
            "launched it owns stdin/stdout), so it shares one browser context",
            2,
        )
    if per_client and opts.user_data_dir:
        raise StartError(
            "--isolation per-client cannot use --user-data-dir: a persistent profile is one browser context; "
            "each client gets a fresh context of its own",
            2,
        )
    try:
        remote = remote_browser(
            cdp_endpoint=opts.cdp_endpoint,
            browser_endpoint=opts.browser_endpoint,
            headers=parse_headers(opts.browser_headers),
        )
    except RemoteConfigError as exc:
        raise StartError(str(exc), 2) from None
    if remote is not None and opts.user_data_dir:
        raise StartError("--user-data-dir applies to a browser this host launches, not a remote one", 2)
    if opts.headed and remote is None and not os.environ.get("DISPLAY"):
        raise StartError("--headed needs a display: set DISPLAY, or run under xvfb-run", 2)

    runners: list[web.AppRunner] = []
    renderer: Renderer = NoRenderer()
    link: BrowserLink | None = None
    ready: asyncio.Future[None] | None = None
    proxy: PolicyProxy | None = None
    policy.log = log
    try:
        site_runner = QuietAppRunner(site_app(site_root))
        await site_runner.setup()
        runners.append(site_runner)
        await web.TCPSite(site_runner, "127.0.0.1", 0).start()
        site_url = f"http://127.0.0.1:{_port(site_runner)}/index.html"
        policy.allow_origin_of(site_url)
        viewport = VIEWPORT if opts.viewport is None else _viewport(opts.viewport)
        tab_ids = itertools.count(1)
        reaches_proxy = remote is None or remote.on_this_machine
        if browser and policy.restrictive and reaches_proxy:
            proxy = PolicyProxy(policy, log)
            await proxy.start()
        if browser:
            link = BrowserLink(
                log=log,
                executable=find_chromium(opts.browser_executable),
                explicit_executable=opts.browser_executable is not None
                or bool(os.environ.get("CHROME_PATH")),
                headless=not opts.headed,
                user_data_dir=opts.user_data_dir,
                remote=remote,
                viewport=viewport,
                backoff_max_s=opts.browser_backoff_max_s,
                proxy=proxy.server if proxy is not None else None,
                direct_cdp=opts.direct_cdp,
            )
        site = _ContextSite(
            policy,
            proxy,
            viewport,
            tab_ids,
            files,
            routed=policy.restrictive and not reaches_proxy,
            max_popups=opts.max_popups,
            lane=LaneOptions(full_urls=opts.network_urls == "full", bodies=opts.network_bodies),
        )
        if link is not None and not per_client:
            chromium = site.renderer(link, log, shared=True)
            renderer = site.wrap(chromium)
            if defer_browser:
                ready = asyncio.ensure_future(_start_browser(link, chromium, site_url))
                renderer = StartingRenderer(renderer, ready)
            else:
                await link.start()
                await chromium.start(site_url)
        elif link is not None:
            await link.start()  # the browser is up before the first client comes
        gateway = make_gateway(config, via_abi=opts.via_abi, library=opts.abi_library)
    except Exception as exc:
        for runner in reversed(runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await renderer.close()
        if link is not None:
            await link.close()
        if proxy is not None:
            await proxy.close()
        why = str(exc) if isinstance(exc, BrowserStartError) else f"{type(exc).__name__}: {_first_line(exc)}"
        raise StartError(link.scrub(why) if link is not None else why) from None
    authorize = compose(policy.authorize, files.authorize)
    if not per_client:
        driver = Driver(gateway, renderer, log, authorize=authorize, audit=audit, ready=ready)
        return BrowserStack(
            site_root,
            site_url,
            renderer,
            gateway,
            driver,
            runners,
            policy,
            ready,
            link,
            proxy=proxy,
            files=files,
        )

    def open_context(client: Client, label: str, ctx_log: Callable[[str], None], hint: str) -> Opened:
        """One client's context (``contexts.Open``): its gateway now, its browser context in the background."""
        context_gateway = make_gateway(config, via_abi=opts.via_abi, library=opts.abi_library)
        if link is None:  # --browser none: a gateway of its own, no browser
            return context_gateway, NoRenderer(), None
        try:
            own = files.for_context(label)  # a downloads folder of this client's own
        except FilesError as exc:
            ctx_log(f"{exc}; this context keeps its downloads in the host's folder")
            own = files
        chromium = site.renderer(link, ctx_log, shared=False, files=own)
        chromium.pages.unknown_hint = hint
        inner = site.wrap(chromium)
        made = asyncio.ensure_future(_start_browser(link, chromium, site_url))
        message = "this client's browser context could not be made; nothing was run: call again for a new one"
        return context_gateway, StartingRenderer(inner, made, message), made

    isolation = Isolation(
        open=open_context,
        front=gateway,
        log=log,
        max_contexts=settings.max_contexts,
        idle_s=settings.context_idle_s,
        authorize=authorize,
        audit=audit,
        still_paired=still_paired,
    )
    stack = BrowserStack(
        site_root,
        site_url,
        renderer,
        gateway,
        isolation.front,
        runners,
        policy,
        None,
        link,
        isolation,
        proxy=proxy,
        files=files,
    )
    stack.isolation = "per-client"
    return stack


@dataclass
class _ContextSite:
    """What every browser context of the host is made with, shared or per client (docs/host.md "Site
    policy", "What holds per browser"): the viewport, the host-wide tab counter and the site policy — its
    proxy (``proxy``: a browser that reaches this host's loopback; each context's Playwright ``proxy``
    option names it, on top of a launched browser's flags) or, for a browser on another machine
    (``routed``), the context's request routing (``browser/routing.py``); ``lane``: the operator's read-only
    lane options (``--network-urls``, ``--network-bodies``), the same for every context."""

    policy: SitePolicy
    proxy: PolicyProxy | None
    viewport: Mapping[str, int]
    tab_ids: Iterator[int]
    files: Files
    """The host's folders; a shared context uses them, a client's context :meth:`Files.for_context`."""
    routed: bool = False
    max_popups: int = DEFAULT_MAX_POPUPS
    """``--max-popups``: how many of one tab's popups may be open at once (``Pages``)."""
    lane: LaneOptions = field(default_factory=LaneOptions)

    def options(self, *, shared: bool) -> ContextOptions:
        extra: dict[str, Any] = {}
        if self.proxy is not None:
            extra["proxy"] = context_proxy(self.proxy.server)
        return ContextOptions(
            viewport=dict(self.viewport), shared=shared, playwright=extra, route=self.routed
        )

    def renderer(
        self, link: BrowserLink, log: Callable[[str], None], *, shared: bool, files: Files | None = None
    ) -> ChromiumRenderer:
        """One browser context's renderer on the host's browser (every part of ``PARTS``; its context made
        by ``lifecycle.new_context`` with :meth:`options`)."""
        return ChromiumRenderer(
            link=link,
            log=log,
            parts=PARTS,
            policy=self.policy,
            files=self.files if files is None else files,
            context_options=self.options(shared=shared),
            tab_ids=self.tab_ids,
            max_popups=self.max_popups,
            lane=self.lane,
        )

    def wrap(self, chromium: ChromiumRenderer) -> Renderer:
        """``chromium`` as the driver sees it: under a restrictive policy, a navigation the proxy or the
        routing stopped is answered ``NOT_AUTHORIZED`` (``policy.PolicyRenderer``)."""
        if not self.policy.restrictive:
            return chromium
        refused_since = self.proxy.refused_since if self.proxy is not None else _never_refused
        wrapped: Renderer = PolicyRenderer(chromium, self.policy, refused_since)
        return wrapped


def _never_refused(_url: str, _since: float) -> str | None:
    return None


async def _start_browser(link: BrowserLink, chromium: ChromiumRenderer, site_url: str) -> None:
    try:
        if not link.started:
            await link.start()
        await chromium.start(site_url)
    except BrowserStartError as exc:
        raise StartError(str(exc)) from None
    except Exception as exc:
        raise StartError(link.scrub(f"{type(exc).__name__}: {_first_line(exc)}")) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def serve(opts: ServeOptions) -> int:
    """Run the host until SIGINT/SIGTERM. Returns the process exit status."""
    if not is_loopback_bind(opts.bind):
        print(
            f"error: refusing to bind {opts.bind!r}: the host serves loopback only (127.0.0.1, localhost, ::1) "
            "because the browser it drives holds the user's sessions",
            file=sys.stderr,
        )
        return 2
    try:
        tokens = TokenStore(opts.pairings_file)
    except (PairingFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    extras = open_transports(opts, log, listen=opts.listen)
    if isinstance(extras, str):
        print(f"error: {extras}", file=sys.stderr)
        return 2
    audit, tunnel_opts = extras
    try:
        stack = await start_stack(opts, log, audit=audit, isolate=True, still_paired=tokens.active)
    except StartError as exc:
        print(f"error: the host could not start: {exc}", file=sys.stderr)
        if audit is not None:
            audit.close()
        return exc.status

    runners: list[web.AppRunner] = []
    tunnel = None
    try:
        drivers = stack.source()
        tunnel = Tunnel(drivers, tunnel_opts, log) if tunnel_opts is not None else None
        if opts.listen:
            host, sock_path = await _listen(opts, drivers, tokens, runners)
    except Exception as exc:
        hint = ""
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            hint = f" (another process listens on port {opts.port}: pick another --port, or --port 0 for a free one)"
        print(f"error: the host could not start: {type(exc).__name__}: {exc}{hint}", file=sys.stderr)
        for runner in reversed(runners):
            await runner.cleanup()
        await stack.close()
        if audit is not None:
            audit.close()
        return 1

    if opts.listen:
        log(f"listening http://{host.url_host()}:{host.port}")
    elif tunnel is not None:
        log(f"connecting {tunnel.describe()} (no local listener: --no-listen)")
    log(f"site {stack.site_root} at {stack.site_url.rsplit('/', 1)[0]}/")
    log(f"browser {stack.description}")
    core = f"C library {getattr(stack.gateway, 'path', '')}" if opts.via_abi else "Python API"
    log(f"gateway via {core}; realm isolated; pairing {opts.approve_pairing}")
    if isinstance(stack.drivers, Isolation):
        log(
            f"isolation per-client: a browser context and a gateway per paired client and tunnel session "
            f"(at most {stack.drivers.max_contexts}; closed after {stack.drivers.idle_s:g} s without requests "
            "or when the pairing is revoked)"
        )
        stack.drivers.start()
    else:
        log("isolation shared: one browser context and one gateway for every client")
    if opts.listen:
        saved = f"saved in {opts.pairings_file}" if opts.pairings_file else "in memory only"
        log(f"pairings {saved} ({len(tokens)} active)")
        log(f"admin socket {sock_path} (kelpie-gateway pair approve CODE)")
    log(stack.describe_policy())
    if stack.files is not None and opts.browser != "none":
        log(stack.files.describe())
    if audit is not None:
        log(f"audit log {audit.path} (one JSON line per transaction; SIGHUP reopens it)")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    watch_audit(audit)
    if tunnel is not None:
        tunnel.start()
    await stop.wait()
    log("shutting down")
    if opts.listen:
        waiting = host.pairing.close()  # waiting pairers are answered 503 now: none holds the exit
        if waiting:
            log(f"answered {waiting} waiting pairing request(s) 503: the host is shutting down")
    if tunnel is not None:
        await tunnel.close()
    await stack.driver.drain(2.0)
    for runner in reversed(runners):
        with contextlib.suppress(Exception):
            await runner.cleanup()
    if opts.listen:
        with contextlib.suppress(FileNotFoundError):
            sock_path.unlink()
    await stack.close()
    if audit is not None:
        audit.close()
    return 0


def open_transports(
    opts: BrowserOptions, log: Callable[[str], None], *, listen: bool = True
) -> tuple[AuditLog | None, TunnelOptions | None] | str:
    """What ``serve`` and ``mcp`` check before starting the browser: the audit log (opened now: an
    unwritable path is a usage error) and the tunnel settings (URL rules, token readable). Returns them, or
    the usage error's message (exit status 2). ``listen``: whether anything but the tunnel can reach the
    host (``serve --no-listen`` needs ``--connect``)."""
    if opts.connect is None and not listen:
        return "--no-listen needs --connect URL (else nothing could reach the host)"
    if opts.connect is not None:
        try:
            Tunnel.check(opts.connect)
        except TunnelConfigError as exc:
            return str(exc)
    audit = None
    if opts.audit_log is not None:
        try:
            audit = AuditLog(opts.audit_log, max_bytes=opts.audit_max_bytes, log=log)
        except OSError as exc:
            return f"--audit-log {opts.audit_log}: {exc.strerror or exc}"
    return audit, opts.connect


def watch_audit(audit: AuditLog | None) -> None:
    """``SIGHUP`` reopens the audit log (logrotate's ``postrotate``), on the running loop."""
    if audit is not None:
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, audit.reopen)


def _viewport(size: tuple[int, int]) -> dict[str, int]:
    return {"width": size[0], "height": size[1]}


def _port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the server has no TCP address")


async def _listen(
    opts: ServeOptions, drivers: DriverSource, tokens: TokenStore, runners: list[web.AppRunner]
) -> tuple[HostServer, Path]:
    """The loopback HTTP routes and the operator's admin socket (skipped by ``--no-listen``)."""
    pairing = Pairing(auto_approve=opts.approve_pairing == "auto", timeout_s=opts.pairing_timeout_s)
    host = HostServer(drivers, tokens, pairing, log=log)
    host.bind = opts.bind
    set_error_log(log)
    api_runner = QuietAppRunner(host.app(), handle_signals=False)
    await api_runner.setup()
    runners.append(api_runner)
    api = web.TCPSite(api_runner, opts.bind, opts.port)
    await api.start()
    host.port = _port(api_runner)

    sock_path = state_dir() / f"admin-{host.port}.sock"
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    admin_runner = web.AppRunner(admin_app(pairing, log), access_log=None)
    await admin_runner.setup()
    runners.append(admin_runner)
    old_umask = os.umask(0o177)
    try:
        await web.UnixSite(admin_runner, str(sock_path)).start()
    finally:
        os.umask(old_umask)
    return host, sock_path
