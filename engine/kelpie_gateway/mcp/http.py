"""The HTTP-only rules of ``/mcp`` (CONTRACT.md §7 v1.1): ``MCP-Protocol-Version``, ``Mcp-Method`` and
``Mcp-Name`` agree with the body. Pure and sans-I/O (the host hands in the body and the header lines);
``kelpie_gateway.mcp_http_refusal`` is :func:`http_refusal`.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable
from typing import Any, Final

from .. import jsonio
from ..errors import NAME_SHAPE, VERSION_SHAPE, JsonObject, shown
from .protocol import (
    HEADER_MISMATCH,
    HTTP_STATUS,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_VERSIONS,
    RpcError,
    envelope_version,
    is_id,
    is_stateless,
    rpc_error,
    unsupported_version,
)


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
NAME_BEARING: Final = {"tools/call": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a params member (2026-07-28): ``tools/call`` its
``name``, ``resources/read`` its ``uri``."""


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
      equal to ``params.name`` (``resources/read``: ``params.uri``; plain or ``=?base64?…?=``); a missing
      or different one is ``-32020``.
    * Notifications and responses need no headers (the revision defines none for them); handshake-era
      requests are not checked beyond the version.
    """
    try:
        msg = jsonio.loads(body)
    except jsonio.JsonError:
        msg = None
    request = (
        isinstance(msg, dict)
        and is_id(msg.get("id"))
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
            return _refusal_of(rid, unsupported_version(version))
        return None
    method, params = msg["method"], msg.get("params", {})
    if not (is_stateless(method, params) or version in MODERN_PROTOCOL_VERSIONS):
        if version is not None and version not in SUPPORTED_VERSIONS:
            return _refusal_of(rid, unsupported_version(version))
        return None
    try:
        wanted = envelope_version(params)
    except RpcError as exc:
        return _refusal_of(rid, exc)
    if version != wanted:
        return _http_refusal(
            rid,
            HEADER_MISMATCH,
            f"the MCP-Protocol-Version header ({'missing' if version is None else shown(version, 'a revision', VERSION_SHAPE)}) "
            f"does not match params._meta's protocol version {shown(wanted, 'a revision', VERSION_SHAPE)}",
        )
    if seen.get("mcp-method") != method:
        got = seen.get("mcp-method")
        return _http_refusal(
            rid,
            HEADER_MISMATCH,
            f"the Mcp-Method header ({'missing' if got is None else shown(got, 'a method name', NAME_SHAPE)}) "
            f"does not match the method {shown(method, 'a method name', NAME_SHAPE)}",
        )
    member = NAME_BEARING.get(method)
    bearing = params.get(member) if member is not None else None
    if isinstance(bearing, str):
        raw = seen.get("mcp-name")
        if raw is None or _header_value(raw) != bearing:
            return _http_refusal(
                rid,
                HEADER_MISMATCH,
                f"the Mcp-Name header ({'missing' if raw is None else 'different'}) does not match "
                f"params.{member} "
                + (
                    shown(bearing, "a tool name", NAME_SHAPE)
                    if member == "name"
                    else f"(a {len(bearing)}-character URI, not quoted)"
                ),
            )
    if wanted not in MODERN_PROTOCOL_VERSIONS:
        return _refusal_of(rid, unsupported_version(wanted))
    return None


def _http_refusal(rid: Any, code: int, message: str) -> JsonObject:
    return _refusal_of(rid, RpcError(code, message, "INVALID_REQUEST"))


def _refusal_of(rid: Any, exc: RpcError) -> JsonObject:
    return {
        "httpStatus": HTTP_STATUS.get(exc.code, 400),
        "response": rpc_error(rid, exc.code, exc.message, exc.kelpie, exc.data),
    }
