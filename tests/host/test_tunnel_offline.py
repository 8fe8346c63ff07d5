"""The tunnel's connection lifecycle in-process, against the test broker and a gateway with a scripted
renderer (no DOM involved: the journeys on real Chromium are in test_tunnel.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from acp_broker import Broker, BrokerThread
from kelpie_gateway import Gateway
from kelpie_gateway.host.driver import Abandon, Driver
from kelpie_gateway.host.tunnel import Tunnel, TunnelOptions

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

    def on_gone(self, listener: Any) -> None:
        """This fake never crashes nor exits, so it never calls ``listener``."""


def run(coro: Any) -> Any:
    brokers = BrokerThread()
    try:
        return brokers.run(coro, timeout=100)
    finally:
        brokers.close()


def tunnel_for(broker: Broker, renderer: HeldRenderer, lines: list[str], **opts: Any) -> Tunnel:
    gateway = Gateway({"nativeMethods": ["get-tabs", "close-tab"]})
    driver = Driver(gateway, renderer, lines.append)  # type: ignore[arg-type]
    options = TunnelOptions(broker.url, backoff_initial_s=0.05, backoff_max_s=0.2, environ={}, **opts)
    return Tunnel(driver, options, lines.append)


def test_a_socket_closed_during_the_handshake_is_retried_at_once() -> None:
    async def body() -> None:
        broker = Broker(None)
        broker.drop_initialize = 2
        await broker.start()
        lines: list[str] = []
        tunnel = tunnel_for(broker, HeldRenderer(), lines)
        tunnel.start()
        try:
            # Well inside the 30 s handshake timeout: a closed socket fails the waiting request at once.
            peer = await broker.attached(timeout=15)
            assert [p.handshake[0] for p in broker.peers] == ["initialize"] * 3
            assert peer.handshake == ["initialize", "session/new"]
            assert sum("reconnecting in" in line for line in lines) == 2
        finally:
            await tunnel.close()
            await broker.stop()

    run(body())


def test_an_explicit_session_is_only_ever_resumed() -> None:
    async def body() -> None:
        broker = Broker(None)
        await broker.start()
        lines: list[str] = []
        tunnel = tunnel_for(broker, HeldRenderer(), lines, session="sess-from-elsewhere")
        tunnel.start()
        try:
            while len(broker.peers) < 3:
                await asyncio.sleep(0.05)
            assert all("session/new" not in p.handshake for p in broker.peers)
            assert any("refused to resume session sess-from-elsewhere" in line for line in lines)
            broker.sessions["sess-from-elsewhere"] = []  # the broker learns the session: the host attaches
            peer = await broker.attached(timeout=15)
            assert peer.session == "sess-from-elsewhere" and peer.handshake[-1] == "session/resume"
        finally:
            await tunnel.close()
            await broker.stop()

    run(body())


def test_mcp_disconnect_abandons_the_call_in_flight() -> None:
    async def body() -> None:
        broker = Broker(None)
        await broker.start()
        renderer = HeldRenderer()
        lines: list[str] = []
        tunnel = tunnel_for(broker, renderer, lines)
        tunnel.start()
        try:
            peer = await broker.attached(timeout=15)
            connection = (await peer.request("mcp/connect", {"acpId": tunnel.server_id}))["result"]["connectionId"]

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
            connection = (await peer.request("mcp/connect", {"acpId": tunnel.server_id}))["result"]["connectionId"]
            busy = (await call("tabs.list", {}))["result"]["structuredContent"]
            assert busy["error"]["code"] == "BUSY"
            renderer.release.set()
            for _ in range(100):
                listed = (await call("tabs.close", {"tabId": "A"}))["result"]["structuredContent"]
                if listed["error"]["code"] != "BUSY":
                    break
                await asyncio.sleep(0.05)
            assert listed["error"]["code"] == "RECONCILE_REQUIRED"
        finally:
            await tunnel.close()
            await broker.stop()

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
