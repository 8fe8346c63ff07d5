"""Remote browsers for the host tests (issue 31): a real Playwright browser server on loopback
(``python -m playwright run-server --unsafe``, which launches what each client's launch options name) that a
test can kill and start again on the same port, and a WebSocket endpoint the test controls in front of it
that records every opening handshake (path, query, headers) and relays the frames both ways.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine
from typing import Any

import aiohttp
from aiohttp import web
from faults_testlib import _children, cmdline

HOP_BY_HOP = {"host", "upgrade", "connection", "content-length", "transfer-encoding"}


def _descendants(root: int) -> set[int]:
    tree, todo, found = _children(), [root], set()
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class PlaywrightServer:
    """``playwright run-server --unsafe`` on ``127.0.0.1:port`` (endpoint ``path``) in its own process group."""

    def __init__(self, port: int, path: str = "/") -> None:
        self.port = port
        self.path = path
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "playwright", "run-server", "--unsafe", "--port", str(self.port),
             "--host", "127.0.0.1", "--path", self.path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "Listening on" in line, line
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # keep the pipe drained

    def browsers(self) -> set[int]:
        """The Chromium processes the server launched (its descendants)."""
        if self.proc is None:
            return set()
        return {pid for pid in _descendants(self.proc.pid) if "chrom" in " ".join(cmdline(pid)[:1])}

    def kill(self) -> None:
        """SIGKILL the whole server (its driver too); the browsers it launched end with their pipe (waited
        for, then killed if they linger)."""
        proc = self.proc
        if proc is None:
            return
        browsers = self.browsers()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in browsers) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in browsers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def machine_address() -> str | None:
    """This machine's own non-loopback IPv4 address (the interface of its default route), or None. No
    packet is sent: a UDP socket's ``connect`` only picks the route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class RecordingEndpoint:
    """``ws://HOST:PORT/...`` (``host``: 127.0.0.1 unless given) in front of ``upstream``
    (``ws://127.0.0.1:UPSTREAM``): each handshake is recorded (``handshakes``: path with query, and the
    headers), then relayed upstream with the same path, query and headers; when either side closes, so does
    the other. An upstream that does not answer: 502."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.upstream_port = upstream_port
        self.host = host
        self.handshakes: list[dict[str, Any]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._runner: web.AppRunner | None = None
        self.run(self._start())

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(60)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP
                   and not k.lower().startswith("sec-websocket")}
        self.handshakes.append({"path": request.path_qs, "headers": dict(request.headers)})
        session = aiohttp.ClientSession()
        try:
            upstream = await session.ws_connect(
                f"ws://127.0.0.1:{self.upstream_port}{request.path_qs}", headers=headers, max_msg_size=0
            )
        except Exception:
            await session.close()
            return web.Response(status=502, text="upstream unavailable")
        downstream = web.WebSocketResponse(max_msg_size=0)
        await downstream.prepare(request)

        async def pipe(source: Any, sink: Any) -> None:
            async for message in source:
                if message.type == aiohttp.WSMsgType.TEXT:
                    await sink.send_str(message.data)
                elif message.type == aiohttp.WSMsgType.BINARY:
                    await sink.send_bytes(message.data)
                else:
                    break

        tasks = [asyncio.ensure_future(pipe(downstream, upstream)), asyncio.ensure_future(pipe(upstream, downstream))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await upstream.close()
        with contextlib.suppress(Exception):
            await downstream.close()
        await session.close()
        return downstream

    def close(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                self.run(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
