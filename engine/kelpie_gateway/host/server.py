"""Loopback HTTP transport of the reference host (ARCHITECTURE.md, "Reference Linux host and transport rules").

Routes (all answer JSON; every check happens before the body is read past the cap):

========================  ====================================================================
``POST /v1/browser-control``  canonical request -> envelope. Refusals and unknown outcomes are HTTP 200.
``POST /mcp``                 JSON-RPC message -> JSON-RPC response; notifications 202 with an empty body.
``GET /mcp``                  405 (no server-initiated stream). ``DELETE /mcp`` 405 (no sessions).
``POST /v1/pair``             no bearer; body ``{"client": name}``; waits for the operator (120 s):
                              200 ``{"token"}`` once, 403 denied, 408 not approved in time.
``DELETE /v1/pair``           revokes exactly the presented bearer; it is refused from then on.
========================  ====================================================================

Status rules, in the order they are checked:

1. ``Host`` header not ``127.0.0.1:PORT`` / ``localhost:PORT`` (the address being served) -> 403
   (DNS rebinding), on every route.
2. Missing or unknown ``Authorization: Bearer`` -> 401 (every route but ``POST /v1/pair``).
3. Any ``Origin`` header, including ``null`` -> 403 (on every route; browsers' pages never talk to the host).
4. ``Content-Type`` not ``application/json`` -> 415.
5. Body over 4 MiB (``Content-Length`` or counted while streaming) -> 413, never parsed or kept.
6. ``/mcp`` only: the engine's header rules (``kelpie_gateway.mcp_http_refusal``, CONTRACT.md §7 v1.1):
   an ``MCP-Protocol-Version`` not spoken -> 400 ``-32022``; a stateless (2026-07-28) request whose
   ``_meta`` envelope is missing -> 400 ``-32602``, whose ``MCP-Protocol-Version``/``Mcp-Method``/
   ``Mcp-Name`` headers disagree with the body -> 400 ``-32020``.
7. Malformed JSON -> 400 (canonical: the ``INVALID_JSON`` envelope; ``/mcp``: JSON-RPC -32700). A JSON-RPC
   error answering a stateless request carries the status the engine puts on its step (400, or 404 for
   ``-32601``); any other JSON-RPC ``-32600`` (a batch, a message that is not a JSON-RPC request) -> 400.

Connection rules (ARCHITECTURE.md, "Host rules added in revision 1.1"; docs/host.md states the bounds):

* A refusal sent while the client is still uploading (413, and 401/403/415/400 before the body was read)
  is followed by a **bounded lingering close** (RFC 9112 §9.6): the answer is written with
  ``Connection: close``, then at most :data:`LINGER_MAX_BYTES` more are read and discarded for at most
  :data:`LINGER_MAX_S` seconds, then the connection closes. Without it the kernel resets a connection
  closed with unread data, and the reset destroys the answer before most clients read it.
* ``Expect: 100-continue`` gets the interim 100 only when the checks before the body admit the request;
  otherwise the final refusal comes at once and the client need not upload the body at all.
* A client that half-closes its side (``shutdown(SHUT_WR)``) after a complete request is still answered;
  the connection closes after the answer. A body cut short by the half-close is a 400.
"""

from __future__ import annotations

import asyncio
import html
import os
import socket
import sys
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import HttpVersion11, web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse
from aiohttp.web_server import Server

from kelpie_gateway import JsonError, jsonrpc_error, loads, mcp_http_refusal
from kelpie_gateway.host.auth import (
    MAX_PENDING_PAIRINGS,
    Pairing,
    PairingFull,
    PairingRecord,
    RefusalLog,
    TokenStore,
)
from kelpie_gateway.host.auth import state_dir as state_dir  # re-exported: it moved to auth (a light import)
from kelpie_gateway.host.contexts import Client, DriverSource, Lease
from kelpie_gateway.host.driver import Caller
from kelpie_gateway.host.observer import observe

JsonObject = dict[str, Any]

MAX_BODY = 4 * 1024 * 1024
BODY_READ_TIMEOUT_S = float(os.environ.get("KELPIE_GATEWAY_BODY_TIMEOUT_S", "30"))
"""A request body must arrive within this many seconds (408 otherwise): a stalled or broken body never
holds a connection and its handler forever."""
LINGER_MAX_BYTES = 16 * 1024 * 1024
"""After a refusal that leaves a body unread, at most this many further bytes are read and discarded."""
LINGER_MAX_S = 5.0
"""... for at most this many seconds after the refusal was written; then the connection is closed."""
LOOPBACK_BINDS = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback_bind(address: str) -> bool:
    """True for the loopback addresses the host may bind (127.0.0.0/8, ``localhost``, ``::1``)."""
    return address in LOOPBACK_BINDS or address.startswith("127.")


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def _envelope_error(code: str, message: str) -> JsonObject:
    return {
        "version": 1,
        "id": None,
        "success": False,
        "error": {"code": code, "message": message, "retryable": False},
        "mayHaveCompleted": False,
    }


AIOHTTP_INTERNALS: dict[str, tuple[str, ...]] = {
    "aiohttp.web_protocol.RequestHandler": ("_messages", "_waiter", "_request_count"),
    "aiohttp.web_server.Server": ("_loop", "_kwargs"),
    "aiohttp.web_runner.AppRunner": ("_make_server",),
}
"""The private aiohttp names the half-close support below reads. aiohttp has no public hook for "end-of-file
while requests are still queued", so ``pyproject.toml`` pins aiohttp to the range these were tested on and
``tests/host/test_http_connections.py`` fails, naming each missing one, if an aiohttp release drops them.
Should one disappear anyway, :class:`_QuietRequestHandler` logs once and falls back to aiohttp's own
behaviour (a half-closed client's connection is closed unanswered) instead of failing each connection."""

_MISSING = object()


class _QuietRequestHandler(RequestHandler):
    """aiohttp's protocol handler with two changes.

    * A malformed request is answered ``<status> <phrase>`` and logged as one line without details:
      aiohttp's parser messages (and tracebacks) quote the offending header line, which can hold a bearer
      token (ARCHITECTURE.md: tokens are never logged or echoed).
    * A client that half-closes its side (``shutdown(SHUT_WR)``) after sending a request still gets its
      answer: aiohttp's default closes the whole connection on end-of-file, which drops every request not yet
      answered. Here the transport stays open for writing, the requests already received are answered, and
      the connection closes after the last of them. A body the client did not finish before closing its
      side fails to read (the route answers 400) instead of waiting for bytes that cannot come.
    """

    _peer_closed = False
    _last_payload: Any = None

    @property
    def peer_closed(self) -> bool:
        """True once the client closed its sending side while requests were still to be answered."""
        return self._peer_closed

    _warned = False  # class-wide: the fallback is reported once per process

    def _queued(self) -> tuple[Any, Any, Any] | None:
        """aiohttp's parsed-but-unanswered requests, its idle waiter and its request count (private state,
        see :data:`AIOHTTP_INTERNALS`), or None when this aiohttp has none of that."""
        messages, waiter, count = (getattr(self, name, _MISSING) for name in AIOHTTP_INTERNALS[_HANDLER])
        state: tuple[Any, Any, Any] = (messages, waiter, count)
        if any(value is _MISSING for value in state):
            if not _QuietRequestHandler._warned:
                _QuietRequestHandler._warned = True
                _ERROR_LOG(
                    f"aiohttp {aiohttp.__version__} lacks RequestHandler state the half-close support reads "
                    f"({', '.join(AIOHTTP_INTERNALS[_HANDLER])}): half-closed clients are not answered; "
                    "install the aiohttp range pyproject.toml pins"
                )
            return None
        return state

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        queued = self._queued()
        if queued is not None and queued[0]:
            self._last_payload = queued[0][-1][1]

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> StreamResponse:
        kind = type(exc).__name__ if exc is not None else "error"
        _ERROR_LOG(f"malformed HTTP request from {request.remote}: {kind} (details withheld)")
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        response = web.Response(status=status, text=f"{status} {phrase}\n", content_type="text/plain")
        response.force_close()
        return response

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio.Protocol's own signature
        # When end-of-file arrives, this connection's loop is either waiting for a request (idle: nothing
        # to answer), or handling one (possibly in a task that has not started yet), or not started.
        queued = self._queued()
        if queued is None:
            return None  # aiohttp's own behaviour: close the connection
        messages, waiter, request_count = queued
        if not messages and (waiter is not None or request_count == 0):
            return None  # nothing to answer: let asyncio close the connection
        self._peer_closed = True
        payloads = [payload for _, payload in messages]
        if self._last_payload is not None:  # the latest request's body, even if its handler has not started
            payloads.append(self._last_payload)
        for payload in payloads:
            if not payload.is_eof():
                payload.set_exception(
                    ConnectionResetError("the client closed its side before the body ended")
                )
        return True  # keep the transport open to write the answers

    async def finish_response(
        self, request: BaseRequest, resp: StreamResponse, start_time: float | None
    ) -> tuple[StreamResponse, bool]:
        done = await super().finish_response(request, resp, start_time)
        queued = self._queued() if self._peer_closed else None
        if queued is not None and not queued[0]:
            self.close()  # the last request this client can send was answered
        return done


_HANDLER = "aiohttp.web_protocol.RequestHandler"

PEER_RESET_PROBE_S = 0.05
"""How long :func:`_peer_reset` waits for a reset after answering a client whose side was already closed."""


async def _no_continue(_request: web.Request) -> web.StreamResponse | None:
    """The ``Expect`` handler of routes that always refuse (``GET``/``DELETE /mcp``: 405): never a ``100``."""
    return None


async def _peer_reset(request: web.Request) -> bool:
    """True when the client had closed its side before the answer (end-of-file seen) and its socket turns
    out to be gone entirely. A half-closed client (``shutdown(SHUT_WR)``) still reads; a client that closed
    its socket cannot, and its kernel answers our data with a reset. The host serves loopback only, where
    that reset arrives within microseconds, so a short wait and the socket's pending error (``SO_ERROR``)
    tell the two apart. For any other client this returns False at once."""
    protocol = request.protocol
    if not isinstance(protocol, _QuietRequestHandler) or not protocol.peer_closed:
        return False
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return False
    await asyncio.sleep(PEER_RESET_PROBE_S)
    try:
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)) != 0
    except OSError:
        return True


def _ERROR_LOG(line: str) -> None:  # replaced by set_error_log once the host's log exists
    print(line, file=sys.stderr, flush=True)


def set_error_log(log: Callable[[str], None]) -> None:
    """Where the one-line reports of malformed requests go (the host's operator log)."""
    global _ERROR_LOG
    _ERROR_LOG = log  # type: ignore[assignment]


class QuietAppRunner(web.AppRunner):
    """An ``AppRunner`` whose connections use :class:`_QuietRequestHandler`. aiohttp's own lingering is
    off (``lingering_time=0``): it bounds only time, so the routes linger themselves, bounded in bytes and
    time (:func:`_linger`), and only after refusals."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, access_log=None, lingering_time=0, **kwargs)

    async def _make_server(self) -> Server:
        server = await super()._make_server()
        return _QuietServer(server)


class _QuietServer(Server):
    """Wraps the runner's ``Server`` so each connection gets a :class:`_QuietRequestHandler`."""

    def __init__(self, inner: Server) -> None:
        self.__dict__["_inner"] = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def __call__(self) -> RequestHandler:
        inner = self.__dict__["_inner"]
        return _QuietRequestHandler(inner, loop=inner._loop, **inner._kwargs)


def _bad_body(template: JsonObject, message: str) -> JsonObject:
    """A 400 answer in the route's own dialect (envelope or JSON-RPC), from its 413 template."""
    if "jsonrpc" in template:
        return jsonrpc_error(None, -32700, message)
    return _envelope_error("INVALID_JSON", message)


def _http_status(response: Any) -> int:
    """The HTTP status of a gateway answer, from the engine's own verdict (the body is parsed once):
    400 for a body that is not JSON (``INVALID_JSON``, JSON-RPC -32700) and, on ``/mcp``, for a message that
    is not an acceptable JSON-RPC request (-32600: a batch, a non-object, a bad ``jsonrpc``/``method``/``id``;
    ARCHITECTURE.md v1.1, MCP Streamable HTTP); else 200: refusals and unknown outcomes travel in the
    envelope."""
    if isinstance(response, dict):
        error = response.get("error")
        if isinstance(error, dict) and error.get("code") in ("INVALID_JSON", -32700, -32600):
            return 400
    return 200


PAIR_AGAIN = (
    "pair again: `kelpie-gateway pair request` (or POST /v1/pair), then send Authorization: Bearer <token>"
)


def unauthorized_message(verdict: str) -> str:
    """The 401 message for a bearer verdict of :meth:`TokenStore.check` (``missing``, ``unknown`` or
    ``revoked``): why the bearer was refused, then how to pair again. Never echoes the token."""
    if verdict == "revoked":
        return f"this bearer token was revoked: {PAIR_AGAIN}"
    if verdict == "unknown":
        return (
            "this bearer token is unknown to this host (never issued by it, or its pairing file was reset): "
            + PAIR_AGAIN
        )
    return "a paired bearer token is required: pair with `kelpie-gateway pair request` (or POST /v1/pair)"


def _rpc_refusal(_code: str, message: str) -> JsonObject:
    """A transport refusal on ``/mcp``: JSON-RPC -32600."""
    return jsonrpc_error(None, -32600, message)


def _pair_refusal(code: str, message: str) -> JsonObject:
    """A transport refusal on ``/v1/pair``: ``{"error": {code, message}}``."""
    return {"error": {"code": code, "message": message}}


class _Refused(Exception):
    """A transport refusal. ``linger``: the body may still be arriving and is healthy (413, or a refusal
    before reading it), so the answer is followed by a bounded lingering close; a stalled or broken body
    (408, 400) is not drained."""

    def __init__(self, response: web.Response, *, linger: bool = True) -> None:
        super().__init__(response.status)
        self.response = response
        self.linger = linger


async def _refuse(request: web.Request, refused: _Refused) -> web.StreamResponse:
    """Send a refusal; if the client may still be uploading, linger (bounded) before the close."""
    if refused.linger and not request.content.is_eof():
        return await _linger(request, refused.response)
    return refused.response


async def _linger(request: web.Request, response: web.Response) -> web.StreamResponse:
    """Lingering close (RFC 9112 §9.6), bounded: write ``response`` with ``Connection: close``, then read
    and discard the rest of the body — at most :data:`LINGER_MAX_BYTES` bytes, for at most
    :data:`LINGER_MAX_S` seconds — so the client's upload ends (or is cut) after it could read the answer.
    The connection closes when the handler returns (aiohttp closes a connection whose body is unread)."""
    response.force_close()
    await response.prepare(request)
    await response.write_eof()
    discarded = 0
    try:
        async with asyncio.timeout(LINGER_MAX_S):
            while discarded <= LINGER_MAX_BYTES:
                chunk = await request.content.readany()
                if not chunk:
                    break
                discarded += len(chunk)
    except Exception:  # timed out, reset or a broken body: stop discarding and close
        pass
    return response


class HostServer:
    """The aiohttp application; ``port`` is filled in once the listening socket is bound. ``drivers``: where
    a request's driver comes from — the one gateway (``--isolation shared``) or the bearer's own
    (``per-client``: the key is the bearer's SHA-256 digest, never the token)."""

    def __init__(
        self,
        drivers: DriverSource,
        tokens: TokenStore,
        pairing: Pairing,
        *,
        log: Callable[[str], None],
    ) -> None:
        self.drivers = drivers
        self.tokens = tokens
        self.pairing = pairing
        self.log = log
        self.refusals = RefusalLog(log)
        self.port = 0
        self.bind = "127.0.0.1"

    def url_host(self) -> str:
        """The served address as it appears in a URL (``[::1]`` for IPv6)."""
        if self.bind == "localhost":
            return "127.0.0.1"
        return f"[{self.bind}]" if ":" in self.bind else self.bind

    def allowed_hosts(self) -> frozenset[str]:
        """``Host`` values naming the loopback address and port served (DNS-rebinding guard)."""
        names = {self.url_host()}
        if self.bind in ("127.0.0.1", "::1", "localhost"):
            names.add("localhost")
        return frozenset(f"{name}:{self.port}" for name in names)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/v1/browser-control", self.canonical, expect_handler=self._expect)
        app.router.add_post("/v1/observe", self.observe, expect_handler=self._expect)
        app.router.add_post("/mcp", self.mcp, expect_handler=self._expect)
        app.router.add_get("/mcp", self.mcp_get, expect_handler=_no_continue)
        app.router.add_delete("/mcp", self.mcp_get, expect_handler=_no_continue)
        app.router.add_post("/v1/pair", self.pair, expect_handler=self._expect)
        app.router.add_delete("/v1/pair", self.unpair, expect_handler=self._expect)
        return app

    async def _expect(self, request: web.Request) -> web.StreamResponse | None:
        """``Expect: 100-continue`` (RFC 9110 §10.1.1): the interim ``100 Continue`` goes only to a request
        that the checks before the body admit (Host, bearer, Origin, Content-Type, a ``Content-Length``
        within the cap). Any other request gets no 100; its route then answers the refusal at once, so the
        client need not upload a body that would be refused. Other expectations: 417. Every route has this
        check (issue 27: ``DELETE /v1/pair`` had aiohttp's default, a 100 for any request, an empty Host's
        included); ``GET``/``DELETE /mcp`` (always 405) get no 100 (:func:`_no_continue`)."""
        if request.version != HttpVersion11:
            return None
        if request.headers.get("Expect", "").lower() != "100-continue":
            return _json(
                417, {"error": {"code": "INVALID_REQUEST", "message": "only 100-continue is supported"}}
            )
        try:
            pairing = request.path == "/v1/pair" and request.method == "POST"
            self._admit(request, _pair_refusal, bearer=not pairing)
            if request.method == "POST":
                self._check_type(request, _pair_refusal)
        except _Refused:
            return None
        length = request.content_length
        if length is None or length <= MAX_BODY:
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0  # the interim answer is not part of the response
        return None

    # ------------------------------------------------------------------ shared checks
    def _check_host(self, request: web.Request, err: Callable[[str, str], JsonObject]) -> None:
        host = request.headers.get("Host", "")
        if host not in self.allowed_hosts():
            self.refusals.refused(403, "Host header not the loopback address served")
            raise _Refused(
                _json(403, err("NOT_AUTHORIZED", "the Host header must name the loopback address served"))
            )

    def _bearer(self, request: web.Request) -> str | None:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    def _check_bearer(self, request: web.Request, err: Callable[[str, str], JsonObject]) -> str:
        token = self._bearer(request)
        self._pairing(token, err)
        assert token is not None
        return token

    def _pairing(self, token: str | None, err: Callable[[str, str], JsonObject]) -> PairingRecord:
        """The pairing of a valid bearer; else raises the 401 its verdict deserves (missing, unknown, revoked)."""
        verdict, entry = self.tokens.check(token)
        if token is None or verdict != "valid" or entry is None:
            if verdict == "revoked" and entry is not None:
                self.refusals.refused(401, "revoked bearer", f"client {entry.client!r}")
                self.drivers.revoked(entry.digest.hex())  # its context closes now, not at the next sweep
            else:
                self.refusals.refused(401, f"{verdict} bearer")
            message = unauthorized_message(verdict)
            challenge = 'Bearer realm="kelpie-gateway"'
            if verdict != "missing":
                challenge += f', error="invalid_token", error_description="{message.split(":")[0]}"'
            raise _Refused(_json(401, err("NOT_AUTHORIZED", message), {"WWW-Authenticate": challenge}))
        return entry

    def _admit(
        self, request: web.Request, err: Callable[[str, str], JsonObject], *, bearer: bool = True
    ) -> str | None:
        """The checks every route runs first, in this order: Host (DNS rebinding, 403), bearer (401;
        every route but ``POST /v1/pair``), Origin (403, after bearer admission). Returns the bearer."""
        self._check_host(request, err)
        token = self._check_bearer(request, err) if bearer else None
        self._check_origin(request, err)
        return token

    def _caller(
        self, token: str | None, transport: str, err: Callable[[str, str], JsonObject]
    ) -> tuple[Caller, Lease]:
        """The audit trail's caller (the pairing name of ``token``) and the driver lent to serve it (the
        client's own under ``--isolation per-client``, keyed by the token's digest). A bearer revoked while
        its body was read is refused here (401) like any other: no driver is lent to it."""
        entry = self._pairing(token, err)
        caller = Caller(client=entry.client, transport=transport)
        return caller, self.drivers.lease(Client(entry.digest.hex(), entry.client))

    def _check_origin(self, request: web.Request, err: Callable[[str, str], JsonObject]) -> None:
        if "Origin" in request.headers:
            self.refusals.refused(403, "Origin header (a web page)")
            raise _Refused(
                _json(403, err("NOT_AUTHORIZED", "requests from web pages (Origin header) are refused"))
            )

    def _check_type(self, request: web.Request, err: Callable[[str, str], JsonObject]) -> None:
        if request.content_type != "application/json":
            raise _Refused(_json(415, err("INVALID_REQUEST", "Content-Type must be application/json")))

    async def _read(self, request: web.Request, too_large: JsonObject) -> bytes:
        def refuse() -> _Refused:
            return _Refused(_json(413, too_large))

        length = request.content_length
        if length is not None and length > MAX_BODY:
            raise refuse()
        chunks: list[bytes] = []
        total = 0
        deadline = asyncio.get_running_loop().time() + BODY_READ_TIMEOUT_S
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    chunk = await request.content.read(64 * 1024)
            except TimeoutError:
                response = _json(
                    408,
                    _bad_body(too_large, f"the request body did not arrive within {BODY_READ_TIMEOUT_S:g} s"),
                )
                response.force_close()
                raise _Refused(response, linger=False) from None
            except Exception as exc:  # any failure to read the body (bad gzip, bad chunk…) is a bad body
                response = _json(
                    400, _bad_body(too_large, f"the request body could not be read ({type(exc).__name__})")
                )
                response.force_close()
                raise _Refused(response, linger=False) from None
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_BODY:
                raise refuse()
            chunks.append(chunk)
        return b"".join(chunks)

    # ------------------------------------------------------------------ canonical
    async def _envelope_body(self, request: web.Request) -> tuple[str | None, bytes]:
        """The checks of the envelope routes (``/v1/browser-control``, ``/v1/observe``) and the body: the
        bearer and the body, or :class:`_Refused` with the status and envelope to answer."""
        err = _envelope_error
        token = self._admit(request, err)
        self._check_type(request, err)
        too_large = err("REQUEST_TOO_LARGE", f"the request body is over {MAX_BODY} bytes (4 MiB)")
        return token, await self._read(request, too_large)

    async def canonical(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/browser-control``: canonical request in, envelope out (CONTRACT.md §3-4)."""
        try:
            token, body = await self._envelope_body(request)
            caller, lease = self._caller(token, "http", _envelope_error)
        except _Refused as refused:
            return await _refuse(request, refused)
        with lease:
            step = await lease.driver.canonical(body, caller)
            response = step.get("response")
            return await self._deliver(request, lease, step, _json(_http_status(response), response))

    async def observe(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/observe``: ``tab.snapshot``'s params as a JSON object in, the envelope of a one-shot
        observer's read out (``host/observer.py``; CONTRACT.md §9 v1.2): no refs, one page, discarded
        ``RENDERER_CHANGED`` when the tab changed during it. The same status rules as the canonical route."""
        err = _envelope_error
        try:
            token, body = await self._envelope_body(request)
            try:
                params = loads(body) if body.strip() else {}  # a repeated member name is refused too
            except JsonError as exc:
                raise _Refused(
                    _json(400, err("INVALID_JSON", f"the body is not JSON: {exc}"[:300]))
                ) from None
            if not isinstance(params, dict):
                raise _Refused(_json(400, err("INVALID_REQUEST", "the body must be a JSON object of params")))
            caller, lease = self._caller(token, "observe", err)
        except _Refused as refused:
            return await _refuse(request, refused)
        with lease:  # the client's own context under --isolation per-client
            driver = lease.driver
            step = await observe(driver.renderer, params, log=self.log, main=driver, caller=caller)
        response = step.get("response")
        return _json(_http_status(response), response)  # a read: nothing to reconcile if it is not delivered

    # ------------------------------------------------------------------ MCP
    async def mcp_get(self, request: web.Request) -> web.StreamResponse:
        """``GET``/``DELETE /mcp``: 405 — this server opens no SSE stream and keeps no MCP sessions.
        The Host, bearer and Origin checks come first, as on every route."""

        err = _rpc_refusal

        try:
            self._admit(request, err)
        except _Refused as refused:
            return await _refuse(request, refused)
        return _json(405, jsonrpc_error(None, -32600, "only POST is supported on /mcp"), {"Allow": "POST"})

    async def mcp(self, request: web.Request) -> web.StreamResponse:
        """``POST /mcp``: one JSON-RPC message (CONTRACT.md §7); JSON answer, 202 for notifications."""

        err = _rpc_refusal

        try:
            token = self._admit(request, err)
            self._check_type(request, err)
            body = await self._read(
                request, jsonrpc_error(None, -32600, f"the request body is over {MAX_BODY} bytes (4 MiB)")
            )
            refusal = mcp_http_refusal(body, request.headers.items())
            if refusal is not None:
                raise _Refused(_json(int(refusal["httpStatus"]), refusal["response"]))
            caller, lease = self._caller(token, "mcp-http", err)
        except _Refused as refused:
            return await _refuse(request, refused)
        with lease:
            step = await lease.driver.mcp(body, caller)
            response = step.get("response")
            if response is None:
                return web.Response(status=int(step.get("httpStatus") or 202))
            return await self._deliver(
                request, lease, step, _json(int(step.get("httpStatus") or _http_status(response)), response)
            )

    async def _deliver(
        self, request: web.Request, lease: Lease, step: JsonObject, answer: web.Response
    ) -> web.StreamResponse:
        """Send a transaction's answer now; if the client is gone (connection closed before the answer,
        or the write fails), tell the driver, so a mutated tab becomes RECONCILE_REQUIRED (ARCHITECTURE.md
        host rules 1.1). An answer the kernel accepted counts as delivered: TCP cannot say more."""
        transport = request.transport
        if transport is not None and not transport.is_closing():
            try:
                await answer.prepare(request)
                await answer.write_eof()
                if not await _peer_reset(request):
                    return answer
            except (ConnectionError, aiohttp.ClientConnectionError):
                pass
        lease.driver.undelivered(step)
        return answer

    # ------------------------------------------------------------------ pairing
    async def pair(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/pair`` ``{"client": name}`` -> 200 ``{"token", "client"}`` / 403 / 408; 429 while
        ``MAX_PENDING_PAIRINGS`` wait already, 503 once the host is shutting down."""

        err = _pair_refusal

        try:
            self._admit(request, err, bearer=False)
            self._check_type(request, err)
            body = await self._read(request, err("REQUEST_TOO_LARGE", "the request body is over 4 MiB"))
        except _Refused as refused:
            return await _refuse(request, refused)
        try:  # the engine's parser: {"client": "a", "client": "b"} is refused, not read as "b"
            parsed = loads(body)
        except JsonError:
            return _json(400, err("INVALID_JSON", 'the body must be JSON: {"client": "<name>"}'))
        client = parsed.get("client") if isinstance(parsed, dict) else None
        if (
            not isinstance(parsed, dict)
            or set(parsed) != {"client"}
            or not isinstance(client, str)
            or not 1 <= len(client) <= 100
            or not client.isprintable()
        ):
            return _json(
                400, err("INVALID_REQUEST", 'the body must be {"client": "<printable name, 1..100 chars>"}')
            )
        try:
            pending = self.pairing.open(client)
        except PairingFull as full:
            if full.closing:
                return _json(503, err("CANCELLED", "the host is shutting down: pair again once it is back"))
            self.log(
                f"pairing request from client {client!r} refused: {MAX_PENDING_PAIRINGS} requests wait already"
            )
            return _json(
                429,
                err(
                    "BUSY",
                    f"{MAX_PENDING_PAIRINGS} pairing requests already wait for the operator; try again later",
                ),
                {"Retry-After": "10"},
            )
        if self.pairing.auto_approve:
            self.log(
                f"pairing request from client {client!r}: approved automatically (--approve-pairing auto)"
            )
        else:
            self.log(
                f"pairing request from client {client!r}: code {pending.code} — approve with "
                f"`kelpie-gateway pair approve {pending.code}` (or deny) within {self.pairing.timeout_s:g} s"
            )
        decision = await self.pairing.wait(pending)
        if decision == "approved":
            try:
                token = self.tokens.issue(client)
            except (OSError, RuntimeError) as exc:  # the pairing file: errors are values, never a 500 trace
                self.log(f"pairing for client {client!r} failed: the pairing file: {exc}")
                return _json(
                    500, err("INTERNAL", f"the host could not save the pairing: {type(exc).__name__}")
                )
            self.log(f"paired client {client!r}")
            return _json(200, {"token": token, "client": client}, {"Cache-Control": "no-store"})
        if decision == "denied":
            self.log(f"pairing denied for client {client!r}")
            return _json(403, err("NOT_AUTHORIZED", "the operator denied this pairing request"))
        if decision == "shutdown":
            self.log(f"pairing request from client {client!r} answered 503: the host is shutting down")
            return _json(503, err("CANCELLED", "the host is shutting down: pair again once it is back"))
        self.log(f"pairing request from client {client!r} timed out")
        return _json(408, err("TIMEOUT", "the pairing request was not approved in time"))

    async def unpair(self, request: web.Request) -> web.StreamResponse:
        """``DELETE /v1/pair``: revoke exactly the presented bearer."""

        err = _pair_refusal

        try:
            token = self._admit(request, err)
            assert token is not None
        except _Refused as refused:
            return await _refuse(request, refused)
        verdict, entry = self.tokens.check(token)
        client = entry.client if verdict == "valid" and entry is not None else None
        try:
            self.tokens.revoke(token)
        except (OSError, RuntimeError) as exc:
            self.log(f"revoking the token of client {client!r} failed: the pairing file: {exc}")
            return _json(
                500, err("INTERNAL", f"the host could not save the revocation: {type(exc).__name__}")
            )
        self.log(f"revoked the token of client {client!r}")
        if entry is not None:
            self.drivers.revoked(entry.digest.hex())  # per-client isolation: its context closes now
        return _json(200, {"revoked": True})


# ---------------------------------------------------------------------- operator admin socket
def admin_app(pairing: Pairing, log: Callable[[str], None]) -> web.Application:
    """The operator's pairing API on a Unix socket (mode 0600): ``POST /pair/approve|deny {"code"}``,
    ``GET /pair/pending``. Only the user running the host can reach it."""

    async def decide(request: web.Request) -> web.StreamResponse:
        try:
            body = loads(await request.read())
            code = str(body["code"])
        except (JsonError, KeyError, TypeError):
            return _json(400, {"error": 'body must be {"code": "..."}'})
        decision = "approved" if request.match_info["decision"] == "approve" else "denied"
        found = pairing.decide(code, decision)  # type: ignore[arg-type]
        if found is None:
            return _json(404, {"error": f"no pending pairing request with code {code!r}"})
        log(f"operator {decision} pairing code {found.code} (client {found.client!r})")
        return _json(200, {"code": found.code, "client": found.client, "decision": decision})

    async def pending(request: web.Request) -> web.StreamResponse:
        return _json(200, {"pending": [{"code": c, "client": n} for c, n in pairing.pending()]})

    app = web.Application()
    app.router.add_post("/pair/{decision:approve|deny}", decide)
    app.router.add_get("/pair/pending", pending)
    return app


# ---------------------------------------------------------------------- fixture site server
_NOT_FOUND_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>404 Not Found</title></head>
<body><h1>404 Not Found</h1><p>There is no page at <code>{path}</code> on this site.</p></body></html>
"""


def site_app(root: Path) -> web.Application:
    """Static files of ``root`` (``/`` redirects to ``/index.html``), never cached. A path with no file
    (or a folder) is a real 404 ``text/html`` page, so a browser navigating there shows it (ARCHITECTURE.md
    v1.1) instead of treating an empty body as a download."""

    async def index(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/index.html")

    @web.middleware
    async def no_store(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
            # aiohttp's static route answers a missing file with a FileResponse that turns into an empty
            # application/octet-stream 404 only when sent (a browser starts a download); catch it here.
            name = request.match_info.get("filename")
            if isinstance(response, web.FileResponse) and name is not None and not (root / name).is_file():
                raise web.HTTPNotFound()
        except (web.HTTPNotFound, web.HTTPForbidden):
            response = web.Response(
                status=404,
                text=_NOT_FOUND_PAGE.format(path=html.escape(request.path[:200])),
                content_type="text/html",
            )
        response.headers["Cache-Control"] = "no-store"
        return response

    app = web.Application(middlewares=[no_store])
    app.router.add_get("/", index)
    app.router.add_static("/", root, show_index=False)
    return app
