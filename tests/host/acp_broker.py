"""A test agent broker: the broker side of MCP-over-ACP (issue 17), written with aiohttp's WebSocket server
(the same library the host's tunnel client uses), on loopback only.

It answers the host's ``initialize``, ``session/new`` and ``session/resume`` (sessions live as long as this
broker object: a restarted broker knows none), checks the bearer on the handshake (401 otherwise), and lets
a test drive the attached host as the broker would: ``mcp/connect``, ``mcp/message``, ``mcp/disconnect``,
``session/request_permission``, raw frames, and closing the socket.

The broker runs on its own thread and event loop (:class:`BrokerThread`), because the host may connect at
any moment, not only while a test awaits something.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections.abc import Coroutine
from typing import Any

from aiohttp import WSMsgType, web

JsonObject = dict[str, Any]


class Peer:
    """One attached host socket."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self.received: list[JsonObject] = []
        self.declared: list[Any] = []
        self.session: str | None = None
        self.handshake: list[str] = []
        self.attached = asyncio.Event()
        self.closed = asyncio.Event()
        self.close_code: int | None = None
        self._waiting: dict[int, asyncio.Future[JsonObject]] = {}
        self._next = 1000

    async def request(self, method: str, params: JsonObject | None = None, timeout: float = 60.0) -> JsonObject:
        self._next += 1
        rid = self._next
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        message: JsonObject = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send_str(json.dumps(message))
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(rid, None)

    async def send_raw(self, text: str) -> None:
        await self.ws.send_str(text)

    async def notify(self, method: str, params: JsonObject) -> None:
        await self.ws.send_str(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    def answered(self, message: JsonObject) -> bool:
        future = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(message)
            return True
        return False


class Broker:
    """The broker's WebSocket endpoint at ``ws://127.0.0.1:PORT/acp``."""

    def __init__(self, token: str | None, port: int = 0) -> None:
        self.token = token
        self.port = port
        self.sessions: dict[str, list[Any]] = {}
        self.peers: list[Peer] = []
        self.refused_handshakes = 0
        self.drop_initialize = 0
        """Close the socket instead of answering the next N ``initialize`` requests."""
        self.initialize_pad = 0
        """Pad ``initialize`` results with this many bytes (a response frame of that size and more)."""
        self.handshake_times: list[float] = []
        """``loop.time()`` of every WebSocket handshake, accepted or refused (for the backoff test)."""
        self.new_peer = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._counter = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/acp"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/acp", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        for address in self._runner.addresses:
            self.port = int(address[1])

    async def stop(self) -> None:
        for peer in self.peers:
            with contextlib.suppress(Exception):
                await peer.ws.close(code=1001, message=b"broker going away")
        if self._runner is not None:
            await self._runner.cleanup()

    async def attached(self, after: int = 0, timeout: float = 60.0) -> Peer:
        """The first open peer, beyond the first ``after`` ones, whose session is established."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for peer in self.peers[after:]:
                if peer.attached.is_set() and not peer.closed.is_set():
                    return peer
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise TimeoutError(f"no host attached (peers so far: {len(self.peers)})")
            self.new_peer.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.new_peer.wait(), min(remaining, 0.2))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.handshake_times.append(asyncio.get_running_loop().time())
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused_handshakes += 1
            raise web.HTTPUnauthorized()
        ws = web.WebSocketResponse(max_msg_size=64 * 1024 * 1024)
        await ws.prepare(request)
        peer = Peer(ws)
        self.peers.append(peer)
        self.new_peer.set()
        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                message = json.loads(frame.data)
                peer.received.append(message)
                if message.get("method") == "initialize" and self.drop_initialize > 0:
                    self.drop_initialize -= 1
                    peer.handshake.append("initialize")
                    await ws.close(code=1011, message=b"not now")
                    break
                if "method" in message and "id" in message:
                    await ws.send_str(json.dumps(self._answer(peer, message)))
                    self.new_peer.set()
                elif "method" not in message:
                    peer.answered(message)
        finally:
            peer.close_code = ws.close_code
            peer.closed.set()
            for future in peer._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the host socket closed"))
            self.new_peer.set()
        return ws

    def _answer(self, peer: Peer, message: JsonObject) -> JsonObject:
        method, params, rid = message["method"], message.get("params") or {}, message["id"]
        peer.handshake.append(method)
        if method == "initialize":
            result: JsonObject = {
                "protocolVersion": 1,
                "agentCapabilities": {"mcpCapabilities": {"acp": True}},
                "authMethods": [],
            }
            if self.initialize_pad:
                result["_meta"] = {"pad": "x" * self.initialize_pad}
        elif method == "session/new":
            self._counter += 1
            session = f"sess-{id(self) % 10000}-{self._counter}"
            self.sessions[session] = params.get("mcpServers")
            peer.session, peer.declared = session, params.get("mcpServers")
            peer.attached.set()
            result = {"sessionId": session}
        elif method == "session/resume":
            session = params.get("sessionId")
            if session not in self.sessions:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown session"}}
            self.sessions[session] = params.get("mcpServers")
            peer.session, peer.declared = session, params.get("mcpServers")
            peer.attached.set()
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}


class BrokerThread:
    """Runs brokers on a private event loop thread; :meth:`run` executes a coroutine there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 120.0) -> Any:
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
