"""MCP translation: JSON-RPC 2.0 in, JSON-RPC out, the same transactions underneath (CONTRACT.md §7).

:func:`begin` (what ``Gateway.begin_mcp`` and the C ABI's ``kelpie_browser_gateway_begin_mcp`` call) runs
the translation through :meth:`GatewayCore.begin_with <kelpie_gateway.gateway.GatewayCore.begin_with>`, so the
gateway lock is held and the invalidation queue drained. This module depends on the gateway, never the
reverse. It returns the first step of a transaction whose
``complete`` step carries a JSON-RPC response (or ``null`` with ``"httpStatus": 202`` for anything that
gets no response). Nothing here raises for bad input, and nothing here decides policy: every browser
action goes through the canonical coordinator (:meth:`GatewayCore.begin_parsed`), so authorization, BUSY,
refs, RECONCILE_REQUIRED and extension admission are exactly those of the canonical route.

Message handling (decisions where the contract is silent are in ``docs/mcp.md``):

==============================  =============================================================================
input                           answer
==============================  =============================================================================
over 4 MiB (text)               ``-32600`` (never parsed; canonical code REQUEST_TOO_LARGE)
not JSON / not UTF-8            ``-32700``
an array (batch)                ``-32600``
not an object, ``jsonrpc`` not  ``-32600`` (``id`` echoed when it is a string or number, else ``null``)
"2.0", ``method`` not a string,
``id`` not a string/number,
``params`` not an object, an
unknown top-level member
a notification (no ``id``)      no response (``httpStatus`` 202); notifications are never executed,
                                except ``notifications/cancelled`` ``{requestId}``: the one in-flight
                                ``tools/call`` with that id is cancelled (reason ``cancelled``) and its
                                ``complete`` step rides along as the 202 step's ``cancelled`` member, for
                                the host to hand to the caller still waiting on it
a response (``result``/         no response (202): this server never sends requests, so it has nothing to
``error``, no ``method``)       match them with
``initialize``                  ``protocolVersion`` (the client's when supported, else the newest),
                                ``capabilities.tools``, ``serverInfo``, ``instructions``
``ping``                        ``{}`` (handshake era; ``-32601`` in the stateless one)
``server/discover``             stateless era only: ``supportedVersions``, ``capabilities``, ``serverInfo``,
                                ``instructions``, ``ttlMs``, ``cacheScope``
``tools/list``                  the tools that have something to offer (no cursor: one page)
``tools/call``                  see :data:`TOOL_BROWSER` … and direct extension names
anything else                   ``-32601``
==============================  =============================================================================

A ``tools/call`` result is ``{content:[{type:"text",text:<envelope JSON>}], structuredContent:<envelope>,
isError:!success}``; a screenshot adds one ``image`` block and its envelope carries ``imageBytes`` instead
of ``data``; refusals that need a different next move (BUSY, stale or foreign refs, RECONCILE_REQUIRED,
unknown outcomes) add a second text block starting ``Next step:``.

**Eras (CONTRACT.md §7 v1.1).** Each request is handled by the revision it names, so handshake and stateless
clients share one gateway with no state between them:

* *stateless* (:data:`MODERN_PROTOCOL_VERSIONS`, ``2026-07-28``): a request whose ``params._meta`` carries
  ``io.modelcontextprotocol/protocolVersion`` or ``…/clientCapabilities``, and every ``server/discover``.
  The envelope is checked first (a missing key or a wrong type ``-32602``; a revision not spoken ``-32022``
  with ``data.supported``). Methods: ``server/discover``, ``tools/list``, ``tools/call``; ``ping`` and
  ``initialize`` are not part of the revision (``-32601``). Every result carries ``resultType:"complete"``
  and the ``io.modelcontextprotocol/serverInfo`` stamp in ``_meta``; ``tools/list`` and ``server/discover``
  carry ``ttlMs``/``cacheScope``. A JSON-RPC error answering a stateless request puts the HTTP status the
  revision asks for on the ``complete`` step (``httpStatus``: 404 for ``-32601``, 400 for the others).
* *handshake* (:data:`PROTOCOL_VERSIONS`): everything else, answered exactly as before the stateless
  revision existed (no ``resultType``, no ``httpStatus`` but the notifications' 202).

:func:`http_refusal` holds the HTTP-only rules (``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` agree
with the body); hosts serving ``/mcp`` call it before :meth:`Gateway.begin_mcp`.
"""

from __future__ import annotations

import binascii
import math
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from . import jsonio
from .config import NAME_PATTERN
from .errors import JsonObject, failure, success
from .gateway import GatewayCore, Render
from .schema import MAX_EXTENSION_TOOL_NAMES, METHODS, params_json_schema
from .version import __version__

PROTOCOL_VERSIONS: Final = ("2025-03-26", "2025-06-18", "2025-11-25")
"""Supported MCP handshake protocol versions, oldest first (CONTRACT.md §7; v1.1 adds ``2025-03-26``);
``initialize`` answers the client's version when listed here, else the last (newest)."""
LATEST_PROTOCOL_VERSION: Final = PROTOCOL_VERSIONS[-1]
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
"""Stateless revisions (CONTRACT.md §7 v1.1): no handshake; each request names its revision in ``_meta``."""
SUPPORTED_VERSIONS: Final = (*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(PROTOCOL_VERSIONS))
"""Every revision spoken, newest first: ``server/discover``'s ``supportedVersions`` and ``-32022``'s
``data.supported``."""
SERVER_NAME: Final = "kelpie-browser-gateway"
SERVER_TITLE: Final = "Kelpie browser gateway"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
HEADER_MISMATCH: Final = -32020
"""2026-07-28: HTTP routing headers disagree with the body (or one is missing)."""
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
"""2026-07-28: the request names a revision this server does not speak; ``data.supported`` lists those it does."""
HTTP_STATUS: Final[Mapping[int, int]] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
"""HTTP status of a JSON-RPC error answering a stateless (2026-07-28) request; other codes travel as 200."""

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
CACHE_TTL_MS: Final = 300_000
"""``ttlMs`` of ``tools/list`` and ``server/discover`` (5 minutes): both depend only on the gateway's
immutable config, so a client may reuse them for a while; a host restarted with other flags is seen within
five minutes, and a stale list is harmless (an unlisted method is refused as a tool error)."""
CACHE_SCOPE: Final = "private"
"""``cacheScope``: the lists are reachable only with a bearer (the host gates discovery at the transport),
so a shared cache must not hand them to other clients."""

TOOL_BROWSER: Final = "kelpie_browser_control"
TOOL_EXTENSIONS: Final = "kelpie_extensions"
TOOL_EXTENSION_TOOLS: Final = "kelpie_extension_tools"
TOOL_EXTENSION: Final = "kelpie_extension"
DEFAULT_TOOLS: Final = (TOOL_BROWSER, TOOL_EXTENSIONS, TOOL_EXTENSION_TOOLS, TOOL_EXTENSION)

_NAME_RE: Final = re.compile(NAME_PATTERN)
_MESSAGE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_RESPONSE_KEYS: Final = frozenset({"jsonrpc", "id", "result", "error"})

_OBSERVE: Final = (
    "Next step: nothing was done. Take a new tab.snapshot of this tab and use only refs from that snapshot."
)
NEXT_STEPS: Final[dict[str, str]] = {
    "BUSY": (
        "Next step: another browser action is still running and nothing was done for this call. "
        "Wait until it finishes, then call again; if it may change the page, take a tab.snapshot first."
    ),
    "STALE_SNAPSHOT": _OBSERVE,
    "REFS_INVALIDATED": _OBSERVE,
    "TAB_STALE": _OBSERVE,
    "UNKNOWN_REF": _OBSERVE,
    "NODE_REPLACED": _OBSERVE,
    "NOT_ACTIONABLE": (
        "Next step: nothing was done. The element is disabled or inert; take a tab.snapshot to see what is "
        "enabled (its states) before trying something else."
    ),
    "CROSS_TAB_REF": (
        "Next step: nothing was done. That ref belongs to another tab; take a tab.snapshot of the tab you "
        "want to act on and use a ref from it."
    ),
    "RECONCILE_REQUIRED": (
        "Next step: nothing was done. An earlier action on this tab has an unknown outcome: take a "
        "tab.snapshot (or tabs.list) and check what happened before acting on this tab again. Do not "
        "repeat the earlier action blindly."
    ),
}
"""Failure code -> the sentence added as a second text block of a ``tools/call`` tool error."""
UNKNOWN_OUTCOME_NEXT_STEP: Final = (
    "Next step: the action may already have happened. Do not repeat it. Observe first (tab.snapshot, or "
    "tabs.list) and decide from what you see."
)

_CACHE: weakref.WeakKeyDictionary[GatewayCore, dict[str, Any]] = weakref.WeakKeyDictionary()
_CACHE_LOCK: Final = threading.Lock()
"""Gateways lock themselves; the cache is shared between gateways, so it has its own lock."""


class _RpcError(Exception):
    """A JSON-RPC error decided before any transaction: ``code`` (JSON-RPC), ``kelpie`` (canonical) and
    ``data`` (extra members of ``error.data``, e.g. ``supported`` for ``-32022``)."""

    def __init__(self, code: int, message: str, kelpie: str, data: JsonObject | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.kelpie = kelpie
        self.data = data


# ====================================================================== JSON-RPC shapes


def rpc_result(rid: Any, result: JsonObject) -> JsonObject:
    """``{"jsonrpc":"2.0","id":rid,"result":result}``."""
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def rpc_error(
    rid: Any, code: int, message: str, kelpie: str | None = None, data: JsonObject | None = None
) -> JsonObject:
    """``{"jsonrpc":"2.0","id":rid,"error":{"code","message","data"?}}``; ``data.code`` is the canonical
    error code (CONTRACT.md §4) when there is one, beside the members of ``data``."""
    error: JsonObject = {"code": code, "message": message}
    if kelpie is not None or data:
        error["data"] = {**(data or {}), **({"code": kelpie} if kelpie is not None else {})}
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def _is_id(value: Any) -> bool:
    """A usable request id: a string or a number (MCP forbids ``null``; booleans are not numbers) that can
    be echoed exactly: integers must fit in 64 bits (the JSON parser turns larger ones into floats, so an
    integral float of 2**64 or more is refused too)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return math.isfinite(value) and not (value.is_integer() and abs(value) >= 2.0**64)
    return True


# ====================================================================== entry point


def begin(gw: GatewayCore, message: Mapping[str, Any] | str | bytes) -> JsonObject:
    """Translate one JSON-RPC message into a transaction and return its first step (CONTRACT.md §7).

    ``message``: JSON text (str or UTF-8 bytes, at most 4 MiB) or an already parsed Mapping (it is
    re-serialised once, so the same cap and JSON rules apply). Returns an ``authorize``, ``dispatch`` or
    ``complete`` step; the ``complete`` step's ``response`` is the JSON-RPC response, or ``None`` with
    ``"httpStatus": 202``. Never raises for bad input (a gateway bug answers ``-32603``).
    """
    return gw.begin_with(message, FRONTEND)


class _McpFrontend:
    """The MCP frontend (:class:`~kelpie_gateway.gateway.Frontend`)."""

    def translate(self, gw: GatewayCore, message: Any) -> JsonObject:
        return _translate(gw, message)

    def internal_error(self, message: Any, exc: Exception) -> tuple[JsonObject, Render | None]:
        rid = message.get("id") if isinstance(message, Mapping) else None
        response = {
            "jsonrpc": "2.0",
            "id": rid if _is_id(rid) else None,
            "error": {"code": -32603, "message": f"internal error: {exc!r}"},
        }
        return failure(None, "INTERNAL", repr(exc)), lambda _e: response


FRONTEND: Final = _McpFrontend()


def _translate(gw: GatewayCore, message: Any) -> JsonObject:
    rid: Any = None
    method: str | None = None
    modern = False
    try:
        msg = _parse(message)
        if isinstance(msg, list):
            raise _RpcError(INVALID_REQUEST, "batches (JSON arrays) are not supported", "INVALID_REQUEST")
        if not isinstance(msg, dict):
            raise _RpcError(INVALID_REQUEST, "a JSON-RPC message is a JSON object", "INVALID_REQUEST")
        modern = is_stateless(msg.get("method"), msg.get("params"))
        if _is_id(msg.get("id")):
            rid = msg["id"]
        if msg.get("jsonrpc") != "2.0":
            raise _RpcError(INVALID_REQUEST, 'jsonrpc must be the string "2.0"', "INVALID_REQUEST")
        if "method" not in msg and ("result" in msg or "error" in msg):
            _check_response_shape(msg)
            return gw.complete_now(success(None, {}), _no_response, "jsonrpc/response")
        for key in msg:
            if key not in _MESSAGE_KEYS:
                raise _RpcError(INVALID_REQUEST, f"unknown member {key[:100]!r}", "INVALID_REQUEST")
        if not isinstance(msg.get("method"), str):
            raise _RpcError(INVALID_REQUEST, "method must be a string", "INVALID_REQUEST")
        method = msg["method"]
        if "id" in msg and not _is_id(msg["id"]):
            raise _RpcError(INVALID_REQUEST, "id must be a string or a number", "INVALID_REQUEST")
        params = msg.get("params", {})
        if not isinstance(params, dict):
            raise _RpcError(INVALID_REQUEST, "params must be an object", "INVALID_REQUEST")
        if "id" not in msg:
            step = gw.complete_now(success(None, {}), _no_response, method)
            if method == "notifications/cancelled" and _is_id(params.get("requestId")):
                cancelled = gw.cancel_request(params["requestId"])
                if cancelled is not None:
                    step["cancelled"] = cancelled
            return step
        if gw.closed:
            raise _RpcError(INVALID_REQUEST, "this gateway is closed", "INVALID_REQUEST")
        if not modern:
            return _request(gw, rid, method, params)
        _check_envelope(params)
        return _with_http_status(_stateless_request(gw, rid, method, params))
    except _RpcError as exc:
        envelope = failure(rid, exc.kelpie, exc.message)
        response = rpc_error(rid, exc.code, exc.message, exc.kelpie, exc.data)
        step = gw.complete_now(envelope, lambda _e: response, method)
        return _with_http_status(step) if modern else step


def _no_response(_envelope: JsonObject) -> None:
    return None


def _parse(message: Any) -> Any:
    if isinstance(message, str | bytes | bytearray | memoryview):
        try:
            return jsonio.loads(message)
        except jsonio.JsonError as exc:
            if exc.code == "REQUEST_TOO_LARGE":
                raise _RpcError(INVALID_REQUEST, str(exc), "REQUEST_TOO_LARGE") from None
            raise _RpcError(PARSE_ERROR, f"parse error: {exc}", "INVALID_JSON") from None
    if isinstance(message, Mapping | list | tuple):
        try:
            text = jsonio.dumps(dict(message) if isinstance(message, Mapping) else list(message))
        except (TypeError, ValueError) as exc:
            raise _RpcError(INVALID_REQUEST, f"not JSON data: {exc}", "INVALID_REQUEST") from None
        return _parse(text)
    raise _RpcError(INVALID_REQUEST, "a JSON-RPC message is a JSON object", "INVALID_REQUEST")


def _check_response_shape(msg: JsonObject) -> None:
    if set(msg) - _RESPONSE_KEYS or ("result" in msg) == ("error" in msg) or "id" not in msg:
        raise _RpcError(
            INVALID_REQUEST, "not a JSON-RPC request, notification or response", "INVALID_REQUEST"
        )
    if not (msg["id"] is None or _is_id(msg["id"])):
        raise _RpcError(INVALID_REQUEST, "id must be a string, a number or null", "INVALID_REQUEST")


def _request(gw: GatewayCore, rid: Any, method: str, params: JsonObject) -> JsonObject:
    """A handshake-era request (``2025-*``), answered exactly as before the stateless revision."""
    if method == "initialize":
        result = _initialize(gw, params)
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = _tools_list(gw, params)
    elif method == "tools/call":
        return _tools_call(gw, rid, params, _same)
    else:
        raise _RpcError(METHOD_NOT_FOUND, f"method not found: {method[:100]!r}", "UNSUPPORTED_METHOD")
    response = rpc_result(rid, result)
    return gw.complete_now(success(rid, result), lambda _e: response, method)


def _same(response: JsonObject) -> JsonObject:
    return response


def _tools_list(gw: GatewayCore, params: JsonObject) -> JsonObject:
    if "cursor" in params:
        raise _RpcError(INVALID_PARAMS, "unknown cursor: tools/list has a single page", "INVALID_PARAMS")
    return {"tools": jsonio.clone(_cached(gw)["tools"])}


# ====================================================================== the stateless revision (2026-07-28)


def is_stateless(method: Any, params: Any) -> bool:
    """Whether a request belongs to the stateless era (CONTRACT.md §7 v1.1): it is ``server/discover`` (a
    method only that revision has), or its ``params._meta`` (an object) carries either required envelope
    key. Everything else is a handshake-era request. Pure; never raises."""
    if method == "server/discover":
        return True
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and (META_PROTOCOL_VERSION in meta or META_CLIENT_CAPABILITIES in meta)


def _envelope_version(params: JsonObject) -> str:
    """The revision a stateless request names, after checking its ``_meta`` envelope: both required keys
    present, ``protocolVersion`` a string and ``clientCapabilities`` an object (else ``-32602``)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise _RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} and "
            f"{META_CLIENT_CAPABILITIES!r}",
            "INVALID_PARAMS",
        )
    missing = [key for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        raise _RpcError(
            INVALID_PARAMS, f"params._meta is missing {' and '.join(map(repr, missing))}", "INVALID_PARAMS"
        )
    version = meta[META_PROTOCOL_VERSION]
    if not isinstance(version, str):
        raise _RpcError(
            INVALID_PARAMS, f"params._meta[{META_PROTOCOL_VERSION!r}] must be a string", "INVALID_PARAMS"
        )
    if not isinstance(meta[META_CLIENT_CAPABILITIES], dict):
        raise _RpcError(
            INVALID_PARAMS, f"params._meta[{META_CLIENT_CAPABILITIES!r}] must be an object", "INVALID_PARAMS"
        )
    return version


def _unsupported(requested: str) -> _RpcError:
    handshake = requested in PROTOCOL_VERSIONS
    hint = (
        f"{requested} is a handshake revision: send initialize without the per-request _meta envelope"
        if handshake
        else f"this server speaks {', '.join(SUPPORTED_VERSIONS)}"
    )
    return _RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"unsupported protocol version {requested[:40]!r}; {hint}",
        "INVALID_REQUEST",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def _check_envelope(params: JsonObject) -> str:
    """The whole per-request check of a stateless request: the envelope (``-32602``), then the revision
    (``-32022`` with ``data.supported`` and ``data.requested``). Returns the revision."""
    version = _envelope_version(params)
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise _unsupported(version)
    return version


def server_info() -> JsonObject:
    """``{name, title, version}`` of this server (``initialize``'s ``serverInfo``, the stateless stamp);
    ``version`` is :mod:`kelpie_gateway.version`'s."""
    return {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}


def _stamp(response: JsonObject) -> JsonObject:
    """A stateless answer: every result gains ``resultType:"complete"`` and the serverInfo ``_meta`` stamp
    (errors are unchanged). The result's own members are untouched, so tool results, ``structuredContent``
    and image blocks are those of the handshake era."""
    result = response.get("result")
    if isinstance(result, dict):
        meta = {META_SERVER_INFO: server_info()}
        return {**response, "result": {**result, "resultType": "complete", "_meta": meta}}
    return response


def _with_http_status(step: JsonObject) -> JsonObject:
    """Put the stateless revision's HTTP status of a JSON-RPC error on its ``complete`` step."""
    response = step.get("response") if step.get("step") == "complete" else None
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict) and error.get("code") in HTTP_STATUS:
        step["httpStatus"] = HTTP_STATUS[error["code"]]
    return step


def _stateless_request(gw: GatewayCore, rid: Any, method: str, params: JsonObject) -> JsonObject:
    """A request of the stateless revision whose envelope was checked."""
    if method == "server/discover":
        result: JsonObject = discover(gw)
    elif method == "tools/list":
        result = {**_tools_list(gw, params), "ttlMs": CACHE_TTL_MS, "cacheScope": CACHE_SCOPE}
    elif method == "tools/call":
        return _tools_call(gw, rid, params, _stamp)
    elif method in ("ping", "initialize"):
        raise _RpcError(
            METHOD_NOT_FOUND,
            f"method not found: {method} is not part of MCP {', '.join(MODERN_PROTOCOL_VERSIONS)} "
            "(a request without the per-request _meta envelope is served by the handshake revisions)",
            "UNSUPPORTED_METHOD",
        )
    else:
        raise _RpcError(METHOD_NOT_FOUND, f"method not found: {method[:100]!r}", "UNSUPPORTED_METHOD")
    response = _stamp(rpc_result(rid, result))
    return gw.complete_now(success(rid, result), lambda _e: response, method)


def discover(gw: GatewayCore) -> JsonObject:
    """``server/discover``'s result (CONTRACT.md §7 v1.1): ``{resultType, supportedVersions,
    capabilities, serverInfo, instructions, ttlMs, cacheScope}`` (the ``_meta`` stamp is added with every
    stateless result)."""
    return {
        "resultType": "complete",
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": server_info(),
        "instructions": _cached(gw)["instructions"],
        "ttlMs": CACHE_TTL_MS,
        "cacheScope": CACHE_SCOPE,
    }


def _header_value(raw: str) -> str | None:
    """An ``Mcp-Name`` value: verbatim, or the UTF-8 inside the ``=?base64?…?=`` sentinel (None if that
    does not decode canonically)."""
    if not (raw.startswith("=?base64?") and raw.endswith("?=") and len(raw) >= 11):
        return raw
    payload = raw[9:-2]
    try:
        decoded = binascii.a2b_base64(payload, strict_mode=True)
        if binascii.b2a_base64(decoded, newline=False).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


_ROUTING_HEADERS: Final = ("mcp-protocol-version", "mcp-method", "mcp-name")


def http_refusal(body: str | bytes, headers: Iterable[tuple[str, str]]) -> JsonObject | None:
    """The HTTP rules of ``/mcp`` that need the headers (CONTRACT.md §7 v1.1): ``None`` when the request
    may go to :meth:`Gateway.begin_mcp`, else ``{"httpStatus": 400, "response": <JSON-RPC error>}`` to
    send instead (nothing was run). Pure and sans-I/O; never raises.

    ``body``: the request body (at most 4 MiB; anything unparseable is left to ``begin_mcp``).
    ``headers``: every header line as ``(name, value)`` pairs (names case-insensitive; a routing header
    sent twice is refused).

    * An ``MCP-Protocol-Version`` this server does not speak: ``-32022`` with ``data.supported``.
    * A stateless request — the body is one (:func:`is_stateless`) or ``MCP-Protocol-Version`` names
      ``2026-07-28`` — needs its ``_meta`` envelope (``-32602``), then ``MCP-Protocol-Version`` equal to
      the envelope's revision, ``Mcp-Method`` equal to ``method`` and, for ``tools/call``, ``Mcp-Name``
      equal to ``params.name`` (plain or ``=?base64?…?=``); a missing or different one is ``-32020``.
    * Notifications and responses need no headers (the revision defines none for them); handshake-era
      requests are not checked beyond the version.
    """
    try:
        msg = jsonio.loads(body)
    except jsonio.JsonError:
        msg = None
    request = (
        isinstance(msg, dict)
        and _is_id(msg.get("id"))
        and isinstance(msg.get("method"), str)
        and isinstance(msg.get("params", {}), dict)
    )
    rid = msg["id"] if request and isinstance(msg, dict) else None
    seen: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in _ROUTING_HEADERS:
            if key in seen:
                return _http_refusal(rid, HEADER_MISMATCH, f"the {name[:40]} header appears more than once")
            seen[key] = value
    version = seen.get("mcp-protocol-version")
    if not request or not isinstance(msg, dict):
        if version is not None and version not in SUPPORTED_VERSIONS:
            return _refusal_of(rid, _unsupported(version))
        return None
    method, params = msg["method"], msg.get("params", {})
    if not (is_stateless(method, params) or version in MODERN_PROTOCOL_VERSIONS):
        if version is not None and version not in SUPPORTED_VERSIONS:
            return _refusal_of(rid, _unsupported(version))
        return None
    try:
        wanted = _envelope_version(params)
    except _RpcError as exc:
        return _refusal_of(rid, exc)
    if version != wanted:
        return _http_refusal(
            rid,
            HEADER_MISMATCH,
            f"the MCP-Protocol-Version header ({'missing' if version is None else repr(version[:40])}) "
            f"does not match params._meta's protocol version {wanted[:40]!r}",
        )
    if seen.get("mcp-method") != method:
        got = seen.get("mcp-method")
        return _http_refusal(
            rid,
            HEADER_MISMATCH,
            f"the Mcp-Method header ({'missing' if got is None else repr(got[:100])}) does not match "
            f"the method {method[:100]!r}",
        )
    name = params.get("name")
    if method == "tools/call" and isinstance(name, str):
        raw = seen.get("mcp-name")
        if raw is None or _header_value(raw) != name:
            return _http_refusal(
                rid,
                HEADER_MISMATCH,
                f"the Mcp-Name header ({'missing' if raw is None else 'different'}) does not match "
                f"params.name {name[:100]!r}",
            )
    if wanted not in MODERN_PROTOCOL_VERSIONS:
        return _refusal_of(rid, _unsupported(wanted))
    return None


def _http_refusal(rid: Any, code: int, message: str) -> JsonObject:
    return _refusal_of(rid, _RpcError(code, message, "INVALID_REQUEST"))


def _refusal_of(rid: Any, exc: _RpcError) -> JsonObject:
    return {
        "httpStatus": HTTP_STATUS.get(exc.code, 400),
        "response": rpc_error(rid, exc.code, exc.message, exc.kelpie, exc.data),
    }


def _initialize(gw: GatewayCore, params: JsonObject) -> JsonObject:
    wanted = params.get("protocolVersion")
    if not isinstance(wanted, str):
        raise _RpcError(
            INVALID_PARAMS, "initialize needs params.protocolVersion (a string)", "INVALID_PARAMS"
        )
    return {
        "protocolVersion": wanted if wanted in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": server_info(),
        "instructions": _cached(gw)["instructions"],
    }


# ====================================================================== tools/call


def _tools_call(
    gw: GatewayCore, rid: Any, params: JsonObject, finish: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """``tools/call`` in either era; ``finish`` shapes each JSON-RPC response for the era (identity for
    the handshake revisions, :func:`_stamp` for the stateless one)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise _RpcError(INVALID_PARAMS, "tools/call needs params.name (a string)", "INVALID_PARAMS")
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict):
        raise _RpcError(INVALID_PARAMS, f"{name[:64]}: arguments must be an object", "INVALID_PARAMS")
    if name == TOOL_BROWSER:
        _only(name, arguments, required=("method",), optional=("params",))
        if not isinstance(arguments["method"], str):
            raise _RpcError(INVALID_PARAMS, f"{name}: method must be a string", "INVALID_PARAMS")
        inner = arguments.get("params", {})
        if not isinstance(inner, dict):
            raise _RpcError(INVALID_PARAMS, f"{name}: params must be an object", "INVALID_PARAMS")
        request = {"version": 1, "id": rid, "method": arguments["method"], "params": inner}
        image = arguments["method"] == "tab.screenshot"
        return gw.begin_parsed(request, lambda e: finish(tool_response(rid, e, image=image)))
    if name == TOOL_EXTENSION:
        _only(name, arguments, required=("name",), optional=("arguments",))
        if not isinstance(arguments["name"], str):
            raise _RpcError(INVALID_PARAMS, f"{name}: name must be a string", "INVALID_PARAMS")
        ext_args = arguments.get("arguments", {})
        if not isinstance(ext_args, dict):
            raise _RpcError(INVALID_PARAMS, f"{name}: arguments must be an object", "INVALID_PARAMS")
        return _extension_call(gw, rid, arguments["name"], ext_args, lambda e: finish(tool_response(rid, e)))
    if name == TOOL_EXTENSIONS:
        _only(name, arguments, required=(), optional=())
        envelope = success(rid, {"extensions": list(gw.catalog.extensions)})
        return gw.complete_now(envelope, lambda e: finish(tool_response(rid, e)), "tools/call")
    if name == TOOL_EXTENSION_TOOLS:
        _only(name, arguments, required=("names",), optional=())
        names = arguments["names"]
        if (
            not isinstance(names, list)
            or not 1 <= len(names) <= MAX_EXTENSION_TOOL_NAMES
            or not all(isinstance(n, str) for n in names)
        ):
            raise _RpcError(
                INVALID_PARAMS,
                f"{name}: names must be an array of 1 to {MAX_EXTENSION_TOOL_NAMES} strings",
                "INVALID_PARAMS",
            )
        envelope = success(rid, {"tools": [_describe(gw, n) for n in names]})
        return gw.complete_now(envelope, lambda e: finish(tool_response(rid, e)), "tools/call")
    return _direct_call(gw, rid, name, arguments, finish)


def _only(tool: str, arguments: JsonObject, *, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    for key in arguments:
        if key not in required and key not in optional:
            raise _RpcError(INVALID_PARAMS, f"{tool}: unknown argument {key[:100]!r}", "INVALID_PARAMS")
    for key in required:
        if key not in arguments:
            raise _RpcError(INVALID_PARAMS, f"{tool}: argument {key!r} is required", "INVALID_PARAMS")


def _extension_call(
    gw: GatewayCore, rid: Any, name: str, arguments: JsonObject, render: Render
) -> JsonObject:
    """Canonical ``extension.call {name, arguments}``: the engine refuses EXTENSION_NOT_ADMITTED for
    unknown or filtered names and INVALID_PARAMS for arguments its ``inputSchema`` refuses."""
    request = {
        "version": 1,
        "id": rid,
        "method": "extension.call",
        "params": {"name": name, "arguments": arguments},
    }
    return gw.begin_parsed(request, render)


def _direct_call(
    gw: GatewayCore, rid: Any, name: str, arguments: JsonObject, finish: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """An extension called by its own name. Not admitted (unknown, filtered, method not native, mutating
    with actions disabled) -> the engine refuses EXTENSION_NOT_ADMITTED, rendered as ``-32602`` unknown
    tool; arguments its ``inputSchema`` refuses -> ``-32602`` invalid arguments (nothing dispatched)."""
    unknown = f"unknown tool: {name[:100]!r}"
    if not _NAME_RE.match(name):
        raise _RpcError(INVALID_PARAMS, unknown, "EXTENSION_NOT_ADMITTED")
    ext = gw.catalog.extensions.get(name)
    if ext is not None:
        refusal = ext.check_arguments(arguments)
        if refusal is not None:
            detail = refusal[1].replace("/params/arguments", "arguments", 1)
            raise _RpcError(INVALID_PARAMS, f"{name}: invalid arguments: {detail}", refusal[0])

    def render(envelope: JsonObject) -> JsonObject:
        error = envelope.get("error")
        if isinstance(error, dict) and error.get("code") == "EXTENSION_NOT_ADMITTED":
            return rpc_error(rid, INVALID_PARAMS, unknown, "EXTENSION_NOT_ADMITTED")
        return finish(tool_response(rid, envelope))

    return _extension_call(gw, rid, name, arguments, render)


def _describe(gw: GatewayCore, name: str) -> JsonObject:
    ext = gw.catalog.extensions.get(name)
    if ext is None:
        return {
            "name": name,
            "error": {
                "code": "EXTENSION_NOT_ADMITTED",
                "message": f"no admitted extension named {name[:100]!r}",
            },
        }
    return {
        "name": ext.name,
        "description": ext.description,
        "inputSchema": jsonio.clone(ext.input_schema),
        "mutates": ext.mutates,
    }


def tool_response(rid: Any, envelope: JsonObject, *, image: bool = False) -> JsonObject:
    """The JSON-RPC response carrying ``envelope`` as a ``tools/call`` result (CONTRACT.md §7).

    ``image``: the envelope answers ``tab.screenshot``; on success the base64 ``data`` moves into the one
    ``image`` block and the envelope (text block and ``structuredContent``) gets ``imageBytes`` (decoded
    size in bytes) instead. Never raises: an unusable screenshot becomes a RENDERER_FAILED tool error.
    """
    content: list[JsonObject] = []
    result = envelope.get("result")
    if image and envelope.get("success") is True and isinstance(result, dict) and "data" in result:
        data = result["data"]
        try:
            size = len(binascii.a2b_base64(data, strict_mode=True)) if isinstance(data, str) else -1
        except (binascii.Error, ValueError):
            size = -1
        if size < 0:
            envelope = failure(
                envelope.get("id"), "RENDERER_FAILED", "the renderer's screenshot data is not valid base64"
            )
        else:
            rest = {k: v for k, v in result.items() if k != "data"}
            rest["imageBytes"] = size
            envelope = {**envelope, "result": rest}
            content.append({"type": "image", "data": data, "mimeType": "image/png"})
    content.insert(0, {"type": "text", "text": jsonio.dumps(envelope).decode("utf-8")})
    ok = envelope.get("success") is True
    if not ok:
        error = envelope.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        hint = UNKNOWN_OUTCOME_NEXT_STEP if envelope.get("mayHaveCompleted") else NEXT_STEPS.get(str(code))
        if hint is not None:
            content.append({"type": "text", "text": hint})
    return rpc_result(rid, {"content": content, "structuredContent": envelope, "isError": not ok})


# ====================================================================== tools/list and instructions


def _cached(gw: GatewayCore) -> dict[str, Any]:
    """Per-gateway tools list and instructions (the config is immutable, so computed once)."""
    with _CACHE_LOCK:
        entry = _CACHE.get(gw)
    if entry is None:
        entry = {"tools": list_tools(gw), "instructions": instructions(gw)}
        with _CACHE_LOCK:
            _CACHE[gw] = entry
    return entry


def browser_control_schema(gw: GatewayCore) -> JsonObject:
    """``kelpie_browser_control``'s inputSchema, generated from :data:`~kelpie_gateway.schema.METHODS`:
    ``method`` enum = the advertised methods; ``params`` = ``anyOf`` the params schemas of those methods
    (methods with identical params share one entry, titled with their names). In direct targeting without
    a pinned tab, ``tabId`` is required where the method is tab-scoped."""
    cfg = gw.config
    tab_required = cfg.targeting == "direct" and cfg.pinned_tab is None
    groups: dict[bytes, tuple[list[str], JsonObject]] = {}
    for name in gw.catalog.methods:
        m = METHODS[name]
        schema = params_json_schema(m, tab_required=tab_required and m.tab_scoped)
        key = jsonio.dumps(schema)
        if key in groups:
            groups[key][0].append(name)
        else:
            groups[key] = ([name], schema)
    alternatives = [{"title": "params of " + ", ".join(names), **schema} for names, schema in groups.values()]
    return {
        "type": "object",
        "properties": {
            "method": {
                "type": "string",
                "enum": list(gw.catalog.methods),
                "description": "The canonical method to run.",
            },
            "params": {
                "type": "object",
                "description": "The method's params (defaults apply; unknown fields are refused).",
                "default": {},
                "anyOf": alternatives,
            },
        },
        "required": ["method"],
        "additionalProperties": False,
    }


def list_tools(gw: GatewayCore) -> list[JsonObject]:
    """The ``tools/list`` tools: ``kelpie_browser_control`` always (``documentation`` and
    ``capabilities`` are always advertised); the three extension tools only when an extension is
    admitted. Admitted extensions are callable by name but not listed (CONTRACT.md §7)."""
    methods = gw.catalog.methods
    lines = []
    for name in methods:
        m = METHODS[name]
        kind = "mutates" if m.mutates else "read-only"
        if name == "extension.call":
            kind = "mutates per extension"
        lines.append(f"- {name} ({kind}): {m.summary}")
    mutating = any(METHODS[n].mutates for n in methods) or any(
        e.mutates for e in gw.catalog.extensions.values()
    )
    tools: list[JsonObject] = [
        {
            "name": TOOL_BROWSER,
            "title": "Browser control",
            "description": (
                "Run one browser-control method of this gateway: {method, params}. The result is the "
                "gateway's envelope {success, result | error, mayHaveCompleted}. Methods:\n"
                + "\n".join(lines)
            ),
            "inputSchema": browser_control_schema(gw),
            "annotations": {
                "readOnlyHint": not any(METHODS[n].mutates for n in methods),
                "openWorldHint": True,
            },
        }
    ]
    if gw.catalog.extensions:
        tools += [
            {
                "name": TOOL_EXTENSIONS,
                "title": "List extensions",
                "description": "Names of the extensions this gateway admits (call with {}).",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
                "annotations": {"readOnlyHint": True},
            },
            {
                "name": TOOL_EXTENSION_TOOLS,
                "title": "Describe extensions",
                "description": (
                    f"For 1 to {MAX_EXTENSION_TOOL_NAMES} extension names: each one's description, "
                    "inputSchema and whether it mutates (unknown names are reported per name)."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "names": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "maxItems": MAX_EXTENSION_TOOL_NAMES,
                        }
                    },
                    "required": ["names"],
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": True},
            },
            {
                "name": TOOL_EXTENSION,
                "title": "Call an extension",
                "description": (
                    "Call one admitted extension: {name, arguments}; arguments must match the inputSchema "
                    f"that {TOOL_EXTENSION_TOOLS} reports. Each extension is also callable directly as a tool "
                    "named after it."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1, "maxLength": 64},
                        "arguments": {"type": "object", "default": {}},
                    },
                    "required": ["name"],
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": not mutating},
            },
        ]
    return tools


def instructions(gw: GatewayCore) -> str:
    """The ``initialize`` instructions: how refs, BUSY and ``mayHaveCompleted`` work, for this gateway."""
    methods = set(gw.catalog.methods)
    parts = [
        f"This server controls a web browser through {TOOL_BROWSER} {{method, params}}; "
        'method "documentation" returns the full reference of what this browser offers.'
    ]
    if "tab.snapshot" in methods:
        parts.append(
            "Observe a tab with tab.snapshot: it returns page text and elements with refs (like s3e7). "
            "A ref works only on its own tab and only until the next snapshot, navigation or action there; "
            "when a ref is refused, take a new snapshot and use its refs. Elements carry states "
            "(disabled, checked, selected, offscreen, …); a select's options are elements to click. "
            "When the result has next, pass it as params.cursor for the rest of the same snapshot."
        )
    if gw.config.targeting == "direct" and "tabs.list" in methods and gw.config.pinned_tab is None:
        parts.append("Tab methods need params.tabId (from tabs.list or tabs.open).")
    parts.append(
        "BUSY means another action is still running and nothing was done: wait, then try again. "
        "A failure with mayHaveCompleted:true means the action may already have happened: never repeat it "
        "blindly; observe first and decide from what you see."
    )
    if gw.catalog.extensions:
        parts.append(
            f"Extensions: {TOOL_EXTENSIONS} lists them, {TOOL_EXTENSION_TOOLS} describes them, "
            f"{TOOL_EXTENSION} calls one."
        )
    return " ".join(parts)
