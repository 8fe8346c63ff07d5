"""Helpers for the site-policy attack suite (``test_policy_attacks.py``, issue 27): recorders that count every
connection (a bare TCP connection counts; UDP datagrams too), a small attack site that serves generated
pages, and one client interface over the three transports (``serve``, ``serve --via-abi``, ``mcp`` on stdio).
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import selectors
import socket
import threading
import time
import urllib.parse
from typing import Any

from aiohttp import web
from host_testlib import Host, call, redirected, start_host
from stdio_testlib import StdioHost


class Recorders:
    """Listening sockets that accept and record every connection (then close it): one selector thread for
    all of them. :meth:`tcp` makes one on ``address`` (a fresh port each time); :meth:`udp` a UDP socket that
    records every datagram."""

    def __init__(self) -> None:
        self.hits: dict[tuple[str, int], list[str]] = {}
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._stop = False
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _add(self, sock: socket.socket, kind: str) -> tuple[str, int]:
        where = sock.getsockname()[:2]
        sock.setblocking(False)
        with self._lock:
            self.hits[where] = []
            self._sockets.append(sock)
            self._selector.register(sock, selectors.EVENT_READ, kind)
        return where

    def tcp(self, address: str) -> tuple[str, int]:
        """A new recorder on ``address`` (its ``(address, port)``)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, 0))
        sock.listen(64)
        return self._add(sock, "tcp")

    def udp(self, address: str) -> tuple[str, int]:
        """A new UDP recorder on ``address``."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((address, 0))
        return self._add(sock, "udp")

    def seen(self, where: tuple[str, int]) -> list[str]:
        with self._lock:
            return list(self.hits[where])

    def _run(self) -> None:
        while not self._stop:
            with self._lock:
                empty = not self._sockets
            if empty:
                time.sleep(0.05)
                continue
            for key, _ in self._selector.select(0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                where = sock.getsockname()[:2]
                try:
                    if key.data == "tcp":
                        conn, peer = sock.accept()
                        conn.close()
                        note = f"tcp connection from {peer[0]}:{peer[1]}"
                    else:
                        data, peer = sock.recvfrom(4096)
                        note = f"udp datagram of {len(data)} bytes from {peer[0]}:{peer[1]}"
                except OSError:
                    continue
                with self._lock:
                    self.hits[where].append(note)

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        for sock in self._sockets:
            sock.close()
        self._selector.close()


def base(where: tuple[str, int], scheme: str = "http") -> str:
    return f"{scheme}://{where[0]}:{where[1]}"


class AttackSite:
    """Allowed web sites the attacks start from: one HTTP server per address (``127.0.0.1`` is the allowed
    site; ``127.0.0.4`` a second, cross-site allowed one), all serving :attr:`pages` (path → (content type,
    body)) and ``/redirect?to=URL`` (302). Records the paths requested."""

    def __init__(self, addresses: tuple[str, ...]) -> None:
        self.pages: dict[str, tuple[str, bytes]] = {}
        self.hits: list[str] = []
        self._servers: list[http.server.ThreadingHTTPServer] = []
        self.bases: dict[str, str] = {}
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                site.hits.append(self.path)
                parts = urllib.parse.urlsplit(self.path)
                length = len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if redirected(self):
                    return
                if parts.path == "/echo":  # the size of the body it was sent
                    body = str(length).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Access-Control-Allow-Origin", "*")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                kind, body = site.pages.get(parts.path, ("text/html", b"<!doctype html><title>Allowed</title>ok"))
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        for address in addresses:
            server = http.server.ThreadingHTTPServer((address, 0), Handler)
            server.daemon_threads = True
            self._servers.append(server)
            self.bases[address] = f"http://{address}:{server.server_address[1]}"
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def page(self, path: str, body: str, kind: str = "text/html") -> None:
        self.pages[path] = (kind, body.encode())

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()


class EchoWebSocket:
    """A WebSocket echo server (aiohttp, its own loop on a thread) at ``ws://ADDRESS:PORT/ws``."""

    def __init__(self, address: str) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.url = ""

        async def echo(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            async for message in ws:
                await ws.send_str(message.data)
            return ws

        async def start() -> None:
            app = web.Application()
            app.router.add_get("/ws", echo)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            site = web.TCPSite(self.runner, address, 0)
            await site.start()
            port = self.runner.addresses[0][1]
            self.url = f"ws://{address}:{port}/ws"
            ready.set()

        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(start(), self.loop)
        ready.wait(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


class Client:
    """One transport to a policy host: :meth:`call` a canonical method (the envelope), :meth:`lines` its
    operator log so far."""

    name: str

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def lines(self) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        envelope = self.call(method, params)
        assert envelope["success"], (self.name, method, envelope)
        return dict(envelope["result"])

    def wait_for_log(self, needle: str, since: int, timeout_s: float = 15.0) -> list[str]:
        """The log lines after line ``since`` that contain ``needle``, waiting (bounded) for the first."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = [line for line in self.lines()[since:] if needle in line]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def wait_for_title(self, tab: str, prefix: str, timeout_s: float = 20.0) -> str:
        """The title of ``tab`` once it starts with ``prefix`` (polled through ``tabs.list``)."""
        deadline = time.monotonic() + timeout_s
        title = ""
        while time.monotonic() < deadline:
            tabs = self.ok("tabs.list", {})["tabs"]
            title = next((t["title"] for t in tabs if t["tabId"] == tab), "")
            if title.startswith(prefix):
                return title
            time.sleep(0.15)
        raise AssertionError(f"{self.name}: tab {tab} never titled {prefix!r} (last {title!r})")


class HttpClient(Client):
    """``kelpie-gateway serve`` (Python API, or ``--via-abi``), canonical requests over HTTP."""

    def __init__(self, args: list[str], mode: str) -> None:
        self.name = "serve --via-abi" if mode == "abi" else "serve"
        self.process = start_host(["--approve-pairing", "auto", *args], mode)
        self.host = Host(self.process, self.process.pair("policy-attacks"), mode)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return call(self.host, method, params)

    def lines(self) -> list[str]:
        return list(self.process.lines)

    def close(self) -> None:
        self.process.stop()


class StdioClient(Client):
    """``kelpie-gateway mcp`` on stdio: canonical methods through ``tools/call kelpie_browser_control``."""

    def __init__(self, args: list[str]) -> None:
        self.name = "mcp (stdio)"
        self.stdio = StdioHost(args)
        self._ids = itertools.count(10)
        self.stdio.initialize()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.stdio.control(next(self._ids), method, params)

    def lines(self) -> list[str]:
        return list(self.stdio.log)

    def close(self) -> None:
        self.stdio.__exit__(None, None, None)


def make_client(transport: str, args: list[str]) -> Client:
    """``transport``: ``serve``, ``abi`` (``serve --via-abi``) or ``stdio`` (``mcp``)."""
    if transport == "stdio":
        return StdioClient(args)
    return HttpClient(args, "abi" if transport == "abi" else "python")

