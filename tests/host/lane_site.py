"""A small web site of the read-only lane tests, served by the test process on loopback (aiohttp in a thread):
the pages of ``tests/host/lane/`` and the endpoints they call — ``/api/data`` (JSON naming a secret body mark,
``Set-Cookie`` with a secret), ``/api/echo`` (answers the length of what was posted), ``/api/pixel.png``,
``/api/big.txt`` (100 KiB of text), ``/api/stall`` (headers, then a body that never ends), and ``/ws`` (a WebSocket echoing every frame). It records the headers
each request arrived with, so a test can show the browser really sent what the reads must not repeat."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

PAGES = Path(__file__).resolve().parent / "lane"
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000b49444154789c6360000200000500017a"
    "5eab3f0000000049454e44ae426082"
)
BODY_MARK = "s3cr3tRESPONSE"
SET_COOKIE = "sid=s3cr3tSETCOOKIE; HttpOnly; Path=/"


class LaneSite:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.seen: list[dict[str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._stopping = asyncio.Event()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._host = host
        self.port = 0
        threading.Thread(target=self._run, daemon=True).start()
        if not self._ready.wait(10):
            raise RuntimeError("the lane site did not start")
        self.url = f"http://{host}:{self.port}"

    def page(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/ws", self._ws)
        app.router.add_route("*", "/api/{name}", self._api)
        app.router.add_get("/favicon.ico", self._favicon)  # no 404 of the browser's own in the reads
        app.router.add_get("/{name}", self._file)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def _note(self, request: web.Request, body: bytes = b"") -> None:
        self.seen.append({"path": request.path_qs, "headers": dict(request.headers), "body": body.decode("utf-8", "replace")})

    async def _file(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        path = PAGES / request.match_info["name"]
        if not path.is_file():
            return web.Response(status=404, text="not found", content_type="text/html")
        return web.Response(body=path.read_bytes(), content_type="text/html", headers={"Cache-Control": "no-store"})

    async def _favicon(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(body=PIXEL, content_type="image/png")

    async def _api(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self._note(request, body)
        name = request.match_info["name"]
        headers = {"Cache-Control": "no-store"}
        if name == "data":
            headers["Set-Cookie"] = SET_COOKIE
            return web.json_response({"answer": 42, "mark": BODY_MARK}, headers=headers)
        if name == "echo":
            return web.Response(text=f"got {len(body)} bytes", headers=headers)
        if name == "pixel.png":
            return web.Response(body=PIXEL, content_type="image/png", headers=headers)
        if name == "stall":  # answers its headers, then never ends its body
            response = web.StreamResponse(headers={**headers, "Content-Type": "text/plain"})
            await response.prepare(request)
            await response.write(b"started")
            await self._stopping.wait()
            return response
        if name == "big.txt":
            return web.Response(text="0123456789abcdef" * 6400, content_type="text/plain", headers=headers)
        return web.Response(status=404, text="no such api", headers=headers)

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                await ws.send_str("echo")
        return ws

    def stop(self) -> None:
        async def down() -> None:
            self._stopping.set()
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
