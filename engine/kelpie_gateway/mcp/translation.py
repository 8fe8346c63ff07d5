"""``tools/call`` (CONTRACT.md §7): a tool call becomes a canonical request run by the coordinator
(:meth:`GatewayCore.begin_parsed <kelpie_gateway.gateway.GatewayCore.begin_parsed>`, so authorization, BUSY,
refs and extension admission are the canonical route's), and its envelope comes back as a tool result
(:func:`tool_response`: text block, ``structuredContent``, ``isError``, a screenshot's ``image`` block and
the ``Next step:`` hints).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from typing import Any, Final

from .. import jsonio
from ..config import NAME_PATTERN, Extension
from ..errors import NAME_SHAPE, JsonObject, failure, shown, success
from ..gateway import GatewayCore, Render
from ..schema import MAX_EXTENSION_TOOL_NAMES, METHODS
from .protocol import INVALID_PARAMS, RpcError, rpc_error, rpc_result
from .resources import READ_ENDPOINT
from .tools import TOOL_BROWSER, TOOL_EXTENSION, TOOL_EXTENSION_TOOLS, TOOL_EXTENSIONS

_NAME_RE: Final = re.compile(NAME_PATTERN)


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


def tools_call(
    gw: GatewayCore, rid: Any, params: JsonObject, finish: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """``tools/call`` in either era; ``finish`` shapes each JSON-RPC response for the era (identity for
    the handshake revisions, :func:`stamp` for the stateless one)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string)", "INVALID_PARAMS")
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, f"{_tool(name)}: arguments must be an object", "INVALID_PARAMS")
    if name == TOOL_BROWSER:
        _only(name, arguments, required=("method",), optional=("params",))
        if not isinstance(arguments["method"], str):
            raise RpcError(INVALID_PARAMS, f"{name}: method must be a string", "INVALID_PARAMS")
        inner = arguments.get("params", {})
        if not isinstance(inner, dict):
            raise RpcError(INVALID_PARAMS, f"{name}: params must be an object", "INVALID_PARAMS")
        request = {"version": 1, "id": rid, "method": arguments["method"], "params": inner}
        image = arguments["method"] == "tab.screenshot"
        named = inner.get("name") if arguments["method"] == "extension.call" else None
        ext = gw.catalog.extensions.get(named) if isinstance(named, str) else None
        return gw.begin_parsed(
            request, lambda e: finish(tool_response(rid, e, image=image, extension=_kind(ext)))
        )
    if name == TOOL_EXTENSION:
        _only(name, arguments, required=("name",), optional=("arguments",))
        if not isinstance(arguments["name"], str):
            raise RpcError(INVALID_PARAMS, f"{name}: name must be a string", "INVALID_PARAMS")
        ext_args = arguments.get("arguments", {})
        if not isinstance(ext_args, dict):
            raise RpcError(INVALID_PARAMS, f"{name}: arguments must be an object", "INVALID_PARAMS")
        kind = _kind(gw.catalog.extensions.get(arguments["name"]))
        return _extension_call(
            gw, rid, arguments["name"], ext_args, lambda e: finish(tool_response(rid, e, extension=kind))
        )
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
            raise RpcError(
                INVALID_PARAMS,
                f"{name}: names must be an array of 1 to {MAX_EXTENSION_TOOL_NAMES} strings",
                "INVALID_PARAMS",
            )
        envelope = success(rid, {"tools": [_describe(gw, n) for n in names]})
        return gw.complete_now(envelope, lambda e: finish(tool_response(rid, e)), "tools/call")
    if gw.config.mcp_tools == "full" and name in gw.catalog.methods and name != "extension.call":
        request = {"version": 1, "id": rid, "method": name, "params": arguments}
        image = name == "tab.screenshot"
        return gw.begin_parsed(request, lambda e: finish(tool_response(rid, e, image=image)))
    return _direct_call(gw, rid, name, arguments, finish)


def _tool(name: str) -> str:
    """A client's tool or extension name as a message shows it (quoted only when it looks like a name)."""
    return shown(name, "a tool name", NAME_SHAPE)


def _only(tool: str, arguments: JsonObject, *, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    for key in arguments:
        if key not in required and key not in optional:
            raise RpcError(
                INVALID_PARAMS,
                f"{tool}: unknown argument {shown(key, 'an argument name', NAME_SHAPE)}",
                "INVALID_PARAMS",
            )
    for key in required:
        if key not in arguments:
            raise RpcError(INVALID_PARAMS, f"{tool}: argument {key!r} is required", "INVALID_PARAMS")


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
    unknown = unknown_tool(gw, name)
    if not _NAME_RE.match(name):
        raise RpcError(INVALID_PARAMS, unknown, "EXTENSION_NOT_ADMITTED")
    ext = gw.catalog.extensions.get(name)
    kind = _kind(ext)
    if ext is not None:
        refusal = ext.check_arguments(arguments)
        if refusal is not None:
            detail = refusal[1].replace("/params/arguments", "arguments", 1)
            raise RpcError(INVALID_PARAMS, f"{name}: invalid arguments: {detail}", refusal[0])

    def render(envelope: JsonObject) -> JsonObject:
        error = envelope.get("error")
        if isinstance(error, dict) and error.get("code") == "EXTENSION_NOT_ADMITTED":
            return rpc_error(rid, INVALID_PARAMS, unknown, "EXTENSION_NOT_ADMITTED")
        return finish(tool_response(rid, envelope, extension=kind))

    return _extension_call(gw, rid, name, arguments, render)


def _kind(ext: Extension | None) -> str | None:
    """How an extension's results become blocks: ``"read"`` for the one serving ``resources-read`` (its
    contents become embedded resources), ``"extension"`` for any other, None when it is not admitted."""
    if ext is None:
        return None
    return "read" if ext.method == READ_ENDPOINT else "extension"


def unknown_tool(gw: GatewayCore, name: str) -> str:
    """The ``-32602`` message for a tool name nothing answers to, naming the tool to call instead (issue 34):
    a method name points at ``kelpie_browser_control``, anything else at ``kelpie_extensions`` (which lists
    the admitted extension names). One line, the name quoted only in a tool name's shape, else described
    (issue 27: :func:`~kelpie_gateway.errors.shown`)."""
    quoted = _tool(name)
    if name in METHODS:
        return (
            f"unknown tool {quoted}: a method is not a tool; call {TOOL_BROWSER} "
            f'{{method:"{name}", params:{{…}}}}'
        )
    return (
        f"unknown tool {quoted}: the tools are {TOOL_BROWSER} (methods) and {TOOL_EXTENSION} "
        f"{{name, arguments}}; {TOOL_EXTENSIONS} lists the extension names"
    )


def _describe(gw: GatewayCore, name: str) -> JsonObject:
    ext = gw.catalog.extensions.get(name)
    if ext is None:
        return {
            "name": name,
            "error": {
                "code": "EXTENSION_NOT_ADMITTED",
                "message": f"no admitted extension named {_tool(name)}",
            },
        }
    return {
        "name": ext.name,
        "description": ext.description,
        "inputSchema": jsonio.clone(ext.input_schema),
        "mutates": ext.mutates,
    }


MAX_RESOURCE_LINKS: Final = 20
"""At most this many ``resource_link`` blocks in one tool result (a long ``downloads`` list links its
newest complete entries; the rest stay readable by URI)."""


def tool_response(
    rid: Any, envelope: JsonObject, *, image: bool = False, extension: str | None = None
) -> JsonObject:
    """The JSON-RPC response carrying ``envelope`` as a ``tools/call`` result (CONTRACT.md §7).

    ``image``: the envelope answers ``tab.screenshot``; on success the base64 ``data`` moves into the one
    ``image`` block and the envelope (text block and ``structuredContent``) gets ``imageBytes`` (decoded
    size in bytes) instead. ``extension``: the envelope answers an extension (``"extension"``) — a result
    shaped like a picture (``mimeType`` ``image/…`` and base64 ``data``) is treated exactly so — or the
    extension serving ``resources-read`` (``"read"``): each of its ``contents`` moves into one embedded
    ``resource`` block and the envelope keeps ``{uri, mimeType, bytes}`` for it (docs/mcp.md
    "Resources"). On every success, the result's ``download`` object and ``downloads`` entries that carry
    a ``resource`` URI and are complete add ``resource_link`` blocks (at most :data:`MAX_RESOURCE_LINKS`).
    Never raises: an unusable picture becomes a RENDERER_FAILED tool error.
    """
    content: list[JsonObject] = []
    result = envelope.get("result")
    ok = envelope.get("success") is True and isinstance(result, dict)
    if ok and isinstance(result, dict) and "data" in result:
        mime = result.get("mimeType")
        pictured = image or (extension == "extension" and isinstance(mime, str) and mime.startswith("image/"))
        if pictured:
            data = result["data"]
            try:
                size = len(binascii.a2b_base64(data, strict_mode=True)) if isinstance(data, str) else -1
            except (binascii.Error, ValueError):
                size = -1
            if size < 0:
                envelope = failure(
                    envelope.get("id"),
                    "RENDERER_FAILED",
                    "the renderer's screenshot data is not valid base64",
                )
                ok = False
            else:
                rest = {k: v for k, v in result.items() if k != "data"}
                rest["imageBytes"] = size
                envelope = {**envelope, "result": rest}
                content.append(
                    {
                        "type": "image",
                        "data": data,
                        "mimeType": mime if isinstance(mime, str) else "image/png",
                    }
                )
    if ok and extension == "read" and isinstance(result, dict) and isinstance(result.get("contents"), list):
        envelope, embedded = _embedded(envelope, result["contents"])
        content.extend(embedded)
    if ok:
        content.extend(_links(envelope.get("result")))
    content.insert(0, {"type": "text", "text": jsonio.dumps(envelope).decode("utf-8")})
    ok = envelope.get("success") is True
    if not ok:
        error = envelope.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        hint = UNKNOWN_OUTCOME_NEXT_STEP if envelope.get("mayHaveCompleted") else NEXT_STEPS.get(str(code))
        if hint is not None:
            content.append({"type": "text", "text": hint})
    return rpc_result(rid, {"content": content, "structuredContent": envelope, "isError": not ok})


def _embedded(envelope: JsonObject, contents: list[Any]) -> tuple[JsonObject, list[JsonObject]]:
    """A ``resources-read`` result's contents as embedded ``resource`` blocks; the envelope keeps each
    content's ``uri``, ``mimeType`` and size (``bytes`` of a blob, ``chars`` of a text) instead, so the
    file travels once in the response."""
    kept: list[Any] = []
    blocks: list[JsonObject] = []
    for item in contents:
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            kept.append(item)
            continue
        resource = {k: item[k] for k in ("uri", "mimeType", "text", "blob") if k in item}
        summary = {k: v for k, v in item.items() if k not in ("text", "blob")}
        blob, text = item.get("blob"), item.get("text")
        try:
            if isinstance(blob, str):
                summary["bytes"] = len(binascii.a2b_base64(blob, strict_mode=True))
            elif isinstance(text, str):
                summary["chars"] = len(text)
            else:
                raise ValueError("no text or blob")
        except (binascii.Error, ValueError):
            kept.append(item)
            continue
        kept.append(summary)
        blocks.append({"type": "resource", "resource": resource})
    result = {**envelope["result"], "contents": kept}
    return {**envelope, "result": result}, blocks


def _links(result: Any) -> list[JsonObject]:
    """``resource_link`` blocks for a result's complete ``download`` and ``downloads`` entries (newest last
    in a list: the last :data:`MAX_RESOURCE_LINKS` are linked)."""
    if not isinstance(result, dict):
        return []
    found: list[Any] = []
    if isinstance(result.get("download"), dict):
        found.append(result["download"])
    if isinstance(result.get("downloads"), list):
        found.extend(result["downloads"])
    links: list[JsonObject] = []
    for item in found:
        if not isinstance(item, dict) or not isinstance(item.get("resource"), str):
            continue
        if item.get("state", "complete") != "complete":
            continue
        name = item.get("name")
        link: JsonObject = {
            "type": "resource_link",
            "uri": item["resource"],
            "name": name if isinstance(name, str) and name else item["resource"],
        }
        if isinstance(item.get("mimeType"), str):
            link["mimeType"] = item["mimeType"]
        size = item.get("bytes")
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            link["size"] = size
        links.append(link)
    return links[-MAX_RESOURCE_LINKS:]
