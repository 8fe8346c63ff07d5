"""The site policy at the browser's network: a forward proxy on loopback that every request of a
restrictive policy's browser goes through (ARCHITECTURE.md host rules 1.2, "Site policy is the network's";
docs/host.md "Site policy").

Chromium is started with ``--proxy-server=http://127.0.0.1:PORT --proxy-bypass-list=<-loopback>`` (or,
attached, given a browser context whose ``proxy`` is this server): it then sends every plain ``http:``
request as an absolute-form request to the proxy and opens every ``https:``, ``wss:`` and ``ws:`` connection
as a ``CONNECT host:port`` tunnel through it — for pages, popups, out-of-process frames, dedicated, shared
and service workers, WebSocket, prefetch and preconnect alike, one request per redirect hop — and never
connects to anything else (``<-loopback>`` takes loopback out of Chromium's implicit bypass list).

Each request is decided by the :class:`~kelpie_gateway.host.policy.SitePolicy` ``authorize`` uses
(:meth:`~kelpie_gateway.host.policy.SitePolicy.origin_refusal` for a plain request,
:meth:`~kelpie_gateway.host.policy.SitePolicy.tunnel_refusal` for a tunnel); when the policy names
addresses, the host name is resolved and every address checked
(:meth:`~kelpie_gateway.host.policy.SitePolicy.address_refusal`), and the proxy connects to exactly an
address it checked (no second lookup to rebind). A refused request gets ``403`` from the proxy — for a
tunnel Chromium makes that ``net::ERR_TUNNEL_CONNECTION_FAILED``; a plain request shows a small page that
runs nothing (``Content-Security-Policy: sandbox``: an opaque origin, no script) — and one log line naming
the method and the origin, never a path or query. Nothing reaches the refused destination, not even a TCP
connection. A destination that cannot be reached is ``502``.

Every request is decided on its own: a kept-alive connection from the browser may carry requests for
several hosts, and each goes to its own upstream connection (one per request, closed after it), so
nothing the browser sends is ever forwarded to a destination decided for an earlier request. (That is
why this is not built on ``proxy.py`` or ``pproxy``: both forward every later request of a kept-alive
connection to the first request's upstream, unchecked — docs/host.md "Site policy".) HTTP/1.1 messages are
read and written with ``h11`` (python-hyper's sans-I/O HTTP/1.1); tunnels and upgraded connections are
relayed byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import ada_url
import h11

from kelpie_gateway.host.policy import (
    Origin,
    SitePolicy,
    address_forms,
    canonical_host,
    endpoint_text,
    origin_of,
)

RECENT = 256
"""How many refused destinations :meth:`PolicyProxy.refused_since` remembers (the latest refusal of each)."""
LOG_BURST = 100
LOG_WINDOW_S = 10.0
"""At most :data:`LOG_BURST` refusal lines per :data:`LOG_WINDOW_S`: a page looping over refused requests
cannot flood the operator log; past it, the next window starts with one line counting those not logged."""
MAX_HEAD_BYTES = 256 * 1024
"""Largest request or response head accepted (Chromium's cookies can be long)."""
CHUNK = 64 * 1024
CONNECT_TIMEOUT_S = 30.0
"""How long connecting to a destination may take before the browser is answered 502."""
_AUTHORITY = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@\[\]\\]+):([0-9]{1,5})$")
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"upgrade",
    }
)
TUNNEL = "CONNECT (https, wss or ws)"


class _Refused(Exception):
    """A request the proxy answers itself: ``status`` and the ``reason`` logged and shown."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class PolicyProxy:
    """The proxy of the module docstring on ``127.0.0.1`` (a free port). ``log`` gets one line per refused
    request. :meth:`start` before the browser, :meth:`close` after it; :attr:`server` is what Chromium's
    ``--proxy-server`` (or a context's ``proxy``) names."""

    def __init__(self, policy: SitePolicy, log: Callable[[str], None]) -> None:
        self.policy = policy
        self.log = log
        self.port = 0
        self.refused = 0
        """How many requests were refused (for tests and the operator)."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._recent: dict[str, float] = {}
        self._window = (-LOG_WINDOW_S, 0, 0)  # (start, lines logged, lines suppressed)

    @property
    def server(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on a free loopback port."""
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and drop every connection (never raises)."""
        self._flush_suppressed()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def refused_since(self, url: str, since: float) -> str | None:
        """The origin of ``url`` when this proxy refused a request for it (a tunnel to its endpoint, for
        ``https:``) after ``since`` (``time.monotonic()``), else None."""
        origin = origin_of(url)
        if origin is None:
            return None
        key = endpoint_text(origin.host, origin.port) if origin.scheme == "https" else origin.text()
        at = self._recent.get(key)
        return origin.text() if at is not None and at >= since else None

    # ------------------------------------------------------------------ one browser connection
    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, h11.ProtocolError):
            pass  # the browser or the destination broke the protocol or went away: this connection ends
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(BaseException):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        while True:
            try:
                event = await _next(conn, reader)
            except h11.RemoteProtocolError as exc:
                _answer(conn, writer, exc.error_status_hint, "the browser sent a malformed request")
                return
            if not isinstance(event, h11.Request):
                return  # the browser closed the connection (or paused: nothing more to serve)
            try:
                if event.method == b"CONNECT":
                    await self._tunnel(conn, event, reader, writer)
                    return
                keep = await self._forward(conn, event, reader, writer)
            except _Refused as refused:
                _answer(conn, writer, refused.status, refused.reason)
                return
            await writer.drain()
            if not keep or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    # ------------------------------------------------------------------ deciding
    def _refuse(self, what: str, origin: str, reason: str) -> _Refused:
        self.refused += 1
        self._recent.pop(origin, None)
        self._recent[origin] = time.monotonic()
        while len(self._recent) > RECENT:
            del self._recent[next(iter(self._recent))]
        self._log(f"site policy: blocked {what} to {origin}: {reason}")
        return _Refused(403, f"{origin}: {reason}")

    def _log(self, line: str) -> None:
        """One refusal line, within the bound of :data:`LOG_BURST` per :data:`LOG_WINDOW_S`."""
        now = time.monotonic()
        start, logged, suppressed = self._window
        if now - start >= LOG_WINDOW_S:
            self._flush_suppressed()
            start, logged, suppressed = now, 0, 0
        if logged < LOG_BURST:
            self.log(line)
            self._window = (start, logged + 1, suppressed)
        else:
            self._window = (start, logged, suppressed + 1)

    def _flush_suppressed(self) -> None:
        start, logged, suppressed = self._window
        if suppressed:
            self.log(
                f"site policy: {suppressed} more requests blocked within {LOG_WINDOW_S:g} s "
                f"(past {LOG_BURST} lines, not logged one by one)"
            )
        self._window = (start, logged, 0)

    async def _decide(self, what: str, origin: Origin, *, tunnel: bool) -> list[str]:
        """The addresses to connect to for ``origin`` (all checked), or raises the refusal (logged)."""
        shown = origin.text() if not tunnel else endpoint_text(origin.host, origin.port)
        reason = (
            self.policy.tunnel_refusal(origin.host, origin.port)
            if tunnel
            else self.policy.origin_refusal(origin)
        )
        if reason is not None:
            raise self._refuse(what, shown, reason)
        try:
            addresses = await asyncio.wait_for(
                self.policy.resolver(origin.host, origin.port), CONNECT_TIMEOUT_S
            )
        except (OSError, UnicodeError, TimeoutError):
            raise _Refused(502, f"{shown} does not resolve") from None
        if not addresses:
            raise _Refused(502, f"{shown} does not resolve")
        if any(address_forms(a) == "127.0.0.1" and origin.port == self.port for a in addresses):
            raise self._refuse(what, shown, "the site policy's proxy itself is not a destination")
        if self.policy.names_addresses:
            reason = self.policy.address_refusal(origin.scheme, addresses, origin.port, tunnel=tunnel)
            if reason is not None:
                raise self._refuse(what, shown, reason)
        return addresses

    async def _connect(
        self, addresses: Iterable[str], port: int, shown: str
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        why = "no address"
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address.split("%", 1)[0], port), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise _Refused(502, f"{shown} could not be reached ({why})")

    # ------------------------------------------------------------------ CONNECT: https, wss, ws
    async def _tunnel(
        self,
        conn: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        match = _AUTHORITY.fullmatch(request.target.decode("latin-1"))
        try:
            host = canonical_host(ada_url.URL(f"https://{match.group(1)}/").hostname) if match else ""
        except ValueError:
            host = ""
        port = int(match.group(2)) if match else 0
        if not host or not 0 < port < 65536:
            raise _Refused(400, "a CONNECT names host:port")
        origin = Origin("https", host, port)
        addresses = await self._decide(TUNNEL, origin, tunnel=True)
        up_reader, up_writer = await self._connect(addresses, port, endpoint_text(origin.host, origin.port))
        try:
            writer.write(
                conn.send(h11.Response(status_code=200, headers=[], reason=b"Connection established"))
            )
            early, _closed = conn.trailing_data
            if early:
                up_writer.write(early)
            await _relay(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    # ------------------------------------------------------------------ plain http (absolute form)
    async def _forward(
        self,
        conn: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Forward one request to its own upstream connection and its response back; True when the browser's
        connection may carry another request."""
        try:
            url = ada_url.URL(request.target.decode("latin-1"))
        except ValueError:
            raise _Refused(
                400, "this is the browser's site-policy proxy: it takes absolute http URLs"
            ) from None
        if url.protocol != "http:":
            raise _Refused(400, "this proxy forwards http: URLs; https, wss and ws go through CONNECT")
        origin = Origin("http", canonical_host(url.hostname), int(url.port) if url.port else 80)
        method = request.method.decode("ascii", "replace")
        addresses = await self._decide(method, origin, tunnel=False)
        up_reader, up_writer = await self._connect(addresses, origin.port, origin.text())
        try:
            return await self._exchange(conn, request, url, reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _exchange(
        self,
        conn: h11.Connection,
        request: h11.Request,
        url: ada_url.URL,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> bool:
        """One request and its response between the browser (``conn``) and a fresh upstream connection
        (``up``, asked to close after it; an ``Upgrade`` request — a WebSocket sent without a tunnel — is
        relayed raw once the destination answers ``101``)."""
        upgrade = _wants_upgrade(request.headers)
        up = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        headers = [
            *_end_to_end(request.headers, keep_upgrade=upgrade),
            (b"connection", b"upgrade" if upgrade else b"close"),
        ]
        target = (url.pathname + url.search).encode("ascii")
        up_writer.write(up.send(h11.Request(method=request.method, target=target, headers=headers)))
        while True:  # the request's body, as it arrives
            event = await _next(conn, reader)
            if isinstance(event, h11.Data):
                up_writer.write(up.send(h11.Data(data=event.data)))
                await up_writer.drain()
            elif isinstance(event, h11.EndOfMessage):
                up_writer.write(up.send(h11.EndOfMessage()))
                await up_writer.drain()
                break
            else:
                return False  # the browser went away mid-request
        while True:  # the response, as it arrives
            try:
                answer = await _next(up, up_reader)
            except h11.RemoteProtocolError:
                answer = None
            if isinstance(answer, h11.InformationalResponse) and answer.status_code == 101:
                if not upgrade:
                    return False
                head = [*_end_to_end(answer.headers, keep_upgrade=True), (b"connection", b"upgrade")]
                writer.write(
                    conn.send(h11.InformationalResponse(status_code=101, headers=head, reason=answer.reason))
                )
                writer.write(up.trailing_data[0])
                up_writer.write(conn.trailing_data[0])
                await _relay(reader, writer, up_reader, up_writer)
                return False
            if isinstance(answer, h11.InformationalResponse | h11.Response):
                kind = type(answer)
                writer.write(
                    conn.send(
                        kind(
                            status_code=answer.status_code,
                            headers=_end_to_end(answer.headers),
                            reason=answer.reason,
                        )
                    )
                )
            elif isinstance(answer, h11.Data):
                writer.write(conn.send(h11.Data(data=answer.data)))
                await writer.drain()
            elif isinstance(answer, h11.EndOfMessage):
                writer.write(conn.send(h11.EndOfMessage()))
                return True
            elif conn.our_state is h11.SEND_RESPONSE:  # nothing of a response was sent yet
                raise _Refused(502, f"{url.origin} sent no valid response")
            else:  # the destination closed (or garbled) mid-response: the browser sees it cut
                return False


# ---------------------------------------------------------------------- helpers
async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
    """The next h11 event of ``conn``, reading from ``reader`` as needed (EOF is ``ConnectionClosed``)."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(CHUNK))


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Copy bytes both ways until both sides have finished (each EOF is passed on as a half-close)."""

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await src.read(CHUNK):
                dst.write(data)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def _wants_upgrade(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    return any(n == b"connection" and b"upgrade" in v.lower() for n, v in headers)


def _end_to_end(
    headers: Iterable[tuple[bytes, bytes]], *, keep_upgrade: bool = False
) -> list[tuple[bytes, bytes]]:
    """``headers`` without the hop-by-hop ones (RFC 9110 §7.6.1: the fixed list and those ``Connection``
    names); ``content-length`` / ``transfer-encoding`` stay: h11 frames the message by them."""
    items = list(headers)
    named = {t.strip().lower() for n, v in items if n == b"connection" for t in v.split(b",")}
    drop = (_HOP_BY_HOP | named) - ({b"upgrade"} if keep_upgrade else set())
    return [(n, v) for n, v in items if n not in drop]


def _answer(conn: h11.Connection, writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """The proxy's own answer (then the connection closes): a small page that runs nothing."""
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    title = (
        "Blocked by the site policy" if status == 403 else "The site policy's proxy could not forward this"
    )
    body = (
        f"<!doctype html><meta charset=utf-8><title>{title}</title>"
        f"<h1>{title}</h1><p>{html.escape(reason)}</p>"
    ).encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-security-policy", b"sandbox"),
        (b"cache-control", b"no-store"),
        (b"x-kelpie-site-policy", b"refused" if status == 403 else b"unreachable"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    with contextlib.suppress(h11.LocalProtocolError):
        writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
        writer.write(conn.send(h11.Data(data=body)))
        writer.write(conn.send(h11.EndOfMessage()))
