"""The coordinator: lanes, BUSY, admission and the step protocol (CONTRACT.md §5, §6, §11).

One gateway per browser (or profile). It performs no I/O: it hands the host *steps* and consumes the
host's results. :class:`GatewayCore` decides *which* event to fire; the graph itself lives in
:mod:`kelpie_gateway.transaction` (every state and transition, and only there).

Where everything else went (one responsibility per module):

==========================  ==========================================================================
module                      owns
==========================  ==========================================================================
``api``                     the public :class:`~kelpie_gateway.Gateway` = this coordinator + ``begin_mcp``
``mcp``                     the MCP frontend (JSON-RPC in/out); depends on this module, never the reverse
``schema``                  canonical methods, params, defaults, bounds; the request validator
``config`` / ``catalog``    the gateway config and descriptors; the capability projection
``natives``                 per method: the native endpoint call a transaction dispatches
``results``                 per method: shaping a native result into the canonical result (pure)
``refs``                    snapshot/ref ownership and the invalidation queue
``reader``                  the generated reader / action scripts
``errors`` / ``jsonio``     envelopes and the closed code set; bounded JSON in and out
==========================  ==========================================================================

Lanes: ``direct`` (core methods and direct extensions), ``recovery`` (``recovery:true`` extensions — they
stay reachable while a dialog blocks a direct-lane command), ``dedicated:<name>`` (long-running
extensions). One active transaction per lane; a ``begin`` on an occupied lane completes at once with
``BUSY`` and touches nothing.

Frontends (canonical JSON built in, MCP in :mod:`kelpie_gateway.mcp`) run through
:meth:`GatewayCore.begin_with` and use only its frontend surface (``begin_parsed``, ``complete_now``, ``cancel_request``,
``config``, ``catalog``, ``closed``).

Thread safety: every public method but :meth:`GatewayCore.invalidate_refs` takes the gateway's lock;
``invalidate_refs`` only appends to a lock-free queue that the others drain first (§6).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, NamedTuple, Protocol

import orjson

from . import jsonio, natives, results
from .catalog import Catalog
from .config import Config, Extension, parse_config
from .errors import ERROR_CODES, GatewayPendingError, JsonObject, Refusal, failure, rejected, success
from .refs import RefError, RefStore
from .schema import METHODS, TIMEOUT_DEFAULT_MS, Method, ParamError, validate_request
from .transaction import ACCEPTS, AUTHORIZE_STATES, DISPATCH_STATES, Transaction

Render = Callable[[JsonObject], Any]
"""What turns a transaction's final envelope into its ``complete`` step's ``response`` (a frontend's own
shape); it may return an :class:`Answer` to also set the step's ``httpStatus``."""
Clock = Callable[[], float]
ADVANCE_PARSE_CAP: Final = 256 * 1024 * 1024
"""``advance`` JSON text above this is rejected unparsed; results above 32 MiB are RESPONSE_TOO_LARGE."""
_CANCEL_CODES: Final = {"timeout": "TIMEOUT", "cancelled": "CANCELLED", "renderer-closed": "RENDERER_FAILED"}
_TAB_TARGETED: Final = frozenset({"tabs.select", "tabs.close"})
UNDELIVERED_MEMORY: Final = 4096
CLOSED_TAB_MEMORY: Final = 4096
"""How many closed tab ids the gateway remembers (``advance {"tabClosed"}``, a renderer's TAB_NOT_FOUND)."""
"""How many completed mutating transactions ``advance({"transaction","undelivered":true})`` can still
mark (the most recent ones; the host reports an undelivered response right after failing to send it)."""
_REF_METHODS: Final = frozenset({"tab.click", "tab.type"})
_TEXT: Final = (str, bytes, bytearray, memoryview)
"""JSON text arguments (a tuple: ``isinstance`` with a ``X | Y`` union builds the union on every call)."""
_ID_TYPES: Final = (str, int, float)
_RAW: Final = object()
"""``_hint_params`` before validation: an early refusal's audit hashes the request's own params."""


class Answer(NamedTuple):
    """A :data:`Render`'s answer with an HTTP status for the ``complete`` step (``httpStatus``): what a
    JSON-RPC error of the stateless MCP revision needs when it is decided only after a dispatch
    (docs/mcp.md "Resources")."""

    response: Any
    http_status: int


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


def _request_id(request: Any) -> Any:
    """The request's id when it can be read without trusting the request (for INTERNAL answers)."""
    rid = request.get("id") if isinstance(request, Mapping) else None
    return rid if isinstance(rid, _ID_TYPES) and not isinstance(rid, bool) else None


class _Canonical:
    """The canonical JSON frontend (§3): ``begin``."""

    def translate(self, gw: GatewayCore, message: Any) -> JsonObject:
        return gw._begin_raw(message)

    def internal_error(self, message: Any, exc: Exception) -> tuple[JsonObject, Render | None]:
        return failure(_request_id(message), "INTERNAL", f"internal error: {exc!r}"), None


_CANONICAL: Final = _Canonical()


_PENDING: Final = frozenset({"authorize", "dispatch"})
"""The kinds of step a transaction keeps as ``Transaction.pending`` (handed out only as copies)."""

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _flat(obj: JsonObject) -> bool:
    """True when every value of ``obj`` is a JSON scalar (so a shallow copy is an independent one)."""
    for value in obj.values():  # noqa: SIM110 (a loop: all() of a generator costs more on the hot path)
        if type(value) not in _SCALARS:
            return False
    return True


def _copy_pending(step: JsonObject) -> JsonObject:
    """A copy of a pending step (``Transaction.pending``) for the caller: equal to parsing its JSON, and
    sharing nothing with it.

    A pending step is JSON data the engine built: its nested objects are an ``authorize`` step's
    ``request`` (with ``params``) and ``target``, a ``dispatch`` step's ``params``. When those params hold
    only scalars (the usual case) the copy is made directly, which costs a fraction of a serialise and
    parse round trip; deeper params (an extension's arguments) are copied by parsing the step's JSON."""
    out = step.copy()
    if out["step"] == "authorize":
        request = out["request"]
        params = request["params"]
        if (params and not _flat(params)) or type(request["id"]) not in _SCALARS:  # version, method: str
            copied: JsonObject = orjson.loads(jsonio.dumps(step))
            return copied
        out["request"] = {**request, "params": params.copy()}
        target = out["target"]
        if target is not None:
            out["target"] = target.copy()
        return out
    params = out["params"]
    if params and not _flat(params):
        copied = orjson.loads(jsonio.dumps(step))
        return copied
    out["params"] = params.copy()
    return out


def _own(step: JsonObject) -> JsonObject:
    """What the Python API returns: a step the caller owns (a pending step is copied)."""
    if step["step"] in _PENDING:
        return _copy_pending(step)
    return step


def _json_copy(value: Any) -> tuple[Any, int]:
    """A Python host's JSON value copied through its JSON text, and that text's size in bytes: an independent
    copy, lone surrogates repaired to U+FFFD, the same size as the host's JSON text would have for the caps.
    Raises Refusal (INVALID_REQUEST) for what is not JSON data."""
    try:
        text = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError included
        try:  # lone surrogates are repaired; anything else is not JSON data
            text = jsonio.dumps(value)
        except TypeError as exc:
            raise Refusal("INVALID_REQUEST", f"not JSON data: {exc}") from None
    return orjson.loads(text), len(text)


Checked = tuple[Any, Method | None, str, JsonObject]
"""What :func:`~kelpie_gateway.schema.validate_request` returns: ``(id, method, name, normalized params)``."""
_PLAIN_IDS: Final = frozenset({str, int, float, type(None)})
_PLAIN_PARAMS: Final = frozenset({str, int, bool})
_NO_PARAMS: Final[JsonObject] = {}


def _checked_as_is(request: JsonObject) -> Checked | None:
    """A Python caller's canonical request that needs no copy: what ``validate_request`` says of it when
    its JSON round trip (``begin``'s copy: orjson's text, parsed back) would give an equal request; None
    otherwise (the caller copies and validates the copy, which words every refusal).

    That is: its params, if any, are an exact ``dict`` (a subclass may answer ``[]``, ``in`` or iteration
    other than the contents orjson writes); orjson writes it (so its keys are exact ``str``, no string holds a lone surrogate, no integer
    passes 64 bits) in at most 4 MiB; it validates (so it holds nothing but the version, the id, the method
    name and the params); and those — the id, the name and the params' values, what the gateway
    keeps — are of exactly the types a parse gives (a ``str`` subclass, an enum member or an
    ``extension.call``'s arguments object are not). A known method's validated params are a new dict of
    those immutable values (an unknown method is refused at once), so later edits of the caller's dicts
    reach nothing the gateway keeps. ``tests/engine/test_robustness.py`` checks with Hypothesis that both
    ways answer the same step, compared type for type."""
    if type(request.get("params", _NO_PARAMS)) is not dict:  # a dict subclass may read other than its text
        return None
    try:
        size = len(orjson.dumps(request))
    except TypeError:  # orjson.JSONEncodeError included
        return None
    if size > jsonio.MAX_REQUEST_BYTES:
        return None
    try:
        checked = validate_request(request)
    except ParamError:
        return None
    rid, _, name, params = checked
    if type(name) is not str or type(rid) not in _PLAIN_IDS:
        return None
    for value in params.values():
        if type(value) not in _PLAIN_PARAMS:
            return None
    return checked


_DIGESTS: dict[bytes, str] = {}
_DIGEST_MEMO_ENTRIES: Final = 1024
_DIGEST_MEMO_BYTES: Final = 512


def params_digest(params: Any) -> str | None:
    """Hex SHA-256 of ``params`` in canonical form: compact UTF-8 JSON, object keys sorted, no whitespace
    (``orjson`` ``OPT_SORT_KEYS``). None when ``params`` is not a JSON object (nothing canonical to hash)."""
    if not isinstance(params, dict):
        return None
    try:
        text = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None
    # The same few small params come back again and again (tabs.list's defaults, snapshots): remember
    # their digests (bounded: small texts only, cleared when full).
    digest = _DIGESTS.get(text)
    if digest is None:
        digest = hashlib.sha256(text).hexdigest()
        if len(text) <= _DIGEST_MEMO_BYTES:
            if len(_DIGESTS) >= _DIGEST_MEMO_ENTRIES:
                _DIGESTS.clear()
            _DIGESTS[text] = digest
    return digest


class GatewayCore:
    """The coordinator of a browser-control gateway (CONTRACT.md §5, §6, §11): lanes, BUSY, admission and
    the step protocol. :class:`kelpie_gateway.Gateway` is this class plus the MCP frontend.

    ``config``: Mapping or JSON text (§2); raises :class:`~kelpie_gateway.errors.GatewayConfigError`.
    ``clock``: monotonic seconds (default :func:`time.monotonic`); used for dispatch deadlines
    (``next`` marks an overdue dispatch ``"overdue": true``) and ``audit.elapsedMs``.
    Every other method returns a step dict and never raises for bad input.
    """

    def __init__(self, config: Mapping[str, Any] | str | bytes, *, clock: Clock | None = None) -> None:
        self._config = parse_config(config)
        self._catalog = Catalog(self._config)
        self._refs = RefStore()
        self._lock = threading.RLock()
        self._clock: Clock = clock if clock is not None else time.monotonic
        self._key = secrets.token_hex(16)
        self._lanes: dict[str, Transaction] = {}
        self._by_id: dict[str, Transaction] = {}
        self._counter = 0
        self._reconcile: set[str] = set()
        self._recent_mutations: OrderedDict[str, str] = OrderedDict()
        self._closed_tabs: OrderedDict[str, int] = OrderedDict()  # tab -> its close's number (_closes)
        self._closes = 0  # tabs reported gone so far: a dispatch issued at N predates closes N+1, N+2 …
        self._grace_s = self._config.retirement_grace_ms / 1000.0
        self._closed = False
        self._working: Transaction | None = None
        # What the audit of an early refusal describes (``_early_audit``): the parsed request of the begin
        # in progress and, once validated, its normalized params (``_RAW``: not validated, use its own).
        self._hint: Any = None
        self._hint_params: Any = _RAW
        self._natives = natives.Context(self._key, self._refs.resolve, self._refs.resume)
        self._direct_watcher: Callable[[bool], None] | None = None

    # ================================================================== public API
    def begin(self, request: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Start a canonical transaction (§5). Returns an ``authorize``, ``dispatch`` or ``complete`` step."""
        step = self._begin_step(request, _CANONICAL)
        if step["step"] in _PENDING:  # _own, inlined: the caller gets its own copy
            return _copy_pending(step)
        return step

    def begin_with(self, message: Any, frontend: Frontend) -> JsonObject:
        """Start a transaction from ``message`` through ``frontend`` (the canonical JSON one for
        :meth:`begin`, MCP for ``begin_mcp``) under the gateway's lock, after draining queued ref
        invalidations (§6). A gateway bug while translating completes with the frontend's INTERNAL
        answer, so the caller always gets a step."""
        return _own(self._begin_step(message, frontend))

    def _begin_step(self, message: Any, frontend: Frontend = _CANONICAL) -> JsonObject:
        lock = self._lock  # acquire/release: cheaper than a with block on the hot path
        lock.acquire()
        try:
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            if frontend is _CANONICAL:
                return self._begin_raw(message)
            return frontend.translate(self, message)
        except Exception as exc:  # a bug: report it, keep the gateway usable
            envelope, render = frontend.internal_error(message, exc)
            return self.complete_now(envelope, render)
        finally:
            self._hint = None
            self._hint_params = _RAW
            lock.release()

    def next(self, transaction: str | None = None) -> JsonObject:
        """Re-read the pending step of ``transaction`` (None = the direct lane) without changing anything.

        Returns the pending ``authorize``/``dispatch`` step (``"overdue": true`` added once a dispatch's
        ``timeoutMs`` has passed on the clock: the host must ``cancel``), or ``{"step":"idle"}``. While a
        cancelled dispatch's callback is still out, ``idle`` carries ``awaitingRetirement``:
        ``{transaction, seq, method, tabId}`` (the native endpoint and tab of the stuck dispatch) plus
        ``"overdue": true`` once ``timeoutMs`` + ``retirementGraceMs`` (config, default 5000, at most
        5000) have passed: the host must then end the stuck work (stop the page's script, else close or
        crash that renderer) and report ``{"transaction","retire":"renderer-closed"}`` (§5, v1.1)."""
        step = self._next_step(transaction)
        if step["step"] in _PENDING:  # _own, inlined
            return _copy_pending(step)
        return step

    def _next_step(self, transaction: str | None) -> JsonObject:
        with self._lock:
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            if transaction is None:
                txn = self._lanes.get("direct")
            elif isinstance(transaction, str):
                txn = self._by_id.get(transaction)
            else:
                return rejected("INVALID_REQUEST", "transaction must be a string or null")
            if txn is None:
                return {"step": "idle"}
            if txn.state == "retiring":
                return {"step": "idle", "awaitingRetirement": self._awaiting(txn)}
            pending = txn.pending
            if pending is None:
                return {"step": "idle"}
            if txn.deadline is not None and self._clock() > txn.deadline:
                step = _copy_pending(pending)
                step["overdue"] = True
                return step
            return pending

    def advance(self, result: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Consume one host result: ``{"transaction","seq","result"}`` or ``{"transaction","retire":
        "renderer-closed"}``. A result that does not match the pending step is ``rejected``
        (``STALE_STEP``) and changes nothing; malformed input is ``rejected`` ``INVALID_REQUEST``.

        Host reports ride here too (no C ABI function of their own): ``{"transaction","undelivered": true}``
        (answer ``noted`` with ``reconcileRequired``) and ``{"tabClosed": tabId}``, a tab gone for good
        without a ``tabs.close`` through the gateway (answer ``{"step":"noted","tabClosed","reconcileCleared"}``;
        every later call naming it is TAB_NOT_FOUND: §4, §6; docs/contract-notes.md "Closed tabs")."""
        step = self._advance_step(result)
        if step["step"] in _PENDING:  # _own, inlined: the caller gets its own copy
            return _copy_pending(step)
        return step

    def _advance_step(self, result: Any) -> JsonObject:
        lock = self._lock
        lock.acquire()
        try:
            self._working = None
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            return self._advance(result)
        except Exception as exc:
            return self._abort(exc)
        finally:
            lock.release()

    def cancel(self, cancel: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Cancel ``{"transaction","reason": "timeout"|"cancelled"|"renderer-closed"}`` (§5).

        During ``authorize`` or a read-only dispatch: complete, refused, ``mayHaveCompleted:false``.
        During a mutating dispatch: complete, ``mayHaveCompleted:true``. After a cancel during any
        dispatch the lane stays exclusive until the late callback retires (not for renderer-closed)."""
        return _own(self._cancel_step(cancel))

    def _cancel_step(self, cancel: Any) -> JsonObject:
        with self._lock:
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            self._working = None
            try:
                return self._cancel(cancel)
            except Exception as exc:
                return self._abort(exc)

    _JSON_OPS: ClassVar[dict[str, Callable[[Any, Any], JsonObject]]] = {
        "advance": _advance_step,
        "begin": _begin_step,
        "next": _next_step,
        "cancel": _cancel_step,
    }
    """:meth:`call_json`'s operations: the step function each one runs (a subclass adds its own)."""

    def call_json(self, operation: str, argument: Any) -> bytes:
        """The C ABI's entry (``abi/shims.py``; not part of the Python API of §11): run ``operation``
        (``begin``, ``next``, ``advance`` or ``cancel``; :class:`~kelpie_gateway.Gateway` adds
        ``begin_mcp``) on ``argument`` and return the step as compact UTF-8 JSON — byte for byte
        ``dumps(getattr(self, operation)(argument))``, without the Python API's copy of a pending step (the
        gateway's own is serialised).
        Raises ``ValueError`` for an unknown operation (a caller's bug); never for bad input."""
        run = self._JSON_OPS.get(operation)  # one lookup, no chain of comparisons or super() call
        if run is None:
            raise ValueError(f"unknown operation {operation!r}")
        return jsonio.dumps(run(self, argument))

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
        with self._lock:
            refs = self._refs
            if refs.queued:  # the usual case: nothing queued, no call
                refs.drain()
            pending = [t.id for t in self._by_id.values() if t.callback_pending]
            if pending:
                raise GatewayPendingError(f"renderer callback pending for {', '.join(pending)}")
            self._closed = True
            self._lanes.clear()
            if self._direct_watcher is not None:
                self._direct_watcher(False)
            self._by_id.clear()

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
        return self._complete_step(
            txn_id or self._new_id(), 1, envelope, render, self._early_audit(envelope, method)
        )

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
        step = self._cancel({"transaction": matches[0].id, "reason": "cancelled"})
        return step if step.get("step") == "complete" else None

    # ================================================================== begin
    def _new_id(self) -> str:
        self._counter += 1
        return f"t{self._counter}"

    def _begin_raw(self, request: Any, render: Render | None = None) -> JsonObject:
        if type(request) is bytes and len(request) <= jsonio.MAX_REQUEST_BYTES:  # the C ABI's usual input
            try:
                parsed = orjson.loads(request)
            except orjson.JSONDecodeError:
                pass  # jsonio.loads words the refusal
            else:
                return self._begin_parsed(parsed, render)
        if isinstance(request, _TEXT):
            try:
                request = jsonio.loads(request)
            except jsonio.JsonError as exc:
                return self.complete_now(failure(None, exc.code, str(exc)), render)
        elif type(request) is dict and (checked := _checked_as_is(request)) is not None:
            return self._begin_parsed(request, render, checked)  # its copy would be equal: none is made
        elif type(request) is dict or isinstance(request, Mapping):
            # An independent copy (later edits by the caller change nothing), the same 4 MiB cap and the
            # same refusal of lone surrogates as JSON text.
            try:
                text = orjson.dumps(request if type(request) is dict else dict(request))  # any Mapping (§11)
                # orjson's own output is valid JSON without lone surrogates: only the cap can refuse it
                # (jsonio.loads words that refusal)
                request = orjson.loads(text) if len(text) <= jsonio.MAX_REQUEST_BYTES else jsonio.loads(text)
            except orjson.JSONEncodeError as exc:
                env = failure(_request_id(request), "INVALID_REQUEST", f"not JSON data: {exc}")
                return self.complete_now(env, render)
            except jsonio.JsonError as exc:
                return self.complete_now(failure(_request_id(request), exc.code, str(exc)), render)
        return self._begin_parsed(request, render)

    def _begin_parsed(
        self, request: Any, render: Render | None, checked: Checked | None = None
    ) -> JsonObject:
        """Run a parsed canonical request (also the entry point of the MCP translation); ``checked``: what
        ``validate_request(request)`` returned, when the caller already asked it."""
        # What the audit of an early refusal shows: the method and tab the request named, if readable
        # (worked out by ``_early_audit`` only when a refusal needs it).
        self._hint = request
        if self._closed:
            return self.complete_now(failure(None, "INVALID_REQUEST", "this gateway is closed"), render)
        try:
            rid, method, name, params = validate_request(request) if checked is None else checked
            self._hint_params = params  # normalized: defaults filled in
        except ParamError as exc:
            return self.complete_now(failure(getattr(exc, "request_id", None), exc.code, str(exc)), render)
        if method is None:
            advertised = ", ".join(self._catalog.methods)
            return self.complete_now(
                failure(
                    rid, "UNSUPPORTED_METHOD", f"unknown method {name!r}; this gateway offers: {advertised}"
                ),
                render,
            )
        code = self._catalog.refusal(method)
        if code is not None and name != "extension.call":
            return self.complete_now(failure(rid, code, self._refusal_message(code, name)), render, name)
        lane, mutates, ext, tab_id = "direct", method.mutates, None, None
        if name == "extension.call":
            ext = self._catalog.extensions.get(params["name"])
            if ext is None:
                return self.complete_now(
                    failure(rid, "EXTENSION_NOT_ADMITTED", f"no admitted extension named {params['name']!r}"),
                    render,
                    name,
                )
            arguments = params["arguments"]  # an object: validated
            refusal = ext.check_arguments(arguments)
            if refusal is not None:
                return self.complete_now(failure(rid, refusal[0], refusal[1]), render, name)
            lane, mutates = ext.lane, ext.mutates
            if isinstance(arguments.get("tabId"), str):
                tab_id = arguments["tabId"]  # its target tab: invalidation and RECONCILE_REQUIRED apply
        if method.tab_scoped or name in _TAB_TARGETED:
            tab_id = params.get("tabId")
            pin = self._config.pinned_tab
            if pin is not None:
                if tab_id is None:
                    tab_id = params["tabId"] = pin
                elif tab_id != pin:
                    return self.complete_now(
                        failure(
                            rid, "TAB_PINNED", f"this session is pinned to tab {pin!r}; {tab_id!r} is refused"
                        ),
                        render,
                        name,
                    )
            if tab_id is None and self._config.targeting == "direct":
                return self.complete_now(
                    failure(rid, "TAB_REQUIRED", f"{name} needs params.tabId (direct targeting)"),
                    render,
                    name,
                )
        active = self._lanes.get(lane)
        if active is not None:
            what = active.method
            if active.state == "retiring":
                what = "waiting for a cancelled dispatch to retire"
                if self._overdue(active):
                    what += "; overdue, the host is ending it"
            return self.complete_now(
                failure(
                    rid,
                    "BUSY",
                    f"lane {lane!r} is busy ({what}, transaction {active.id}); nothing was dispatched",
                ),
                render,
                name,
            )
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
        )
        try:
            self._precheck(txn, tab_id)
        except Refusal as exc:
            return self.complete_now(failure(rid, exc.code, exc.message), render, name, txn_id=txn.id)
        self._lanes[lane] = txn
        if lane == "direct" and self._direct_watcher is not None:
            self._direct_watcher(True)
        self._by_id[txn.id] = txn
        if self._config.require_authorization:
            return self._issue_authorize(txn, "authorize", txn.request, txn.mutates)
        return self._after_admission(txn)

    def _refusal_message(self, code: str, name: str) -> str:
        if code == "UNSUPPORTED_METHOD":
            return f"{name} is not implemented by this host; this gateway offers: {', '.join(self._catalog.methods)}"
        if code == "TAB_PINNED":
            return f"{name} is refused: this session is pinned to tab {self._config.pinned_tab!r}"
        return f"{name}: {ERROR_CODES[code][1]}"

    def _precheck(self, txn: Transaction, tab_id: str | None) -> None:
        """Ref validity and RECONCILE_REQUIRED for ``tab_id`` (None: the ref's own tab); raises Refusal."""
        params = txn.request["params"]
        if txn.method in _REF_METHODS:
            ref = params["ref"]
            target = tab_id if tab_id is not None else (self._refs.owner(ref) or "")
            self._refuse_closed(target)
            try:
                self._refs.resolve(ref, target)
            except RefError as exc:
                raise Refusal(exc.code, exc.message) from None
        if txn.ext is not None:
            self._captured_handles(txn, tab_id)
        if txn.method == "tab.snapshot":  # scope and cursor are refused before anything runs (§9 v1.1)
            if params.get("cursor") is not None or params.get("scope") is not None:
                self._refuse_closed(tab_id)
            natives.snapshot_anchor(params, tab_id or "", self._natives)
        if txn.mutates and tab_id is not None and tab_id in self._reconcile:
            raise Refusal(
                "RECONCILE_REQUIRED",
                f"an earlier action on tab {tab_id!r} has an unknown outcome; take a tab.snapshot (or tabs.list) "
                "of it before acting on it again",
            )

    def _refuse_closed(self, tab: str | None) -> None:
        """A ref or cursor of a tab known to be closed is refused TAB_NOT_FOUND (what the renderer answers
        for that tab), not a ref code that would send the client to snapshot a tab that is gone."""
        if tab is not None and tab in self._closed_tabs:
            raise Refusal(
                "TAB_NOT_FOUND",
                f"tab {tab!r} was closed; its refs and cursors went with it (tabs.list shows the open tabs)",
            )

    def _tab_gone(self, tab: str) -> bool:
        """Tab ``tab`` no longer exists (the host reported it closed, or a renderer answered TAB_NOT_FOUND
        for it): its refs are forgotten and a RECONCILE_REQUIRED mark on it is cleared — nothing about a tab
        that is gone can be observed, and any later call naming it is TAB_NOT_FOUND, read or write alike.
        Returns whether a mark was cleared. The id is remembered (newest :data:`CLOSED_TAB_MEMORY`) until a
        renderer result of a dispatch issued after the close reports that tab again (:meth:`_seen`), so an
        unknown outcome finishing later does not mark it, and a result the browser produced before the
        close (a ``get-tabs`` still listing it) does not bring it back."""
        self._refs.forget_tab(tab)
        marked = tab in self._reconcile
        self._reconcile.discard(tab)
        closed = self._closed_tabs
        self._closes += 1
        closed[tab] = self._closes
        closed.move_to_end(tab)
        if len(closed) > CLOSED_TAB_MEMORY:
            closed.popitem(last=False)
        return marked

    def _seen(self, tab: str, generation: int, txn: Transaction) -> bool:
        """The result of ``txn``'s pending dispatch reported ``tab`` open at ``generation``. A tab reported
        gone after that dispatch was issued stays gone (the browser answered before the close: the result
        is stale about it); returns False then. A dispatch issued after the close that reports the id
        again (a host that reuses ids) makes it an ordinary tab once more (docs/contract-notes.md
        "Closed tabs")."""
        closed = self._closed_tabs
        if closed:
            when = closed.get(tab)
            if when is not None:
                if when > txn.closes:
                    return False
                del closed[tab]
        self._refs.note_generation(tab, generation)
        return True

    def _captured_handles(self, txn: Transaction, tab_id: str | None) -> dict[str, str]:
        """The renderer handles behind a ref-bearing extension's ``refArguments`` (§6 rules, before any
        dispatch; ``tab_id`` None: each ref's own tab). Raises Refusal with the ref's refusal code."""
        ext: Extension | None = txn.ext
        if ext is None or not ext.ref_arguments:
            return {}
        arguments = txn.request["params"]["arguments"]
        handles: dict[str, str] = {}
        for arg in ext.ref_arguments:
            ref = arguments.get(arg) if isinstance(arguments, dict) else None
            if not isinstance(ref, str):
                continue
            target = tab_id if tab_id is not None else (self._refs.owner(ref) or "")
            self._refuse_closed(target)
            try:
                handles[arg] = self._refs.resolve(ref, target)
            except RefError as exc:
                raise Refusal(exc.code, exc.message) from None
        return handles

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
        txn.closes = self._closes  # tabs reported gone from here on are gone for this dispatch's result
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
            self._precheck(txn, txn.tab_id)
            # What the main dispatch acts on, fixed once the target tab is known (after any inspection).
            ext: Extension | None = txn.ext
            planned = txn.planned = results.Planned(
                txn.method,
                txn.request["params"],
                txn.tab_id,
                txn.mutates,
                ext.method if ext is not None else None,
                (self._captured_handles(txn, txn.tab_id) or None) if ext is not None else None,
            )
            endpoint, params = natives.BUILDERS[planned.method](planned, self._natives)
        except Refusal as exc:  # after a dispatched switch-tab the selection changed (_fail)
            return self._fail(txn, exc.code, exc.message, False)
        step = self._issue_dispatch(txn, event, endpoint, params, txn.mutates)
        if txn.mutates:
            txn.dispatched_mutation = True
            self._invalidate_for(txn)
        txn.epoch = self._refs.epoch(txn.tab_id)
        return step

    def _invalidate_for(self, txn: Transaction) -> None:
        """Mutations dispatched inside the gateway invalidate their target tab's refs (§6)."""
        if txn.method == "tabs.open":
            return
        target = txn.tab_id
        ext: Extension | None = txn.ext
        if ext is not None:
            arg = (
                txn.request["params"]["arguments"].get("tabId")
                if isinstance(txn.request["params"]["arguments"], dict)
                else None
            )
            target = arg if isinstance(arg, str) else None
            if target is None:
                self._refs.invalidate_all()
                return
        if target is not None:
            self._refs.invalidate(target)

    # ================================================================== completion
    def _audit(self, txn: Transaction, envelope: JsonObject) -> JsonObject:
        """The ``audit`` object of a ``complete`` step (docs/engine.md, "The audit record"): what an
        audit trail needs and nothing a request carried in clear (the params only as a SHA-256)."""
        if envelope["success"] is True:
            outcome, code, unknown = "success", None, False
        else:
            unknown = envelope.get("mayHaveCompleted") is True
            outcome, code = ("unknown" if unknown else "refused"), envelope["error"]["code"]
        params = txn.request["params"]
        return {
            "method": txn.method,
            "extension": params["name"] if txn.method == "extension.call" else None,  # validated: a str
            "lane": txn.lane,
            "tabId": txn.tab_id,
            "outcome": outcome,
            "code": code,
            "mayHaveCompleted": unknown,
            "mutates": txn.mutates,
            "authorized": txn.authorized,
            "dispatches": txn.dispatches,
            # milliseconds to the microsecond (round(x) of an integer count: round(x, 3) formats decimals)
            "elapsedMs": round((self._clock() - txn.started) * 1_000_000.0) / 1000.0,
            "paramsSha256": params_digest(params),
        }

    def _early_audit(self, envelope: JsonObject, method: str | None) -> JsonObject:
        """The ``audit`` of a transaction refused before it took a lane: the method (``method``, else the
        one the request of the begin in progress named, if it is a canonical method) and tab the request
        named, its params (normalized once validated) as a SHA-256."""
        request = self._hint
        raw = request.get("params") if isinstance(request, dict) else None
        if not method:  # None, or an empty name from a frontend: the request's own, if canonical
            named = request.get("method") if isinstance(request, dict) else None
            method = named if isinstance(named, str) and named in METHODS else None
        tab = raw.get("tabId") if isinstance(raw, dict) else None
        params = raw if self._hint_params is _RAW else self._hint_params
        extension = params.get("name") if method == "extension.call" and isinstance(params, dict) else None
        ok = envelope.get("success") is True
        unknown = not ok and envelope.get("mayHaveCompleted") is True
        return {
            "method": method,
            "extension": extension if isinstance(extension, str) else None,
            "lane": None,
            "tabId": tab if isinstance(tab, str) else None,
            "outcome": "success" if ok else ("unknown" if unknown else "refused"),
            "code": None if ok else envelope["error"]["code"],
            "mayHaveCompleted": unknown,
            "mutates": False,
            "authorized": None,
            "dispatches": 0,
            "elapsedMs": 0.0,
            "paramsSha256": params_digest(params),
        }

    def _complete_step(
        self, txn_id: str, seq: int, envelope: JsonObject, render: Render | None, audit: JsonObject
    ) -> JsonObject:
        response = render(envelope) if render is not None else envelope
        status = 202 if response is None else None
        if type(response) is Answer:
            response, status = response
        step: JsonObject = {
            "step": "complete",
            "transaction": txn_id,
            "seq": seq,
            "response": response,
            "audit": audit,
        }
        if status is not None:
            step["httpStatus"] = status
        return step

    def _release(self, txn: Transaction) -> None:
        if self._lanes.get(txn.lane) is txn:
            del self._lanes[txn.lane]
            if txn.lane == "direct" and self._direct_watcher is not None:
                self._direct_watcher(False)
        self._by_id.pop(txn.id, None)

    def _remember_mutation(self, txn_id: str, tab: str) -> None:
        recent = self._recent_mutations
        recent[txn_id] = tab
        if len(recent) > UNDELIVERED_MEMORY:
            recent.popitem(last=False)

    def _finish(self, txn: Transaction, envelope: JsonObject) -> JsonObject:
        if (
            envelope.get("mayHaveCompleted")
            and txn.tab_id is not None
            and txn.tab_id not in self._closed_tabs
        ):
            self._reconcile.add(txn.tab_id)
        if txn.dispatched_mutation and (envelope.get("success") or envelope.get("mayHaveCompleted")):
            # What an undelivered response would leave the client ignorant of (advance "undelivered").
            result = envelope.get("result")
            tab = txn.tab_id
            if txn.method == "tabs.open" and isinstance(result, dict):
                tab = result.get("tabId")
            elif txn.method == "tabs.close" and envelope.get("success"):
                tab = None
            if isinstance(tab, str) and tab not in self._closed_tabs:
                self._remember_mutation(txn.id, tab)
        txn.fire("finish")
        self._release(txn)
        txn.seq += 1
        render = txn.render
        if render is None:  # _complete_step, inlined for the canonical frontend
            return {
                "step": "complete",
                "transaction": txn.id,
                "seq": txn.seq,
                "response": envelope,
                "audit": self._audit(txn, envelope),
            }
        return self._complete_step(txn.id, txn.seq, envelope, render, self._audit(txn, envelope))

    # ================================================================== advance / cancel
    def _parse_host(self, data: Any, cap: int) -> tuple[Any, int]:
        if type(data) is bytes and len(data) <= cap:  # the C ABI's usual input: parsed as it is
            try:
                return orjson.loads(data), len(data)
            except orjson.JSONDecodeError:
                pass  # jsonio.loads words the refusal, or repairs lone surrogates
        if isinstance(data, _TEXT):
            size = len(data)
            try:
                return jsonio.loads(data, cap=cap, lone_surrogates=True), size
            except jsonio.JsonError as exc:
                raise Refusal("INVALID_REQUEST", str(exc)) from None
        if type(data) is dict or isinstance(data, Mapping):
            # Round-trip a Python host's dict: an independent copy, lone surrogates repaired, and the
            # same size as JSON text for the 32 MiB result cap.
            return _json_copy(data if type(data) is dict else dict(data))
        raise Refusal("INVALID_REQUEST", "expected a JSON object")

    def _advance(self, data: Any) -> JsonObject:
        if type(data) is dict and len(data) == 3:  # a Python host's usual {transaction, seq, result}
            tid = data.get("transaction")
            txn = self._by_id.get(tid) if type(tid) is str else None
            seq = data.get("seq")
            if txn is not None and type(seq) is int and seq == txn.seq and "result" in data:
                result = data["result"]
                if (
                    type(result) is dict
                    and len(result) == 1
                    and result.get("success") is True
                    and type(next(iter(result))) is str
                ):
                    k1, k2, k3 = data  # a str subclass key is not JSON data: the copy below refuses it
                    if type(k1) is str and type(k2) is str and type(k3) is str:
                        # exactly {"success": true} (an admission, or an empty success): its copy would
                        # equal it and nothing of it is kept, so it is read as it is (size: its JSON text's)
                        return self._advance_result(txn, result, 16)
                try:  # anything else is copied as below (the same copy, size and refusals)
                    msg, size = _json_copy(data)
                except Refusal as exc:
                    return rejected(exc.code, exc.message)
                return self._advance_result(txn, msg["result"], size)
        try:
            msg, size = self._parse_host(data, ADVANCE_PARSE_CAP)
        except Refusal as exc:
            return rejected(exc.code, exc.message)
        if not isinstance(msg, dict):
            return rejected("INVALID_REQUEST", "advance takes a JSON object")
        if "tabClosed" in msg:
            tab = msg["tabClosed"]
            if set(msg) != {"tabClosed"} or not isinstance(tab, str) or not tab:
                return rejected("INVALID_REQUEST", 'a closed tab is reported as {"tabClosed": "<tabId>"}')
            return {"step": "noted", "tabClosed": tab, "reconcileCleared": self._tab_gone(tab)}
        tid = msg.get("transaction")
        if not isinstance(tid, str):
            return rejected("INVALID_REQUEST", "advance needs a string 'transaction'")
        if len(msg) == 3 and "seq" in msg and "result" in msg:  # the usual {transaction, seq, result}
            seq = msg["seq"]
            if type(seq) is not int:
                return rejected("INVALID_REQUEST", "'seq' must be an integer")
            txn = self._by_id.get(tid)
            self._working = txn
            if txn is None or seq != txn.seq:
                return rejected(
                    "STALE_STEP",
                    f"no pending step {tid!r} seq {seq}; late, duplicated or forged result ignored",
                )
            return self._advance_result(txn, msg["result"], size)
        if "undelivered" in msg:
            if set(msg) != {"transaction", "undelivered"} or msg["undelivered"] is not True:
                return rejected(
                    "INVALID_REQUEST", 'an undelivered response is {"transaction": T, "undelivered": true}'
                )
            return self._undelivered(tid)
        if "retire" in msg:
            if set(msg) != {"transaction", "retire"} or msg["retire"] != "renderer-closed":
                return rejected(
                    "INVALID_REQUEST", 'a retirement is {"transaction": T, "retire": "renderer-closed"}'
                )
            txn = self._by_id.get(tid)
            if txn is None or not txn.accepts("retire"):
                return rejected(
                    "STALE_STEP", f"transaction {tid!r} has no cancelled dispatch awaiting retirement"
                )
            return self._retire(txn)
        extra = sorted(set(msg) - {"transaction", "seq", "result"})
        what = f"unknown field(s) {extra}" if extra else "'seq' and 'result' are required"
        return rejected("INVALID_REQUEST", f"advance takes {{transaction, seq, result}}: {what}")

    def _advance_result(self, txn: Transaction, result: Any, size: int) -> JsonObject:
        """``advance({"transaction", "seq", "result"})`` naming ``txn``'s current seq; ``result`` is the
        gateway's own (copied, or exactly ``{"success": true}``), ``size`` the input's JSON size."""
        self._working = txn
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

    def _on_authorization(self, txn: Transaction, result: Any) -> JsonObject:
        if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
            return rejected(
                "INVALID_REQUEST",
                'an authorization result is {"success": true} or {"success": false, "error": …}',
            )
        if not result["success"]:
            err = result.get("error")
            message = err.get("message") if isinstance(err, dict) else None
            text = (
                message
                if isinstance(message, str) and message
                else "the host's policy refused this transaction"
            )
            return self._finish(txn, failure(txn.request_id, "NOT_AUTHORIZED", text))
        txn.authorized = True
        if txn.state == "authorizing_switch":
            return self._issue_switch(txn)
        return self._after_admission(txn)

    def _issue_switch(self, txn: Transaction) -> JsonObject:
        step = self._issue_dispatch(txn, "switch", "switch-tab", {"tabId": txn.tab_id}, True)
        txn.dispatched_mutation = True
        return step

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
            message = f"{message} (tab {txn.tab_id!r} had been selected for it first: the selection changed)"
        return self._finish(
            txn, failure(txn.request_id, code, message, may_have_completed=may_have_completed)
        )

    def _on_result(self, txn: Transaction, result: Any) -> JsonObject:
        if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
            return self._fail_dispatch(
                txn, "RENDERER_FAILED", "malformed renderer result (no boolean 'success')", result
            )
        if not result["success"]:
            err = result.get("error")
            code = err.get("code") if isinstance(err, dict) else None
            message = err.get("message") if isinstance(err, dict) else None
            text = message if isinstance(message, str) and message else "the renderer reported a failure"
            if code not in results.PASSTHROUGH_CODES:
                text = f"{text} (renderer code {code!r})" if code is not None else text
                code = "RENDERER_FAILED"
            elif code == "TAB_NOT_FOUND" and txn.tab_id is not None and txn.state != "inspecting":
                self._tab_gone(txn.tab_id)  # the renderer says the tab does not exist: settle it as closed
            if result.get("crashed") is True and txn.tab_id is not None and txn.state != "inspecting":
                # The tab was observed with its renderer crashed (as tabs.list reports it): the document an
                # unknown action ran in is gone, so a RECONCILE_REQUIRED mark is settled and tab.navigate
                # can recover the tab (docs/contract-notes.md "Crashed tabs").
                self._reconcile.discard(txn.tab_id)
            return self._fail_dispatch(txn, str(code), text, result)
        try:
            state = txn.state
            if state == "dispatching":  # the main dispatch: shape its result, record its facts, complete
                tab = txn.tab_id
                if not txn.mutates and tab is not None and self._refs.epoch(tab) != txn.epoch:
                    return self._finish(
                        txn,
                        failure(
                            txn.request_id,
                            "RENDERER_CHANGED",
                            f"tab {tab!r} changed while it was being read; the result was discarded",
                        ),
                    )
                planned = txn.planned
                shaped = results.SHAPERS[planned.method](planned, result)
                return self._finish(txn, success(txn.request_id, self._record(shaped, txn)))
            if state == "inspecting":
                return self._on_inspection(txn, result)
            tab = results.field(result, "tabId", str, "switch-tab")  # switching
            self._seen(tab, results.field(result, "generation", int, "switch-tab"), txn)
            txn.switched = True
            return self._issue_main(txn, "dispatch")
        except Refusal as exc:
            if exc.may_have_completed is None:  # a malformed result: the §4 rule for a failed dispatch
                return self._fail_dispatch(txn, exc.code, exc.message, result)
            return self._fail(txn, exc.code, exc.message, exc.may_have_completed)

    def _on_inspection(self, txn: Transaction, result: JsonObject) -> JsonObject:
        tabs = results.parse_tabs(result)
        for t in tabs:
            self._seen(t["tabId"], t["generation"], txn)
        active = next((t for t in tabs if t["active"]), None)
        if active is None:
            return self._finish(txn, failure(txn.request_id, "TAB_NOT_FOUND", "no tab is selected"))
        wanted = txn.tab_id
        if wanted is None:
            txn.tab_id = txn.request["params"]["tabId"] = active["tabId"]
        elif wanted != active["tabId"]:
            if not txn.mutates:
                return self._finish(
                    txn,
                    failure(
                        txn.request_id,
                        "TAB_NOT_SELECTED",
                        f"tab {wanted!r} is not the selected tab ({active['tabId']!r}); reads never switch",
                    ),
                )
            if all(t["tabId"] != wanted for t in tabs):
                return self._finish(txn, failure(txn.request_id, "TAB_NOT_FOUND", f"no tab {wanted!r}"))
            if "switch-tab" not in self._config.native_methods:
                return self._finish(
                    txn,
                    failure(
                        txn.request_id,
                        "TAB_NOT_SELECTED",
                        f"tab {wanted!r} is not selected and this host cannot switch tabs",
                    ),
                )
            try:
                self._precheck(txn, wanted)
            except Refusal as exc:
                return self._finish(txn, failure(txn.request_id, exc.code, exc.message))
            if self._config.require_authorization:
                switch_request = {
                    "version": 1,
                    "id": None,
                    "method": "tabs.select",
                    "params": {"tabId": wanted},
                }
                return self._issue_authorize(txn, "authorize_switch", switch_request, True)
            return self._issue_switch(txn)
        return self._issue_main(txn, "dispatch")

    def _record(self, shaped: results.Shaped, txn: Transaction) -> JsonObject:
        """Apply a shaped result's facts to the ref store and reconcile marks; returns the result object
        (a snapshot's refs, id and generation filled in)."""
        refs = self._refs
        stale: set[str] | None = None
        for tab, generation in shaped.generations:
            if not self._seen(tab, generation, txn):
                stale = {tab} if stale is None else stale | {tab}
        if shaped.observed_tabs is not None:
            listed = set(shaped.observed_tabs)
            if stale is not None:  # closed after the listing was taken: not listed as open (_seen)
                shaped.result["tabs"] = [t for t in shaped.result["tabs"] if t["tabId"] not in stale]
            self._reconcile.clear()  # every open tab was just observed; unlisted ones are gone
            for known in refs.known_tabs():
                if known not in listed:
                    refs.forget_tab(known)
        if shaped.invalidate is not None:
            refs.invalidate(shaped.invalidate)
        if shaped.closed is not None:
            refs.forget_tab(shaped.closed)
            self._reconcile.discard(shaped.closed)
        out = shaped.result
        snap = shaped.snapshot
        if snap is not None:
            seen = snap.generation if snap.generation is not None else refs.generation(snap.tab_id)
            try:
                if snap.cursor is not None:  # the next page of the same snapshot (§9 v1.1)
                    if seen != refs.generation(snap.tab_id):
                        raise RefError(
                            "STALE_SNAPSHOT",
                            f"tab {snap.tab_id!r} shows a new document; take a new tab.snapshot",
                        )
                    sid, issued, next_cursor = refs.extend_snapshot(
                        snap.tab_id, snap.cursor, snap.handles, snap.rest
                    )
                else:
                    sid, issued, next_cursor = refs.issue_snapshot(snap.tab_id, seen, snap.handles, snap.rest)
            except RefError as exc:  # the cursor stopped being the tab's latest while the page was read
                raise Refusal(exc.code, exc.message) from None
            out["generation"] = seen
            out["snapshot"] = f"s{sid}"
            for item, ref in zip(out["elements"], issued, strict=True):
                item["ref"] = ref
            if next_cursor is not None:
                out["next"] = next_cursor
            self._reconcile.discard(snap.tab_id)
        return out

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

    def _undelivered(self, tid: str) -> JsonObject:
        """The host could not deliver transaction ``tid``'s response (its client went away): a dispatched
        mutation's tab becomes RECONCILE_REQUIRED, since the client never learnt what happened (§4)."""
        tab = self._recent_mutations.pop(tid, None)
        if tab is not None and tab in self._closed_tabs:
            tab = None  # closed since: there is nothing left to reconcile
        if tab is not None:
            self._reconcile.add(tab)
        return {"step": "noted", "transaction": tid, "reconcileRequired": tab}

    def _cancel(self, data: Any) -> JsonObject:
        try:
            msg, _ = self._parse_host(data, jsonio.MAX_REQUEST_BYTES)
        except Refusal as exc:
            return rejected(exc.code, exc.message)
        if not isinstance(msg, dict) or set(msg) != {"transaction", "reason"}:
            return rejected(
                "INVALID_REQUEST",
                'a cancel is {"transaction": T, "reason": "timeout"|"cancelled"|"renderer-closed"}',
            )
        tid, reason = msg["transaction"], msg["reason"]
        if not isinstance(tid, str) or reason not in _CANCEL_CODES:
            return rejected(
                "INVALID_REQUEST",
                'a cancel is {"transaction": T, "reason": "timeout"|"cancelled"|"renderer-closed"}',
            )
        txn = self._by_id.get(tid)
        self._working = txn
        if txn is None or not txn.accepts("cancel"):
            return rejected("STALE_STEP", f"transaction {tid!r} has nothing pending to cancel")
        code = _CANCEL_CODES[reason]
        word = {"timeout": "timed out", "cancelled": "was cancelled", "renderer-closed": "lost its renderer"}[
            reason
        ]
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
        if mutation and txn.tab_id is not None and txn.tab_id not in self._closed_tabs:
            self._reconcile.add(txn.tab_id)
            self._remember_mutation(txn.id, txn.tab_id)
        pending: JsonObject = txn.pending or {}
        params = pending.get("params")
        tab = params.get("tabId") if isinstance(params, dict) else None
        txn.abandoned = {
            "method": pending.get("method"),
            "tabId": tab if isinstance(tab, str) else txn.tab_id,
        }
        txn.fire("abandon")
        txn.seq += 1
        # The lane stays exclusive; the late callback must answer the dispatch's seq, so keep it.
        step = self._complete_step(txn.id, txn.seq, envelope, txn.render, self._audit(txn, envelope))
        txn.seq -= 1
        return step
