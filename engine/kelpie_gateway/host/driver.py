"""The host's transaction driver: carries gateway steps to the renderer and results back (CONTRACT.md §5).

One loop per transaction::

    step = begin(request)            # or begin_mcp(message)
    while step is authorize/dispatch:
        authorize -> advance(policy decision)
        dispatch  -> run the native endpoint once; advance(its result)
                     (deadline passed: cancel(reason "timeout"); the late reply is advanced later and retires)
    complete -> return step["response"]

Transactions run as independent asyncio tasks, so a recovery-lane transaction (dialog accept) proceeds
while a direct-lane dispatch (the click that opened the dialog) is still awaiting the renderer. The
gateway is only ever called from the event loop thread.

Liveness (CONTRACT.md §5 "Retirement is bounded", ARCHITECTURE.md host rules 1.1; docs/host.md):

* A dispatch waits for the first of: the renderer's reply, its ``timeoutMs`` (-> ``cancel`` timeout),
  or a *preemption*: the renderer reports the tab's renderer crashed or the browser exited (-> ``cancel``
  renderer-closed at once: ``RENDERER_FAILED``, unknown outcome for a mutation), or an MCP
  ``notifications/cancelled`` whose ``complete`` step the gateway handed over (reason cancelled).
* A cancelled dispatch whose reply is still out is *watched*: the late reply is advanced (and retires);
  meanwhile the driver polls ``next(T)`` and, once the gateway flags it ``overdue`` (``timeoutMs`` +
  the config's ``retirementGraceMs``), stops the page's script (CDP ``Runtime.terminateExecution``),
  and if the reply still does not come within :data:`STOP_PATIENCE_S`, ends what holds it without closing
  the tab (``Renderer.end_stuck``: the page ended and the tab kept crashed, or the tab kept as it is — an
  attached browser's, or one whose browser does not answer); then reports
  ``{"transaction","retire":"renderer-closed"}``. A crash or browser exit retires it at once.
* A response the HTTP layer could not deliver is reported with :meth:`Driver.undelivered` (the gateway
  then requires a reconcile of the mutated tab).
* While ``kelpie-gateway mcp`` is still starting the browser, a call that needs it is admitted (its
  ``authorize`` step answered) only once the browser is up: the engine issues the dispatch, and its
  deadline starts, when something can run it, so a timeout afterwards gets the whole retirement grace.
* Before a call starts, a browser that exited is awaited (``Renderer.available``: its relaunch or
  reattach) within the dispatch's own deadline; if it cannot start or is not back in time, or the
  transport gave up meanwhile, the dispatch is answered as *not run* (``BROWSER_UNAVAILABLE`` or
  ``CANCELLED`` with ``mayHaveCompleted:false``), never cancelled as an unknown outcome: nothing was sent
  to a browser (CONTRACT.md §5 "A request that nothing could have run").

Authorization policy (the host's "existing policy", CONTRACT.md §5): every bearer on this host was paired
by the operator from loopback, so a paired client is admitted for every advertised method; the site policy
(``host/policy.py``, passed as ``authorize``; it may answer with an awaitable when it resolves a host
name first) refuses navigations to refused origins there with
``NOT_AUTHORIZED`` before anything is dispatched.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kelpie_gateway import jsonrpc_error
from kelpie_gateway.host.audit import AuditLog
from kelpie_gateway.host.renderer import LOGGED_TAB_ID, Renderer, fail

JsonObject = dict[str, Any]
FIRST = asyncio.FIRST_COMPLETED

DEFAULT_TIMEOUT_MS = 10_000
WATCH_INTERVAL_S = 0.2
"""How often a cancelled dispatch awaiting retirement is checked for ``overdue`` through ``next``."""
STOP_PATIENCE_S = 1.0
"""After ``Runtime.terminateExecution``, how long the late reply may take before the stuck page is ended."""


class GatewayLike(Protocol):
    """The Python API of CONTRACT.md §11, implemented by ``kelpie_gateway.Gateway`` and the ABI adapter."""

    def begin(self, request: Any) -> JsonObject: ...

    def begin_mcp(self, message: Any) -> JsonObject: ...

    def next(self, transaction: str | None = None) -> JsonObject: ...

    def advance(self, result: Any) -> JsonObject: ...

    def cancel(self, cancel: Any) -> JsonObject: ...

    def invalidate_refs(self, tab_id: str | None = None) -> None: ...

    def close(self) -> None: ...


@dataclass
class _Inflight:
    """A dispatch awaiting the renderer: its tab, and the future a crash or MCP cancel completes."""

    tab: str | None
    preempt: asyncio.Future[JsonObject]


_ABANDONED = "its caller went away before it was run; nothing was run"
_NOT_STARTED = "cancelled while it waited for the browser; never started"


def _internal_envelope(message: str) -> JsonObject:
    return {
        "version": 1,
        "id": None,
        "success": False,
        "error": {"code": "INTERNAL", "message": message, "retryable": False},
        "mayHaveCompleted": True,
    }


@dataclass(frozen=True)
class Caller:
    """Who asked, for the audit trail: ``client`` (pairing name, ``stdio`` or ``tunnel:<id>``),
    ``transport`` (``http``, ``mcp-http``, ``stdio``, ``tunnel``) and the tunnel's MCP connection id."""

    client: str = "-"
    transport: str = "http"
    connection: str | None = None


class Abandon:
    """Lets a transport abandon the transaction it runs when it can no longer deliver the answer (the
    tunnel dropped, the MCP connection was closed): the pending step is cancelled with reason
    ``cancelled`` (CONTRACT.md §5: a dispatched mutation completes with ``mayHaveCompleted:true`` and its
    lane stays exclusive until the renderer's late reply retires it)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def abandon(self) -> None:
        self._event.set()

    @property
    def abandoned(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


Fit = Callable[[JsonObject], JsonObject]
"""A transport's last look at the ``complete`` step before it is audited (the tunnel replaces
a response over its frame cap with a RESPONSE_TOO_LARGE refusal)."""


class Driver:
    """Drives transactions of one gateway against one renderer; see the module docstring. It is also the
    renderer's one event sink (``renderer.RendererEvents``, registered with ``renderer.listen``): it owns the
    gateway, so refs invalidated, tabs closed and renderers gone reach the gateway through it.

    ``audit``: the ``--audit-log`` file; every ``complete`` step of a canonical transaction is recorded
    there with its :class:`Caller`."""

    def __init__(
        self,
        gateway: GatewayLike,
        renderer: Renderer,
        log: Callable[[str], None],
        authorize: Callable[[Mapping[str, Any]], JsonObject | Awaitable[JsonObject]] | None = None,
        audit: AuditLog | None = None,
        ready: asyncio.Future[None] | None = None,
        listen: bool = True,
    ) -> None:
        self.gateway = gateway
        self.renderer = renderer
        self.log = log
        self._policy = authorize
        self.audit = audit
        self._ready = ready
        self._late: set[asyncio.Future[Any]] = set()
        self._inflight: dict[str, _Inflight] = {}
        self._retiring: dict[str, str | None] = {}  # transaction -> tab of its stuck dispatch
        self._also: set[GatewayLike] = set()
        if listen:  # a one-shot observer's driver leaves the sink to the renderer's own driver (observing)
            renderer.listen(self)

    @contextlib.contextmanager
    def observing(self, gateway: GatewayLike) -> Iterator[None]:
        """While the block runs, ``gateway`` (a one-shot observer's, ``host/observer.py``) hears every refs
        invalidation this driver's gateway hears, so a read during which its tab navigated or its renderer
        changed is discarded (``RENDERER_CHANGED``, CONTRACT.md §9 v1.2)."""
        self._also.add(gateway)
        try:
            yield
        finally:
            self._also.discard(gateway)

    # ------------------------------------------------------------------ entry points
    async def canonical(self, body: bytes | Mapping[str, Any], caller: Caller | None = None) -> JsonObject:
        """Run one canonical request (raw bytes or a parsed object); returns the ``complete`` step."""
        return await self._run(lambda: self.gateway.begin(body), mcp=False, caller=caller or Caller())

    async def mcp(
        self,
        body: bytes | Mapping[str, Any],
        caller: Caller | None = None,
        *,
        abandon: Abandon | None = None,
        fit: Fit | None = None,
    ) -> JsonObject:
        """Run one JSON-RPC message; returns the ``complete`` step (``response`` null for notifications).
        ``abandon``: the transport may give up on the answer (see :class:`Abandon`); ``fit``: see
        :data:`Fit`. A ``notifications/cancelled`` step's ``cancelled`` member goes to the caller still
        waiting on it."""
        step = await self._run(
            lambda: self.gateway.begin_mcp(body),
            mcp=True,
            caller=caller or Caller(transport="mcp-http"),
            abandon=abandon,
            fit=fit,
        )
        cancelled = step.get("cancelled")
        if isinstance(cancelled, dict):
            self._preempt(str(cancelled.get("transaction")), cancelled, "cancelled by the MCP client")
        return step

    def undelivered(self, step: Mapping[str, Any]) -> None:
        """The ``complete`` step's response could not be delivered (the client went away): tell the
        gateway, which makes a mutated tab ``RECONCILE_REQUIRED`` for the next caller (CONTRACT.md §4)."""
        transaction = step.get("transaction")
        if not isinstance(transaction, str):
            return
        noted = self.gateway.advance({"transaction": transaction, "undelivered": True})
        tab = noted.get("reconcileRequired")
        if tab is not None:
            self.log(
                f"response of {transaction} not delivered (client gone): tab {_printable(tab)} needs a reconcile"
            )

    # ------------------------------------------------------------------ renderer events (RendererEvents)
    def refs_invalidated(self, tab_id: str) -> None:
        """A main-frame navigation, close or crash in ``tab_id``: the gateway voids its refs (CONTRACT.md §6)
        (and so does every observer's gateway of :meth:`observing`)."""
        self.gateway.invalidate_refs(tab_id)
        for other in tuple(self._also):
            other.invalidate_refs(tab_id)

    def tab_closed(self, tab_id: str) -> None:
        """A tab is gone for good: the gateway forgets it, so every call naming it is TAB_NOT_FOUND."""
        noted = self.gateway.advance({"tabClosed": tab_id})
        if noted.get("reconcileCleared"):
            self.log(
                f"tab {tab_id} is closed: its RECONCILE_REQUIRED mark is void (calls naming it: TAB_NOT_FOUND)"
            )

    def renderer_gone(self, tab_id: str | None) -> None:
        """The renderer of ``tab_id`` crashed (None: the browser exited): every dispatch pending on it is
        cancelled ``renderer-closed`` at once and its caller answered; retiring ones are retired."""
        for transaction, flight in list(self._inflight.items()):
            if tab_id is None or flight.tab == tab_id:
                done = self.gateway.cancel({"transaction": transaction, "reason": "renderer-closed"})
                if done.get("step") == "complete":
                    self._preempt(transaction, done, "its renderer is gone")
        for transaction, tab in list(self._retiring.items()):
            if tab_id is None or tab == tab_id:
                self._retire_closed(transaction, "its renderer is gone")

    def _preempt(self, transaction: str, step: JsonObject, why: str) -> None:
        flight = self._inflight.get(transaction)
        if flight is not None and not flight.preempt.done():
            flight.preempt.set_result(step)
            self.log(f"dispatch of {transaction} answered early: {why}")

    async def _run(
        self,
        begin: Callable[[], JsonObject],
        *,
        mcp: bool,
        caller: Caller,
        abandon: Abandon | None = None,
        fit: Fit | None = None,
    ) -> JsonObject:
        # A transaction finishes (and is audited) even if its HTTP caller goes away: the task is shielded.
        task = asyncio.ensure_future(self._finish(begin, mcp=mcp, caller=caller, abandon=abandon, fit=fit))
        return await asyncio.shield(task)

    async def _finish(
        self,
        begin: Callable[[], JsonObject],
        *,
        mcp: bool,
        caller: Caller,
        abandon: Abandon | None,
        fit: Fit | None,
    ) -> JsonObject:
        step = await self._drive(begin, mcp=mcp, abandon=abandon)
        if fit is not None:
            step = fit(step)
        if self.audit is not None:
            self.audit.record(
                step, client=caller.client, transport=caller.transport, connection=caller.connection
            )
        return step

    # ------------------------------------------------------------------ the loop
    async def _drive(
        self, begin: Callable[[], JsonObject], *, mcp: bool, abandon: Abandon | None = None
    ) -> JsonObject:
        try:
            return await self._loop(begin, mcp=mcp, abandon=abandon)
        except Exception as exc:  # errors are values: nothing raises into an HTTP response
            self.log(f"host error while driving a transaction: {type(exc).__name__}: {exc}")
            return _host_failure(f"the host failed while driving the transaction: {type(exc).__name__}", mcp)

    async def _loop(
        self, begin: Callable[[], JsonObject], *, mcp: bool, abandon: Abandon | None = None
    ) -> JsonObject:
        started = time.monotonic()
        step = begin()
        target: Any = None
        while True:
            kind = step.get("step")
            if kind == "complete":
                self._log_complete(step, target, started)
                return step
            if kind in ("authorize", "dispatch") and abandon is not None and abandon.abandoned:
                # Given up before this step ran: an authorization is cancelled; a dispatch that was never
                # started is answered as not run (CANCELLED, mayHaveCompleted:false): nothing was sent to
                # the browser, so its tab needs no reconcile.
                if kind == "authorize":
                    step = self.gateway.cancel({"transaction": step["transaction"], "reason": "cancelled"})
                else:
                    step = self._not_run(step, fail("CANCELLED", _ABANDONED, mayHaveCompleted=False))
                continue
            if kind == "authorize":
                target = step.get("target") or target
                if self._ready is not None and not self._ready.done() and _needs_browser(step):
                    done = await self._admit_after_start(step, abandon)
                    if done is not None or (abandon is not None and abandon.abandoned):
                        step = done or step  # complete, or the loop cancels the authorization
                        continue
                decision = self.authorize(step)
                if inspect.isawaitable(decision):
                    decision = await decision
                step = self.gateway.advance(
                    {"transaction": step["transaction"], "seq": step["seq"], "result": decision}
                )
            elif kind == "dispatch":
                params = step.get("params")
                if isinstance(params, Mapping) and target is None and params.get("tabId"):
                    target = {"tabId": params.get("tabId")}
                step = await self._dispatch(step, abandon)
            else:
                self.log(f"gateway answered an unexpected step {kind!r}: {step.get('error')}")
                return _host_failure(f"the gateway answered an unexpected step {kind!r}", mcp)

    def authorize(self, step: Mapping[str, Any]) -> JsonObject | Awaitable[JsonObject]:
        """The host policy: every paired (loopback, operator-approved) client is admitted, subject to the
        site policy (``authorize`` at construction; its answer, or an awaitable of it)."""
        return self._policy(step) if self._policy is not None else {"success": True}

    async def _dispatch(self, step: Mapping[str, Any], abandon: Abandon | None = None) -> JsonObject:
        """Run one dispatch, raced against its ``timeoutMs`` and the transport giving up (``abandon``);
        either cancels the transaction and the renderer's late reply retires it."""
        transaction, seq = step["transaction"], step["seq"]
        method = str(step.get("method"))
        params = step.get("params") or {}
        timeout_ms = step.get("timeoutMs")
        if not isinstance(timeout_ms, int) or timeout_ms <= 0:
            timeout_ms = DEFAULT_TIMEOUT_MS
        tab = params.get("tabId") if isinstance(params, Mapping) else None
        loop = asyncio.get_running_loop()
        # In flight from here: an MCP cancel or a crash preempts it even while it waits for the browser.
        flight = _Inflight(tab if isinstance(tab, str) else None, loop.create_future())
        self._inflight[transaction] = flight
        started = False
        try:
            # Without an authorize step (_started there) the first start is awaited here: its start-up is
            # not the dispatch's time, though the engine's deadline already runs.
            await self._started(flight.preempt)
            deadline = loop.time() + timeout_ms / 1000
            coming = None if flight.preempt.done() else self.renderer.available()
            if coming is not None:
                # The browser exited: wait (within this dispatch's deadline) for the relaunch. Until a
                # browser is there nothing can run, so a relaunch that fails or is not back in time is
                # answered BROWSER_UNAVAILABLE with mayHaveCompleted:false — never a TIMEOUT of unknown
                # outcome.
                refused = await self._browser_back(coming, deadline, timeout_ms, abandon, flight.preempt)
                if refused is not None and not flight.preempt.done():
                    return self._not_run(step, refused)
                left_ms = max(1, int((deadline - loop.time()) * 1000))
                if isinstance(params, Mapping) and "timeoutMs" in params:
                    params = {**params, "timeoutMs": left_ms}  # the browser's own timeouts: what is left
                timeout_ms = left_ms
            if flight.preempt.done():  # cancelled (MCP) while it waited for the browser: never started
                # The engine holds the lane for the cancelled dispatch's late result: there will be none,
                # so its not-run result retires it at once.
                self.gateway.advance(
                    {"transaction": transaction, "seq": seq, "result": fail("CANCELLED", _NOT_STARTED)}
                )
                return flight.preempt.result()
            if abandon is not None and abandon.abandoned:  # gone while the browser was awaited: not started
                return self._not_run(step, fail("CANCELLED", _ABANDONED, mayHaveCompleted=False))
            started = True
        finally:
            if not started:
                del self._inflight[transaction]
        call = asyncio.ensure_future(self._call(method, params))
        try:
            await self._wait_first(call, flight.preempt, abandon, deadline)
        finally:
            del self._inflight[transaction]
        if flight.preempt.done():
            answer: JsonObject = flight.preempt.result()
        elif call.done():
            return self.gateway.advance({"transaction": transaction, "seq": seq, "result": call.result()})
        else:
            reason = "cancelled" if abandon is not None and abandon.abandoned else "timeout"
            answer = self.gateway.cancel({"transaction": transaction, "reason": reason})
            why = (
                "its caller went away" if reason == "cancelled" else f"it passed its {timeout_ms} ms deadline"
            )
            self.log(f"{method} in transaction {transaction}: {why}: cancelled")
        self._late.add(call)
        call.add_done_callback(lambda done: self._retire(transaction, seq, method, done))
        waiting = self.gateway.next(transaction).get("awaitingRetirement")
        if isinstance(waiting, Mapping) and not call.done():
            self._retiring[transaction] = flight.tab
            watch = asyncio.ensure_future(self._watch(transaction, flight.tab, call))
            self._late.add(watch)
            watch.add_done_callback(self._late.discard)
        return answer

    async def _started(self, preempt: asyncio.Future[JsonObject], abandon: Abandon | None = None) -> None:
        """While the browser is still starting (``mcp``): wait for the first of its start, ``preempt`` and
        ``abandon`` (see :meth:`_wait_first`). A start that fails lets the call through, which answers
        BROWSER_UNAVAILABLE with nothing sent (the failure is retrieved even when a cancel came first)."""
        if self._ready is None or self._ready.done():
            return
        starting = asyncio.shield(self._ready)
        starting.add_done_callback(lambda done: done.cancelled() or done.exception())
        await self._wait_first(starting, preempt, abandon)

    async def _admit_after_start(self, step: Mapping[str, Any], abandon: Abandon | None) -> JsonObject | None:
        """``step`` authorizes a call that needs the browser while it is still starting (``mcp``): wait for
        the start before admitting it, so the dispatch is issued — and its ``timeoutMs`` starts, in the
        engine as in the host — only once a browser is there. Otherwise a call that waited for the start
        and then timed out was already overdue for the engine, and its page's script was stopped (or its
        tab closed) at once instead of after the retirement grace (docs/contract-notes.md). Meanwhile the
        call is in flight: an MCP cancel completes it (the engine cancels the authorization: nothing was
        dispatched, ``mayHaveCompleted:false``); that ``complete`` step is returned, else None."""
        transaction = step["transaction"]
        flight = _Inflight(None, asyncio.get_running_loop().create_future())
        self._inflight[transaction] = flight
        try:
            await self._started(flight.preempt, abandon)
        finally:
            del self._inflight[transaction]
        return flight.preempt.result() if flight.preempt.done() else None

    @staticmethod
    async def _wait_first(
        work: asyncio.Future[Any],
        preempt: asyncio.Future[JsonObject],
        abandon: Abandon | None = None,
        deadline: float | None = None,
    ) -> None:
        """Wait for the first of: ``work`` done, ``preempt`` set (a crash, the browser's exit or an MCP
        cancel), the transport giving up (``abandon``) and the loop time reaching ``deadline`` (None: no
        deadline). Which one it was, the caller reads from those; nothing is cancelled but this wait's own
        watch on ``abandon``."""
        waits: set[asyncio.Future[Any]] = {work, preempt}
        gave_up = asyncio.ensure_future(abandon.wait()) if abandon is not None else None
        if gave_up is not None:
            waits.add(gave_up)
        timeout = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=FIRST)
        finally:
            if gave_up is not None:
                gave_up.cancel()

    def _not_run(self, step: Mapping[str, Any], result: JsonObject) -> JsonObject:
        """Answer dispatch ``step`` with ``result``, a failure saying nothing was run
        (``mayHaveCompleted:false``): the host never called the native endpoint."""
        self.log(
            f"{step.get('method')} in transaction {step['transaction']} not run: {result['error']['message']}"
        )
        return self.gateway.advance(
            {"transaction": step["transaction"], "seq": step["seq"], "result": result}
        )

    async def _browser_back(
        self,
        coming: Awaitable[JsonObject | None],
        deadline: float,
        timeout_ms: int,
        abandon: Abandon | None,
        preempt: asyncio.Future[JsonObject],
    ) -> JsonObject | None:
        """Wait for the renderer's relaunch (``coming``, see ``Renderer.available``) until ``deadline``;
        None once a browser is there, else the not-run result to answer the dispatch with. The relaunch
        itself goes on when the deadline passes (a later call finds the browser)."""
        back = asyncio.ensure_future(coming)
        self._late.add(back)
        back.add_done_callback(self._late.discard)
        back.add_done_callback(lambda done: done.cancelled() or done.exception())
        await self._wait_first(back, preempt, abandon, deadline)
        if back.done():
            if back.cancelled() or back.exception() is not None:  # the renderer promises not to raise
                return fail(
                    "BROWSER_UNAVAILABLE",
                    "the browser could not be started again; nothing was run",
                    mayHaveCompleted=False,
                )
            answer = back.result()
            if answer is not None or abandon is None or not abandon.abandoned:
                return answer
        if abandon is not None and abandon.abandoned:
            return fail("CANCELLED", _ABANDONED, mayHaveCompleted=False)
        return fail(
            "BROWSER_UNAVAILABLE",
            f"the browser exited and is being started again; it was not back within this call's {timeout_ms} ms "
            "deadline, so nothing was run: try again",
            mayHaveCompleted=False,
        )

    async def _call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        try:
            return await self.renderer.call(method, params)
        except Exception as exc:  # the renderer promises not to raise; belt and braces
            return fail("RENDERER_FAILED", f"{type(exc).__name__}: {exc}")

    def _retire(self, transaction: str, seq: int, method: str, done: asyncio.Future[JsonObject]) -> None:
        self._late.discard(done)
        self._retiring.pop(transaction, None)
        if done.cancelled():
            result = fail("RENDERER_FAILED", "the renderer call was cancelled")
        else:
            result = done.result()
        answer = self.gateway.advance({"transaction": transaction, "seq": seq, "result": result})
        kind = answer.get("step")
        if kind == "rejected":  # already retired (renderer-closed): nothing was waiting for it
            kind = "discarded (already retired)"
        self.log(f"late {method} reply for transaction {transaction}: {kind}")

    def _retire_closed(self, transaction: str, why: str) -> None:
        self._retiring.pop(transaction, None)
        answer = self.gateway.advance({"transaction": transaction, "retire": "renderer-closed"})
        if answer.get("step") == "retired":
            self.log(f"cancelled dispatch of {transaction} retired: {why}")

    async def _watch(self, transaction: str, tab: str | None, call: asyncio.Future[JsonObject]) -> None:
        """Bounded retirement (CONTRACT.md §5 v1.1): once ``next`` says the cancelled dispatch is overdue,
        stop the page's script; if the reply still does not come, close the target; then retire it."""
        while not call.done():
            waiting = self.gateway.next(transaction).get("awaitingRetirement")
            if not isinstance(waiting, Mapping):
                return  # retired meanwhile (late reply, crash or browser exit)
            if waiting.get("overdue"):
                break
            await asyncio.wait({call}, timeout=WATCH_INTERVAL_S)
        if call.done():
            return
        self.log(f"cancelled dispatch of {transaction} is overdue: stopping the script in tab {tab or '-'}")
        if await self.renderer.stop_script(tab):
            await asyncio.wait({call}, timeout=STOP_PATIENCE_S)
        if not call.done():
            self.log(f"tab {tab or '-'} did not stop: ending what holds it (the tab is kept)")
            await self.renderer.end_stuck(tab)
        if transaction in self._retiring:
            self._retire_closed(transaction, "the host ended the stuck work")

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Wait (bounded) for outstanding late renderer replies, e.g. before shutdown."""
        if self._late:
            with contextlib.suppress(Exception):
                await asyncio.wait(set(self._late), timeout=timeout_s)

    # ------------------------------------------------------------------ the per-transaction log line
    def _log_complete(self, step: Mapping[str, Any], target: Any, started: float) -> None:
        audit = step.get("audit") or {}
        response = step.get("response")
        method = audit.get("method") or "?"
        tab = audit.get("tabId")
        if tab is None and isinstance(audit.get("target"), Mapping):
            tab = audit["target"].get("tabId")
        if tab is None and isinstance(target, Mapping):
            tab = target.get("tabId")
        outcome = _outcome(response, step)
        if audit.get("outcome") in ("refused", "unknown"):
            outcome = f"{audit['outcome']} {audit.get('code')}"
        elif audit.get("outcome") == "success" and outcome.startswith("ok"):
            outcome = "ok"
        ms = audit.get("elapsedMs")
        if not isinstance(ms, int | float) or (ms == 0 and audit.get("dispatches")):
            ms = (time.monotonic() - started) * 1000
        lane = audit.get("lane")
        extra = f" lane={lane}" if lane and lane != "direct" else ""
        shown = "-" if tab is None else tab if isinstance(tab, str) and LOGGED_TAB_ID.match(tab) else "?"
        self.log(f"tx {_printable(method)} tab={shown} {outcome} {ms:.0f}ms{extra}")


def _needs_browser(step: Mapping[str, Any]) -> bool:
    """Whether an ``authorize`` step's transaction goes on to a dispatch (all but the gateway's own answers)."""
    request = step.get("request")
    method = request.get("method") if isinstance(request, Mapping) else None
    return method not in ("documentation", "capabilities")


def _outcome(response: Any, step: Mapping[str, Any]) -> str:
    if response is None:
        return f"notification ({step.get('httpStatus', 202)})"
    if not isinstance(response, Mapping):
        return "?"
    if "jsonrpc" in response:
        if "error" in response:
            return f"jsonrpc-error {response['error'].get('code')}"
        inner = response.get("result")
        if isinstance(inner, Mapping) and isinstance(inner.get("structuredContent"), Mapping):
            return _outcome(inner["structuredContent"], step)
        return "ok"
    if response.get("success") is True:
        return "ok"
    error = response.get("error") or {}
    unknown = " mayHaveCompleted" if response.get("mayHaveCompleted") else ""
    return f"refused {error.get('code')}{unknown}" if not unknown else f"unknown {error.get('code')}{unknown}"


def _printable(value: object, limit: int = 80) -> str:
    """A log field a client controls: one line, no control characters, bounded (no forged log lines)."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    if text.isprintable() and " " not in text:
        return text
    return repr(text)


def _host_failure(message: str, mcp: bool) -> JsonObject:
    """A complete step for a host-side failure: JSON-RPC -32603 or an INTERNAL envelope (errors are values)."""
    response: JsonObject = jsonrpc_error(None, -32603, message) if mcp else _internal_envelope(message)
    return {"step": "complete", "response": response, "audit": {}}
