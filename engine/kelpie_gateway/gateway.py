"""The coordinator: lanes, BUSY and the step protocol (CONTRACT.md §5, §6, §11).

One gateway per browser (or profile). It performs no I/O: it hands the host *steps* and consumes the
host's results. :class:`GatewayCore` decides *which* event to fire; the graph itself lives in
:mod:`kelpie_gateway.transaction` (every state and transition, and only there).

Where everything else went (one responsibility per module; issue 26 carved ``inputs``, ``admission``,
``ledger``, ``audit`` and ``steps`` out of this module, and ref issuing into ``refs``):

==========================  ==========================================================================
module                      owns
==========================  ==========================================================================
``api``                     the public :class:`~kelpie_gateway.Gateway` = this coordinator + ``begin_mcp``
``mcp``                     the MCP frontend (JSON-RPC in/out); depends on this module, never the reverse
``inputs``                  reading host input once: per entry point a fast reader for the usual input
                            that falls back to the general reader it must agree with (parsing, copies,
                            caps, the message shapes)
``admission``               the guards before a lane and before each dispatch (catalog, extensions,
                            pinned tab, refs, closed tabs, RECONCILE_REQUIRED), raising ``Refusal``
``ledger``                  tab knowledge: closed tabs, reconcile marks, recent mutations; applying what
                            a shaped result taught (a snapshot's refs issued by ``refs``)
``audit``                   the one builder of the ``audit`` record (and the params digest)
``steps``                   the ``complete`` step and the Python caller's copies of pending steps
``transaction``             every state and transition (the table)
``schema``                  canonical methods, params, defaults, bounds; the request validator
``config`` / ``catalog``    the gateway config and descriptors; the capability projection
``natives``                 per method: the native endpoint call a transaction dispatches
``results``                 per method: shaping a native result into the canonical result (pure)
``refs``                    snapshot/ref ownership, ref issuing and the invalidation queue
``reader``                  the generated reader / action scripts
``errors`` / ``jsonio``     envelopes and the closed code set; bounded JSON in and out
==========================  ==========================================================================

Lanes: ``direct`` (core methods and direct extensions), ``recovery`` (``recovery:true`` extensions — they
stay reachable while a dialog blocks a direct-lane command), ``dedicated:<name>`` (long-running
extensions). One active transaction per lane; a ``begin`` on an occupied lane completes at once with
``BUSY`` and touches nothing.

Frontends (canonical JSON built in, MCP in :mod:`kelpie_gateway.mcp`) run through
:meth:`GatewayCore.begin_with` and use only its frontend surface (``begin_parsed``, ``complete_now``,
``cancel_request``, ``config``, ``catalog``, ``closed``).

Thread safety: every public method but :meth:`GatewayCore.invalidate_refs` enters through
:meth:`GatewayCore._run`, which takes the gateway's lock and first drains the lock-free invalidation queue
that ``invalidate_refs`` appends to (§6). ``next()`` on a free direct lane answers ``idle`` without the
lock, as the C ABI does (docs/c-abi.md, "Costs").
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, Protocol

from . import audit, inputs, jsonio, natives, results, steps
from .admission import Admission
from .catalog import Catalog
from .config import Config, Extension, parse_config
from .errors import TAB_ID_SHAPE, GatewayPendingError, JsonObject, Refusal, failure, rejected, shown, success
from .inputs import CANCEL_CODES, RESULT, TAB_CLOSED, UNDELIVERED
from .ledger import TabLedger
from .refs import RefStore
from .schema import METHODS, TIMEOUT_DEFAULT_MS, ParamError, validate_request
from .steps import PENDING, Answer, Render, copy_pending, own
from .transaction import ACCEPTS, AUTHORIZE_STATES, DISPATCH_STATES, Transaction

Clock = Callable[[], float]
_CANCEL_WORDS: Final = {
    "timeout": "timed out",
    "cancelled": "was cancelled",
    "renderer-closed": "lost its renderer",
}

__all__ = ["Answer", "Clock", "Entry", "Frontend", "GatewayCore", "Op", "Render"]


class Frontend(Protocol):
    """A translation from some wire format into canonical transactions, run by
    :meth:`GatewayCore.begin_with` under the gateway's lock (the canonical JSON frontend is built in; the
    MCP one is :mod:`kelpie_gateway.mcp`)."""

    def translate(self, gw: GatewayCore, message: Any) -> JsonObject:
        """The first step of ``message``'s transaction (via :meth:`GatewayCore.begin_parsed` or
        :meth:`GatewayCore.complete_now`); may raise only for gateway bugs."""
        ...

    def internal_error(self, message: Any, exc: Exception) -> tuple[JsonObject, Render | None]:
        """The envelope (and renderer) that answers ``message`` when translating it hit a gateway bug."""
        ...


class _Canonical:
    """The canonical JSON frontend (§3): ``begin``."""

    def translate(self, gw: GatewayCore, message: Any) -> JsonObject:
        return gw._begin_raw(message)

    def internal_error(self, message: Any, exc: Exception) -> tuple[JsonObject, Render | None]:
        return failure(inputs.request_id(message), "INTERNAL", f"internal error: {exc!r}"), None


class _Raise:
    """How ``next`` and ``close`` answer a gateway bug (and ``close`` a pending callback): they raise."""

    def internal_error(self, message: Any, exc: Exception) -> tuple[JsonObject, Render | None]:
        raise exc


_CANONICAL: Final = _Canonical()
_RAISE: Final = _Raise()
Op = Callable[[Any, Any], JsonObject]
"""What :meth:`GatewayCore._run` runs: ``op(gateway, argument)`` → a step."""
Entry = tuple[Op, Frontend | _Raise | None]
"""A :meth:`GatewayCore.call_json` operation: what :meth:`GatewayCore._run` runs, and how a bug is answered."""


class GatewayCore:
    """The coordinator of a browser-control gateway (CONTRACT.md §5, §6, §11): lanes, BUSY and the step
    protocol. :class:`kelpie_gateway.Gateway` is this class plus the MCP frontend.

    ``config``: Mapping or JSON text (§2); raises :class:`~kelpie_gateway.errors.GatewayConfigError`.
    ``clock``: monotonic seconds (default :func:`time.monotonic`); used for dispatch deadlines
    (``next`` marks an overdue dispatch ``"overdue": true``) and ``audit.elapsedMs``.
    Every other method returns a step dict and never raises for bad input.
    """

    def __init__(self, config: Mapping[str, Any] | str | bytes, *, clock: Clock | None = None) -> None:
        self._config = parse_config(config)
        self._catalog = Catalog(self._config)
        self._refs = RefStore()
        self._ledger = TabLedger(self._refs)
        self._lock = threading.RLock()
        self._clock: Clock = clock if clock is not None else time.monotonic
        self._lanes: dict[str, Transaction] = {}
        self._by_id: dict[str, Transaction] = {}
        self._counter = 0
        self._grace_s = self._config.retirement_grace_ms / 1000.0
        self._closed = False
        self._working: Transaction | None = None  # what a gateway bug while handling an input concerns
        # What the audit of an early refusal describes (audit.early): the parsed request of the begin in
        # progress and, once validated, its normalized params (audit.RAW: not validated, use its own).
        self._hint: Any = None
        self._hint_params: Any = audit.RAW
        self._natives = natives.Context(
            secrets.token_hex(16), self._refs.resolve, self._refs.resume, self._refs.since_anchor
        )
        self._admission = Admission(self._config, self._catalog, self._refs, self._ledger, self._natives)
        self._direct_watcher: Callable[[bool], None] | None = None

    # ================================================================== public API
    def begin(self, request: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Start a canonical transaction (§5). Returns an ``authorize``, ``dispatch`` or ``complete`` step."""
        step = self._run(_BEGIN, request, _CANONICAL)
        if step["step"] in PENDING:  # own, inlined: the caller gets its own copy
            return copy_pending(step)
        return step

    def begin_with(self, message: Any, frontend: Frontend) -> JsonObject:
        """Start a transaction from ``message`` through ``frontend`` (the canonical JSON one for
        :meth:`begin`, MCP for ``begin_mcp``) under the gateway's lock, after draining queued ref
        invalidations (§6). A gateway bug while translating completes with the frontend's INTERNAL
        answer, so the caller always gets a step."""
        return own(self._run(None, message, frontend))  # None: frontend.translate, not bound per call

    def next(self, transaction: str | None = None) -> JsonObject:
        """Re-read the pending step of ``transaction`` (None = the direct lane) without changing anything.

        Returns the pending ``authorize``/``dispatch`` step (``"overdue": true`` added once a dispatch's
        ``timeoutMs`` has passed on the clock: the host must ``cancel``), or ``{"step":"idle"}``. While a
        cancelled dispatch's callback is still out, ``idle`` carries ``awaitingRetirement``:
        ``{transaction, seq, method, tabId}`` (the native endpoint and tab of the stuck dispatch) plus
        ``"overdue": true`` once ``timeoutMs`` + ``retirementGraceMs`` (config, default 5000, at most
        5000) have passed: the host must then end the stuck work (stop the page's script, else close or
        crash that renderer) and report ``{"transaction","retire":"renderer-closed"}`` (§5, v1.1)."""
        if transaction is None and "direct" not in self._lanes:
            # The fast path: a free direct lane is idle (one atomic read, the C ABI's own answer); the
            # general path below says the same under the lock (tests/engine/test_input.py).
            return {"step": "idle"}
        step = self._run(GatewayCore._next, transaction, _RAISE)
        if step["step"] in PENDING:  # own, inlined
            return copy_pending(step)
        return step

    def advance(self, result: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Consume one host result: ``{"transaction","seq","result"}`` or ``{"transaction","retire":
        "renderer-closed"}``. A result that does not match the pending step is ``rejected``
        (``STALE_STEP``) and changes nothing; malformed input is ``rejected`` ``INVALID_REQUEST``.

        Host reports ride here too (no C ABI function of their own): ``{"transaction","undelivered": true}``
        (answer ``noted`` with ``reconcileRequired``) and ``{"tabClosed": tabId}``, a tab gone for good
        without a ``tabs.close`` through the gateway (answer ``{"step":"noted","tabClosed","reconcileCleared"}``;
        every later call naming it is TAB_NOT_FOUND: §4, §6; docs/contract-notes.md "Closed tabs")."""
        step = self._run(_ADVANCE, result)
        if step["step"] in PENDING:  # own, inlined: the caller gets its own copy
            return copy_pending(step)
        return step

    def cancel(self, cancel: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Cancel ``{"transaction","reason": "timeout"|"cancelled"|"renderer-closed"}`` (§5).

        During ``authorize`` or a read-only dispatch: complete, refused, ``mayHaveCompleted:false``.
        During a mutating dispatch: complete, ``mayHaveCompleted:true``. After a cancel during any
        dispatch the lane stays exclusive until the late callback retires (not for renderer-closed)."""
        return own(self._run(GatewayCore._cancel_input, cancel))

    def call_json(self, operation: str, argument: Any) -> bytes:
        """The C ABI's entry (``abi/shims.py``; not part of the Python API of §11): run ``operation``
        (``begin``, ``next``, ``advance`` or ``cancel``; :class:`~kelpie_gateway.Gateway` adds
        ``begin_mcp``) on ``argument`` and return the step as compact UTF-8 JSON — byte for byte
        ``dumps(getattr(self, operation)(argument))``, without the Python API's copy of a pending step (the
        gateway's own is serialised).
        Raises ``ValueError`` for an unknown operation (a caller's bug); never for bad input."""
        entry = self._JSON_OPS.get(operation)  # one lookup, no chain of comparisons or super() call
        if entry is None:
            raise ValueError(f"unknown operation {operation!r}")
        return jsonio.dumps(self._run(entry[0], argument, entry[1]))

    def watch_direct_lane(self, watcher: Callable[[bool], None] | None) -> None:
        """Call ``watcher(busy)`` whenever the direct lane is taken (True) or freed (False), under the
        gateway's lock, before the call that changed it returns; once now with the current state. While
        the lane is free, ``next()`` answers exactly ``{"step":"idle"}``: the C ABI uses this to answer
        that ``next`` without entering Python (docs/c-abi.md, "Costs"). None stops watching."""
        with self._lock:
            self._direct_watcher = watcher
            if watcher is not None:
                watcher("direct" in self._lanes)

    def invalidate_refs(self, tab_id: str | None = None) -> None:
        """Invalidate ``tab_id``'s refs (None = every tab). Any thread, any time; never blocks (§6)."""
        if tab_id is None or isinstance(tab_id, str):
            self._refs.enqueue(tab_id)

    def close(self) -> None:
        """Close the gateway; raises :class:`GatewayPendingError` while a renderer callback is pending."""
        self._run(GatewayCore._close, None, _RAISE)

    # ================================================================== the way in
    def _run(self, op: Op | None, arg: Any, frontend: Frontend | _Raise | None = None) -> JsonObject:
        """Every public call's entry (but :meth:`invalidate_refs`): take the lock, drain the queued ref
        invalidations (§6), run ``op(self, arg)`` (``op`` None: ``frontend.translate(self, arg)``). A gateway
        bug while running completes the transaction it concerned with INTERNAL (:meth:`_abort`), or answers
        with ``frontend``'s INTERNAL for a begin, so the caller always gets a step; ``_RAISE`` lets it (and
        ``close``'s GatewayPendingError) through."""
        lock = self._lock  # acquire/release: cheaper than a with block on the hot path
        lock.acquire()
        try:
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            if op is None:  # a frontend's begin (begin_with): its translate, without a bound method per call
                return frontend.translate(self, arg)  # type: ignore[union-attr]  # begin_with passes a Frontend
            return op(self, arg)
        except Exception as exc:
            if frontend is None:
                return self._abort(exc)
            envelope, render = frontend.internal_error(arg, exc)
            return self.complete_now(envelope, render)
        finally:
            if self._hint is not None:  # set by a begin (audit.early): never kept past it
                self._hint = None
                self._hint_params = audit.RAW
            lock.release()

    def _abort(self, exc: Exception) -> JsonObject:
        """A gateway bug surfaced while handling an input: complete the transaction it concerned with
        INTERNAL (unknown outcome if a mutation was dispatched) so no lane stays stuck."""
        txn, self._working = self._working, None
        message = f"internal error: {exc!r}"
        if txn is None or not txn.occupies_lane or self._by_id.get(txn.id) is not txn:
            return rejected("INTERNAL", message)
        if txn.state == "retiring":
            return self._retire(txn)
        envelope = failure(txn.request_id, "INTERNAL", message, may_have_completed=txn.dispatched_mutation)
        try:
            return self._finish(txn, envelope)
        except Exception:
            self._release(txn)
            return rejected("INTERNAL", message)

    def _close(self, _arg: None) -> JsonObject:
        pending = [t.id for t in self._by_id.values() if t.callback_pending]
        if pending:
            raise GatewayPendingError(f"renderer callback pending for {', '.join(pending)}")
        self._closed = True
        self._lanes.clear()
        if self._direct_watcher is not None:
            self._direct_watcher(False)
        self._by_id.clear()
        return {"step": "idle"}

    # ================================================================== for frontends
    # What a frontend's ``translate`` may call (it runs under the lock, inside :meth:`begin_with`).
    @property
    def closed(self) -> bool:
        """True once :meth:`close` succeeded; every new transaction is then refused."""
        return self._closed

    @property
    def config(self) -> Config:
        """The validated config (§2), read-only."""
        return self._config

    @property
    def catalog(self) -> Catalog:
        """The capability projection (§2): advertised methods and admitted extensions, read-only."""
        return self._catalog

    def begin_parsed(self, request: Any, render: Render | None) -> JsonObject:
        """Run an already parsed canonical request (§3); ``render`` turns the final envelope into what the
        ``complete`` step carries (None: the envelope itself). Only from a frontend's ``translate``."""
        return self._begin_parsed(request, render)

    def complete_now(
        self,
        envelope: JsonObject,
        render: Render | None,
        method: str | None = None,
        *,
        txn_id: str | None = None,
    ) -> JsonObject:
        """A transaction refused (or answered) before it took a lane: one ``complete`` step, seq 1, whose
        audit names ``method``. Only from a frontend's ``translate``."""
        record = audit.early(envelope, method, self._hint, self._hint_params)
        return steps.complete(txn_id or self._new_id(), 1, envelope, render, record)

    def cancel_request(self, request_id: Any) -> JsonObject | None:
        """MCP ``notifications/cancelled`` (§7): cancel (reason ``cancelled``) the one in-flight MCP
        transaction whose JSON-RPC id is ``request_id``. Returns its ``complete`` step, or None when no
        single in-flight MCP transaction has that id (unknown, already complete, or ambiguous). Only from a
        frontend's ``translate``."""
        matches = [
            t
            for t in self._by_id.values()
            if t.mcp
            and t.accepts("cancel")
            and type(t.request_id) is type(request_id)
            and t.request_id == request_id
        ]
        if len(matches) != 1:
            return None
        step = self._cancel(matches[0].id, "cancelled")
        return step if step.get("step") == "complete" else None

    # ================================================================== begin
    def _new_id(self) -> str:
        self._counter += 1
        return f"t{self._counter}"

    def _begin_raw(self, request: Any) -> JsonObject:
        """The canonical frontend's ``translate``: read the request (:mod:`kelpie_gateway.inputs`), run it."""
        try:
            request, checked = inputs.fast_request(request)
        except inputs.Unreadable as exc:
            return self.complete_now(failure(exc.request_id, exc.code, exc.message), None)
        return self._begin_parsed(request, None, checked)

    def _begin_parsed(
        self, request: Any, render: Render | None, checked: inputs.Checked | None = None
    ) -> JsonObject:
        """Run a parsed canonical request (also the entry point of the MCP translation); ``checked``: what
        ``validate_request(request)`` returned, when the reader already asked it."""
        self._hint = request  # what the audit of an early refusal shows (audit.early)
        if self._closed:
            return self.complete_now(failure(None, "INVALID_REQUEST", "this gateway is closed"), render)
        try:
            rid, method, name, params = validate_request(request) if checked is None else checked
            self._hint_params = params  # normalized: defaults filled in
        except ParamError as exc:
            return self.complete_now(failure(getattr(exc, "request_id", None), exc.code, str(exc)), render)
        try:
            lane, mutates, ext, tab_id, guarded = self._admission.admit(rid, method, name, params)
        except Refusal as exc:  # an unknown method's audit names none (audit.early)
            return self.complete_now(
                failure(rid, exc.code, exc.message), render, name if method is not None else None
            )
        active = self._lanes.get(lane)
        if active is not None:
            what = active.method
            if active.state == "retiring":
                what = "waiting for a cancelled dispatch to retire"
                if self._overdue(active):
                    what += "; overdue, the host is ending it"
            busy = f"lane {lane!r} is busy ({what}, transaction {active.id}); nothing was dispatched"
            return self.complete_now(failure(rid, "BUSY", busy), render, name)
        self._counter += 1
        txn = Transaction(
            f"t{self._counter}",
            lane,
            name,
            rid,
            {"version": 1, "id": rid, "method": name, "params": params},
            mutates,
            self._clock(),
            render,  # not None: begun by begin_mcp, so notifications/cancelled can reach it (txn.mcp)
            tab_id,
            ext,
            guarded,
        )
        if guarded:
            try:
                self._admission.check(txn, tab_id)
            except Refusal as exc:
                return self.complete_now(failure(rid, exc.code, exc.message), render, name, txn_id=txn.id)
        self._lanes[lane] = txn
        if lane == "direct" and self._direct_watcher is not None:
            self._direct_watcher(True)
        self._by_id[txn.id] = txn
        if self._config.require_authorization:
            return self._issue_authorize(txn, "authorize", txn.request, txn.mutates)
        return self._after_admission(txn)

    # ================================================================== steps
    def _issue_authorize(
        self, txn: Transaction, event: str, request: JsonObject, mutates: bool
    ) -> JsonObject:
        txn.fire(event)
        txn.seq += 1
        txn.authorized = False  # until the host admits it (audit.authorized)
        tab = txn.tab_id
        target = None if tab is None else {"tabId": tab, "generation": self._refs.generation(tab)}
        step = txn.pending = {  # a dict display: a third of the cost of a dict built from keywords
            "step": "authorize",
            "transaction": txn.id,
            "seq": txn.seq,
            "lane": txn.lane,
            "request": request,
            "mutates": mutates,
            "target": target,
        }
        return step

    def _issue_dispatch(
        self, txn: Transaction, event: str, method: str, params: JsonObject, mutates: bool
    ) -> JsonObject:
        txn.fire(event)
        txn.seq += 1
        txn.dispatches += 1
        txn.closes = self._ledger.closes  # tabs reported gone from here on are gone for its result
        timeout = txn.request["params"].get("timeoutMs", TIMEOUT_DEFAULT_MS)
        txn.deadline = self._clock() + timeout / 1000.0
        step = txn.pending = {
            "step": "dispatch",
            "transaction": txn.id,
            "seq": txn.seq,
            "method": method,
            "params": params,
            "mutates": mutates,
            "timeoutMs": timeout,
        }
        return step

    def _after_admission(self, txn: Transaction) -> JsonObject:
        name = txn.method
        if name == "documentation":
            return self._finish(
                txn, success(txn.request_id, {"format": "markdown", "text": self._catalog.documentation()})
            )
        if name == "capabilities":
            return self._finish(txn, success(txn.request_id, self._catalog.capabilities()))
        if self._config.targeting == "selected" and METHODS[name].tab_scoped:
            return self._issue_dispatch(txn, "inspect", "get-tabs", {}, False)
        return self._issue_main(txn, "dispatch")

    def _issue_main(self, txn: Transaction, event: str) -> JsonObject:
        try:
            if txn.guarded:  # checked again: the tab may have changed during an authorize step or inspection
                self._admission.check(txn, txn.tab_id)
            # What the main dispatch acts on, fixed once the target tab is known (after any inspection).
            ext: Extension | None = txn.ext
            planned = txn.planned = results.Planned(
                txn.method,
                txn.request["params"],
                txn.tab_id,
                txn.mutates,
                ext.method if ext is not None else None,
                (self._admission.handles(txn, txn.tab_id) or None) if ext is not None else None,
                self._config.observer,
            )
            endpoint, params = natives.BUILDERS[planned.method](planned, self._natives)
        except Refusal as exc:  # after a dispatched switch-tab the selection changed (_fail)
            return self._fail(txn, exc.code, exc.message, False)
        step = self._issue_dispatch(txn, event, endpoint, params, txn.mutates)
        if txn.mutates:
            txn.dispatched_mutation = True
            txn.held = self._ledger.invalidate_for(txn)
        txn.epoch = self._refs.epoch(txn.tab_id)
        return step

    def _issue_switch(self, txn: Transaction) -> JsonObject:
        step = self._issue_dispatch(txn, "switch", "switch-tab", {"tabId": txn.tab_id}, True)
        txn.dispatched_mutation = True
        return step

    # ================================================================== advance
    def _advance(self, data: Any) -> JsonObject:
        self._working = None  # until the transaction it concerns is known (_abort)
        try:
            kind, tid, seq, result, size = inputs.fast_advance(data)
        except Refusal as exc:
            return rejected(exc.code, exc.message)
        if kind is not RESULT:  # the readers return the constants themselves
            return self._report(kind, tid)
        txn = self._by_id.get(tid)
        self._working = txn
        if txn is None or seq != txn.seq:
            return rejected(
                "STALE_STEP", f"no pending step {tid!r} seq {seq}; late, duplicated or forged result ignored"
            )
        accepts = ACCEPTS[txn.state]  # Transaction.accepts, one lookup for both questions
        if "retire" in accepts:
            return self._retire(txn)
        if "advance" not in accepts:
            return rejected("STALE_STEP", f"transaction {txn.id!r} is not waiting for a result")
        if txn.state in AUTHORIZE_STATES:
            return self._on_authorization(txn, result)
        if size > jsonio.MAX_RESULT_BYTES:
            size = jsonio.size_of(result)  # the cap is the result's own JSON, not the advance wrapper
        if size > jsonio.MAX_RESULT_BYTES:
            return self._fail_dispatch(
                txn,
                "RESPONSE_TOO_LARGE",
                f"the renderer's result is over {jsonio.MAX_RESULT_BYTES} bytes (32 MiB); it was discarded",
                None,
            )
        return self._on_result(txn, result)

    def _report(self, kind: str, tid: str) -> JsonObject:
        """The host's reports: ``tabClosed``, ``undelivered`` and ``retire`` (§4, §5 v1.1, §6)."""
        if kind == TAB_CLOSED:
            return {"step": "noted", "tabClosed": tid, "reconcileCleared": self._ledger.gone(tid)}
        if kind == UNDELIVERED:
            return {"step": "noted", "transaction": tid, "reconcileRequired": self._ledger.undelivered(tid)}
        txn = self._by_id.get(tid)
        if txn is None or not txn.accepts("retire"):
            return rejected(
                "STALE_STEP", f"transaction {tid!r} has no cancelled dispatch awaiting retirement"
            )
        return self._retire(txn)

    def _on_authorization(self, txn: Transaction, result: Any) -> JsonObject:
        if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
            return rejected("INVALID_REQUEST", inputs.AUTHORIZATION_SHAPE)
        if not result["success"]:
            return self._finish(txn, failure(txn.request_id, "NOT_AUTHORIZED", inputs.refusal_text(result)))
        txn.authorized = True
        if txn.state == "authorizing_switch":
            return self._issue_switch(txn)
        return self._after_admission(txn)

    def _on_result(self, txn: Transaction, result: Any) -> JsonObject:
        if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
            return self._fail_dispatch(
                txn, "RENDERER_FAILED", "malformed renderer result (no boolean 'success')", result
            )
        if not result["success"]:
            code, text = results.failure_of(result)
            if txn.tab_id is not None and txn.state != "inspecting":
                if code == "TAB_NOT_FOUND":
                    self._ledger.gone(txn.tab_id)  # the renderer says the tab does not exist: settle it
                if result.get("crashed") is True:
                    self._ledger.crashed(txn.tab_id)  # docs/contract-notes.md "Crashed tabs"
            return self._fail_dispatch(txn, code, text, result)
        try:
            state = txn.state
            if state == "dispatching":  # the main dispatch: shape its result, record its facts, complete
                tab = txn.tab_id
                if not txn.mutates and tab is not None and self._refs.epoch(tab) != txn.epoch:
                    changed = f"tab {shown(tab, 'a tab id', TAB_ID_SHAPE)} changed while it was being read; the result was discarded"
                    return self._finish(txn, failure(txn.request_id, "RENDERER_CHANGED", changed))
                planned = txn.planned
                shaped = results.SHAPERS[planned.method](planned, result)
                return self._finish(txn, success(txn.request_id, self._ledger.record(shaped, txn.closes)))
            if state == "inspecting":
                return self._on_inspection(txn, result)
            tab = results.field(result, "tabId", str, "switch-tab")  # switching
            self._ledger.seen(tab, results.field(result, "generation", int, "switch-tab"), txn.closes)
            txn.switched = True
            return self._issue_main(txn, "dispatch")
        except Refusal as exc:
            if exc.may_have_completed is None:  # a malformed result: the §4 rule for a failed dispatch
                return self._fail_dispatch(txn, exc.code, exc.message, result)
            return self._fail(txn, exc.code, exc.message, exc.may_have_completed)

    def _on_inspection(self, txn: Transaction, result: JsonObject) -> JsonObject:
        """Selected targeting learnt the tabs (``get-tabs``): act on the selected tab, or switch first."""
        tabs = results.parse_tabs(result)
        for t in tabs:
            self._ledger.seen(t["tabId"], t["generation"], txn.closes)
        active = next((t["tabId"] for t in tabs if t["active"]), None)
        if active is None:
            return self._finish(txn, failure(txn.request_id, "TAB_NOT_FOUND", "no tab is selected"))
        if txn.tab_id is None:
            txn.tab_id = txn.request["params"]["tabId"] = active
        elif txn.tab_id != active:
            try:
                self._admission.switch(txn, tabs, active)
            except Refusal as exc:
                return self._finish(txn, failure(txn.request_id, exc.code, exc.message))
            if self._config.require_authorization:
                switch = {"version": 1, "id": None, "method": "tabs.select", "params": {"tabId": txn.tab_id}}
                return self._issue_authorize(txn, "authorize_switch", switch, True)
            return self._issue_switch(txn)
        return self._issue_main(txn, "dispatch")

    def _fail_dispatch(self, txn: Transaction, code: str, message: str, result: Any) -> JsonObject:
        """A failed dispatch: unknown outcome for a dispatched mutation unless the result says otherwise."""
        mutation = txn.state == "switching" or (txn.state == "dispatching" and txn.mutates)
        if mutation and isinstance(result, dict) and result.get("mayHaveCompleted") is False:
            mutation = False
        return self._fail(txn, code, message, mutation)

    def _fail(self, txn: Transaction, code: str, message: str, may_have_completed: bool) -> JsonObject:
        """Finish ``txn`` with a failure. Once a ``switch-tab`` of selected targeting ran (``txn.switched``)
        the host's selection changed, so the failure is an unknown outcome even when what failed after it
        ran nothing: ``mayHaveCompleted:false`` promises that nothing was dispatched or that what ran was
        read-only (§4), and a switch is neither (§5 "dispatched mutations keep their uncertainty";
        docs/contract-notes.md "A failure after a tab switch")."""
        if txn.switched and not may_have_completed:
            may_have_completed = True
            tab = shown(txn.tab_id, "a tab id", TAB_ID_SHAPE)
            message = f"{message} (tab {tab} had been selected for it first: the selection changed)"
        return self._finish(
            txn, failure(txn.request_id, code, message, may_have_completed=may_have_completed)
        )

    # ================================================================== cancel, next, retirement
    def _cancel_input(self, data: Any) -> JsonObject:
        self._working = None  # until the transaction it concerns is known (_abort)
        try:
            tid, reason = inputs.fast_cancel(data)
        except Refusal as exc:
            return rejected(exc.code, exc.message)
        return self._cancel(tid, reason)

    def _cancel(self, tid: str, reason: str) -> JsonObject:
        txn = self._by_id.get(tid)
        self._working = txn
        if txn is None or not txn.accepts("cancel"):
            return rejected("STALE_STEP", f"transaction {tid!r} has nothing pending to cancel")
        code, word = CANCEL_CODES[reason], _CANCEL_WORDS[reason]
        if txn.state in AUTHORIZE_STATES:
            return self._finish(
                txn, failure(txn.request_id, code, f"{txn.method} {word} before it was dispatched")
            )
        assert txn.state in DISPATCH_STATES
        mutation = txn.state == "switching" or (txn.state == "dispatching" and txn.mutates)
        envelope = failure(
            txn.request_id, code, f"{txn.method} {word} after it was dispatched.", may_have_completed=mutation
        )
        if not mutation:
            envelope["error"]["message"] = f"{txn.method} {word}; it was read-only, nothing changed"
        if reason == "renderer-closed":
            return self._finish(txn, envelope)
        if mutation:
            self._ledger.abandoned(txn.id, txn.tab_id)
        pending: JsonObject = txn.pending or {}
        params = pending.get("params")
        tab = params.get("tabId") if isinstance(params, dict) else None
        txn.abandoned = {
            "method": pending.get("method"),
            "tabId": tab if isinstance(tab, str) else txn.tab_id,
        }
        txn.fire("abandon")
        # The lane stays exclusive; the late callback must answer the dispatch's seq, so keep it.
        return steps.complete(
            txn.id, txn.seq + 1, envelope, txn.render, audit.record(envelope, txn, self._elapsed_ms(txn))
        )

    def _next(self, transaction: Any) -> JsonObject:
        try:
            transaction = inputs.read_next(transaction)
        except Refusal as exc:
            return rejected(exc.code, exc.message)
        txn = self._lanes.get("direct") if transaction is None else self._by_id.get(transaction)
        if txn is None:
            return {"step": "idle"}
        if txn.state == "retiring":
            return {"step": "idle", "awaitingRetirement": self._awaiting(txn)}
        pending = txn.pending
        if pending is None:
            return {"step": "idle"}
        if txn.deadline is not None and self._clock() > txn.deadline:
            step = copy_pending(pending)
            step["overdue"] = True
            return step
        return pending

    def _retire(self, txn: Transaction) -> JsonObject:
        txn.fire("retire")
        self._release(txn)
        return {"step": "retired", "transaction": txn.id, "seq": txn.seq}

    def _overdue(self, txn: Transaction) -> bool:
        """A cancelled dispatch still out after ``timeoutMs`` + the retirement grace (§5, v1.1)."""
        return txn.deadline is not None and self._clock() > txn.deadline + self._grace_s

    def _awaiting(self, txn: Transaction) -> JsonObject:
        """``awaitingRetirement`` of ``next``: which dispatch is still out, and whether it is overdue."""
        stuck: JsonObject = txn.abandoned or {}
        info: JsonObject = {
            "transaction": txn.id,
            "seq": txn.seq,
            "method": stuck.get("method"),
            "tabId": stuck.get("tabId"),
        }
        if self._overdue(txn):
            info["overdue"] = True
        return info

    # ================================================================== completion
    def _elapsed_ms(self, txn: Transaction) -> float:
        """``audit.elapsedMs`` of ``txn``: milliseconds since its begin on the clock, to the microsecond
        (``round`` of an integer count: ``round(x, 3)`` formats decimals)."""
        return round((self._clock() - txn.started) * 1_000_000.0) / 1000.0

    def _finish(self, txn: Transaction, envelope: JsonObject) -> JsonObject:
        if txn.dispatched_mutation or envelope.get("mayHaveCompleted"):
            self._ledger.finished(txn, envelope)  # marks, and what an undelivered report would need
            if txn.held and envelope.get("mayHaveCompleted") is False and not envelope.get("success"):
                self._ledger.unchanged(txn)  # refused before any effect: its refs were never spent
        txn.fire("finish")
        self._release(txn)
        txn.seq += 1
        # _elapsed_ms, inlined: the one call of every transaction's end
        record = audit.record(envelope, txn, round((self._clock() - txn.started) * 1_000_000.0) / 1000.0)
        render = txn.render
        if render is None:  # steps.complete, inlined for the canonical frontend
            return {
                "step": "complete",
                "transaction": txn.id,
                "seq": txn.seq,
                "response": envelope,
                "audit": record,
            }
        return steps.complete(txn.id, txn.seq, envelope, render, record)

    def _release(self, txn: Transaction) -> None:
        if self._lanes.get(txn.lane) is txn:
            del self._lanes[txn.lane]
            if txn.lane == "direct" and self._direct_watcher is not None:
                self._direct_watcher(False)
        self._by_id.pop(txn.id, None)

    _JSON_OPS: ClassVar[dict[str, Entry]] = {
        "advance": (_advance, None),
        "begin": (_begin_raw, _CANONICAL),
        "next": (_next, _RAISE),
        "cancel": (_cancel_input, None),
    }
    """:meth:`call_json`'s operations: what :meth:`_run` runs for each (a subclass adds its own)."""


_BEGIN: Final = GatewayCore._begin_raw  # the public calls' ops, one global lookup each
_ADVANCE: Final = GatewayCore._advance
