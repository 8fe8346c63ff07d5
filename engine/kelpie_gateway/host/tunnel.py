"""MCP over an outbound WebSocket: the MCP-over-ACP tunnel (issue 17; docs/tunnel.md).

A host that cannot listen (a sandboxed app, a machine behind NAT) opens one WebSocket to an agent
broker's ACP endpoint and is the MCP *server* on it. JSON-RPC 2.0, one message per text frame:

host → broker                          broker → host
-------------                          -------------
``initialize {protocolVersion: 1}``    its result
``session/new {cwd, mcpServers}``      ``{sessionId}``
(``session/resume {sessionId, …}``     after a reconnect, or ``--connect-session``)
                                       ``mcp/connect {acpId}`` → ``{connectionId}``
                                       ``mcp/message {connectionId, method, params}`` → the inner MCP
                                       result (or error), correlated by the outer id
                                       ``mcp/disconnect {connectionId}`` → ``{}``
                                       ``session/request_permission`` → approved (allow option)

``mcpServers`` is ``[{"type": "acp", "id": <server id>, "name": <name>}]``; the server id is
``kelpie-<random>`` for the life of the process. Each ``mcp/message`` request becomes one JSON-RPC
message ``{jsonrpc, id: <outer id>, method, params}`` driven through :meth:`Driver.mcp` exactly as
``POST /mcp`` is (same gateway, same lanes: BUSY, ``mayHaveCompleted`` and bounded retirement hold across
the tunnel and local clients at once); an ``mcp/message`` notification is an inner MCP notification.

Frame rules (both directions): a frame that carries a method is at most 1 MiB, any other frame (a
response) at most 8 MiB. Incoming frames are measured before they are parsed (aiohttp refuses anything
over 8 MiB while reading; over 1 MiB is parsed only while a request of ours awaits its response);
an oversized frame closes the connection with code 1009 and the host reconnects. An answer that would
exceed 8 MiB is never sent: a ``tools/call`` gets a ``RESPONSE_TOO_LARGE`` tool error instead (a
screenshot of a large viewport), anything else JSON-RPC ``-32603``.

When the socket drops (or the broker disconnects an MCP connection) every call still running on it is
abandoned: the gateway cancels it (reason ``cancelled``): a dispatched mutation completes with
``mayHaveCompleted:true``, its tab becomes ``RECONCILE_REQUIRED`` and its lane stays exclusive until the
renderer's late reply retires it. An answer is only ever sent on the socket its request came in on; an
answer that cannot reach its caller — that socket closed (or the send failed) by the time the call
completed, or the call's MCP connection was disconnected — is reported to the gateway as undelivered
(``advance {"transaction", "undelivered": true}``, :meth:`Driver.undelivered`), so a mutation that did
complete still leaves its tab ``RECONCILE_REQUIRED``, exactly like a dropped HTTP client. The host then
reconnects with capped exponential backoff and jitter, initializes again and declares the server again
(``session/resume`` of the session it had, else a new session). MCP connection ids belong to one socket:
after a reconnect the broker connects again.

Authentication: ``Authorization: Bearer`` on the WebSocket handshake, read from ``--connect-token-file``
(re-read on every attempt, so a rotated token is picked up) or ``$KELPIE_GATEWAY_CONNECT_TOKEN``; never
logged. ``ws://`` is refused unless the broker is on loopback (a bearer never travels in clear).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from yarl import URL

from kelpie_gateway import VERSION, DuplicateMember, JsonError, jsonrpc_error, loads
from kelpie_gateway.host.contexts import Client, DriverSource, SharedDrivers
from kelpie_gateway.host.driver import Abandon, Caller, Driver
from kelpie_gateway.host.remote import backoff_delay as backoff_delay  # the host's one backoff

JsonObject = dict[str, Any]

MAX_METHOD_FRAME = 1024 * 1024
"""Frames that carry a ``method`` (requests, notifications): at most 1 MiB, both directions."""
MAX_RESPONSE_FRAME = 8 * 1024 * 1024
"""Any other frame (responses): at most 8 MiB, both directions."""
ACP_PROTOCOL_VERSION = 1
HANDSHAKE_TIMEOUT_S = 30.0
TOKEN_ENV = "KELPIE_GATEWAY_CONNECT_TOKEN"
CLOSE_TOO_BIG = 1009


class TunnelConfigError(ValueError):
    """A ``--connect`` setting that cannot work (bad URL, ``ws://`` off loopback, unreadable token)."""


@dataclass
class TunnelOptions:
    """``serve --connect URL`` and friends (docs/tunnel.md).

    ``token_file``: bearer for the broker (else ``$KELPIE_GATEWAY_CONNECT_TOKEN``; none = no header).
    ``session``: attach to this existing broker session (``session/resume``) instead of creating one.
    ``backoff_initial_s`` / ``backoff_max_s``: reconnect delays (doubling, capped, jittered to 50-100 %).
    """

    url: str
    token_file: Path | None = None
    name: str = "kelpie-browser"
    session: str | None = None
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    heartbeat_s: float = 20.0
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)


def check_url(url: str) -> URL:
    """The broker URL, validated: ``wss://`` anywhere, ``ws://`` only to a loopback host.
    Raises :class:`TunnelConfigError`."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError) as exc:
        raise TunnelConfigError(f"--connect: not a URL ({exc})") from None
    if parsed.scheme not in ("ws", "wss") or not parsed.host:
        raise TunnelConfigError("--connect needs a ws:// or wss:// URL with a host")
    if parsed.scheme == "ws" and not _is_loopback(parsed.host):
        raise TunnelConfigError(
            "--connect: ws:// (no TLS) is allowed only to a loopback broker; use wss:// so the bearer "
            "and the browser's data never travel in clear"
        )
    return parsed


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def shown(url: URL) -> str:
    """The URL as logged: no user info, no query, no fragment (they may hold credentials)."""
    return str(url.with_user(None).with_password(None).with_query(None).with_fragment(None))


def read_token(opts: TunnelOptions) -> str | None:
    """The broker bearer: the token file's content (stripped), else ``$KELPIE_GATEWAY_CONNECT_TOKEN``,
    else None. Raises :class:`TunnelConfigError` for an unreadable or empty file."""
    if opts.token_file is not None:
        try:
            token = opts.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise TunnelConfigError(
                f"--connect-token-file {opts.token_file}: {exc.strerror or type(exc).__name__}"
            ) from None
        if not token:
            raise TunnelConfigError(f"--connect-token-file {opts.token_file} is empty")
        return token
    return opts.environ.get(TOKEN_ENV) or None


def frame_size(text: str) -> int:
    """UTF-8 size in bytes of a text frame."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def allow_option(params: Any) -> JsonObject:
    """The answer to ``session/request_permission``: the first ``allow_once`` option, else the first
    ``allow_always`` one, else ``cancelled`` (the host approves, but never by picking a reject)."""
    options = params.get("options") if isinstance(params, Mapping) else None
    if isinstance(options, list):
        for kind in ("allow_once", "allow_always"):
            for option in options:
                if isinstance(option, Mapping) and option.get("kind") == kind and "optionId" in option:
                    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
    return {"outcome": {"outcome": "cancelled"}}


def fit_response(step: JsonObject) -> JsonObject:
    """The ``complete`` step as it may travel the tunnel: a JSON-RPC response over 8 MiB becomes a
    ``RESPONSE_TOO_LARGE`` tool error (``tools/call``) or ``-32603`` (anything else), and the step's
    ``audit`` says so. Pure; never raises."""
    response = step.get("response")
    if not isinstance(response, dict):
        return step
    size = len(orjson.dumps(response))
    if size <= MAX_RESPONSE_FRAME:
        return step
    rid = response.get("id")
    result = response.get("result")
    audit = dict(step.get("audit") or {})
    ran = bool(audit.get("mutates")) and bool(audit.get("dispatches"))
    message = (
        f"the response ({size} bytes) is over the tunnel's {MAX_RESPONSE_FRAME}-byte (8 MiB) frame cap and "
        "was not sent"
    )
    if isinstance(result, dict) and isinstance(result.get("structuredContent"), dict):
        inner = result["structuredContent"]
        hint = "" if ran else "; nothing changed (a smaller viewport or the local /mcp route can carry it)"
        envelope: JsonObject = {
            "version": 1,
            "id": inner.get("id"),
            "success": False,
            "error": {"code": "RESPONSE_TOO_LARGE", "message": message + hint, "retryable": False},
            "mayHaveCompleted": ran,
        }
        text = orjson.dumps(envelope).decode("utf-8")
        fitted: JsonObject = {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {
                "content": [{"type": "text", "text": text}],
                "structuredContent": envelope,
                "isError": True,
            },
        }
    else:
        fitted = jsonrpc_error(rid, -32603, message)
    audit.update(outcome="unknown" if ran else "refused", code="RESPONSE_TOO_LARGE", mayHaveCompleted=ran)
    return {**step, "response": fitted, "audit": audit}


class _Closed(Exception):
    """The socket is gone (or was closed for a frame-rule violation)."""


class Tunnel:
    """One outbound MCP-over-ACP connection, kept up until :meth:`stop` (see the module docstring).

    ``drivers``: where the host's driver comes from (shared with the HTTP routes; under ``--isolation
    per-client`` each ACP session is one client, key ``tunnel:<session id>``, with a context of its own);
    a single :class:`Driver` serves every call.
    ``log``: the operator log (never a token). ``rand``: jitter source (tests pass a fixed one)."""

    def __init__(
        self,
        drivers: DriverSource | Driver,
        opts: TunnelOptions,
        log: Callable[[str], None],
        *,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.url = self.check(opts)
        self.drivers: DriverSource = SharedDrivers(drivers) if isinstance(drivers, Driver) else drivers
        self.opts = opts
        self.log = log
        self.rand = rand
        self.server_id = f"kelpie-{uuid.uuid4().hex[:16]}"
        self.client = f"tunnel:{self.server_id}"
        self.session_id: str | None = opts.session
        self._explicit_session = opts.session is not None
        self._stopping = asyncio.Event()
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._send_lock = asyncio.Lock()
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[JsonObject]] = {}
        self._connections: dict[str, set[Abandon]] = {}
        self._connection_counter = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: asyncio.Future[None] | None = None
        self.attached = asyncio.Event()
        """Set while a session is established on a live socket (for status and tests)."""

    @staticmethod
    def check(opts: TunnelOptions) -> URL:
        """Validate ``opts`` at start-up (URL rules, token readable); raises :class:`TunnelConfigError`."""
        url = check_url(opts.url)
        read_token(opts)
        return url

    def describe(self) -> str:
        """The broker URL as logged (no credentials)."""
        return shown(self.url)

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> None:
        """Connect, serve, and reconnect with backoff until :meth:`stop`."""
        attempt = 0
        # The timeout bounds the opening handshake only; an upgraded socket lives on (heartbeat-checked).
        timeout = aiohttp.ClientTimeout(total=HANDSHAKE_TIMEOUT_S)
        async with aiohttp.ClientSession(trust_env=False, timeout=timeout) as http:
            while not self._stopping.is_set():
                was_attached = False
                try:
                    was_attached = await self._connect_once(http)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # every failure is a reason to back off, never to crash
                    self.log(f"tunnel {shown(self.url)}: {_describe(exc)}")
                if self._stopping.is_set():
                    break
                attempt = 0 if was_attached else attempt + 1
                delay = backoff_delay(
                    attempt, self.opts.backoff_initial_s, self.opts.backoff_max_s, self.rand
                )
                self.log(f"tunnel {shown(self.url)}: reconnecting in {delay:.1f} s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)

    async def stop(self) -> None:
        """Close the socket (calls in flight are abandoned as on a drop) and end :meth:`run`."""
        self._stopping.set()
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()

    def start(self) -> None:
        """Run :meth:`run` as a task of the running loop (what ``serve`` and ``mcp`` call at start-up)."""
        self._runner = asyncio.ensure_future(self.run())

    async def close(self, timeout_s: float = 5.0) -> None:
        """:meth:`stop`, then wait (bounded) for :meth:`run` to end. Never raises."""
        await self.stop()
        if self._runner is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._runner, timeout_s)

    async def _connect_once(self, http: aiohttp.ClientSession) -> bool:
        """One socket's life; returns whether a session was established on it."""
        headers = {}
        token = read_token(self.opts)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        ws = await http.ws_connect(
            self.url,
            headers=headers,
            max_msg_size=MAX_RESPONSE_FRAME,
            heartbeat=self.opts.heartbeat_s,
            autoclose=True,
            autoping=True,
            compress=0,
        )
        self._ws = ws
        reader = asyncio.ensure_future(self._read(ws))
        established = False
        try:
            established = await self._handshake()
            if established:
                self.attached.set()
                self.log(
                    f"tunnel attached to {shown(self.url)}: session {self.session_id}, "
                    f"MCP server {self.server_id!r} ({self.opts.name})"
                )
                await reader
            else:
                await ws.close()
        finally:
            self.attached.clear()
            self._ws = None
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            self._dropped(ws)
        return established

    def _dropped(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """The socket is gone: abandon every call in flight on it, fail our outstanding requests."""
        inflight = sum(len(calls) for calls in self._connections.values())
        for calls in self._connections.values():
            for call in calls:
                call.abandon()
        self._connections.clear()
        self._fail_waiting()
        code = ws.close_code
        more = f"; {inflight} call(s) in flight abandoned" if inflight else ""
        self.log(f"tunnel {shown(self.url)}: closed (code {code}){more}")

    def _fail_waiting(self) -> None:
        """Our outstanding requests can no longer be answered (the socket closed)."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(_Closed("the tunnel closed"))
        self._waiting.clear()

    # ------------------------------------------------------------------ handshake
    def _declaration(self) -> list[JsonObject]:
        return [{"type": "acp", "id": self.server_id, "name": self.opts.name}]

    async def _handshake(self) -> bool:
        await self._request(
            "initialize",
            {
                "protocolVersion": ACP_PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {
                    "name": "kelpie-gateway",
                    "title": "Kelpie browser gateway",
                    "version": VERSION,
                },
            },
        )
        cwd = os.getcwd()
        if self.session_id is not None:
            try:
                await self._request(
                    "session/resume",
                    {"sessionId": self.session_id, "cwd": cwd, "mcpServers": self._declaration()},
                )
                return True
            except _RpcFailure as exc:
                if self._explicit_session:
                    self.log(f"tunnel: the broker refused to resume session {self.session_id}: {exc}")
                    return False
                self.log(f"tunnel: session {self.session_id} is gone ({exc}); starting a new one")
        result = await self._request("session/new", {"cwd": cwd, "mcpServers": self._declaration()})
        session = result.get("sessionId")
        if not isinstance(session, str) or not session:
            self.log("tunnel: session/new answered without a sessionId")
            return False
        self.session_id = session
        self._explicit_session = False
        return True

    async def _request(self, method: str, params: JsonObject) -> JsonObject:
        """Send one request of ours and await its response (raises :class:`_RpcFailure`/``_Closed``)."""
        self._next_id += 1
        rid = self._next_id
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            message = await asyncio.wait_for(future, HANDSHAKE_TIMEOUT_S)
        finally:
            self._waiting.pop(rid, None)
        if "error" in message:
            error = message["error"]
            text = error.get("message") if isinstance(error, Mapping) else None
            raise _RpcFailure(f"{method}: {str(text)[:200] if text else 'error'}")
        result = message.get("result")
        return result if isinstance(result, dict) else {}

    # ------------------------------------------------------------------ frames
    async def _send(self, message: JsonObject, ws: aiohttp.ClientWebSocketResponse | None = None) -> None:
        """Send one message on ``ws`` (default: the current socket). Raises :class:`_Closed` when that
        socket is closed or gone, or the send fails."""
        data = orjson.dumps(message)
        cap = MAX_METHOD_FRAME if "method" in message else MAX_RESPONSE_FRAME
        if len(data) > cap:  # never sent; fit_response keeps tool answers under the cap before this
            if "method" in message:
                raise _Closed(f"refusing to send a {len(data)}-byte {message['method']} frame")
            data = orjson.dumps(
                jsonrpc_error(message.get("id"), -32603, f"the response ({len(data)} bytes) is over 8 MiB")
            )
        target = self._ws if ws is None else ws
        if target is None or target.closed or target is not self._ws:
            raise _Closed("the socket closed" if ws is not None else "the tunnel is not connected")
        async with self._send_lock:
            try:
                await target.send_str(data.decode("utf-8"))
            except (ConnectionError, aiohttp.ClientError, RuntimeError) as exc:
                raise _Closed(f"the socket closed while sending ({_describe(exc)})") from None

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Read frames until the socket closes; enforce the frame caps before parsing. When it ends, a
        handshake request still waiting fails at once (not after its timeout)."""
        try:
            await self._frames(ws)
        finally:
            self._fail_waiting()

    async def _frames(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for frame in ws:
            if frame.type == aiohttp.WSMsgType.TEXT:
                text: str = frame.data
                size = frame_size(text)
            elif frame.type == aiohttp.WSMsgType.BINARY:
                size = len(frame.data)
                try:
                    text = bytes(frame.data).decode("utf-8")
                except UnicodeDecodeError:
                    await self._violation(ws, 1007, "a binary frame that is not UTF-8 JSON")
                    return
            elif frame.type == aiohttp.WSMsgType.ERROR:
                exc = frame.data if isinstance(frame.data, BaseException) else ws.exception()
                if ws.close_code == CLOSE_TOO_BIG:  # aiohttp refused a frame over max_msg_size while reading
                    what = f"a frame over the {MAX_RESPONSE_FRAME}-byte (8 MiB) cap"
                    self.log(f"tunnel: the broker sent {what}; closing the connection")
                else:
                    self.log(f"tunnel: socket error: {_describe(exc) if exc else 'unknown'}")
                return
            else:
                continue
            if size > MAX_METHOD_FRAME and not self._waiting:
                await self._violation(ws, CLOSE_TOO_BIG, f"a {size}-byte frame while no response was due")
                return
            try:  # the engine's parser: a frame repeating a member name is refused, not read last-wins
                message = loads(text, cap=MAX_RESPONSE_FRAME)
            except DuplicateMember as exc:
                self._spawn(self._send_quietly(jsonrpc_error(None, -32600, str(exc), "INVALID_JSON"), ws))
                continue
            except JsonError:
                self._spawn(self._send_quietly(jsonrpc_error(None, -32700, "parse error"), ws))
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message and size > MAX_METHOD_FRAME:
                await self._violation(
                    ws, CLOSE_TOO_BIG, f"a {size}-byte {str(message['method'])[:60]!r} frame"
                )
                return
            self._incoming(ws, message)

    async def _violation(self, ws: aiohttp.ClientWebSocketResponse, code: int, what: str) -> None:
        self.log(f"tunnel: the broker sent {what} (over the frame cap); closing the connection")
        with contextlib.suppress(Exception):
            await ws.close(code=code, message=b"frame over the cap")

    def _incoming(self, ws: aiohttp.ClientWebSocketResponse, message: JsonObject) -> None:
        """Route one parsed frame: a response to one of ours, a broker request (answered on ``ws``, the
        socket it came in on), or a notification."""
        method = message.get("method")
        if not isinstance(method, str):
            rid = message.get("id")
            future = self._waiting.get(rid) if isinstance(rid, int) else None
            if future is not None and not future.done():
                future.set_result(message)
            return
        if "id" in message:
            self._spawn(self._answer(ws, message["id"], method, message.get("params")))
        elif method == "mcp/message":
            self._spawn(self._notify(message.get("params")))
        # other notifications (session/update, …) carry nothing for an MCP server

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_quietly(self, message: JsonObject, ws: aiohttp.ClientWebSocketResponse) -> bool:
        """Send an answer on the socket its request came in on; False (logged) when it could not be sent."""
        try:
            await self._send(message, ws)
        except Exception as exc:  # the socket went away: the answer is lost (the caller reports it)
            what = repr(str(message.get("id"))[:60]) if "id" in message else "a notification"
            self.log(f"tunnel: the answer to request {what} could not be sent ({_describe(exc)})")
            return False
        return True

    # ------------------------------------------------------------------ broker requests
    async def _answer(self, ws: aiohttp.ClientWebSocketResponse, rid: Any, method: str, params: Any) -> None:
        """Answer one broker request on ``ws``. An ``mcp/message`` whose answer cannot reach its caller is
        reported to the gateway as undelivered (see the module docstring)."""
        step: JsonObject | None = None
        driver: Driver | None = None
        gone = False
        try:
            args = params if isinstance(params, dict) else {}
            if method == "mcp/message":
                result, step, gone, driver = await self._message(rid, args)
            else:
                result = await self._handle(method, args)
        except _RpcFailure as exc:
            reply = jsonrpc_error(rid, exc.code, str(exc))
        except Exception as exc:  # errors are values: a host bug answers -32603, the tunnel stays up
            self.log(f"tunnel: host error answering {method[:60]!r}: {_describe(exc)}")
            reply = jsonrpc_error(rid, -32603, "internal error")
        else:
            reply = result if "jsonrpc" in result else {"jsonrpc": "2.0", "id": rid, "result": result}
        sent = await self._send_quietly(reply, ws)
        if step is not None and driver is not None and (gone or not sent):
            driver.undelivered(step)

    async def _handle(self, method: str, params: JsonObject) -> JsonObject:
        if method == "mcp/connect":
            if params.get("acpId") != self.server_id:
                raise _RpcFailure(f"no MCP server with acpId {str(params.get('acpId'))[:80]!r} here", -32602)
            self._connection_counter += 1
            connection = f"conn-{self._connection_counter}"
            self._connections[connection] = set()
            self.log(f"tunnel: MCP connection {connection} opened")
            return {"connectionId": connection}
        if method == "mcp/disconnect":
            calls = self._connections.pop(self._connection(params), set())
            for call in calls:
                call.abandon()
            self.log(f"tunnel: MCP connection {params.get('connectionId')} closed by the broker")
            return {}
        if method == "session/request_permission":
            return allow_option(params)
        raise _RpcFailure(f"method not found: {method[:100]!r}", -32601)

    def _connection(self, params: Mapping[str, Any]) -> str:
        connection = params.get("connectionId")
        if not isinstance(connection, str) or connection not in self._connections:
            raise _RpcFailure(f"unknown connectionId {str(connection)[:80]!r}", -32602)
        return connection

    def _inner(self, rid: Any, params: Mapping[str, Any]) -> tuple[str, JsonObject]:
        connection = self._connection(params)
        inner_method = params.get("method")
        if not isinstance(inner_method, str):
            raise _RpcFailure("mcp/message needs params.method (a string)", -32602)
        inner: JsonObject = {"jsonrpc": "2.0", "method": inner_method}
        if rid is not None:
            inner["id"] = rid
        if params.get("params") is not None:
            inner["params"] = params["params"]
        return connection, inner

    def _who(self) -> Client:
        """This tunnel's client: its ACP session (a new session is a new client)."""
        return Client(f"tunnel:{self.session_id}", self.client)

    async def _message(
        self, rid: Any, params: Mapping[str, Any]
    ) -> tuple[JsonObject, JsonObject, bool, Driver]:
        """Run one ``mcp/message`` request: ``(the answer, the complete step, whether the call was
        abandoned meanwhile: its socket dropped or its MCP connection was disconnected, the driver that
        ran it)``."""
        connection, inner = self._inner(rid, params)
        abandon = Abandon()
        calls = self._connections[connection]
        calls.add(abandon)
        try:
            with self.drivers.lease(self._who()) as lease:
                driver = lease.driver
                step = await driver.mcp(
                    inner,
                    Caller(client=self.client, transport="tunnel", connection=connection),
                    abandon=abandon,
                    fit=fit_response,
                )
        finally:
            calls.discard(abandon)
        response = step.get("response")
        if not isinstance(response, dict):
            return {}, step, abandon.abandoned, driver
        if "error" in response:
            return {"jsonrpc": "2.0", "id": rid, "error": response["error"]}, step, abandon.abandoned, driver
        result = response.get("result")
        answer = {"jsonrpc": "2.0", "id": rid, "result": result if result is not None else {}}
        return answer, step, abandon.abandoned, driver

    async def _notify(self, params: Any) -> None:
        """An ``mcp/message`` notification: the inner MCP notification (no answer)."""
        if not isinstance(params, dict):
            return
        try:
            connection, inner = self._inner(None, params)
        except _RpcFailure:
            return
        with self.drivers.lease(self._who()) as lease:
            await lease.driver.mcp(
                inner, Caller(client=self.client, transport="tunnel", connection=connection)
            )


class _RpcFailure(Exception):
    """A JSON-RPC error answer (``code``) or a failed request of ours."""

    def __init__(self, message: str, code: int = -32603) -> None:
        super().__init__(message)
        self.code = code


def _describe(exc: BaseException) -> str:
    """One log line for a connection failure; never the request headers (the bearer)."""
    if isinstance(exc, aiohttp.WSServerHandshakeError):
        if exc.status == 401:
            return "the broker refused the bearer (HTTP 401)"
        return f"the WebSocket handshake failed (HTTP {exc.status})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect ({exc.os_error.strerror or type(exc.os_error).__name__})"
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
