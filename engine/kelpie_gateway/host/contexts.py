"""Which gateway serves a request: one for everyone (``--isolation shared``), or one per client
(``--isolation per-client``; ARCHITECTURE.md "Host rules added in revision 1.2": Isolation; docs/host.md
"Parallel agents").

The engine stays one gateway per browser context (CONTRACT.md §1). Under ``per-client`` each client — each
paired bearer over HTTP, each tunnel (ACP) session — gets its own **client context**: its own browser
context (cookies, storage, cache, permissions), its own renderer (tabs, pages, the parts' state), its own
gateway (lanes, refs, snapshots, generations, ``RECONCILE_REQUIRED`` marks) and its own driver. So one
client can never name another's tab (tab ids are unique across the host: another client's is
``TAB_NOT_FOUND``), see its tabs, use its refs, or be answered ``BUSY`` because of it.

* A client's context is made on its first request (any request: ``initialize`` too) and answers from then
  on; the browser context itself is made in the background and calls that need it wait for it.
* It is closed when the client's pairing is revoked (``DELETE /v1/pair`` on this host, or a revocation
  in the shared pairing file, seen by the sweep), and after ``idle_s`` seconds without a request (none in
  flight). The client's next request gets a fresh context: the log says so, and a call naming one of its
  old tabs is ``TAB_NOT_FOUND`` with a message saying the context is new; its old refs are refused
  as always (``UNKNOWN_REF``).
* At most ``max_contexts`` at once. A new client over the limit is answered by the **front** gateway,
  which has no browser: ``documentation``, ``capabilities`` and the MCP protocol messages are answered,
  every other call is refused at its ``authorize`` step — ``NOT_AUTHORIZED``, ``mayHaveCompleted:false``,
  the message naming the limit (or ``BROWSER_UNAVAILABLE`` from its renderer, should a ``--config`` turn
  authorization off) — and nothing is run.

Sans browser: this module only decides and counts; what a client context is made of is the ``open``
function ``app.start_stack`` passes (the one place a context's renderer and gateway are built).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from kelpie_gateway.host.driver import Driver, GatewayLike
from kelpie_gateway.host.renderer import JsonObject, NoRenderer, Renderer, fail

DEFAULT_MAX_CONTEXTS = 8
DEFAULT_IDLE_S = 900.0
ISOLATIONS = ("shared", "per-client")
MAX_REMEMBERED = 1000
"""How many closed clients the host remembers (to tell one its context is new)."""


@dataclass(frozen=True)
class Client:
    """Who is asking: ``key`` identifies the client (a bearer's SHA-256 digest in hex, ``tunnel:<session>``,
    ``stdio``), ``name`` is what the log shows (the pairing's client name, ``tunnel:<server id>``)."""

    key: str
    name: str


class Lease:
    """A driver lent for one request; while it is held the client's context counts as busy (never idle).
    Use as a context manager."""

    def __init__(self, driver: Driver, done: Callable[[], None] | None = None) -> None:
        self.driver = driver
        self._done = done

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._done is not None:
            self._done()
            self._done = None


class DriverSource(Protocol):
    """What the transports (HTTP, the tunnel) ask for a driver."""

    def lease(self, client: Client) -> Lease:
        """The driver that serves ``client`` now (making its context if it has none)."""
        ...

    def revoked(self, key: str) -> None:
        """``key``'s pairing was revoked: its context (if any) is closed."""
        ...

    async def close(self) -> None: ...


class SharedDrivers:
    """``--isolation shared``: one driver (one gateway, one context) for every client."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    def lease(self, client: Client) -> Lease:
        return Lease(self.driver)

    def revoked(self, key: str) -> None:
        return None

    async def close(self) -> None:
        return None


@dataclass
class ClientContext:
    """One client's browser context, renderer, gateway and driver (``label``: ``c1``, ``c2`` … never reused)."""

    label: str
    client: Client
    gateway: GatewayLike
    renderer: Renderer
    driver: Driver
    ready: asyncio.Future[None] | None
    last: float
    busy: int = 0
    closing: bool = field(default=False, repr=False)


Opened = tuple[GatewayLike, Renderer, "asyncio.Future[None] | None"]
"""What ``open`` returns for a new client context: its gateway, its renderer (whose browser context is being
made) and the future that resolves once it is made (None: nothing to wait for, e.g. ``--browser none``)."""
Open = Callable[[Client, str, Callable[[str], None], str], Opened]
"""``open(client, label, log, unknown_hint)``: build one client context's gateway and renderer; ``log``
is the operator log with the context's label; ``unknown_hint`` is what a ``TAB_NOT_FOUND`` for a tab the
context never had adds (why the client's old tabs are gone, or nothing)."""


def _needs_browser(step: Mapping[str, Any]) -> bool:
    request = step.get("request")
    method = request.get("method") if isinstance(request, Mapping) else None
    return method not in ("documentation", "capabilities")


class LimitRenderer(NoRenderer):
    """The front gateway's renderer: there is no browser for this client now; everything is refused with
    nothing run (``BROWSER_UNAVAILABLE``, ``mayHaveCompleted:false``)."""

    description = "none (over --max-contexts)"

    def __init__(self, message: str) -> None:
        self.message = message

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        return fail("BROWSER_UNAVAILABLE", self.message, mayHaveCompleted=False)


class Isolation:
    """``--isolation per-client``: a :class:`ClientContext` per client; see the module docstring.

    ``open``: see :data:`Open`. ``front``: the front gateway (same config, no browser) for clients over the
    limit. ``still_paired(key)``: False once a bearer's pairing is gone (revoked elsewhere); tunnel keys are
    not asked. ``clock``: monotonic seconds (tests may inject one). Call :meth:`start` on the event loop."""

    def __init__(
        self,
        *,
        open: Open,
        front: GatewayLike,
        log: Callable[[str], None],
        max_contexts: int = DEFAULT_MAX_CONTEXTS,
        idle_s: float = DEFAULT_IDLE_S,
        authorize: Callable[[Mapping[str, Any]], JsonObject | Awaitable[JsonObject]] | None = None,
        audit: Any = None,
        still_paired: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open = open
        self.log = log
        self.max_contexts = max_contexts
        self.idle_s = idle_s
        self._authorize = authorize
        self._audit = audit
        self._still_paired = still_paired
        self._clock = clock
        self._contexts: dict[str, ClientContext] = {}
        self._count = 0
        self._closed: dict[str, str] = {}  # key -> why its last context closed (bounded)
        self._refused: set[str] = set()  # keys told about the limit (logged once until they get one)
        self._tasks: set[asyncio.Future[Any]] = set()
        self._sweeper: asyncio.Future[None] | None = None
        self.limit_message = (
            f"this host serves at most {max_contexts} isolated browser contexts at once (--max-contexts "
            f"{max_contexts}) and every one is in use by another client: nothing was run; try again later "
            f"(a context closes after {idle_s:g} s without requests, or when its client's pairing is revoked)"
        )
        self.front = Driver(
            front,
            LimitRenderer(self.limit_message),
            lambda line: log(f"[front] {line}"),
            authorize=self._refuse,
            audit=audit,
        )

    # ----------------------------------------------------------------- the transports' side
    def lease(self, client: Client) -> Lease:
        context = self._contexts.get(client.key)
        if context is None:
            if len(self._contexts) >= self.max_contexts:
                if client.key not in self._refused:
                    self._refused.add(client.key)
                    self.log(
                        f"context limit: client {_name(client)} refused ({len(self._contexts)} of "
                        f"{self.max_contexts} contexts in use)"
                    )
                return Lease(self.front)
            context = self._make(client)
        context.busy += 1
        context.last = self._clock()
        return Lease(context.driver, lambda: self._release(context))

    def _release(self, context: ClientContext) -> None:
        context.busy -= 1
        context.last = self._clock()

    def revoked(self, key: str) -> None:
        context = self._contexts.get(key)
        if context is not None:
            self._spawn(self._close(context, "its pairing was revoked"))

    @property
    def contexts(self) -> list[ClientContext]:
        """The open client contexts, oldest first."""
        return list(self._contexts.values())

    # ----------------------------------------------------------------- making and closing
    def _make(self, client: Client) -> ClientContext:
        self._count += 1
        label = f"c{self._count}"
        self._refused.discard(client.key)
        before = self._closed.pop(client.key, None)
        hint = ""
        if before is not None:
            hint = (
                f": this client's browser context is new (the previous one, with its tabs, was closed: {before}); "
                "tabs.list shows this one's tabs"
            )

        def log(line: str) -> None:
            self.log(f"[{label}] {line}")

        gateway, renderer, ready = self._open(client, label, log, hint)
        driver = Driver(gateway, renderer, log, authorize=self._authorize, audit=self._audit, ready=ready)
        context = ClientContext(label, client, gateway, renderer, driver, ready, self._clock())
        self._contexts[client.key] = context
        again = f"; a fresh one (the previous was closed: {before})" if before is not None else ""
        self.log(
            f"context {label} for client {_name(client)} opened ({len(self._contexts)} of at most "
            f"{self.max_contexts}){again}"
        )
        if ready is not None:
            ready.add_done_callback(lambda done: self._started(context, done))
        return context

    def _started(self, context: ClientContext, done: asyncio.Future[None]) -> None:
        if done.cancelled() or done.exception() is None:
            return
        self.log(f"context {context.label}: its browser context could not be made: {done.exception()}")
        if self._contexts.get(context.client.key) is context:  # the next request makes a new one
            self._spawn(self._close(context, "its browser context could not be made", remember=False))

    async def _close(self, context: ClientContext, why: str, *, remember: bool = True) -> None:
        if context.closing:
            return
        context.closing = True
        if self._contexts.get(context.client.key) is context:
            del self._contexts[context.client.key]
        if remember:
            self._closed[context.client.key] = why
            while len(self._closed) > MAX_REMEMBERED:
                self._closed.pop(next(iter(self._closed)))
        self.log(f"context {context.label} of client {_name(context.client)} closed: {why}")
        with contextlib.suppress(Exception):
            await context.driver.drain(2.0)
        with contextlib.suppress(Exception):
            await context.renderer.close()
        with contextlib.suppress(Exception):
            context.gateway.close()

    # ----------------------------------------------------------------- the sweep
    def start(self) -> None:
        """Start the sweep (idle contexts, pairings revoked elsewhere) on the running loop."""
        if self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep_forever())

    @property
    def sweep_interval_s(self) -> float:
        return max(0.05, min(self.idle_s / 4, 5.0))

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval_s)
            await self.sweep()

    async def sweep(self) -> None:
        """Close every context idle for ``idle_s`` (nothing in flight) and every one whose pairing is gone."""
        now = self._clock()
        for context in list(self._contexts.values()):
            key = context.client.key
            if self._still_paired is not None and not key.startswith("tunnel:"):
                with contextlib.suppress(Exception):
                    if not self._still_paired(key):
                        await self._close(context, "its pairing was revoked")
                        continue
            if context.busy == 0 and now - context.last >= self.idle_s:
                await self._close(context, f"after {self.idle_s:g} s without requests")

    async def close(self) -> None:
        """Close every client context (the host is stopping)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        for context in list(self._contexts.values()):
            await self._close(context, "the host is stopping", remember=False)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=15.0)
        self.front.gateway.close()

    def _spawn(self, aw: Any) -> None:
        task = asyncio.ensure_future(aw)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- the front gateway's policy
    def _refuse(self, step: Mapping[str, Any]) -> JsonObject:
        if not _needs_browser(step):
            return {"success": True}
        return {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": self.limit_message}}


def _name(client: Client) -> str:
    """A client name for the log: quoted, one line, bounded (a client chose it)."""
    text = client.name if len(client.name) <= 80 else client.name[:80] + "…"
    return repr(text)
