"""MCP resources (docs/mcp.md "Resources"): ``resources/list``, ``resources/read`` and
``resources/templates/list``, served by the host through native endpoints declared like extensions.

The gateway keeps no files and does no I/O, so a resource is the host's: a host serves resources by
admitting an extension whose ``method`` is :data:`READ_ENDPOINT` (``resources-read``; arguments
``{uri}``, result ``{contents: [{uri, mimeType?, text | blob}]}``) and, for the list, one whose ``method``
is :data:`LIST_ENDPOINT` (``resources-list``; arguments ``{cursor?}``, result ``{resources: [{uri, name,
title?, description?, mimeType?, size?}], nextCursor?}``). Then:

* ``initialize`` and ``server/discover`` declare ``capabilities.resources`` (``subscribe`` and
  ``listChanged`` false: the gateway sends no notifications);
* ``resources/list`` and ``resources/read`` become the canonical ``extension.call`` of that extension, so
  the host's ``authorize`` step, the lanes (``BUSY``), the extension filter, the audit record and
  ``notifications/cancelled`` apply exactly as to any extension; the C, Kotlin and Swift hosts serve
  resources by declaring the same two descriptors;
* ``resources/templates/list`` answers ``{resourceTemplates: []}`` at once (the URIs are the host's own,
  handed out in results, never built by clients).

Without such an extension every ``resources/*`` method is ``-32601`` as before. Errors: arguments the
descriptor's ``inputSchema`` refuses, and a host's ``INVALID_PARAMS`` (an unknown URI), are ``-32602``
(``data.uri`` for a read; MCP 2025-11-25 retired ``-32002``); any other refusal is ``-32603`` with
``data.code`` (the canonical code) and ``data.retryable``. In the stateless revision a result carries
``ttlMs: 0`` and ``cacheScope: "private"`` (ids are per host run, so nothing is cached across runs) and an
error carries its HTTP status on the ``complete`` step even when it is decided after the dispatch
(:class:`~kelpie_gateway.gateway.Answer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..config import Extension
from ..errors import JsonObject, success
from ..gateway import Answer, GatewayCore
from .protocol import (
    HTTP_STATUS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RpcError,
    rpc_error,
    rpc_result,
)

READ_ENDPOINT: Final = "resources-read"
"""The native endpoint (an extension's ``method``) that serves ``resources/read``."""
LIST_ENDPOINT: Final = "resources-list"
"""The native endpoint (an extension's ``method``) that serves ``resources/list``."""
METHODS: Final = ("resources/list", "resources/read", "resources/templates/list")
CAPABILITY: Final = {"subscribe": False, "listChanged": False}
RESULT_TTL_MS: Final = 0


def serving(gw: GatewayCore, endpoint: str) -> Extension | None:
    """The admitted extension whose ``method`` is ``endpoint`` (the first in config order), or None."""
    for ext in gw.catalog.extensions.values():
        if ext.method == endpoint:
            return ext
    return None


def capabilities(gw: GatewayCore) -> JsonObject:
    """The server capabilities of ``initialize`` and ``server/discover``: ``tools`` always, ``resources``
    when an admitted extension serves ``resources-read``."""
    caps: JsonObject = {"tools": {"listChanged": False}}
    if serving(gw, READ_ENDPOINT) is not None:
        caps["resources"] = dict(CAPABILITY)
    return caps


def resources_request(
    gw: GatewayCore,
    rid: Any,
    method: str,
    params: JsonObject,
    finish: Callable[[JsonObject], JsonObject],
    *,
    stateless: bool,
) -> JsonObject:
    """The first step of ``resources/list``, ``resources/read`` or ``resources/templates/list``; ``finish``
    shapes each response for the era (identity, or the stateless stamp). Raises :class:`RpcError` for
    what is refused before any transaction (``-32601`` when the gateway serves no resources, ``-32602``
    for bad params)."""
    if serving(gw, READ_ENDPOINT) is None:
        raise RpcError(
            METHOD_NOT_FOUND,
            f"method not found: {method!r} (this host serves no resources)",
            "UNSUPPORTED_METHOD",
        )
    extra: JsonObject = {"ttlMs": RESULT_TTL_MS, "cacheScope": "private"} if stateless else {}
    if method == "resources/templates/list":
        if "cursor" in params:
            raise RpcError(
                INVALID_PARAMS, "unknown cursor: resources/templates/list has a single page", "INVALID_PARAMS"
            )
        result: JsonObject = {"resourceTemplates": [], **extra}
        response = finish(rpc_result(rid, result))
        return gw.complete_now(success(rid, result), lambda _e: response, method)
    uri: str | None = None
    if method == "resources/read":
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "resources/read needs params.uri (a string)", "INVALID_PARAMS")
        arguments: JsonObject = {"uri": uri}
        ext = serving(gw, READ_ENDPOINT)
    else:
        arguments = {}
        if "cursor" in params:
            if not isinstance(params["cursor"], str):
                raise RpcError(INVALID_PARAMS, "resources/list: cursor must be a string", "INVALID_PARAMS")
            arguments["cursor"] = params["cursor"]
        ext = serving(gw, LIST_ENDPOINT)
        if ext is None:  # a host that reads but does not list: nothing to list
            if arguments:
                raise RpcError(INVALID_PARAMS, "unknown cursor: there is nothing to list", "INVALID_PARAMS")
            result = {"resources": [], **extra}
            response = finish(rpc_result(rid, result))
            return gw.complete_now(success(rid, result), lambda _e: response, method)
    assert ext is not None
    refusal = ext.check_arguments(arguments)
    if refusal is not None:
        what = f"unknown resource {uri[:200]!r}" if uri is not None else "invalid cursor"
        raise RpcError(
            INVALID_PARAMS, f"{method}: {what}", refusal[0], {"uri": uri} if uri is not None else None
        )
    request = {
        "version": 1,
        "id": rid,
        "method": "extension.call",
        "params": {"name": ext.name, "arguments": arguments},
    }

    def render(envelope: JsonObject) -> Any:
        response = answer(rid, method, envelope, uri, extra, finish)
        error = response.get("error") if isinstance(response, dict) else None
        if stateless and isinstance(error, dict) and error.get("code") in HTTP_STATUS:
            return Answer(response, HTTP_STATUS[error["code"]])
        return response

    return gw.begin_parsed(request, render)


def _entries(value: Any, required: tuple[str, ...]) -> list[JsonObject] | None:
    if not isinstance(value, list):
        return None
    for item in value:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in required):
            return None
    return value


def _contents_ok(contents: list[JsonObject]) -> bool:
    return all(isinstance(c.get("text"), str) != isinstance(c.get("blob"), str) for c in contents)


def answer(
    rid: Any,
    method: str,
    envelope: JsonObject,
    uri: str | None,
    extra: JsonObject,
    finish: Callable[[JsonObject], JsonObject],
) -> JsonObject:
    """The JSON-RPC response of a ``resources/list`` or ``resources/read`` whose canonical
    ``extension.call`` ended with ``envelope``."""
    if envelope.get("success") is True:
        result = envelope.get("result")
        result = result if isinstance(result, dict) else {}
        if method == "resources/read":
            contents = _entries(result.get("contents"), ("uri",))
            if contents is not None and _contents_ok(contents):
                return finish(rpc_result(rid, {"contents": contents, **extra}))
        else:
            resources = _entries(result.get("resources"), ("uri", "name"))
            if resources is not None:
                out: JsonObject = {"resources": resources}
                if isinstance(result.get("nextCursor"), str):
                    out["nextCursor"] = result["nextCursor"]
                return finish(rpc_result(rid, {**out, **extra}))
        return rpc_error(rid, INTERNAL_ERROR, f"{method}: the host's answer is malformed", "RENDERER_FAILED")
    error = envelope.get("error")
    error = error if isinstance(error, dict) else {}
    code = str(error.get("code") or "INTERNAL")
    message = f"{method}: {error.get('message') or code}"
    if code == "INVALID_PARAMS":
        return rpc_error(rid, INVALID_PARAMS, message, code, {"uri": uri} if uri is not None else None)
    if code in ("EXTENSION_NOT_ADMITTED", "UNSUPPORTED_METHOD"):
        return rpc_error(rid, METHOD_NOT_FOUND, message, code)
    data = {"retryable": error.get("retryable") is True}
    return rpc_error(rid, INTERNAL_ERROR, message, code, data)
