"""MCP's JSON-RPC layer (CONTRACT.md §7): message shapes, ids, error codes, the two eras and their revisions.

Pure functions and constants, no gateway: :func:`parse_message` (text or Mapping -> a JSON value, under the
4 MiB cap), :func:`is_id`, :func:`rpc_result` / :func:`rpc_error` (the one JSON-RPC response builder the
engine and every host transport use; ``kelpie_gateway.jsonrpc_error``), the stateless revision's
per-request envelope (:func:`is_stateless`, :func:`check_envelope`) and what it adds to an answer
(:func:`stamp`, :func:`with_http_status`). A JSON-RPC error decided before any transaction is raised as
:class:`RpcError` inside the package and becomes a value in :mod:`kelpie_gateway.mcp.frontend`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from .. import jsonio
from ..errors import VERSION_SHAPE, JsonObject, shown
from ..version import __version__

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
INTERNAL_ERROR: Final = -32603
"""A gateway bug (never bad input): the frontend's ``internal_error`` and a host's own failures."""
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

MESSAGE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_RESPONSE_KEYS: Final = frozenset({"jsonrpc", "id", "result", "error"})


class RpcError(Exception):
    """A JSON-RPC error decided before any transaction: ``code`` (JSON-RPC), ``kelpie`` (canonical) and
    ``data`` (extra members of ``error.data``, e.g. ``supported`` for ``-32022``)."""

    def __init__(self, code: int, message: str, kelpie: str, data: JsonObject | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.kelpie = kelpie
        self.data = data


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


def is_id(value: Any) -> bool:
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


def parse_message(message: Any, *, unique: bool = True) -> Any:
    """A JSON-RPC message as parsed JSON: text parsed under the 4 MiB cap (a repeated member name is
    ``-32600``: the text parses, the message is not an acceptable request; issue 27), a Python value
    copied through its JSON text (a dict cannot repeat a name: not checked again). Raises RpcError."""
    if isinstance(message, str | bytes | bytearray | memoryview):
        try:
            return jsonio.loads(message, unique=unique)
        except jsonio.DuplicateMember as exc:
            raise RpcError(INVALID_REQUEST, str(exc), "INVALID_JSON") from None
        except jsonio.JsonError as exc:
            if exc.code == "REQUEST_TOO_LARGE":
                raise RpcError(INVALID_REQUEST, str(exc), "REQUEST_TOO_LARGE") from None
            raise RpcError(PARSE_ERROR, f"parse error: {exc}", "INVALID_JSON") from None
    if isinstance(message, Mapping | list | tuple):
        try:
            text = jsonio.dumps(dict(message) if isinstance(message, Mapping) else list(message))
        except (TypeError, ValueError) as exc:
            raise RpcError(INVALID_REQUEST, f"not JSON data: {exc}", "INVALID_REQUEST") from None
        return parse_message(text, unique=False)
    raise RpcError(INVALID_REQUEST, "a JSON-RPC message is a JSON object", "INVALID_REQUEST")


def check_response_shape(msg: JsonObject) -> None:
    if set(msg) - _RESPONSE_KEYS or ("result" in msg) == ("error" in msg) or "id" not in msg:
        raise RpcError(INVALID_REQUEST, "not a JSON-RPC request, notification or response", "INVALID_REQUEST")
    if not (msg["id"] is None or is_id(msg["id"])):
        raise RpcError(INVALID_REQUEST, "id must be a string, a number or null", "INVALID_REQUEST")


def is_stateless(method: Any, params: Any) -> bool:
    """Whether a request belongs to the stateless era (CONTRACT.md §7 v1.1): it is ``server/discover`` (a
    method only that revision has), or its ``params._meta`` (an object) carries either required envelope
    key. Everything else is a handshake-era request. Pure; never raises."""
    if method == "server/discover":
        return True
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and (META_PROTOCOL_VERSION in meta or META_CLIENT_CAPABILITIES in meta)


def envelope_version(params: JsonObject) -> str:
    """The revision a stateless request names, after checking its ``_meta`` envelope: both required keys
    present, ``protocolVersion`` a string and ``clientCapabilities`` an object (else ``-32602``)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} and "
            f"{META_CLIENT_CAPABILITIES!r}",
            "INVALID_PARAMS",
        )
    missing = [key for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        raise RpcError(
            INVALID_PARAMS, f"params._meta is missing {' and '.join(map(repr, missing))}", "INVALID_PARAMS"
        )
    version = meta[META_PROTOCOL_VERSION]
    if not isinstance(version, str):
        raise RpcError(
            INVALID_PARAMS, f"params._meta[{META_PROTOCOL_VERSION!r}] must be a string", "INVALID_PARAMS"
        )
    if not isinstance(meta[META_CLIENT_CAPABILITIES], dict):
        raise RpcError(
            INVALID_PARAMS, f"params._meta[{META_CLIENT_CAPABILITIES!r}] must be an object", "INVALID_PARAMS"
        )
    return version


def unsupported_version(requested: str) -> RpcError:
    handshake = requested in PROTOCOL_VERSIONS
    named = shown(requested, "a protocol revision", VERSION_SHAPE)
    hint = (
        f"{requested} is a handshake revision: send initialize without the per-request _meta envelope"
        if handshake
        else f"this server speaks {', '.join(SUPPORTED_VERSIONS)}"
    )
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"unsupported protocol version {named}; {hint}",
        "INVALID_REQUEST",
        # the revision asked for, when it looks like one (a client string is echoed only in its shape)
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested if named[0] == "'" else named},
    )


def check_envelope(params: JsonObject) -> str:
    """The whole per-request check of a stateless request: the envelope (``-32602``), then the revision
    (``-32022`` with ``data.supported`` and ``data.requested``). Returns the revision."""
    version = envelope_version(params)
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise unsupported_version(version)
    return version


def server_info() -> JsonObject:
    """``{name, title, version}`` of this server (``initialize``'s ``serverInfo``, the stateless stamp);
    ``version`` is :mod:`kelpie_gateway.version`'s."""
    return {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}


def stamp(response: JsonObject) -> JsonObject:
    """A stateless answer: every result gains ``resultType:"complete"`` and the serverInfo ``_meta`` stamp
    (errors are unchanged). The result's own members are untouched, so tool results, ``structuredContent``
    and image blocks are those of the handshake era."""
    result = response.get("result")
    if isinstance(result, dict):
        meta = {META_SERVER_INFO: server_info()}
        return {**response, "result": {**result, "resultType": "complete", "_meta": meta}}
    return response


def with_http_status(step: JsonObject) -> JsonObject:
    """Put the stateless revision's HTTP status of a JSON-RPC error on its ``complete`` step."""
    response = step.get("response") if step.get("step") == "complete" else None
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict) and error.get("code") in HTTP_STATUS:
        step["httpStatus"] = HTTP_STATUS[error["code"]]
    return step
