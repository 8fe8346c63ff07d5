"""Reading what a host hands the gateway, once per call (CONTRACT.md §3, §5, §8, §11). Pure: no gateway
state; a reader returns the input as the coordinator acts on it, or raises the engine's refusal type.

Inputs may be a ``dict``/Mapping, JSON ``str`` or ``bytes`` (§11). Every entry point has one **general
reader**, the authority: JSON text is parsed under its cap, any Mapping is copied through its JSON text
(later edits by the caller change nothing; the caps and the lone-surrogate rules apply exactly as for
text), and the shape is checked. In front of it, one **fast reader** (what the coordinator calls)
recognises the usual input and answers for it exactly what the general reader would, without the copy or
the checks it can prove would change nothing; anything it does not recognise it hands to the general
reader:

=========  ==========================================  ===================================================
entry      recognised by the fast reader               general reader
=========  ==========================================  ===================================================
begin      JSON bytes orjson parses within 4 MiB and   :func:`read_request`: any JSON text (refusals worded
           that repeat no member name; a plain dict    by :func:`~kelpie_gateway.jsonio.loads`, a repeated
           request, validated as it is                 member name among them), any Mapping (copied),
           (:func:`fast_request`)                      anything else as it is (for validation to refuse)
advance    a dict ``{transaction, seq, result}``: an   :func:`read_advance`: JSON text (lone surrogates of
           exact ``{"success": true}`` result read as  a renderer repaired), any Mapping (copied), then
           it is, any other copied without the shape   the four shapes (result, ``undelivered``,
           checks                                      ``retire``, ``tabClosed``)
cancel     a dict ``{transaction, reason}`` of plain   :func:`read_cancel`
           strings, read as it is
next       (the coordinator's: an idle direct lane     :func:`read_next`
           answers ``idle`` without the lock)
=========  ==========================================  ===================================================

``tests/engine/test_input.py`` checks with Hypothesis that each fast reader answers what its general reader
answers, compared type for type, on inputs built to sit just beside the recognised shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from . import jsonio
from .errors import JsonObject, Refusal
from .schema import Method, ParamError, validate_request

ADVANCE_PARSE_CAP: Final = 256 * 1024 * 1024
"""``advance`` JSON text above this is rejected unparsed; results above 32 MiB are RESPONSE_TOO_LARGE."""
CANCEL_CODES: Final = {"timeout": "TIMEOUT", "cancelled": "CANCELLED", "renderer-closed": "RENDERER_FAILED"}
"""A cancel's ``reason`` and the error code it completes the transaction with."""
_TEXT: Final = (str, bytes, bytearray, memoryview)
"""JSON text arguments (a tuple: ``isinstance`` with a ``X | Y`` union builds the union on every call)."""
_ID_TYPES: Final = (str, int, float)

Checked = tuple[Any, Method | None, str, JsonObject]
"""What :func:`~kelpie_gateway.schema.validate_request` returns: ``(id, method, name, normalized params)``."""
Request = tuple[Any, Checked | None]
"""A read request: ``(request, checked)`` — the parsed request, and what validating it returned when the
reader already asked (None: the coordinator validates it)."""
Advance = tuple[str, str, int, Any, int]
"""A read ``advance``: ``(kind, id, seq, result, size)``. ``kind`` :data:`RESULT`: ``{transaction, seq,
result}`` (``result`` the gateway's own — a copy, or exactly ``{"success": true}``; ``size`` at least the
result's JSON size when it may pass the 32 MiB cap, else any number under it); :data:`UNDELIVERED`,
:data:`RETIRE`: the transaction id (seq 0, result None); :data:`TAB_CLOSED`: the id is the tab's."""
RESULT: Final = "result"
UNDELIVERED: Final = "undelivered"
RETIRE: Final = "retire"
TAB_CLOSED: Final = "tabClosed"
_SUCCESS_SIZE: Final = len(b'{"success":true}')
_PLAIN_IDS: Final = frozenset({str, int, float, type(None)})
_PLAIN_PARAMS: Final = frozenset({str, int, bool})
_NO_PARAMS: Final[JsonObject] = {}
_CANCEL_SHAPE: Final = 'a cancel is {"transaction": T, "reason": "timeout"|"cancelled"|"renderer-closed"}'


class Unreadable(Refusal):
    """A request that could not be read as JSON data (INVALID_JSON, INVALID_REQUEST, REQUEST_TOO_LARGE);
    ``request_id``: its id when it could be read without trusting the request, else None."""

    def __init__(self, code: str, message: str, request_id: Any) -> None:
        super().__init__(code, message)
        self.request_id = request_id


def request_id(request: Any) -> Any:
    """The request's id when it can be read without trusting the request (for refusals and INTERNAL)."""
    rid = request.get("id") if isinstance(request, Mapping) else None
    return rid if isinstance(rid, _ID_TYPES) and not isinstance(rid, bool) else None


def json_copy(value: Any) -> tuple[Any, int]:
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


def parse_host(data: Any, cap: int) -> tuple[Any, int]:
    """A host's message (``advance``, ``cancel``) as the gateway's own JSON value, and its JSON size: text
    is parsed under ``cap`` (a renderer's lone-surrogate escapes repaired), a Mapping copied
    (:func:`json_copy`). Raises Refusal (INVALID_REQUEST)."""
    if type(data) is bytes and len(data) <= cap:  # the C ABI's usual input: parsed as it is
        try:
            return orjson.loads(data), len(data)
        except orjson.JSONDecodeError:
            pass  # jsonio.loads words the refusal, or repairs lone surrogates
    if isinstance(data, _TEXT):
        size = len(data)
        try:  # the host's own message: read as orjson reads it (jsonio.loads, ``unique``)
            return jsonio.loads(data, cap=cap, lone_surrogates=True, unique=False), size
        except jsonio.JsonError as exc:
            raise Refusal("INVALID_REQUEST", str(exc)) from None
    if type(data) is dict or isinstance(data, Mapping):
        # Round-trip a Python host's dict: an independent copy, lone surrogates repaired, and the
        # same size as JSON text for the 32 MiB result cap.
        return json_copy(data if type(data) is dict else dict(data))
    raise Refusal("INVALID_REQUEST", "expected a JSON object")


# ====================================================================== begin
def fast_request(request: Any) -> Request:
    """``begin``'s reader: what :func:`read_request` answers. It recognises JSON bytes within the 4 MiB cap
    that orjson parses, and a plain dict request whose JSON round trip (the general reader's copy:
    orjson's text, parsed back) would give an equal request — that one is validated as it is, no copy is
    made, and what ``validate_request`` said comes back as ``checked``. Anything else (a refusal to word
    included) goes to :func:`read_request`. Raises :class:`Unreadable`.

    A plain dict request is one whose params, if any, are an exact ``dict`` (a subclass may answer ``[]``,
    ``in`` or iteration other than the contents orjson writes); orjson writes it (so its keys are exact
    ``str``, no string holds a lone surrogate, no integer passes 64 bits) in at most 4 MiB; it validates
    (so it holds nothing but the version, the id, the method name and the params); and those — the id,
    the name and the params' values, what the gateway keeps — are of exactly the types a parse gives (a
    ``str`` subclass, an enum member or an ``extension.call``'s arguments object are not). A known
    method's validated params are a new dict of those immutable values (an unknown method is refused at
    once), so later edits of the caller's dicts reach nothing the gateway keeps."""
    kind = type(request)
    if kind is bytes:  # the C ABI's usual input
        if len(request) <= jsonio.MAX_REQUEST_BYTES:
            try:
                parsed = orjson.loads(request)
            except orjson.JSONDecodeError:
                pass  # jsonio.loads words the refusal
            else:
                # No repeated member name (jsonio.check_unique): for the usual request the colons count its
                # members and its params' (inlined: two calls fewer per C ABI begin); else the full check.
                params = parsed.get("params") if type(parsed) is dict else None
                members = (
                    len(parsed) + (len(params) if type(params) is dict else 0) if params is not None else -1
                )
                if request.count(b":") != members:
                    try:
                        jsonio.check_unique(request, parsed)
                    except jsonio.JsonError as exc:
                        raise Unreadable(exc.code, str(exc), None) from None
                return parsed, None
    elif kind is dict and type(request.get("params", _NO_PARAMS)) is dict:
        try:
            size = len(orjson.dumps(request))
        except TypeError:  # orjson.JSONEncodeError included
            return read_request(request)
        if size <= jsonio.MAX_REQUEST_BYTES:
            try:
                checked = validate_request(request)
            except ParamError:
                return read_request(request)
            rid, _, name, params = checked
            if type(name) is str and type(rid) in _PLAIN_IDS:
                for value in params.values():
                    if type(value) not in _PLAIN_PARAMS:
                        return read_request(request)
                return request, checked  # its copy would be equal: none is made
    return read_request(request)


def read_request(request: Any) -> Request:
    """``begin``'s general reader: JSON text parsed (at most 4 MiB), any Mapping copied through its JSON
    text (an independent copy, the same 4 MiB cap and the same refusal of lone surrogates as text),
    anything else as it is (validation refuses it). Raises :class:`Unreadable`."""
    if isinstance(request, _TEXT):
        try:
            return jsonio.loads(request), None
        except jsonio.JsonError as exc:
            raise Unreadable(exc.code, str(exc), None) from None
    if type(request) is dict or isinstance(request, Mapping):
        try:
            text = orjson.dumps(request if type(request) is dict else dict(request))  # any Mapping (§11)
            # orjson's own output is valid JSON without lone surrogates: only the cap can refuse it
            # (jsonio.loads words that refusal)
            parsed = orjson.loads(text) if len(text) <= jsonio.MAX_REQUEST_BYTES else jsonio.loads(text)
        except orjson.JSONEncodeError as exc:
            raise Unreadable("INVALID_REQUEST", f"not JSON data: {exc}", request_id(request)) from None
        except jsonio.JsonError as exc:
            raise Unreadable(exc.code, str(exc), request_id(request)) from None
        return parsed, None
    return request, None


# ====================================================================== advance
def fast_advance(data: Any) -> Advance:
    """``advance``'s reader: what :func:`read_advance` answers. It recognises a dict of exactly
    ``transaction`` (a str), ``seq`` (an int) and ``result``: a result of exactly ``{"success": true}``
    (every admission) is read as it is — its copy would equal it and nothing of it is kept — when the id
    and seq would also copy unchanged (ASCII, 64 bits) and every key is an exact ``str`` (a subclass is not
    JSON data: the copy refuses it); any other result is copied (:func:`json_copy`, whose refusal is the
    general reader's) without the shape checks. Anything else goes to :func:`read_advance`. Raises
    Refusal (INVALID_REQUEST)."""
    if type(data) is not dict or len(data) != 3:
        return read_advance(data)
    tid = data.get("transaction")
    seq = data.get("seq")
    if type(tid) is not str or type(seq) is not int or "result" not in data:
        return read_advance(data)
    result = data["result"]
    if (
        type(result) is dict
        and len(result) == 1
        and result.get("success") is True
        and tid.isascii()
        and -0x8000000000000000 <= seq <= 0xFFFFFFFFFFFFFFFF  # what orjson writes (literals: no lookups)
    ):
        k1, k2, k3 = data
        (key,) = result
        if type(k1) is str and type(k2) is str and type(k3) is str and type(key) is str:
            return RESULT, tid, seq, result, _SUCCESS_SIZE
    msg, size = json_copy(data)  # (its seq is seq: an exact int the copy kept)
    return RESULT, msg["transaction"], seq, msg["result"], size


def read_advance(data: Any) -> Advance:
    """``advance``'s general reader: ``{"transaction","seq","result"}``, ``{"transaction","undelivered":
    true}``, ``{"transaction","retire":"renderer-closed"}`` or ``{"tabClosed": tabId}``, as JSON text of at
    most 256 MiB or a Mapping. Raises Refusal (INVALID_REQUEST) for anything else."""
    if type(data) is bytes and len(data) <= ADVANCE_PARSE_CAP:  # the C ABI's usual input (parse_host's
        try:  # first case, inlined: one call fewer per C ABI advance)
            msg, size = orjson.loads(data), len(data)
        except orjson.JSONDecodeError:
            msg, size = parse_host(data, ADVANCE_PARSE_CAP)  # words the refusal, or repairs surrogates
    else:
        msg, size = parse_host(data, ADVANCE_PARSE_CAP)
    if not isinstance(msg, dict):
        raise Refusal("INVALID_REQUEST", "advance takes a JSON object")
    if "tabClosed" in msg:
        tab = msg["tabClosed"]
        if set(msg) != {"tabClosed"} or not isinstance(tab, str) or not tab:
            raise Refusal("INVALID_REQUEST", 'a closed tab is reported as {"tabClosed": "<tabId>"}')
        return TAB_CLOSED, tab, 0, None, 0
    tid = msg.get("transaction")
    if not isinstance(tid, str):
        raise Refusal("INVALID_REQUEST", "advance needs a string 'transaction'")
    if len(msg) == 3 and "seq" in msg and "result" in msg:  # the usual {transaction, seq, result}
        seq = msg["seq"]
        if type(seq) is not int:
            raise Refusal("INVALID_REQUEST", "'seq' must be an integer")
        return RESULT, tid, seq, msg["result"], size
    if "undelivered" in msg:
        if set(msg) != {"transaction", "undelivered"} or msg["undelivered"] is not True:
            raise Refusal(
                "INVALID_REQUEST", 'an undelivered response is {"transaction": T, "undelivered": true}'
            )
        return UNDELIVERED, tid, 0, None, 0
    if "retire" in msg:
        if set(msg) != {"transaction", "retire"} or msg["retire"] != "renderer-closed":
            raise Refusal(
                "INVALID_REQUEST", 'a retirement is {"transaction": T, "retire": "renderer-closed"}'
            )
        return RETIRE, tid, 0, None, 0
    extra = sorted(set(msg) - {"transaction", "seq", "result"})
    what = f"unknown field(s) {extra}" if extra else "'seq' and 'result' are required"
    raise Refusal("INVALID_REQUEST", f"advance takes {{transaction, seq, result}}: {what}")


# ====================================================================== cancel
def fast_cancel(data: Any) -> tuple[str, str]:
    """``cancel``'s reader: what :func:`read_cancel` answers. It recognises a dict of exactly
    ``transaction`` (an ASCII ``str``: its copy is equal) and ``reason`` (a ``str`` naming a reason), both
    keys exact ``str``, and reads it as it is; anything else goes to :func:`read_cancel`. Raises Refusal
    (INVALID_REQUEST)."""
    if type(data) is dict and len(data) == 2:
        tid = data.get("transaction")
        reason = data.get("reason")
        if type(tid) is str and type(reason) is str and reason in CANCEL_CODES and tid.isascii():
            k1, k2 = data
            if type(k1) is str and type(k2) is str:
                return tid, reason
    return read_cancel(data)


def read_cancel(data: Any) -> tuple[str, str]:
    """``cancel``'s general reader: ``(transaction, reason)`` of ``{"transaction": T, "reason":
    "timeout"|"cancelled"|"renderer-closed"}`` as JSON text of at most 4 MiB or a Mapping. Raises Refusal
    (INVALID_REQUEST)."""
    msg, _ = parse_host(data, jsonio.MAX_REQUEST_BYTES)
    if not isinstance(msg, dict) or set(msg) != {"transaction", "reason"}:
        raise Refusal("INVALID_REQUEST", _CANCEL_SHAPE)
    tid, reason = msg["transaction"], msg["reason"]
    if not isinstance(tid, str) or not isinstance(reason, str) or reason not in CANCEL_CODES:
        raise Refusal("INVALID_REQUEST", _CANCEL_SHAPE)
    return tid, reason


# ====================================================================== answers to steps
AUTHORIZATION_SHAPE: Final = 'an authorization result is {"success": true} or {"success": false, "error": …}'
"""Why an ``authorize`` step's answer that is not a JSON object with a boolean ``success`` is rejected."""


def refusal_text(result: JsonObject) -> str:
    """The message of a host's refusal (``{"success": false, "error": {"message": …}}``) of an
    ``authorize`` step, or the default when it names none."""
    err = result.get("error")
    message = err.get("message") if isinstance(err, dict) else None
    return message if isinstance(message, str) and message else "the host's policy refused this transaction"


# ====================================================================== next
def read_next(transaction: Any) -> str | None:
    """``next``'s reader: a transaction id, or None for the direct lane. Raises Refusal (INVALID_REQUEST)."""
    if transaction is None or isinstance(transaction, str):
        return transaction
    raise Refusal("INVALID_REQUEST", "transaction must be a string or null")
