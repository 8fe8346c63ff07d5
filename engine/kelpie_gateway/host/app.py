"""``kelpie-gateway serve``: wires the renderer, the gateway, the driver and the HTTP servers together.

Output (stdout, line-buffered, never a secret): the first line is exactly
``listening http://127.0.0.1:PORT``; then the site, the browser, the admin socket, pairing requests and
one ``tx`` line per transaction (method, tab, outcome, ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from kelpie_gateway.host.auth import Pairing, PairingFileError, TokenStore, state_dir
from kelpie_gateway.host.browser import ChromiumRenderer, NoRenderer, Renderer, find_chromium, gateway_config
from kelpie_gateway.host.driver import Driver, GatewayLike
from kelpie_gateway.host.server import (
    HostServer,
    QuietAppRunner,
    admin_app,
    is_loopback_bind,
    set_error_log,
    site_app,
)
from kelpie_gateway.host.settings import ConfigFileError, apply_config, load_config_file


def default_site() -> Path:
    """The built-in fixture site, shipped inside the package (``kelpie_gateway/host/site``; in a source
    checkout a link to ``fixtures/site``)."""
    return Path(__file__).resolve().parent / "site"


@dataclass
class BrowserOptions:
    """What ``serve`` and ``mcp`` share: the site, the browser and the gateway settings."""

    site: Path | None = None
    browser: str = "chromium"
    browser_executable: str | None = None
    headed: bool = False
    user_data_dir: str | None = None
    cdp_endpoint: str | None = None
    config_file: Path | None = None
    via_abi: bool = False
    abi_library: str | None = None


@dataclass
class ServeOptions(BrowserOptions):
    """The ``serve`` command line (see ``kelpie-gateway serve --help``)."""

    port: int = 0
    bind: str = "127.0.0.1"
    approve_pairing: str = "manual"
    pairing_timeout_s: float = 120.0
    pairings_file: Path | None = None
    """None keeps pairings in memory only (``--pairings memory``)."""


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

    async def close(self) -> None:
        """Drain late renderer replies (bounded), stop the site server, close (or detach from) the browser
        and the gateway. Never raises."""
        await self.driver.drain(2.0)
        for runner in reversed(self.runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await self.renderer.close()
        with contextlib.suppress(Exception):
            self.gateway.close()


def _gateway_config(opts: BrowserOptions, browser: bool) -> dict[str, Any]:
    config = gateway_config(browser=browser)
    if opts.config_file is not None:
        config = apply_config(
            config, load_config_file(opts.config_file), source=f"--config {opts.config_file}"
        )
    return config


async def start_stack(opts: BrowserOptions, log: Callable[[str], None]) -> BrowserStack:
    """Start the site server, the browser (launched, on a profile, or attached) and the gateway.
    Raises :class:`StartError` (nothing left running) when any of them cannot start."""
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
    gateway_box: list[GatewayLike] = []

    def invalidate(tab_id: str) -> None:
        if gateway_box:
            gateway_box[0].invalidate_refs(tab_id)

    try:
        site_runner = QuietAppRunner(site_app(site_root))
        await site_runner.setup()
        runners.append(site_runner)
        await web.TCPSite(site_runner, "127.0.0.1", 0).start()
        site_url = f"http://127.0.0.1:{_port(site_runner)}/index.html"
        if browser:
            chromium = ChromiumRenderer(
                executable=find_chromium(opts.browser_executable),
                on_invalidate=invalidate,
                log=log,
                headless=not opts.headed,
                user_data_dir=opts.user_data_dir,
                cdp_endpoint=opts.cdp_endpoint,
            )
            renderer = chromium
            await chromium.start(site_url)
        gateway = make_gateway(config, via_abi=opts.via_abi, library=opts.abi_library)
        gateway_box.append(gateway)
    except Exception as exc:
        for runner in reversed(runners):
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await renderer.close()
        raise StartError(f"{type(exc).__name__}: {_first_line(exc)}") from None
    driver = Driver(gateway, renderer, log)
    return BrowserStack(site_root, site_url, renderer, gateway, driver, runners)


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
    try:
        stack = await start_stack(opts, log)
    except StartError as exc:
        print(f"error: the host could not start: {exc}", file=sys.stderr)
        return exc.status

    runners: list[web.AppRunner] = []
    try:
        pairing = Pairing(auto_approve=opts.approve_pairing == "auto", timeout_s=opts.pairing_timeout_s)
        host = HostServer(stack.driver, tokens, pairing, log=log)
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
    except Exception as exc:
        print(f"error: the host could not start: {type(exc).__name__}: {exc}", file=sys.stderr)
        for runner in reversed(runners):
            await runner.cleanup()
        await stack.close()
        return 1

    log(f"listening http://{host.url_host()}:{host.port}")
    log(f"site {stack.site_root} at {stack.site_url.rsplit('/', 1)[0]}/")
    log(f"browser {getattr(stack.renderer, 'description', 'none')}")
    core = f"C library {getattr(stack.gateway, 'path', '')}" if opts.via_abi else "Python API"
    log(f"gateway via {core}; realm isolated; pairing {opts.approve_pairing}")
    saved = f"saved in {opts.pairings_file}" if opts.pairings_file else "in memory only"
    log(f"pairings {saved} ({len(tokens)} active)")
    log(f"admin socket {sock_path} (kelpie-gateway pair approve CODE)")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log("shutting down")
    await stack.driver.drain(2.0)
    for runner in reversed(runners):
        with contextlib.suppress(Exception):
            await runner.cleanup()
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    await stack.close()
    return 0


def _port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the server has no TCP address")
