"""``kelpie-gateway serve``: wires the renderer, the gateway, the driver and the HTTP servers together.

Output (stdout, line-buffered, never a secret): the first line is exactly
``listening http://127.0.0.1:PORT``; then the site, the browser, the admin socket, pairing requests and
one ``tx`` line per transaction (method, tab, outcome, ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from kelpie_gateway.host.audit import DEFAULT_MAX_BYTES, AuditLog
from kelpie_gateway.host.auth import Pairing, PairingFileError, TokenStore, state_dir
from kelpie_gateway.host.browser import ChromiumRenderer, find_chromium
from kelpie_gateway.host.browser.pages import DEFAULT_MAX_POPUPS
from kelpie_gateway.host.driver import Driver, GatewayLike
from kelpie_gateway.host.parts import PARTS, gateway_config
from kelpie_gateway.host.policy import PolicyError, PolicyRenderer, SitePolicy
from kelpie_gateway.host.policy_proxy import PolicyProxy
from kelpie_gateway.host.renderer import NoRenderer, Renderer
from kelpie_gateway.host.server import (
    HostServer,
    QuietAppRunner,
    admin_app,
    is_loopback_bind,
    set_error_log,
    site_app,
)
from kelpie_gateway.host.settings import ConfigFileError, apply_config, load_config_file
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
    extensions_include: list[str] | None = None
    extensions_exclude: list[str] = field(default_factory=list)
    viewport: tuple[int, int] | None = None
    max_popups: int = DEFAULT_MAX_POPUPS
    retirement_grace_ms: int | None = None
    """``--retirement-grace-ms``: the gateway's ``retirementGraceMs`` (None: the engine's, 5000)."""
    audit_log: Path | None = None
    audit_max_bytes: int = DEFAULT_MAX_BYTES
    connect: TunnelOptions | None = None


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
    """The site server, the renderer, the gateway and the driver of one host process."""

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
    proxy: PolicyProxy | None = None
    """The site policy's proxy, which every request of the browser goes through (a restrictive policy)."""

    def describe_policy(self) -> str:
        """The start-up line of the site policy: what is allowed and blocked, and how it is enforced."""
        line = f"site policy {self.policy.describe()}"
        if self.proxy is not None:
            line += f"; every browser request goes through its proxy at {self.proxy.server}; WebRTC UDP off"
        return line

    async def close(self) -> None:
        """Drain late renderer replies (bounded), stop the site server, close (or detach from) the browser
        and the gateway. Never raises."""
        await self.driver.drain(2.0)
        for runner in reversed(self.runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await self.renderer.close()
        if self.proxy is not None:
            await self.proxy.close()
        with contextlib.suppress(Exception):
            self.gateway.close()


def _gateway_config(opts: BrowserOptions, browser: bool) -> dict[str, Any]:
    """The host's gateway config (``parts.gateway_config``) with the operator's ``--config FILE`` on top."""
    config = gateway_config(
        browser=browser,
        read_only=opts.read_only,
        retirement_grace_ms=opts.retirement_grace_ms,
        include=opts.extensions_include,
        exclude=opts.extensions_exclude,
    )
    if opts.config_file is not None:
        config = apply_config(
            config, load_config_file(opts.config_file), source=f"--config {opts.config_file}"
        )
    return config


class StartingRenderer:
    """A renderer whose browser is still starting (``kelpie-gateway mcp``): calls wait for the start and,
    if it failed, answer ``BROWSER_UNAVAILABLE`` with ``mayHaveCompleted:false`` (nothing was sent to a
    browser). Everything else is the started renderer's. The engine answers ``server/discover``,
    ``initialize`` and ``tools/list`` without a renderer, so an MCP client is answered at once while
    Chromium starts (docs/host.md "Start-up over stdio")."""

    def __init__(self, inner: Any, started: asyncio.Future[None]) -> None:
        self.inner = inner
        self.started = started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _up(self) -> bool:
        try:
            await asyncio.shield(self.started)
        except Exception:
            return False
        return True

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if not await self._up():
            return {
                "success": False,
                "error": {"code": "BROWSER_UNAVAILABLE", "message": "the browser could not be started"},
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
) -> BrowserStack:
    """Start the site server, the browser (launched, on a profile, or attached; site policy and rich
    extensions installed) and the gateway. Raises :class:`StartError` (nothing left running) when any of
    them cannot start. ``audit``: where the driver records every transaction (``serve --audit-log``).

    ``defer_browser``: return before the browser is up (its calls wait for it, see
    :class:`StartingRenderer`); :attr:`BrowserStack.browser_ready` then tells when it is, or raises
    :class:`StartError` when it could not start (the caller stops the stack)."""
    try:
        policy = SitePolicy.from_flags(opts.allowed_origins, opts.blocked_origins)
    except PolicyError as exc:
        raise StartError(f"--allowed-origins/--blocked-origins: {exc}", 2) from None
    site_root = opts.site or default_site()
    if not (site_root / "index.html").is_file():
        raise StartError(f"--site {site_root} has no index.html", 2)
    browser = opts.browser != "none"
    try:
        config = _gateway_config(opts, browser)
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
    if opts.cdp_endpoint and not is_loopback_url(opts.cdp_endpoint):
        raise StartError(
            f"--cdp-endpoint {opts.cdp_endpoint!r}: attach only to a Chromium on loopback "
            "(http://127.0.0.1:PORT, http://localhost:PORT or http://[::1]:PORT)",
            2,
        )
    if opts.headed and not opts.cdp_endpoint and not os.environ.get("DISPLAY"):
        raise StartError("--headed needs a display: set DISPLAY, or run under xvfb-run", 2)

    runners: list[web.AppRunner] = []
    renderer: Renderer = NoRenderer()
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
        if browser and policy.restrictive:
            proxy = PolicyProxy(policy, log)
            await proxy.start()
        if browser:
            chromium = ChromiumRenderer(
                executable=find_chromium(opts.browser_executable),
                log=log,
                parts=PARTS,
                proxy=proxy.server if proxy is not None else None,
                policy=policy,
                viewport=None if opts.viewport is None else _viewport(opts.viewport),
                headless=not opts.headed,
                user_data_dir=opts.user_data_dir,
                cdp_endpoint=opts.cdp_endpoint,
                max_popups=opts.max_popups,
            )
            renderer = chromium
            if proxy is not None:
                renderer = PolicyRenderer(chromium, policy, proxy.refused_since)
            if defer_browser:
                ready = asyncio.ensure_future(_start_browser(chromium, site_url))
                renderer = StartingRenderer(renderer, ready)
            else:
                await chromium.start(site_url)
        gateway = make_gateway(config, via_abi=opts.via_abi, library=opts.abi_library)
    except Exception as exc:
        for runner in reversed(runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await renderer.close()
        if proxy is not None:
            await proxy.close()
        raise StartError(f"{type(exc).__name__}: {_first_line(exc)}") from None
    driver = Driver(gateway, renderer, log, authorize=policy.authorize, audit=audit, ready=ready)
    return BrowserStack(site_root, site_url, renderer, gateway, driver, runners, policy, ready, proxy)


async def _start_browser(chromium: ChromiumRenderer, site_url: str) -> None:
    try:
        await chromium.start(site_url)
    except Exception as exc:
        raise StartError(f"{type(exc).__name__}: {_first_line(exc)}") from None


def is_loopback_url(url: str) -> bool:
    """True for an ``http``/``ws`` URL whose host is a loopback address (the DevTools endpoint rule)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return parts.scheme in ("http", "ws") and (host in ("localhost", "::1") or host.startswith("127."))


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
        stack = await start_stack(opts, log, audit=audit)
    except StartError as exc:
        print(f"error: the host could not start: {exc}", file=sys.stderr)
        if audit is not None:
            audit.close()
        return exc.status

    runners: list[web.AppRunner] = []
    tunnel = None
    try:
        tunnel = Tunnel(stack.driver, tunnel_opts, log) if tunnel_opts is not None else None
        if opts.listen:
            host, sock_path = await _listen(opts, stack.driver, tokens, runners)
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
    log(f"browser {getattr(stack.renderer, 'description', 'none')}")
    core = f"C library {getattr(stack.gateway, 'path', '')}" if opts.via_abi else "Python API"
    log(f"gateway via {core}; realm isolated; pairing {opts.approve_pairing}")
    if opts.listen:
        saved = f"saved in {opts.pairings_file}" if opts.pairings_file else "in memory only"
        log(f"pairings {saved} ({len(tokens)} active)")
        log(f"admin socket {sock_path} (kelpie-gateway pair approve CODE)")
    log(stack.describe_policy())
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
    opts: ServeOptions, driver: Driver, tokens: TokenStore, runners: list[web.AppRunner]
) -> tuple[HostServer, Path]:
    """The loopback HTTP routes and the operator's admin socket (skipped by ``--no-listen``)."""
    pairing = Pairing(auto_approve=opts.approve_pairing == "auto", timeout_s=opts.pairing_timeout_s)
    host = HostServer(driver, tokens, pairing, log=log)
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
