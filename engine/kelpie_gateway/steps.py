"""The steps the gateway hands a host (CONTRACT.md §5, §11): the ``complete`` step, and the Python
caller's copy of a pending ``authorize`` or ``dispatch`` step. Pure: no gateway state.

A pending step is kept by its transaction (``Transaction.pending``, for ``next``) and handed out only as a
copy equal to parsing its JSON (what the C ABI sends) that shares nothing with it;
``tests/engine/test_steps.py`` checks that with Hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

import orjson

from . import jsonio
from .errors import JsonObject

Render = Callable[[JsonObject], Any]
"""Turns a final canonical envelope into what a ``complete`` step carries (a JSON-RPC response for MCP);
it may return an :class:`Answer` to also set the step's ``httpStatus``."""


class Answer(NamedTuple):
    """A :data:`Render`'s answer with an HTTP status for the ``complete`` step (``httpStatus``): what a
    JSON-RPC error of the stateless MCP revision needs when it is decided only after a dispatch
    (docs/mcp.md "Resources")."""

    response: Any
    http_status: int


PENDING: Final = frozenset({"authorize", "dispatch"})
"""The kinds of step a transaction keeps as ``Transaction.pending`` (handed out only as copies)."""

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _flat(obj: JsonObject) -> bool:
    """True when every value of ``obj`` is a JSON scalar (so a shallow copy is an independent one)."""
    for value in obj.values():  # noqa: SIM110 (a loop: all() of a generator costs more on the hot path)
        if type(value) not in _SCALARS:
            return False
    return True


def copy_pending(step: JsonObject) -> JsonObject:
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


def own(step: JsonObject) -> JsonObject:
    """What the Python API returns: a step the caller owns (a pending step is copied)."""
    if step["step"] in PENDING:
        return copy_pending(step)
    return step


def complete(
    txn_id: str, seq: int, envelope: JsonObject, render: Render | None, audit: JsonObject
) -> JsonObject:
    """The ``complete`` step of transaction ``txn_id`` at ``seq``: ``response`` is ``render(envelope)``
    (the envelope itself without a renderer); a response of None (a notification's) adds
    ``"httpStatus": 202``, an :class:`Answer` its own status."""
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
