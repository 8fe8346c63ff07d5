"""The MCP frontend: one JSON-RPC message in, the first step of its transaction out (CONTRACT.md §7).

:func:`begin` runs :class:`_McpFrontend` through :meth:`GatewayCore.begin_with
<kelpie_gateway.gateway.GatewayCore.begin_with>` (the gateway lock held, the invalidation queue drained).
It parses the message (:mod:`.protocol`), picks its era, answers ``initialize``, ``ping``,
``server/discover`` and ``tools/list`` (:mod:`.tools`) at once and hands ``tools/call`` to
:mod:`.translation`; a JSON-RPC error raised on the way (:class:`~.protocol.RpcError`) becomes the
``complete`` step's response. The table of answers is in :mod:`kelpie_gateway.mcp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import NAME_SHAPE, JsonObject, failure, shown, success
from ..gateway import GatewayCore, Render
from .protocol import (
    CACHE_SCOPE,
    CACHE_TTL_MS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_PROTOCOL_VERSION,
    MESSAGE_KEYS,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSIONS,
    SUPPORTED_VERSIONS,
    RpcError,
    check_envelope,
    check_response_shape,
    is_id,
    is_stateless,
    parse_message,
    rpc_error,
    rpc_result,
    server_info,
    stamp,
    with_http_status,
)
from .resources import METHODS as RESOURCE_METHODS
from .resources import capabilities, resources_request
from .tools import cached, tools_list
from .translation import tools_call


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
        response = rpc_error(rid if is_id(rid) else None, INTERNAL_ERROR, f"internal error: {exc!r}")
        return failure(None, "INTERNAL", repr(exc)), lambda _e: response


FRONTEND: Final = _McpFrontend()


def _translate(gw: GatewayCore, message: Any) -> JsonObject:
    rid: Any = None
    method: str | None = None
    modern = False
    try:
        msg = parse_message(message)
        if isinstance(msg, list):
            raise RpcError(INVALID_REQUEST, "batches (JSON arrays) are not supported", "INVALID_REQUEST")
        if not isinstance(msg, dict):
            raise RpcError(INVALID_REQUEST, "a JSON-RPC message is a JSON object", "INVALID_REQUEST")
        modern = is_stateless(msg.get("method"), msg.get("params"))
        if is_id(msg.get("id")):
            rid = msg["id"]
        if msg.get("jsonrpc") != "2.0":
            raise RpcError(INVALID_REQUEST, 'jsonrpc must be the string "2.0"', "INVALID_REQUEST")
        if "method" not in msg and ("result" in msg or "error" in msg):
            check_response_shape(msg)
            return gw.complete_now(success(None, {}), _no_response, "jsonrpc/response")
        for key in msg:
            if key not in MESSAGE_KEYS:
                raise RpcError(
                    INVALID_REQUEST,
                    f"unknown member {shown(key, 'a member name', NAME_SHAPE)}",
                    "INVALID_REQUEST",
                )
        if not isinstance(msg.get("method"), str):
            raise RpcError(INVALID_REQUEST, "method must be a string", "INVALID_REQUEST")
        method = msg["method"]
        if "id" in msg and not is_id(msg["id"]):
            raise RpcError(INVALID_REQUEST, "id must be a string or a number", "INVALID_REQUEST")
        params = msg.get("params", {})
        if not isinstance(params, dict):
            raise RpcError(INVALID_REQUEST, "params must be an object", "INVALID_REQUEST")
        if "id" not in msg:
            step = gw.complete_now(success(None, {}), _no_response, method)
            if method == "notifications/cancelled" and is_id(params.get("requestId")):
                cancelled = gw.cancel_request(params["requestId"])
                if cancelled is not None:
                    step["cancelled"] = cancelled
            return step
        if gw.closed:
            raise RpcError(INVALID_REQUEST, "this gateway is closed", "INVALID_REQUEST")
        if not modern:
            return _request(gw, rid, method, params)
        check_envelope(params)
        return with_http_status(_stateless_request(gw, rid, method, params))
    except RpcError as exc:
        envelope = failure(rid, exc.kelpie, exc.message)
        response = rpc_error(rid, exc.code, exc.message, exc.kelpie, exc.data)
        step = gw.complete_now(envelope, lambda _e: response, method)
        return with_http_status(step) if modern else step


def _method(method: str) -> str:
    """A client's JSON-RPC method name as a message shows it (quoted only when it looks like a name)."""
    return shown(method, "a method name", NAME_SHAPE)


def _no_response(_envelope: JsonObject) -> None:
    return None


def _request(gw: GatewayCore, rid: Any, method: str, params: JsonObject) -> JsonObject:
    """A handshake-era request (``2025-*``), answered exactly as before the stateless revision."""
    if method == "initialize":
        result = _initialize(gw, params)
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = tools_list(gw, params)
    elif method == "tools/call":
        return tools_call(gw, rid, params, _same)
    elif method in RESOURCE_METHODS:
        return resources_request(gw, rid, method, params, _same, stateless=False)
    else:
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {_method(method)}", "UNSUPPORTED_METHOD")
    response = rpc_result(rid, result)
    return gw.complete_now(success(rid, result), lambda _e: response, method)


def _same(response: JsonObject) -> JsonObject:
    return response


def _stateless_request(gw: GatewayCore, rid: Any, method: str, params: JsonObject) -> JsonObject:
    """A request of the stateless revision whose envelope was checked."""
    if method == "server/discover":
        result: JsonObject = discover(gw)
    elif method == "tools/list":
        result = {**tools_list(gw, params), "ttlMs": CACHE_TTL_MS, "cacheScope": CACHE_SCOPE}
    elif method == "tools/call":
        return tools_call(gw, rid, params, stamp)
    elif method in RESOURCE_METHODS:
        return resources_request(gw, rid, method, params, stamp, stateless=True)
    elif method in ("ping", "initialize"):
        raise RpcError(
            METHOD_NOT_FOUND,
            f"method not found: {method} is not part of MCP {', '.join(MODERN_PROTOCOL_VERSIONS)} "
            "(a request without the per-request _meta envelope is served by the handshake revisions)",
            "UNSUPPORTED_METHOD",
        )
    else:
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {_method(method)}", "UNSUPPORTED_METHOD")
    response = stamp(rpc_result(rid, result))
    return gw.complete_now(success(rid, result), lambda _e: response, method)


def discover(gw: GatewayCore) -> JsonObject:
    """``server/discover``'s result (CONTRACT.md §7 v1.1): ``{resultType, supportedVersions,
    capabilities, serverInfo, instructions, ttlMs, cacheScope}`` (the ``_meta`` stamp is added with every
    stateless result)."""
    return {
        "resultType": "complete",
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": capabilities(gw),
        "serverInfo": server_info(),
        "instructions": cached(gw)["instructions"],
        "ttlMs": CACHE_TTL_MS,
        "cacheScope": CACHE_SCOPE,
    }


def _initialize(gw: GatewayCore, params: JsonObject) -> JsonObject:
    wanted = params.get("protocolVersion")
    if not isinstance(wanted, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)", "INVALID_PARAMS")
    return {
        "protocolVersion": wanted if wanted in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
        "capabilities": capabilities(gw),
        "serverInfo": server_info(),
        "instructions": cached(gw)["instructions"],
    }
