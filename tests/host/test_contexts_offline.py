"""Per-client isolation and the remote-browser settings without a browser (issue 31; docs/host.md
"Parallel agents", "Remote browsers"): the context manager's rules on real gateways with a scripted renderer
and an injected clock — made on the first request, closed when idle (only when nothing is in flight), on
revocation (here or in the shared pairing file), the ``--max-contexts`` refusal for every kind of request, a
fresh context's ``TAB_NOT_FOUND`` saying why — and the parsing of ``--browser-header``, the endpoint rules
and the redaction of every secret they carry. The same behaviours on real Chromium: test_isolation.py,
test_remote_browser.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kelpie_gateway import Gateway
from kelpie_gateway.host.auth import TokenStore
from kelpie_gateway.host.cli import build_parser
from kelpie_gateway.host.contexts import Client, Isolation, Opened
from kelpie_gateway.host.remote import (
    REDACTED,
    RemoteBrowser,
    RemoteConfigError,
    backoff_delay,
    parse_header,
    parse_headers,
    redact_endpoint,
    remote_browser,
)
from kelpie_gateway.host.renderer import NoRenderer
from kelpie_gateway.host.settings import ConfigFileError, host_settings
from stdio_testlib import run_async

CONFIG = {"nativeMethods": ["get-tabs", "new-tab", "close-tab", "switch-tab", "navigate"]}


class TabsRenderer(NoRenderer):
    """One context's scripted renderer: its own tabs (ids from the host-wide counter), and ``hint`` after
    ``no tab …`` as the real one says."""

    def __init__(self, ids: list[int], hint: str) -> None:
        ids[0] += 1
        self.tabs = [f"t{ids[0]}"]
        self.hint = hint
        self.closed = False
        self.release: asyncio.Event | None = None

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if self.release is not None:
            await self.release.wait()
        if method == "get-tabs":
            tabs = [
                {"tabId": t, "generation": 0, "url": "http://127.0.0.1/", "title": t, "active": i == 0}
                for i, t in enumerate(self.tabs)
            ]
            return {"success": True, "tabs": tabs}
        tab = params.get("tabId")
        if tab not in self.tabs:
            error = {"code": "TAB_NOT_FOUND", "message": f"no tab {tab!r}{self.hint}"}
            return {"success": False, "error": error, "mayHaveCompleted": False}
        return {"success": True, "tabId": tab, "generation": 1, "url": params.get("url", "")}

    async def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def isolation(
    *, max_contexts: int = 8, idle_s: float = 900.0, still_paired: Any = None
) -> tuple[Isolation, Clock, dict[str, TabsRenderer], list[str]]:
    clock = Clock()
    renderers: dict[str, TabsRenderer] = {}
    lines: list[str] = []
    ids = [0]

    def open_context(client: Client, label: str, log: Any, hint: str) -> Opened:
        renderer = TabsRenderer(ids, hint)
        renderers[label] = renderer
        return Gateway(CONFIG), renderer, None

    manager = Isolation(
        open=open_context,
        front=Gateway(CONFIG),
        log=lines.append,
        max_contexts=max_contexts,
        idle_s=idle_s,
        still_paired=still_paired,
        clock=clock,
    )
    return manager, clock, renderers, lines


def request(method: str, params: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"version": 1, "id": 1, "method": method, "params": params or {}}).encode()


async def call(manager: Isolation, who: Client, method: str, params: dict[str, Any] | None = None) -> Any:
    with manager.lease(who) as lease:
        step = await lease.driver.canonical(request(method, params))
    return step["response"]


A, B, C = Client("a" * 64, "agent-a"), Client("b" * 64, "agent-b"), Client("tunnel:s-1", "tunnel:kelpie-x")


def tabs(envelope: Any) -> list[str]:
    assert envelope["success"], envelope
    return [t["tabId"] for t in envelope["result"]["tabs"]]


def test_each_client_gets_its_own_gateway_and_tabs_and_cannot_name_another_s() -> None:
    async def run() -> None:
        manager, _clock, renderers, lines = isolation()
        mine, theirs = tabs(await call(manager, A, "tabs.list")), tabs(await call(manager, B, "tabs.list"))
        assert mine == ["t1"] and theirs == ["t2"], (mine, theirs)
        assert tabs(await call(manager, C, "tabs.list")) == ["t3"]  # a tunnel session is a client too
        refused = await call(manager, A, "tab.navigate", {"tabId": "t2", "url": "http://127.0.0.1/"})
        assert refused["error"]["code"] == "TAB_NOT_FOUND" and refused["mayHaveCompleted"] is False
        assert [c.label for c in manager.contexts] == ["c1", "c2", "c3"]
        assert any("context c2 for client 'agent-b' opened (2 of at most 8)" in line for line in lines), lines
        assert tabs(await call(manager, A, "tabs.list")) == ["t1"]  # the same context again
        assert len(renderers) == 3

    run_async(run())


def test_a_client_over_max_contexts_is_refused_with_nothing_run_for_every_route() -> None:
    async def run() -> None:
        manager, _clock, renderers, lines = isolation(max_contexts=2)
        await call(manager, A, "tabs.list")
        await call(manager, B, "tabs.list")
        for method, params in (("tabs.list", {}), ("tabs.open", {"url": "http://127.0.0.1/"})):
            refused = await call(manager, C, method, params)
            assert refused["success"] is False and refused["mayHaveCompleted"] is False, refused
            assert refused["error"]["code"] == "NOT_AUTHORIZED", refused
            assert "--max-contexts 2" in refused["error"]["message"], refused
        assert (await call(manager, C, "capabilities"))["success"]  # the gateway's own answers still work
        with manager.lease(C) as lease:  # MCP: the handshake and tools/list are answered, a call refused
            hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
            assert "result" in (await lease.driver.mcp(json.dumps(hello).encode()))["response"]
            listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            assert (await lease.driver.mcp(json.dumps(listed).encode()))["response"]["result"]["tools"]
            tool = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "kelpie_browser_control", "arguments": {"method": "tabs.list", "params": {}}}}
            result = (await lease.driver.mcp(json.dumps(tool).encode()))["response"]["result"]
            assert result["isError"] is True and result["structuredContent"]["mayHaveCompleted"] is False
            assert "--max-contexts 2" in result["structuredContent"]["error"]["message"], result
        assert len(renderers) == 2  # no context was made for C
        assert sum("context limit: client 'tunnel:kelpie-x' refused" in line for line in lines) == 1, lines

    run_async(run())


def test_an_idle_context_closes_and_the_next_request_gets_a_fresh_one_that_says_so() -> None:
    async def run() -> None:
        manager, clock, renderers, lines = isolation(idle_s=900.0)
        old = tabs(await call(manager, A, "tabs.list"))
        await call(manager, B, "tabs.list")
        clock.now += 600
        await call(manager, B, "tabs.list")  # B keeps its context alive
        clock.now += 400
        await manager.sweep()
        assert renderers["c1"].closed and not renderers["c2"].closed
        assert any("context c1 of client 'agent-a' closed: after 900 s without requests" in x for x in lines)
        assert [c.label for c in manager.contexts] == ["c2"]
        refused = await call(manager, A, "tab.navigate", {"tabId": old[0], "url": "http://127.0.0.1/"})
        assert refused["error"]["code"] == "TAB_NOT_FOUND", refused
        message = refused["error"]["message"]
        assert "browser context is new" in message and "after 900 s without requests" in message, message
        fresh = tabs(await call(manager, A, "tabs.list"))
        assert fresh != old and not set(fresh) & set(old)  # tab ids are never reused
        assert any("context c3 for client 'agent-a' opened" in x and "a fresh one" in x for x in lines), lines

    run_async(run())


def test_a_context_with_a_call_in_flight_is_never_idle() -> None:
    async def run() -> None:
        manager, clock, renderers, _lines = isolation(idle_s=10.0)
        await call(manager, A, "tabs.list")
        renderers["c1"].release = asyncio.Event()
        slow = asyncio.ensure_future(call(manager, A, "tabs.list"))
        await asyncio.sleep(0.05)
        clock.now += 60
        await manager.sweep()
        assert not renderers["c1"].closed  # a call is in flight: not idle however long it takes
        renderers["c1"].release.set()
        assert tabs(await slow) == ["t1"]
        clock.now += 9
        await manager.sweep()
        assert not renderers["c1"].closed  # idle counts from the end of the last call
        clock.now += 2
        await manager.sweep()
        assert renderers["c1"].closed

    run_async(run())


def test_revocation_closes_only_that_client_s_context_here_or_in_the_shared_file(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "pairings.json")
    token_a, token_b = store.issue("agent-a"), store.issue("agent-b")
    key_a = store.check(token_a)[1].digest.hex()  # type: ignore[union-attr]
    key_b = store.check(token_b)[1].digest.hex()  # type: ignore[union-attr]

    async def run() -> None:
        manager, _clock, renderers, lines = isolation(still_paired=store.active)
        a, b = Client(key_a, "agent-a"), Client(key_b, "agent-b")
        await call(manager, a, "tabs.list")
        await call(manager, b, "tabs.list")
        await call(manager, C, "tabs.list")
        manager.revoked(key_a)  # DELETE /v1/pair on this host
        await asyncio.sleep(0.05)
        assert renderers["c1"].closed and not renderers["c2"].closed
        assert any("context c1 of client 'agent-a' closed: its pairing was revoked" in x for x in lines)
        TokenStore(tmp_path / "pairings.json").revoke(token_b)  # another host sharing the file
        await manager.sweep()
        assert renderers["c2"].closed and not renderers["c3"].closed  # the tunnel session is no pairing
        assert [c.label for c in manager.contexts] == ["c3"]

    run_async(run())


# ---------------------------------------------------------------------------------- --config host keys
def test_the_config_file_carries_the_host_s_isolation_settings_apart_from_the_gateway_s() -> None:
    gateway, host = host_settings({"allowActions": False, "isolation": "per-client", "maxContexts": 3,
                                   "contextIdleS": 1.5})
    assert gateway == {"allowActions": False}
    assert host == {"isolation": "per-client", "maxContexts": 3, "contextIdleS": 1.5}
    for bad, pointer in (({"isolation": "each"}, "/isolation"), ({"maxContexts": 0}, "/maxContexts"),
                         ({"maxContexts": True}, "/maxContexts"), ({"contextIdleS": -1}, "/contextIdleS"),
                         ({"contextIdleS": "9"}, "/contextIdleS")):
        with pytest.raises(ConfigFileError, match=pointer):
            host_settings(bad)


def test_isolation_flags_are_serve_s_and_checked() -> None:
    parser = build_parser()
    args = parser.parse_args(["serve", "--isolation", "per-client", "--max-contexts", "4", "--context-idle-s", "2"])
    assert (args.isolation, args.max_contexts, args.context_idle_s) == ("per-client", 4, 2.0)
    assert parser.parse_args(["serve"]).isolation is None  # unset: the --config key, else shared
    for bad in (["--max-contexts", "0"], ["--max-contexts", "x"], ["--context-idle-s", "0"],
                ["--isolation", "each"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", *bad])
    with pytest.raises(SystemExit):  # stdio is one client
        parser.parse_args(["mcp", "--isolation", "per-client"])


# ---------------------------------------------------------------------------------- remote browsers
def test_browser_headers_come_from_the_flag_a_file_or_a_variable(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("  file-secret-value\n")
    env = {"GRID_TOKEN": "Bearer env-secret-value"}
    assert parse_header("X-Api-Key: literal-value").value == "literal-value"
    assert parse_header(f"X-Api-Key: @file:{secret}").value == "file-secret-value"
    assert parse_header("Authorization: @env:GRID_TOKEN", env).value == "Bearer env-secret-value"
    assert parse_header("X-Odd: @@at-sign").value == "@at-sign"
    assert "literal-value" not in repr(parse_header("X-Api-Key: literal-value"))


@pytest.mark.parametrize(
    "spec",
    ["no colon", "Bad Name: secret-value-1", "X-Empty:", "Host: secret-value-2", "X-Nl: @env:MISSING",
     "X-At: @maybe",
     "X-File: @file:/nonexistent/kelpie-key"],
)
def test_a_bad_browser_header_is_refused_without_showing_a_value(spec: str) -> None:
    with pytest.raises(RemoteConfigError) as caught:
        parse_header(spec, {})
    value = spec.partition(":")[2].strip()
    assert "--browser-header" in str(caught.value)
    if value and not value.startswith("@"):
        assert value not in str(caught.value)


def test_a_header_given_twice_and_headers_without_an_endpoint_are_refused() -> None:
    with pytest.raises(RemoteConfigError, match="given twice"):
        parse_headers(["X-Key: one-value", "x-key: two-value"])
    with pytest.raises(RemoteConfigError, match="goes with --browser-endpoint"):
        remote_browser(cdp_endpoint=None, browser_endpoint=None, headers=parse_headers(["X-Key: v-alue"]))
    with pytest.raises(RemoteConfigError, match="give one"):
        remote_browser(cdp_endpoint="http://127.0.0.1:9222", browser_endpoint="ws://127.0.0.1:1/")


@pytest.mark.parametrize(
    ("flag", "url", "ok"),
    [
        ("browser", "ws://grid.example:3000/playwright", True),
        ("browser", "wss://grid.example/?token=abcd", True),
        ("browser", "http://grid.example:3000/", False),
        ("browser", "ws:///no-host", False),
        ("cdp", "http://10.1.2.3:9222", True),  # non-loopback, given explicitly
        ("cdp", "wss://cdp.example/devtools/browser/x", True),
        ("cdp", "ftp://10.1.2.3/", False),
        ("cdp", "http://127.0.0.1:port", False),
    ],
)
def test_endpoint_rules(flag: str, url: str, ok: bool) -> None:
    kwargs = {"cdp_endpoint": url if flag == "cdp" else None, "browser_endpoint": url if flag == "browser" else None}
    if ok:
        remote = remote_browser(**kwargs)
        assert remote is not None and remote.kind == ("cdp" if flag == "cdp" else "playwright")
    else:
        with pytest.raises(RemoteConfigError):
            remote_browser(**kwargs)


def test_endpoint_credentials_are_redacted_and_scrubbed_from_messages() -> None:
    url = "wss://grid-user:pw-secret-1@grid.example:443/pw?token=tok-secret-2&region=eu-west"
    shown = redact_endpoint(url)
    assert shown == f"wss://{REDACTED}@grid.example:443/pw?token={REDACTED}&region={REDACTED}", shown
    remote = remote_browser(
        cdp_endpoint=None, browser_endpoint=url, headers=parse_headers(["Authorization: Bearer hdr-secret-3"])
    )
    assert remote is not None and "tok-secret-2" not in repr(remote) and "hdr-secret-3" not in repr(remote)
    secrets = remote.secrets()
    message = (
        f"BrowserType.connect: WebSocket error: {url} 401\nCall log:\n - <ws connecting> "
        "wss://grid.example:443/pw?token=tok-secret-2 with Authorization: Bearer hdr-secret-3 as grid-user"
    )
    scrubbed = secrets.scrub(message)
    for secret in ("pw-secret-1", "tok-secret-2", "hdr-secret-3", "grid-user"):
        assert secret not in scrubbed, scrubbed
    assert shown in scrubbed and "grid.example" in scrubbed
    assert remote.describe_headers() == "; headers Authorization (values withheld)"


def test_the_reconnect_backoff_is_capped_and_jittered() -> None:
    assert [backoff_delay(n, 0.5, 4.0, lambda: 1.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff_delay(3, 0.5, 4.0, lambda: 0.0) == 2.0  # jitter: at least half the step


@pytest.mark.parametrize(
    ("kind", "endpoint", "here"),
    [
        ("playwright", "ws://127.0.0.1:3000/grid", True),
        ("playwright", "ws://localhost:3000/", True),
        ("cdp", "http://[::1]:9222", True),
        ("playwright", "wss://grid.example.com/?token=x", False),
        ("cdp", "http://192.0.2.2:9222", False),  # this machine's own address is another host to the rule
    ],
)
def test_which_browsers_reach_the_policy_proxy(kind: str, endpoint: str, here: bool) -> None:
    from kelpie_gateway.host.browser.link import BrowserLink

    remote = RemoteBrowser(kind, endpoint)
    assert remote.on_this_machine is here
    assert BrowserLink(log=print, remote=remote).reaches_proxy is here
    assert BrowserLink(log=print).reaches_proxy  # launched here


def test_the_policy_proxy_reaches_the_launch_options_of_every_launched_browser() -> None:
    from kelpie_gateway.host.browser.link import BrowserLink, proxy_flags

    proxy = "http://127.0.0.1:4321"
    flags = ["--proxy-server=http://127.0.0.1:4321", "--proxy-bypass-list=<-loopback>",
             "--webrtc-ip-handling-policy=disable_non_proxied_udp"]
    assert proxy_flags(proxy) == flags
    local = BrowserLink(log=print, executable="/usr/bin/chromium", proxy=proxy)._launch_options(local=True)
    assert local["args"][-3:] == flags and local["executable_path"] == "/usr/bin/chromium"
    # A Playwright server is asked for the flags; the executable only when the operator named it.
    server = BrowserLink(log=print, executable="/usr/bin/chromium", proxy=proxy,
                         remote=RemoteBrowser("playwright", "ws://127.0.0.1:3000"))._launch_options(local=False)
    assert server["args"][-3:] == flags and "executablePath" not in server
    plain = BrowserLink(log=print)._launch_options(local=True)
    assert not any(flag.startswith(("--proxy", "--webrtc")) for flag in plain["args"])
