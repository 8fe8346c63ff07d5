"""MCP over an outbound WebSocket (MCP-over-ACP, issue 17) against a test broker (``acp_broker.py``, aiohttp
like the host's client), with the host driving real headless Chromium on the fixture site, and the audit
trail (``--audit-log``) checked on every path.

One host per module and gateway mode: ``serve --connect ws://127.0.0.1:PORT/acp`` (loopback) that also
listens on loopback HTTP, so a local client and the tunnel share one gateway. Its viewport is 2560x1440,
so a screenshot of the noise page is over the tunnel's 8 MiB frame cap (and under the engine's 32 MiB
result cap). Every test runs on the Python API host; the main journey and the dropped socket also run on
a ``--via-abi`` host (every transaction through the C library), like the site-policy tests.
``kelpie-gateway mcp --connect`` (stdio and the tunnel on one gateway) has its own host at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp_broker import Broker, BrokerThread, Peer
from host_testlib import ROOT, Host, start_host
from kelpie_gateway.host.launch import HostProcess
from stdio_testlib import StdioHost

pytestmark = pytest.mark.timeout(240)

MiB = 1024 * 1024
TYPED = "tunnel-secret-Ωmega-42"
BLOCKED = "http://127.0.0.2:9"
"""An origin the hosts' site policy blocks (``--blocked-origins``): a navigation there is NOT_AUTHORIZED."""
PYTHON = pytest.mark.parametrize("world", ["python"], indirect=True)
BOTH = pytest.mark.parametrize("world", ["python", "abi"], indirect=True)


@dataclass
class World:
    process: HostProcess
    host: Host
    brokers: BrokerThread
    broker: Broker
    token: str
    audit: Path
    mode: str
    peer: Peer | None = None
    connection: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def run(self, coro: Any) -> Any:
        return self.brokers.run(coro)

    def audit_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit.read_text(encoding="utf-8").splitlines()]

    def wait_audit(self, predicate: Any, timeout: float = 30.0) -> dict[str, Any]:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.audit_lines():
                if predicate(line):
                    return line
            time.sleep(0.1)
        raise AssertionError(f"no matching audit line in {self.audit_lines()[-10:]}")


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    mode = request.param
    with tunnel_world(tmp_path_factory.mktemp(f"tunnel-{mode}"), mode) as made:
        yield made


@contextlib.contextmanager
def tunnel_world(tmp: Path, mode: str, *extra: str) -> Iterator[World]:
    """A broker and a host attached to it (``extra``: more ``serve`` flags), stopped afterwards."""
    token = secrets.token_urlsafe(32)
    token_file = tmp / "broker-token"
    token_file.write_text(token + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    audit = tmp / "audit.jsonl"
    brokers = BrokerThread()
    broker = Broker(token)
    brokers.run(broker.start())
    process: HostProcess | None = None
    args = ["--approve-pairing", "auto", "--connect", broker.url, "--connect-token-file", str(token_file),
            "--connect-backoff-max", "1", "--audit-log", str(audit), "--viewport", "2560x1440",
            "--blocked-origins", "http://127.0.0.2:*", *extra]
    try:
        process = start_host(args, mode)
        host = Host(process, process.pair("local-http-client"), mode)
        yield World(process, host, brokers, broker, token, audit, mode)
    finally:
        if process is not None:
            process.stop()
        brokers.run(broker.stop())
        brokers.close()
        if os.environ.get("KELPIE_HOST_LOG") and process is not None:
            print("\n".join(process.lines))


# ---------------------------------------------------------------------- helpers (run on the broker loop)
async def attach(world: World) -> tuple[Peer, str]:
    """The host's current socket (waiting for a new one after a drop) and a fresh MCP connection on it."""
    peer = world.peer
    if peer is None or peer.closed.is_set():
        peer = await world.broker.attached()
        world.peer = peer
        world.connection = None
    if world.connection is None:
        answer = await peer.request("mcp/connect", {"acpId": peer.declared[0]["id"]})
        world.connection = answer["result"]["connectionId"]
        init = await mcp(world, "initialize", {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "broker-agent", "version": "1"},
        })
        assert init["result"]["serverInfo"]["name"]
        await peer.notify("mcp/message", {"connectionId": world.connection, "method": "notifications/initialized"})
    assert world.connection is not None
    return peer, world.connection


async def mcp(world: World, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Any:
    assert world.peer is not None
    message: dict[str, Any] = {"connectionId": world.connection, "method": method}
    if params is not None:
        message["params"] = params
    return await world.peer.request("mcp/message", message, timeout)


async def bc(world: World, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``kelpie_browser_control`` over the tunnel; the envelope (structuredContent == the text block)."""
    await attach(world)
    answer = await mcp(world, "tools/call", {"name": "kelpie_browser_control", "arguments": {"method": method, "params": params}})
    result = answer["result"]
    envelope = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == envelope
    assert result["isError"] is (not envelope["success"])
    return dict(envelope)


async def ok(world: World, method: str, params: dict[str, Any]) -> dict[str, Any]:
    envelope = await bc(world, method, params)
    for _ in range(50):  # BUSY (a retirement still due) and RENDERER_CHANGED are retryable: nothing happened
        if envelope["success"] or not envelope["error"]["retryable"]:
            break
        await asyncio.sleep(0.2)
        envelope = await bc(world, method, params)
    assert envelope["success"], envelope
    return dict(envelope["result"])


def element(snapshot: dict[str, Any], tag: str, label: str) -> dict[str, Any]:
    for item in snapshot["elements"]:
        if item.get("tag") == tag and label.lower() in str(item.get("label", "")).lower():
            return dict(item)
    raise AssertionError(f"no <{tag}> labelled {label!r} in {snapshot['elements']}")


async def open_tab(world: World, page: str) -> str:
    return str((await ok(world, "tabs.open", {"url": world.host.site(page)}))["tabId"])


async def local(world: World, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The same gateway through the local HTTP route (a blocking call, off the broker loop)."""
    return await asyncio.get_running_loop().run_in_executor(None, world.host.call, method, params)


# ---------------------------------------------------------------------- tests
@PYTHON
def test_declares_the_server_on_session_new_with_the_bearer(world: World) -> None:
    async def body() -> None:
        peer = await world.broker.attached()
        assert peer.handshake[:2] == ["initialize", "session/new"]
        initialize = peer.received[0]
        assert initialize["method"] == "initialize" and initialize["params"]["protocolVersion"] == 1
        [server] = peer.declared
        assert server["type"] == "acp" and server["name"] == "kelpie-browser"
        assert server["id"].startswith("kelpie-")
        assert world.broker.sessions[peer.session] == peer.declared
        # A wrong acpId is refused; the declared one opens an MCP connection.
        wrong = await peer.request("mcp/connect", {"acpId": "someone-else"})
        assert wrong["error"]["code"] == -32602
        world.peer = peer
        _, connection = await attach(world)
        assert connection
        tools = await mcp(world, "tools/list", {})
        names = {tool["name"] for tool in tools["result"]["tools"]}
        assert "kelpie_browser_control" in names

    world.run(body())
    assert world.process.wait_for_line("tunnel attached to ws://127.0.0.1:")
    assert world.broker.refused_handshakes == 0


@BOTH
def test_snapshot_click_and_type_through_the_tunnel(world: World) -> None:
    async def body() -> None:
        tab = await open_tab(world, "click.html")
        button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "button", "Increment")
        assert await ok(world, "tab.click", {"tabId": tab, "ref": button["ref"]}) == {"clicked": True}
        assert "Clicked 1 times" in (await ok(world, "tab.snapshot", {"tabId": tab}))["text"]

        form = await open_tab(world, "form.html")
        field_ = element(await ok(world, "tab.snapshot", {"tabId": form}), "input", "Your name")
        typed = await ok(world, "tab.type", {"tabId": form, "ref": field_["ref"], "text": TYPED})
        assert typed == {"typed": len(TYPED)}
        snapshot = await ok(world, "tab.snapshot", {"tabId": form})
        assert f"Name has {len(TYPED)} characters" in snapshot["text"]
        assert TYPED not in json.dumps(snapshot)
        world.notes["form"] = form

    world.run(body())
    click = world.wait_audit(lambda a: a["method"] == "tab.click" and a["outcome"] == "success")
    assert click["client"].startswith("tunnel:kelpie-") and click["transport"] == "tunnel"
    assert click["connection"] == world.connection and click["authorized"] is True
    assert click["mutates"] is True and click["mayHaveCompleted"] is False and click["dispatches"] == 1
    assert len(click["paramsSha256"]) == 64 and click["durationMs"] > 0
    typed = world.wait_audit(lambda a: a["method"] == "tab.type")
    assert typed["outcome"] == "success" and typed["tabId"] == world.notes["form"]
    text = world.audit.read_text(encoding="utf-8")
    assert TYPED not in text and world.token not in text
    assert world.process.wait_for_line("gateway via C library" if world.mode == "abi" else "gateway via Python API")


@PYTHON
def test_downloads_come_back_as_resources_through_the_tunnel(world: World) -> None:
    """A click that downloads answers a ``resource_link`` over the tunnel, and the tunnel serves
    ``resources/list`` and ``resources/read`` of it (the capability was declared at initialize)."""

    async def body() -> dict[str, Any]:
        await attach(world)
        init = await mcp(world, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        tab = await open_tab(world, "export.html")
        button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "a", "Download CSV")
        answer = await mcp(world, "tools/call", {
            "name": "kelpie_browser_control",
            "arguments": {"method": "tab.click", "params": {"tabId": tab, "ref": button["ref"]}},
        })
        links = [b for b in answer["result"]["content"] if b["type"] == "resource_link"]
        listing = await mcp(world, "resources/list", {})
        read = await mcp(world, "resources/read", {"uri": links[0]["uri"]})
        return {"init": init, "links": links, "listing": listing, "read": read}

    seen = world.run(body())
    assert seen["init"]["result"]["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    [link] = seen["links"]
    assert link["name"] == "export.csv" and link["mimeType"] == "text/csv" and link["size"] == 15
    assert link["uri"] in [r["uri"] for r in seen["listing"]["result"]["resources"]]
    assert seen["read"]["result"]["contents"] == [{"uri": link["uri"], "mimeType": "text/csv", "text": "tab,count\nt1,3\n"}]
    read = world.wait_audit(lambda a: a.get("extension") == "resources_read")
    assert read["transport"] == "tunnel" and read["outcome"] == "success"


@PYTHON
def test_busy_across_the_tunnel_and_a_local_client(world: World) -> None:
    async def body() -> None:
        tab = await open_tab(world, "slow.html?busy=2500")
        button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "button", "Slow")
        click = asyncio.ensure_future(bc(world, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000}))
        await asyncio.sleep(0.8)
        busy = await local(world, "tabs.list", {})
        assert busy["error"]["code"] == "BUSY" and busy["mayHaveCompleted"] is False
        assert (await click)["success"] is True
        # And the other way round: a local click in flight makes the tunnel's call BUSY.
        button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "button", "Slow")
        local_click = asyncio.ensure_future(
            local(world, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000})
        )
        await asyncio.sleep(0.8)
        busy = await bc(world, "tabs.list", {})
        assert busy["error"]["code"] == "BUSY" and busy["error"]["retryable"] is True
        assert (await local_click)["success"] is True
        assert "Slow effect count: 2" in (await ok(world, "tab.snapshot", {"tabId": tab}))["text"]

    world.run(body())
    lines = world.audit_lines()
    busy = [a for a in lines if a["code"] == "BUSY"]
    assert {a["transport"] for a in busy} >= {"http", "tunnel"}
    assert all(a["authorized"] is None and a["dispatches"] == 0 for a in busy)  # refused before authorize
    assert any(a["client"] == "local-http-client" for a in busy)


def test_per_client_isolation_gives_the_tunnel_session_a_context_of_its_own(tmp_path: Path) -> None:
    """``--isolation per-client``: the tunnel's ACP session is one client and a local bearer another — the
    mirror of the test above: a tunnel click in flight no longer makes the local client BUSY, and neither
    sees the other's tabs."""
    with tunnel_world(tmp_path, "python", "--isolation", "per-client") as world:

        async def body() -> None:
            theirs = {t["tabId"] for t in (await local(world, "tabs.list", {}))["result"]["tabs"]}
            tab = await open_tab(world, "slow.html?busy=2500")
            mine = {t["tabId"] for t in (await ok(world, "tabs.list", {}))["tabs"]}
            assert tab in mine and not mine & theirs, (mine, theirs)
            button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "button", "Slow")
            click = asyncio.ensure_future(bc(world, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000}))
            await asyncio.sleep(0.8)
            listed = await local(world, "tabs.list", {})
            assert listed["success"] is True, listed  # served meanwhile: another client's lane
            assert not click.done()
            named = await local(world, "tab.snapshot", {"tabId": tab})
            assert named["error"]["code"] == "TAB_NOT_FOUND", named
            assert (await click)["success"] is True

        world.run(body())
        opened = [line for line in world.process.lines if "opened (" in line and "context c" in line]
        assert any("for client 'tunnel:kelpie-" in line for line in opened), opened
        assert any("for client 'local-http-client'" in line for line in opened), opened


@PYTHON
def test_a_method_frame_over_1_mib_closes_the_connection(world: World) -> None:
    async def body() -> None:
        peer, connection = await attach(world)
        # Exactly 1 MiB is within the cap: answered (the engine refuses the unknown tool, nothing closes).
        head = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "mcp/message", "params": {
            "connectionId": connection, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {"pad": ""}}}})
        pad = MiB - len(head.encode())
        exact = head.replace('"pad": ""', '"pad": "' + "x" * pad + '"')
        assert len(exact.encode()) == MiB
        waiter = asyncio.get_running_loop().create_future()
        peer._waiting[77] = waiter
        await peer.send_raw(exact)
        answer = await asyncio.wait_for(waiter, 30)
        assert answer["error"]["code"] == -32602 and not peer.closed.is_set()
        # One byte more closes the socket (1009), before the host parses it.
        await peer.send_raw(exact.replace('"pad": "', '"pad": "x', 1))
        await asyncio.wait_for(peer.closed.wait(), 30)
        assert peer.close_code == 1009
        # The host reconnects and resumes its session: the broker sees the same declaration again.
        again = await world.broker.attached(after=world.broker.peers.index(peer) + 1)
        assert again.handshake[:2] == ["initialize", "session/resume"]
        assert again.session == peer.session and again.declared == peer.declared

    world.run(body())
    assert world.process.wait_for_line("(over the frame cap); closing the connection")


@PYTHON
def test_a_response_over_8_mib_is_refused_before_sending(world: World) -> None:
    async def body() -> None:
        tab = await open_tab(world, "noise.html")
        # Over the local route the screenshot travels whole: it is over 8 MiB, under the 32 MiB result cap.
        slow = {"tabId": tab, "timeoutMs": 30000}  # encoding ~4 million random pixels takes a while
        direct = await local(world, "tab.screenshot", slow)
        assert direct["success"] is True, direct
        assert len(direct["result"]["data"]) > 8 * MiB
        peer, _ = await attach(world)
        before = len(peer.received)
        refused = await bc(world, "tab.screenshot", slow)
        assert refused["error"]["code"] == "RESPONSE_TOO_LARGE" and refused["mayHaveCompleted"] is False, refused
        frame = json.dumps(peer.received[before])
        assert len(frame.encode()) < MiB and not peer.closed.is_set()
        # A screenshot that fits travels as one image block.
        small = await open_tab(world, "click.html")
        answer = await mcp(world, "tools/call", {"name": "kelpie_browser_control", "arguments": {
            "method": "tab.screenshot", "params": {"tabId": small, "timeoutMs": 30000}}})
        images = [block for block in answer["result"]["content"] if block["type"] == "image"]
        assert answer["result"]["structuredContent"]["success"] is True, answer["result"]["structuredContent"]
        assert len(images) == 1
        await ok(world, "tabs.close", {"tabId": tab})

    world.run(body())
    line = world.wait_audit(lambda a: a["code"] == "RESPONSE_TOO_LARGE")
    assert line["method"] == "tab.screenshot" and line["outcome"] == "refused" and line["transport"] == "tunnel"


@BOTH
def test_a_dropped_socket_mid_click_cancels_and_requires_reconcile(world: World) -> None:
    async def body() -> None:
        tab = await open_tab(world, "slow.html?busy=3000")
        button = element(await ok(world, "tab.snapshot", {"tabId": tab}), "button", "Slow")
        peer, _ = await attach(world)
        click = asyncio.ensure_future(bc(world, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000}))
        await asyncio.sleep(0.8)  # dispatched: the effect has landed, the renderer is busy
        await peer.ws.close(code=1011, message=b"broker lost the agent")
        with pytest.raises(ConnectionError):
            await click
        # The host reconnects (session/resume) and the next mutation on that tab is refused until observed.
        world.peer = None
        elsewhere = {"tabId": tab, "url": world.host.site("second.html")}
        again = await bc(world, "tab.navigate", elsewhere)
        for _ in range(100):
            if again["error"]["code"] != "BUSY":  # the late renderer reply retires the lane first
                break
            await asyncio.sleep(0.2)
            again = await bc(world, "tab.navigate", elsewhere)
        assert again["error"]["code"] == "RECONCILE_REQUIRED" and again["mayHaveCompleted"] is False
        assert world.peer is not None and world.peer.handshake[:2] == ["initialize", "session/resume"]
        snapshot = await ok(world, "tab.snapshot", {"tabId": tab})
        assert "Slow effect count: 1" in snapshot["text"]  # the effect landed exactly once
        await ok(world, "tab.navigate", elsewhere)  # observed: acting is allowed again
        world.notes["drop_tab"] = tab

    world.run(body())
    tab = world.notes["drop_tab"]
    cancelled = world.wait_audit(lambda a: a["tabId"] == tab and a["code"] == "CANCELLED")
    assert cancelled["outcome"] == "unknown" and cancelled["mayHaveCompleted"] is True
    assert cancelled["method"] == "tab.click" and cancelled["dispatches"] == 1 and cancelled["authorized"] is True
    reconcile = world.wait_audit(lambda a: a["tabId"] == tab and a["code"] == "RECONCILE_REQUIRED")
    assert reconcile["authorized"] is None and reconcile["outcome"] == "refused"
    assert world.process.wait_for_line("call(s) in flight abandoned")


@PYTHON
def test_permission_requests_are_approved(world: World) -> None:
    async def body() -> None:
        peer, _ = await attach(world)
        answer = await peer.request("session/request_permission", {
            "sessionId": peer.session,
            "toolCall": {"toolCallId": "call-1"},
            "options": [
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            ],
        })
        assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
        unknown = await peer.request("terminal/create", {"command": "true"})
        assert unknown["error"]["code"] == -32601

    world.run(body())


@PYTHON
def test_refusals_and_extensions_over_the_tunnel_are_audited(world: World) -> None:
    """A refusal by the host's policy at ``authorize`` (authorized:false), one by validation before it
    (authorized:null) and an extension called by its own tool name each leave their line, with the digest
    of what was asked and nothing else of it (the typed text goes through ``fill`` and never into the log)."""
    async def body() -> None:
        tab = await open_tab(world, "index.html")
        denied = await bc(world, "tab.navigate", {"tabId": tab, "url": f"{BLOCKED}/{TYPED}"})
        assert denied["error"]["code"] == "NOT_AUTHORIZED" and denied["mayHaveCompleted"] is False
        invalid = await bc(world, "tab.type", {"tabId": tab, "ref": "nope", "text": TYPED, "timeoutMs": 0})
        assert invalid["error"]["code"] == "INVALID_PARAMS" and invalid["mayHaveCompleted"] is False
        form = await open_tab(world, "form.html")
        field_ = element(await ok(world, "tab.snapshot", {"tabId": form}), "input", "Your name")
        filled = await mcp(world, "tools/call", {"name": "fill", "arguments": {
            "tabId": form, "ref": field_["ref"], "text": TYPED}})
        assert filled["result"]["structuredContent"]["success"] is True, filled
        assert f"Name has {len(TYPED)} characters" in (await ok(world, "tab.snapshot", {"tabId": form}))["text"]
        world.notes["refused_tab"], world.notes["filled_tab"] = tab, form

    world.run(body())
    tab = world.notes["refused_tab"]
    denied = world.wait_audit(lambda a: a["tabId"] == tab and a["code"] == "NOT_AUTHORIZED")
    assert denied["authorized"] is False and denied["dispatches"] == 0 and denied["method"] == "tab.navigate"
    assert denied["outcome"] == "refused" and denied["transport"] == "tunnel"
    invalid = world.wait_audit(lambda a: a["code"] == "INVALID_PARAMS")
    assert invalid["authorized"] is None and invalid["method"] == "tab.type" and invalid["dispatches"] == 0
    assert len(invalid["paramsSha256"]) == 64 and invalid["paramsSha256"] != denied["paramsSha256"]
    filled = world.wait_audit(lambda a: a["extension"] == "fill")
    assert filled["method"] == "extension.call" and filled["tabId"] == world.notes["filled_tab"]
    assert filled["outcome"] == "success" and filled["mutates"] is True and filled["authorized"] is True
    assert TYPED not in world.audit.read_text(encoding="utf-8")


@PYTHON
def test_reattaches_after_the_broker_restarts(world: World) -> None:
    async def restart() -> None:
        old = world.broker
        port = old.port
        await old.stop()
        await asyncio.sleep(1.5)  # the host retries against a closed port meanwhile
        fresh = Broker(world.token, port)
        await fresh.start()
        world.broker, world.peer = fresh, None
        peer = await fresh.attached(timeout=60)
        # The restarted broker forgot the session: the host declares itself on a new one.
        assert peer.handshake[:3] == ["initialize", "session/resume", "session/new"]
        assert peer.declared[0]["id"] == old.sessions[next(iter(old.sessions))][0]["id"]
        tabs = await ok(world, "tabs.list", {})
        assert tabs["tabs"]

    world.run(restart())


@PYTHON
def test_audit_never_holds_typed_text_or_tokens(world: World) -> None:
    text = world.audit.read_text(encoding="utf-8")
    lines = world.audit_lines()
    assert lines and TYPED not in text and world.token not in text and world.host.token not in text
    assert oct(world.audit.stat().st_mode & 0o777) == "0o600"
    output = "\n".join(world.process.lines)
    assert world.token not in output and TYPED not in output
    # Every line has the documented fields, and only canonical transactions are recorded.
    keys = {"time", "client", "transport", "connection", "transaction", "method", "extension", "tabId", "lane",
            "outcome", "code", "mayHaveCompleted", "mutates", "authorized", "dispatches", "durationMs",
            "paramsSha256"}
    assert all(set(line) == keys for line in lines)
    assert all(line["method"] not in ("initialize", "tools/list") for line in lines)
    assert any(line["transport"] == "http" and line["client"] == "local-http-client" for line in lines)


def test_bad_connect_settings_are_usage_errors(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "engine")}
    cli = [sys.executable, "-m", "kelpie_gateway.host.cli", "serve", "--port", "0", "--browser", "none"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=60)

    plain = run("--connect", "ws://broker.example.com/acp")
    assert plain.returncode == 2 and "only to a loopback broker" in plain.stderr
    missing = run("--connect", "wss://broker.example.com/acp", "--connect-token-file", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "--connect-token-file" in missing.stderr
    alone = run("--no-listen")
    assert alone.returncode == 2 and "--no-listen needs --connect" in alone.stderr
    (tmp_path / "blocker").write_text("a file, not a folder", encoding="utf-8")
    unwritable = run("--audit-log", str(tmp_path / "blocker" / "audit.jsonl"))
    assert unwritable.returncode == 2 and "--audit-log" in unwritable.stderr
    # The same rules for `mcp` (stdio), before any browser starts; stdout stays empty (it is JSON-RPC's).
    stdio = [sys.executable, "-m", "kelpie_gateway.host.cli", "mcp", "--browser", "none"]
    for args, needle in ((["--connect", "ws://broker.example.com/acp"], "only to a loopback broker"),
                         (["--audit-log", str(tmp_path / "blocker" / "audit.jsonl")], "--audit-log")):
        refused = subprocess.run([*stdio, *args], capture_output=True, text=True, env=env, timeout=60,
                                 stdin=subprocess.DEVNULL)
        assert refused.returncode == 2 and needle in refused.stderr and refused.stdout == ""


@PYTHON
def test_sighup_reopens_the_audit_log_after_rotation(world: World) -> None:
    import signal
    import time

    rotated = world.audit.with_name("audit.jsonl.rotated")
    os.rename(world.audit, rotated)
    world.process._proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]  # logrotate's postrotate
    deadline = time.monotonic() + 10
    while not world.audit.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.audit.exists() and world.audit.stat().st_size == 0  # reopened (created), still alive
    world.host.call("tabs.list", {})
    assert [line["method"] for line in world.audit_lines()] == ["tabs.list"]
    assert world.process._proc.poll() is None  # type: ignore[union-attr]


def test_tunnel_only_host_and_a_refused_bearer(tmp_path: Path) -> None:
    """``--no-listen``: no HTTP routes, the tunnel is the only way in; a broker that refuses the bearer is
    retried with backoff and the token never appears in the output."""
    token = secrets.token_urlsafe(32)
    brokers = BrokerThread()
    broker = Broker("a-different-token")
    brokers.run(broker.start())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "engine"), "KELPIE_GATEWAY_CONNECT_TOKEN": token,
           "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "kelpie_gateway.host.cli", "serve", "--browser", "none", "--no-listen",
           "--connect", broker.url, "--connect-backoff-max", "0.5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"connecting {broker.url} (no local listener")
        output = [first]
        while broker.refused_handshakes < 2:  # retried after the 401
            output.append(proc.stdout.readline())
        broker.token = token  # the broker now accepts it: the next attempt attaches

        async def body() -> None:
            peer = await broker.attached(timeout=60)
            connection = (await peer.request("mcp/connect", {"acpId": peer.declared[0]["id"]}))["result"]
            listed = await peer.request("mcp/message", {"connectionId": connection["connectionId"],
                                                        "method": "tools/list", "params": {}})
            assert "kelpie_browser_control" in {tool["name"] for tool in listed["result"]["tools"]}

        brokers.run(body())
        assert not any(line.startswith("listening ") for line in output)
        assert any("the broker refused the bearer (HTTP 401)" in line for line in output)
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=30)
        brokers.run(broker.stop())
        brokers.close()
    assert token not in "".join(output) + rest


def test_mcp_over_stdio_with_a_tunnel_shares_one_gateway(tmp_path: Path) -> None:
    """``kelpie-gateway mcp --connect URL --audit-log FILE``: the stdio client and a remote agent drive one
    browser (BUSY across both), every transaction is audited with its client (``stdio`` or the tunnel),
    SIGHUP reopens the log, and the tunnel ends with the stdio session."""
    import signal
    import time

    token = secrets.token_urlsafe(32)
    token_file = tmp_path / "broker-token"
    token_file.write_text(token, encoding="utf-8")
    audit = tmp_path / "audit.jsonl"
    brokers = BrokerThread()
    broker = Broker(token)
    brokers.run(broker.start())
    args = ["--connect", broker.url, "--connect-token-file", str(token_file), "--audit-log", str(audit)]
    try:
        with StdioHost(args) as stdio:
            assert stdio.initialize()["result"]["serverInfo"]["name"] == "kelpie-browser-gateway"
            deadline = time.monotonic() + 10
            while not any(line.startswith("site ") for line in stdio.log) and time.monotonic() < deadline:
                time.sleep(0.05)  # stderr is read on its own thread
            site = next(line for line in stdio.log if line.startswith("site ")).rsplit(" at ", 1)[1]
            state: dict[str, Any] = {}

            async def attach_and_click() -> None:
                peer = await broker.attached(timeout=90)
                connection = (await peer.request("mcp/connect", {"acpId": peer.declared[0]["id"]}))["result"]
                state["peer"], state["connection"] = peer, connection["connectionId"]

            async def tunnel_call(method: str, params: dict[str, Any]) -> dict[str, Any]:
                answer = await state["peer"].request("mcp/message", {
                    "connectionId": state["connection"], "method": "tools/call",
                    "params": {"name": "kelpie_browser_control", "arguments": {"method": method, "params": params}}})
                return dict(answer["result"]["structuredContent"])

            brokers.run(attach_and_click())
            opened = brokers.run(tunnel_call("tabs.open", {"url": site + "slow.html?busy=2500"}))
            tab = opened["result"]["tabId"]
            snapshot = stdio.control(3, "tab.snapshot", {"tabId": tab})
            button = next(e for e in snapshot["result"]["elements"] if e["tag"] == "button")
            click = asyncio.run_coroutine_threadsafe(
                tunnel_call("tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000}), brokers.loop)
            time.sleep(0.8)  # the tunnel's click holds the direct lane: the stdio client is told BUSY
            busy = stdio.request(4, "tools/call", {"name": "kelpie_browser_control",
                                                   "arguments": {"method": "tabs.list", "params": {}}})
            assert busy["result"]["structuredContent"]["error"]["code"] == "BUSY"
            assert click.result(60)["success"] is True
            after = stdio.control(5, "tab.snapshot", {"tabId": tab})
            assert "Slow effect count: 1" in after["result"]["text"]

            lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
            by = {(a["client"], a["transport"], a["method"], a["code"]) for a in lines}
            assert ("stdio", "stdio", "tab.snapshot", None) in by and ("stdio", "stdio", "tabs.list", "BUSY") in by
            tunnel_lines = [a for a in lines if a["transport"] == "tunnel"]
            assert {a["method"] for a in tunnel_lines} == {"tabs.open", "tab.click"}
            assert all(a["client"].startswith("tunnel:kelpie-") and a["connection"] for a in tunnel_lines)

            os.rename(audit, tmp_path / "audit.jsonl.1")  # logrotate, then its postrotate SIGHUP
            stdio.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while not audit.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert stdio.control(6, "tabs.list", {})["success"] is True
            rotated = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
            assert [(a["client"], a["method"]) for a in rotated] == [("stdio", "tabs.list")]

            stdio.close_stdin()
            assert stdio.wait(60) == 0
            brokers.run(asyncio.wait_for(state["peer"].closed.wait(), 30))  # the tunnel closed with the session
            assert stdio.garbage == []  # stdout carried JSON-RPC only, tunnel logs went to stderr
            log = "\n".join(stdio.log)
            assert "tunnel attached to" in log and token not in log
            assert token not in audit.read_text(encoding="utf-8") + (tmp_path / "audit.jsonl.1").read_text()
    finally:
        brokers.run(broker.stop())
        brokers.close()


def test_a_call_dropped_while_the_browser_is_relaunched_is_not_run(tmp_path: Path) -> None:
    """Chromium exits and its relaunch is slow (an executable that sleeps 4 s first); a tabs.open over the
    tunnel waits for it, and the broker drops the socket meanwhile. Nothing was sent to a browser, so the
    call is CANCELLED with mayHaveCompleted:false (audited as a refusal) and no tab is opened once the
    browser is back. Before, it was cancelled as a dispatched mutation (an unknown outcome) and still ran
    after the relaunch: a tab its caller never learnt of (docs/contract-notes.md, "Calls abandoned before
    they ran")."""
    from faults_testlib import WORKS, chromium_processes, executable, kill, until

    wrapper = executable(tmp_path / "chromium", WORKS)
    with tunnel_world(tmp_path, "python", "--browser-executable", str(wrapper)) as world:
        wanted = world.host.site("second.html")

        async def body() -> None:
            peer, _ = await attach(world)
            assert (await bc(world, "tabs.list", {}))["success"]
            executable(wrapper, '#!/bin/sh\nsleep 4\nexec /usr/bin/chromium "$@"\n')
            kill(chromium_processes(world.host)[0])
            line = await asyncio.get_running_loop().run_in_executor(
                None, world.process.wait_for_line, "browser exited", 30)
            assert line is not None
            opening = asyncio.ensure_future(bc(world, "tabs.open", {"url": wanted}))
            await asyncio.sleep(1.0)  # the call waits for the browser
            await peer.ws.close(code=1011, message=b"broker lost the agent")
            with pytest.raises(ConnectionError):
                await opening

        world.run(body())

        def listed() -> list[dict[str, Any]] | None:
            env = world.host.call("tabs.list")
            return env["result"]["tabs"] if env["success"] else None

        until(lambda: listed() is not None, 60, poll_s=0.5)
        assert world.process.wait_for_line("browser relaunched", 10)
        cancelled = world.wait_audit(lambda a: a["method"] == "tabs.open" and a["code"] == "CANCELLED")
        assert cancelled["outcome"] == "refused" and cancelled["mayHaveCompleted"] is False, cancelled
        assert world.process.wait_for_line("not run: its caller went away before it was run", 5)
        tabs = listed()
        assert tabs is not None and not any(t["url"] == wanted for t in tabs), tabs  # nothing was opened
