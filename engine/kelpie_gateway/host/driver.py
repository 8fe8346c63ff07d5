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

Authorization policy (the host's "existing policy", CONTRACT.md §5): every bearer on this host was paired
by the operator from loopback, so a paired client is admitted for every advertised method; the site policy
(``host/policy.py``, passed as ``authorize``) refuses navigations to refused origins there with
``NOT_AUTHORIZED`` before anything is dispatched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kelpie_gateway.host.audit import AuditLog
from kelpie_gateway.host.browser import Renderer, fail

JsonObject = dict[str, Any]

DEFAULT_TIMEOUT_MS = 10_000


class GatewayLike(Protocol):
    """The Python API of CONTRACT.md §11, implemented by ``kelpie_gateway.Gateway`` and the ABI adapter."""

    def begin(self, request: Any) -> JsonObject: ...

    def begin_mcp(self, message: Any) -> JsonObject: ...

    def next(self, transaction: str | None = None) -> JsonObject: ...

    def advance(self, result: Any) -> JsonObject: ...

    def cancel(self, cancel: Any) -> JsonObject: ...

    def invalidate_refs(self, tab_id: str | None = None) -> None: ...

    def close(self) -> None: ...


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
    """Drives transactions of one gateway against one renderer; see the module docstring.

    ``audit``: the ``--audit-log`` file; every ``complete`` step of a canonical transaction is recorded
    there with its :class:`Caller`."""

    def __init__(
        self,
        gateway: GatewayLike,
        renderer: Renderer,
        log: Callable[[str], None],
        authorize: Callable[[Mapping[str, Any]], JsonObject] | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.gateway = gateway
        self.renderer = renderer
        self.log = log
        self._policy = authorize
        self.audit = audit
        self._late: set[asyncio.Task[JsonObject]] = set()

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
        :data:`Fit`."""
        return await self._run(
            lambda: self.gateway.begin_mcp(body),
            mcp=True,
            caller=caller or Caller(transport="mcp-http"),
            abandon=abandon,
            fit=fit,
        )

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
                # Given up before this step ran: cancel it. A dispatch that was never started has no late
                # reply to wait for, so it is retired at once (its outcome still counts as unknown).
                transaction = step["transaction"]
                step = self.gateway.cancel({"transaction": transaction, "reason": "cancelled"})
                if kind == "dispatch":
                    self.gateway.advance({"transaction": transaction, "retire": "renderer-closed"})
                continue
            if kind == "authorize":
                target = step.get("target") or target
                step = self.gateway.advance(
                    {"transaction": step["transaction"], "seq": step["seq"], "result": self.authorize(step)}
                )
            elif kind == "dispatch":
                params = step.get("params")
                if isinstance(params, Mapping) and target is None and params.get("tabId"):
                    target = {"tabId": params.get("tabId")}
                step = await self._dispatch(step, abandon)
            else:
                self.log(f"gateway answered an unexpected step {kind!r}: {step.get('error')}")
                return _host_failure(f"the gateway answered an unexpected step {kind!r}", mcp)

    def authorize(self, step: Mapping[str, Any]) -> JsonObject:
        """The host policy: every paired (loopback, operator-approved) client is admitted, subject to the
        site policy (``authorize`` at construction)."""
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
        call = asyncio.ensure_future(self._call(method, params))
        gave_up = asyncio.ensure_future(abandon.wait()) if abandon is not None else None
        try:
            await asyncio.wait(
                {call} if gave_up is None else {call, gave_up},
                timeout=timeout_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            if gave_up is not None:
                gave_up.cancel()
        if call.done():
            return self.gateway.advance({"transaction": transaction, "seq": seq, "result": call.result()})
        reason = "cancelled" if abandon is not None and abandon.abandoned else "timeout"
        answer = self.gateway.cancel({"transaction": transaction, "reason": reason})
        why = "its caller went away" if reason == "cancelled" else f"it passed its {timeout_ms} ms deadline"
        self.log(f"{method} in transaction {transaction}: {why}: cancelled")
        self._late.add(call)
        call.add_done_callback(lambda done: self._retire(transaction, seq, method, done))
        return answer

    async def _call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        try:
            return await self.renderer.call(method, params)
        except Exception as exc:  # the renderer promises not to raise; belt and braces
            return fail("RENDERER_FAILED", f"{type(exc).__name__}: {exc}")

    def _retire(self, transaction: str, seq: int, method: str, done: asyncio.Task[JsonObject]) -> None:
        self._late.discard(done)
        if done.cancelled():
            result = fail("RENDERER_FAILED", "the renderer call was cancelled")
        else:
            result = done.result()
        answer = self.gateway.advance({"transaction": transaction, "seq": seq, "result": result})
        self.log(f"late {method} reply for transaction {transaction}: {answer.get('step')}")

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
        self.log(f"tx {_printable(method)} tab={_printable(tab or '-')} {outcome} {ms:.0f}ms{extra}")


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
    response: JsonObject = (
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": message}}
        if mcp
        else _internal_envelope(message)
    )
    return {"step": "complete", "response": response, "audit": {}}
