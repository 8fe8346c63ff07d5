"""What a client discovers (CONTRACT.md §7): the ``tools/list`` tools, ``kelpie_browser_control``'s
``inputSchema`` generated from :data:`~kelpie_gateway.schema.METHODS`, and the ``initialize`` /
``server/discover`` instructions, computed once per gateway (its config is immutable).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Final

from .. import jsonio
from ..errors import JsonObject
from ..gateway import GatewayCore
from ..schema import MAX_EXTENSION_TOOL_NAMES, METHODS, params_json_schema
from .protocol import INVALID_PARAMS, RpcError

TOOL_BROWSER: Final = "kelpie_browser_control"
TOOL_EXTENSIONS: Final = "kelpie_extensions"
TOOL_EXTENSION_TOOLS: Final = "kelpie_extension_tools"
TOOL_EXTENSION: Final = "kelpie_extension"
DEFAULT_TOOLS: Final = (TOOL_BROWSER, TOOL_EXTENSIONS, TOOL_EXTENSION_TOOLS, TOOL_EXTENSION)


_CACHE: weakref.WeakKeyDictionary[GatewayCore, dict[str, Any]] = weakref.WeakKeyDictionary()
_CACHE_LOCK: Final = threading.Lock()
"""Gateways lock themselves; the cache is shared between gateways, so it has its own lock."""


def tools_list(gw: GatewayCore, params: JsonObject) -> JsonObject:
    if "cursor" in params:
        raise RpcError(INVALID_PARAMS, "unknown cursor: tools/list has a single page", "INVALID_PARAMS")
    return {"tools": jsonio.clone(cached(gw)["tools"])}


def cached(gw: GatewayCore) -> dict[str, Any]:
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
    if gw.config.mcp_tools == "full":
        tools += full_catalogue(gw)
    return tools


def full_catalogue(gw: GatewayCore) -> list[JsonObject]:
    """``mcpTools: "full"`` (``--tools full``, issue 34): one tool per admitted method (named after it, its
    arguments the method's params) and per admitted extension (its own name and inputSchema), after the
    compact four, for clients that prefer direct tools. Calling one is the same transaction as through
    ``kelpie_browser_control`` / ``kelpie_extension``."""
    cfg = gw.config
    tab_required = cfg.targeting == "direct" and cfg.pinned_tab is None
    tools: list[JsonObject] = []
    for name in gw.catalog.methods:
        m = METHODS[name]
        if name == "extension.call":
            continue  # each extension is its own tool below
        tools.append(
            {
                "name": name,
                "title": name,
                "description": m.summary,
                "inputSchema": params_json_schema(m, tab_required=tab_required and m.tab_scoped),
                "annotations": {"readOnlyHint": not m.mutates, "openWorldHint": True},
            }
        )
    for ext in gw.catalog.extensions.values():
        tools.append(
            {
                "name": ext.name,
                "title": ext.name,
                "description": ext.description,
                "inputSchema": jsonio.clone(ext.input_schema),
                "annotations": {"readOnlyHint": not ext.mutates},
            }
        )
    return tools


NATIVE_INPUT = ("click", "hover", "drag", "type_keys")
"""The reference host's native-input extensions (docs/host.md "Native input"): the instructions say when to
prefer them, for whichever of them the gateway admits."""


def instructions(gw: GatewayCore) -> str:
    """The ``initialize`` instructions: how refs, BUSY and ``mayHaveCompleted`` work, for this gateway."""
    methods = set(gw.catalog.methods)
    parts = [
        f"This server controls a web browser through {TOOL_BROWSER} {{method, params}}; "
        'method "documentation" is its full reference.'
    ]
    if "tab.snapshot" in methods and gw.config.observer:
        parts.append(
            "This is a read-only observer: tab.snapshot returns the page's text and elements without refs "
            "(one page, nothing to act on); RENDERER_CHANGED means the page changed during the read: read again."
        )
    elif "tab.snapshot" in methods:
        parts.append(
            "tab.snapshot gives page text and elements with refs (like s3e7) and states "
            "(disabled, …); a ref works on its tab until the next snapshot, navigation or action (if refused, "
            "snapshot again); a select's options are elements. Pass next as params.cursor for more. "
            'Cheapest: find {role?, name?, text?} or include:"controls"; after an action, since:<snapshot '
            "id> gives only the changes."
        )
    if gw.config.targeting == "direct" and "tabs.list" in methods and gw.config.pinned_tab is None:
        parts.append("Tab methods need params.tabId (from tabs.list or tabs.open).")
    parts.append(
        "BUSY or BROWSER_UNAVAILABLE means nothing was done: wait, then try again. "
        "A failure with mayHaveCompleted:true means the action may already have happened: observe before "
        "repeating it. NOT_AUTHORIZED means the host's policy refuses it (a site it does not allow, say): do "
        "not retry. Credentials in reported URLs read REDACTED."
    )
    if gw.catalog.extensions:
        pictures = "screenshot" in gw.catalog.extensions and "tab.screenshot" in methods
        parts.append(
            f"Extensions: {TOOL_EXTENSIONS} lists them, {TOOL_EXTENSION_TOOLS} describes them, "
            f"{TOOL_EXTENSION} calls one" + ("; screenshot: element, full page, JPEG." if pictures else ".")
        )
        native = [n for n in NATIVE_INPUT if n in gw.catalog.extensions]
        if native:
            parts.append(
                f"If a control ignores tab.click or tab.type (hover menus, autocompletes, drags), use the "
                f"extensions {', '.join(native)}: a real hand's events."
            )
    return " ".join(parts)
