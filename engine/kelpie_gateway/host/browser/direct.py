"""The direct CDP hot path (issue 35; docs/host.md "Direct CDP"): a WebSocket of the host's own to the
DevTools endpoint of the browser it launched (loopback only), so a fixed script's ``Runtime.evaluate`` goes
Python → browser → renderer instead of Python → Playwright's Node driver → browser → renderer.

Playwright keeps everything else (launching, contexts, pages, navigation, downloads, file choosers, request
routing, the tab's own CDP session and its events); this connection only carries evaluations in a world
whose execution context id the tab's Playwright session made (a context id belongs to the renderer, not to
a session). Errors look like Playwright's (:class:`playwright.async_api.Error` with the same
``Protocol error (METHOD): MESSAGE`` text), so the world part's rules for a vanished context, a document
that went away and a closed or crashed target are the same code whichever way a script went.

* :class:`DirectCDP`: one per launched browser (``BrowserLink.direct``), made after the launch; closed
  with the browser. :meth:`DirectCDP.attach` gives a flat session (``Target.attachToTarget``) per page.
* A pending command fails (never hangs) when its session detaches (the page closed: "Target page,
  context or browser has been closed"), its renderer crashes ("Target crashed") or the socket closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from typing import Any

import aiohttp
import orjson
from playwright.async_api import Error as PlaywrightError

JsonObject = dict[str, Any]
CLOSED = "Target page, context or browser has been closed"
"""What a command gets when its session, target or the connection went away (Playwright's own words)."""
CRASHED = "Target crashed"


def free_loopback_port() -> int:
    """A loopback TCP port free at the moment of asking (for ``--remote-debugging-port``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def debugging_flags(port: int) -> list[str]:
    """Chromium's flags for a DevTools endpoint on loopback ``port`` only."""
    return ["--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}"]


class DirectSession:
    """A flat CDP session to one target over :class:`DirectCDP` (``send`` like ``CDPSession.send``)."""

    def __init__(self, connection: DirectCDP, session_id: str) -> None:
        self.connection = connection
        self.session_id = session_id
        self.gone: str | None = None
        """Why the session can no longer be used (detached, crashed, connection closed); None while usable."""

    async def send(self, method: str, params: JsonObject | None = None) -> JsonObject:
        """One command; its result. Raises PlaywrightError on a protocol error or a gone session."""
        return await self.connection.send(method, params, self)

    async def detach(self) -> None:
        """Best effort: detach from the target (the page stays)."""
        if self.gone is None:
            with contextlib.suppress(PlaywrightError):
                await self.connection.send("Target.detachFromTarget", {"sessionId": self.session_id})
        self.connection.sessions.pop(self.session_id, None)
        self.gone = self.gone or CLOSED


class DirectCDP:
    """The host's own CDP connection to a browser it launched; see the module docstring."""

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._http = http
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[asyncio.Future[JsonObject], DirectSession | None]] = {}
        self.sessions: dict[str, DirectSession] = {}
        self.closed = False
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, port: int, timeout_s: float = 5.0) -> DirectCDP:
        """Connect to the browser's endpoint on loopback ``port`` (``/json/version``, then its WebSocket).
        Raises OSError, aiohttp.ClientError or asyncio.TimeoutError when it cannot (the caller falls back)."""
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s))
        try:
            async with http.get(f"http://127.0.0.1:{port}/json/version") as answer:
                version = await answer.json(content_type=None)
            url = str(version["webSocketDebuggerUrl"])
            if not url.startswith(f"ws://127.0.0.1:{port}/"):
                raise OSError(f"unexpected DevTools endpoint {url!r}")
            ws = await http.ws_connect(url, max_msg_size=0, timeout=aiohttp.ClientWSTimeout(ws_close=1.0))
        except BaseException:
            await http.close()
            raise
        return cls(http, ws)

    async def attach(self, target_id: str) -> DirectSession:
        """A flat session to target ``target_id`` (a page's ``Target.getTargetInfo`` id). Raises
        PlaywrightError when the target is gone or the connection closed."""
        made = await self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        session = DirectSession(self, str(made["sessionId"]))
        self.sessions[session.session_id] = session
        return session

    async def send(
        self, method: str, params: JsonObject | None = None, session: DirectSession | None = None
    ) -> JsonObject:
        """One command (on ``session``, else the browser); its result. Raises PlaywrightError."""
        if self.closed:
            raise PlaywrightError(CLOSED)
        if session is not None and session.gone is not None:
            raise PlaywrightError(session.gone)
        ident = next(self._ids)
        message: JsonObject = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session.session_id
        answer: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = (answer, session)
        try:
            await self._ws.send_str(orjson.dumps(message).decode())
            data = await answer
        except (ConnectionError, aiohttp.ClientError, RuntimeError) as exc:
            raise PlaywrightError(f"{CLOSED}: {type(exc).__name__}") from None
        finally:
            self._waiting.pop(ident, None)
        error = data.get("error")
        if error is not None:
            raise PlaywrightError(f"Protocol error ({method}): {error.get('message', error)}")
        result: JsonObject = data.get("result", {})
        return result

    async def _read(self) -> None:
        try:
            async for message in self._ws:
                if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    break
                data = orjson.loads(message.data)
                ident = data.get("id")
                if ident is not None:
                    waiting = self._waiting.get(ident)
                    if waiting is not None and not waiting[0].done():
                        waiting[0].set_result(data)
                    continue
                method = data.get("method")
                if method == "Target.detachedFromTarget":
                    self._end(data.get("params", {}).get("sessionId"), CLOSED)
                elif method == "Inspector.targetCrashed":
                    self._end(data.get("sessionId"), CRASHED)
        except Exception:  # a broken socket ends the connection like a close
            pass
        finally:
            self.closed = True
            for session_id in list(self.sessions):
                self._end(session_id, CLOSED)
            for answer, _session in list(self._waiting.values()):
                if not answer.done():
                    answer.set_exception(PlaywrightError(CLOSED))

    def _end(self, session_id: str | None, why: str) -> None:
        session = self.sessions.pop(session_id, None) if session_id else None
        if session is None:
            return
        session.gone = why
        for answer, owner in list(self._waiting.values()):
            if owner is session and not answer.done():
                answer.set_exception(PlaywrightError(why))

    async def close(self) -> None:
        """Close the socket; every pending command fails. Never raises."""
        self.closed = True
        with contextlib.suppress(Exception):
            await self._ws.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._reader), 2.0)
        self._reader.cancel()
        with contextlib.suppress(Exception):
            await self._http.close()
