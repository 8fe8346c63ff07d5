"""The tunnel's connection lifecycle in-process, against the test broker and a gateway with a scripted
renderer (no DOM involved: the journeys on real Chromium are in test_tunnel.py): handshake retries,
explicit sessions, ``mcp/disconnect``, an answer lost with its socket, the reconnect backoff as the loop
really waits it, and the frame caps on incoming responses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from acp_broker import Broker, BrokerThread, Peer
from kelpie_gateway import Gateway
from kelpie_gateway.host.abi import AbiGateway, default_library
from kelpie_gateway.host.driver import Abandon, Driver, GatewayLike
from kelpie_gateway.host.tunnel import MAX_RESPONSE_FRAME, Tunnel, TunnelOptions

pytestmark = pytest.mark.timeout(120)


class HeldRenderer:
    """``get-tabs`` answers at once; ``close-tab`` waits until :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.closing = asyncio.Event()

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "close-tab":
            self.closing.set()
            await self.release.wait()
            return {"success": True}
        tabs = [{"tabId": "A", "generation": 0, "url": "http://127.0.0.1/", "title": "A", "active": True}]
        return {"success": True, "tabs": tabs}

    async def close(self) -> None:
        return None

    def listen(self, events: Any) -> None:
        """This fake never crashes nor exits, so it never reports an event."""

    def available(self) -> None:
        """This fake's browser never goes away: nothing to wait for."""
        return None


def run(coro: Any) -> Any:
    brokers = BrokerThread()
    try:
        return brokers.run(coro, timeout=100)
    finally:
        brokers.close()


CONFIG = {"nativeMethods": ["get-tabs", "close-tab", "switch-tab"]}


def make_gateway(core: str) -> GatewayLike:
    """The Python API, or the C library (what ``--via-abi`` drives)."""
    if core == "abi":
        return AbiGateway(CONFIG, library=str(default_library()))
    return Gateway(CONFIG)


def tunnel_for(
    broker: Broker,
    renderer: HeldRenderer,
    lines: list[str],
    *,
    core: str = "python",
    rand: Callable[[], float] | None = None,
    **opts: Any,
) -> Tunnel:
    driver = Driver(make_gateway(core), renderer, lines.append)  # type: ignore[arg-type]
    settings: dict[str, Any] = {"backoff_initial_s": 0.05, "backoff_max_s": 0.2, "environ": {}}
    settings.update(opts)
    options = TunnelOptions(broker.url, **settings)
    if rand is None:
        return Tunnel(driver, options, lines.append)
    return Tunnel(driver, options, lines.append, rand=rand)


@contextlib.asynccontextmanager
async def started(
    renderer: HeldRenderer | None = None, *, broker: Broker | None = None, **opts: Any
) -> AsyncIterator[tuple[Broker, Tunnel, list[str]]]:
    """A broker (started here; pass one to configure it first) and a running tunnel to it, with the host's
    log lines; both stopped on exit."""
    broker = broker or Broker(None)
    await broker.start()
    lines: list[str] = []
    tunnel = tunnel_for(broker, renderer or HeldRenderer(), lines, **opts)
    tunnel.start()
    try:
        yield broker, tunnel, lines
    finally:
        await tunnel.close()
        await broker.stop()


async def connect(peer: Peer, tunnel: Tunnel) -> str:
    answer = await peer.request("mcp/connect", {"acpId": tunnel.server_id})
    return str(answer["result"]["connectionId"])


def tool_call(peer: Peer, connection: str, method: str, params: dict[str, Any]) -> Any:
    return peer.request("mcp/message", {"connectionId": connection, "method": "tools/call", "params": {
        "name": "kelpie_browser_control", "arguments": {"method": method, "params": params}}})


def test_a_socket_closed_during_the_handshake_is_retried_at_once() -> None:
    async def body() -> None:
        dropping = Broker(None)
        dropping.drop_initialize = 2
        async with started(broker=dropping) as (broker, _tunnel, lines):
            # Well inside the 30 s handshake timeout: a closed socket fails the waiting request at once.
            peer = await broker.attached(timeout=15)
            assert [p.handshake[0] for p in broker.peers] == ["initialize"] * 3
            assert peer.handshake == ["initialize", "session/new"]
            assert sum("reconnecting in" in line for line in lines) == 2

    run(body())


def test_an_explicit_session_is_only_ever_resumed() -> None:
    async def body() -> None:
        async with started(session="sess-from-elsewhere") as (broker, _tunnel, lines):
            while len(broker.peers) < 3:
                await asyncio.sleep(0.05)
            assert all("session/new" not in p.handshake for p in broker.peers)
            assert any("refused to resume session sess-from-elsewhere" in line for line in lines)
            broker.sessions["sess-from-elsewhere"] = []  # the broker learns the session: the host attaches
            peer = await broker.attached(timeout=15)
            assert peer.session == "sess-from-elsewhere" and peer.handshake[-1] == "session/resume"

    run(body())


def test_mcp_disconnect_abandons_the_call_in_flight() -> None:
    async def body() -> None:
        renderer = HeldRenderer()
        async with started(renderer) as (broker, tunnel, _lines):
            peer = await broker.attached(timeout=15)
            connection = await connect(peer, tunnel)

            def call(method: str, params: dict[str, Any]) -> Any:
                return peer.request("mcp/message", {"connectionId": connection, "method": "tools/call", "params": {
                    "name": "kelpie_browser_control", "arguments": {"method": method, "params": params}}})

            closing = asyncio.ensure_future(call("tabs.close", {"tabId": "A"}))
            await renderer.closing.wait()  # dispatched: the renderer holds the close
            assert (await peer.request("mcp/disconnect", {"connectionId": connection}))["result"] == {}
            envelope = (await closing)["result"]["structuredContent"]
            assert envelope["error"]["code"] == "CANCELLED" and envelope["mayHaveCompleted"] is True
            # The connection is gone; a new one sees the lane held until the renderer's late reply.
            gone = await call("tabs.list", {})
            assert gone["error"]["code"] == -32602
            connection = await connect(peer, tunnel)
            busy = (await call("tabs.list", {}))["result"]["structuredContent"]
            assert busy["error"]["code"] == "BUSY"
            renderer.release.set()
            for _ in range(100):
                listed = (await call("tabs.close", {"tabId": "A"}))["result"]["structuredContent"]
                if listed["error"]["code"] != "BUSY":
                    break
                await asyncio.sleep(0.05)
            assert listed["error"]["code"] == "RECONCILE_REQUIRED"

    run(body())


def test_a_call_abandoned_before_its_step_ran_never_reaches_the_renderer() -> None:
    class Counting(HeldRenderer):
        calls = 0

        async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
            Counting.calls += 1
            return await super().call(method, params)

    async def body() -> None:
        for authorize in (True, False):  # first step: authorize, or the dispatch itself
            gateway = Gateway({"nativeMethods": ["get-tabs"], "requireAuthorization": authorize})
            driver = Driver(gateway, Counting(), [].append)  # type: ignore[arg-type]
            gone = Abandon()
            gone.abandon()
            message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "kelpie_browser_control", "arguments": {"method": "tabs.list", "params": {}}}}
            step = await driver.mcp(message, abandon=gone)
            envelope = step["response"]["result"]["structuredContent"]
            assert envelope["error"]["code"] == "CANCELLED" and envelope["mayHaveCompleted"] is False
            assert Counting.calls == 0
            # Nothing holds the lane afterwards: the next call runs at once.
            listed = await driver.canonical({"version": 1, "id": 3, "method": "tabs.list", "params": {}})
            assert listed["response"]["success"] is True and Counting.calls == 1
            Counting.calls = 0

    run(body())


@pytest.mark.parametrize("core", ["python", "abi"])
def test_an_answer_lost_with_its_socket_still_requires_a_reconcile(core: str) -> None:
    """The renderer's reply and the socket's drop arrive together: the tab switch completes (success), but
    its answer has nowhere to go. The host reports it undelivered, so the tab needs a reconcile exactly as
    if the agent had seen an unknown outcome (through the Python API and through the C library)."""
    tunnels: list[Tunnel] = []

    class ReplyAtTheDrop(HeldRenderer):
        switching = asyncio.Event()
        switches = 0

        async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
            if method != "switch-tab":
                return await super().call(method, params)
            ReplyAtTheDrop.switches += 1
            if ReplyAtTheDrop.switches == 1:
                self.switching.set()
                while tunnels[0].attached.is_set():  # answer the moment the host sees its socket go
                    await asyncio.sleep(0)
            return {"success": True, "tabId": "A", "generation": 0}

    async def body() -> None:
        renderer = ReplyAtTheDrop()
        async with started(renderer, core=core) as (broker, tunnel, lines):
            tunnels.append(tunnel)
            peer = await broker.attached(timeout=15)
            select = {"tabId": "A"}
            switching = asyncio.ensure_future(tool_call(peer, await connect(peer, tunnel), "tabs.select", select))
            await renderer.switching.wait()
            await peer.ws.close(code=1011, message=b"the agent went away")
            with pytest.raises(ConnectionError):
                await switching
            for _ in range(100):
                if any("not delivered" in line for line in lines):
                    break
                await asyncio.sleep(0.05)
            assert any(line.startswith("tx tabs.select tab=A ok") for line in lines), lines  # it completed
            assert any("could not be sent" in line for line in lines), lines
            assert any("not delivered (client gone): tab A needs a reconcile" in line for line in lines), lines
            # The agent reconnects: it never learnt that the switch happened, so acting again is refused.
            peer = await broker.attached(after=1, timeout=15)
            connection = await connect(peer, tunnel)
            refused = (await tool_call(peer, connection, "tabs.select", select))["result"]["structuredContent"]
            assert refused["error"]["code"] == "RECONCILE_REQUIRED" and refused["mayHaveCompleted"] is False
            listed = (await tool_call(peer, connection, "tabs.list", {}))["result"]["structuredContent"]
            assert listed["success"] is True
            again = (await tool_call(peer, connection, "tabs.select", select))["result"]["structuredContent"]
            assert again["success"] is True and ReplyAtTheDrop.switches == 2  # observed: allowed again

    run(body())


def test_reconnects_back_off_doubling_capped_and_jittered(tmp_path: Path) -> None:
    """The run loop really waits ``min(cap, initial·2^n)`` scaled by its jitter source between refused
    attempts, and starts again from ``initial`` once a session was established. The bearer comes from a
    token file read on every attempt: rotating the file is what lets the host in."""
    factors = iter([0.0, 0.5, 0.999999, 0.0, 0.999999])

    async def body() -> None:
        token_file = tmp_path / "broker-token"
        token_file.write_text("the-old-token\n", encoding="utf-8")
        async with started(
            broker=Broker("the-rotated-token"), rand=lambda: next(factors), backoff_initial_s=0.2,
            backoff_max_s=0.8, token_file=token_file, environ={"KELPIE_GATEWAY_CONNECT_TOKEN": "the-rotated-token"},
        ) as (broker, _tunnel, lines):
            while broker.refused_handshakes < 4:
                await asyncio.sleep(0.02)
            token_file.write_text("the-rotated-token\n", encoding="utf-8")  # the file wins over the env
            # The next attempt reads the rotated file and attaches.
            peer = await broker.attached(timeout=15)
            await peer.ws.close(code=1011, message=b"restarting")
            await broker.attached(after=len(broker.peers), timeout=15)
        waits = [float(line.rsplit(" in ", 1)[1].split()[0]) for line in lines if "reconnecting in" in line]
        # Refused attempts n = 1, 2, 3, 4: 0.4·0.5, 0.8·0.75, 0.8·1 (capped), 0.8·0.5; after the session:
        # n = 0 again, 0.2·1.
        assert waits == [0.2, 0.6, 0.8, 0.4, 0.2], lines
        gaps = [b - a for a, b in zip(broker.handshake_times, broker.handshake_times[1:], strict=False)]
        for gap, wait in zip(gaps, [0.2, 0.6, 0.8, 0.4], strict=False):
            assert gap >= wait * 0.999 - 0.01  # the loop really waited (never less; load only adds)
        assert sum("the broker refused the bearer (HTTP 401)" in line for line in lines) == 4
        assert not any("token" in line for line in lines)

    run(body())


def test_response_frames_are_capped_at_8_mib_and_unsolicited_big_frames_close() -> None:
    async def body() -> None:
        padded = Broker(None)
        padded.initialize_pad = MAX_RESPONSE_FRAME  # the answer to the host's initialize: over 8 MiB
        async with started(broker=padded) as (broker, _tunnel, lines):
            while not broker.peers or not broker.peers[0].closed.is_set():
                await asyncio.sleep(0.02)
            # Refused while reading: the host closes (1009 on its side; the broker, still sending, may only
            # see the connection reset) and never attaches on that socket.
            assert not broker.peers[0].attached.is_set()
            assert broker.peers[0].close_code in (1009, None), broker.peers[0].close_code
            assert any("over the 8388608-byte (8 MiB) cap; closing the connection" in line for line in lines), lines
            assert any(line.endswith("closed (code 1009)") for line in lines), lines
            # A 2 MiB response while the host awaits it is within the cap: the host attaches.
            broker.initialize_pad = 2 * 1024 * 1024
            peer = await broker.attached(timeout=15)
            assert peer.handshake == ["initialize", "session/new"]
            # The same size as a frame nobody asked for: closed (1009) before it is parsed; the host returns.
            await peer.send_raw('{"jsonrpc":"2.0","id":424242,"result":{"pad":"' + "x" * (2 * 1024 * 1024) + '"}}')
            await asyncio.wait_for(peer.closed.wait(), 15)
            assert peer.close_code == 1009
            again = await broker.attached(after=broker.peers.index(peer) + 1, timeout=15)
            assert again.handshake == ["initialize", "session/resume"]
            assert any("while no response was due" in line for line in lines), lines

    run(body())


def test_an_agent_cancels_a_call_by_its_outer_id() -> None:
    """``notifications/cancelled {requestId}`` in an ``mcp/message`` notification names the outer
    JSON-RPC id of the call (the tunnel's correlation): the dispatched close is cancelled at once with an
    unknown outcome, and the tab needs a reconcile."""
    async def body() -> None:
        renderer = HeldRenderer()
        async with started(renderer) as (broker, tunnel, _lines):
            peer = await broker.attached(timeout=15)
            connection = await connect(peer, tunnel)
            closing = asyncio.ensure_future(tool_call(peer, connection, "tabs.close", {"tabId": "A"}))
            await renderer.closing.wait()
            outer = max(peer._waiting)  # the id the broker gave that mcp/message
            await peer.notify("mcp/message", {"connectionId": connection, "method": "notifications/cancelled",
                                              "params": {"requestId": outer, "reason": "the user changed their mind"}})
            envelope = (await asyncio.wait_for(closing, 10))["result"]["structuredContent"]
            assert envelope["error"]["code"] == "CANCELLED" and envelope["mayHaveCompleted"] is True
            renderer.release.set()  # the late reply retires the lane
            for _ in range(100):
                again = (await tool_call(peer, connection, "tabs.close", {"tabId": "A"}))["result"]["structuredContent"]
                if again["error"]["code"] != "BUSY":
                    break
                await asyncio.sleep(0.05)
            assert again["error"]["code"] == "RECONCILE_REQUIRED"
            assert not peer.closed.is_set()  # the connection itself carries on

    run(body())


def test_a_frame_that_repeats_a_member_name_is_refused_not_read_last_wins() -> None:
    """Issue 27: the tunnel parsed each frame itself (orjson: the last of two equal names wins) before the
    gateway saw it, so a broker frame ``{"method":"tabs.list","method":"tabs.close",…}`` inside an
    ``mcp/message`` closed the tab. The frame is refused ``-32600`` (id null) and nothing runs."""
    async def body() -> None:
        renderer = HeldRenderer()
        async with started(renderer) as (broker, tunnel, _lines):
            peer = await broker.attached(timeout=30)
            connection = await connect(peer, tunnel)
            seen = len(peer.received)
            inner = ('"method":"tools/call","params":{"name":"kelpie_browser_control","arguments":'
                     '{"method":"tabs.list","method":"tabs.close","params":{"tabId":"A"}}}')
            await peer.send_raw(
                '{"jsonrpc":"2.0","id":77,"method":"mcp/message","params":{"connectionId":' + f'"{connection}",'
                + inner + "}}"
            )
            for _ in range(500):
                refusals = [m for m in peer.received[seen:] if "error" in m]
                if refusals:
                    break
                await asyncio.sleep(0.02)
            assert refusals and refusals[0]["error"]["code"] == -32600 and refusals[0]["id"] is None, refusals
            assert "appears twice" in refusals[0]["error"]["message"]
            assert not renderer.closing.is_set()  # close-tab never ran
            listed = await tool_call(peer, connection, "tabs.list", {})
            assert "A" in str(listed["result"]), listed

    run(body())
