"""Shared configs and helpers for the MCP translation tests (CONTRACT.md §7)."""

from __future__ import annotations

import json
from typing import Any

from kelpie_gateway import Gateway
from kelpie_gateway.schema import NATIVE_ENDPOINTS

CORE = list(NATIVE_ENDPOINTS)
EXT_SCHEMA = {
    "type": "object",
    "properties": {"tabId": {"type": "string"}},
    "required": ["tabId"],
    "additionalProperties": False,
}


def extension(name: str, method: str, *, mutates: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "method": method,
        "description": f"{name} test extension",
        "inputSchema": EXT_SCHEMA,
        "mutates": mutates,
        **extra,
    }


FULL: dict[str, Any] = {
    "nativeMethods": [*CORE, "page-summary", "dialog-observe", "form-fill", "secret-dump"],
    "fixedReader": True,
    "extensions": [
        extension("page_summary", "page-summary"),
        extension("dialog_observe", "dialog-observe", recovery=True),
        extension("form_fill", "form-fill", mutates=True),
        extension("secret_dump", "secret-dump"),
    ],
    "extensionFilter": {"exclude": ["secret_*"]},
}
NOAUTH: dict[str, Any] = {**FULL, "requireAuthorization": False}


def rpc(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(rid: Any, tool: str, arguments: Any) -> dict[str, Any]:
    return rpc(rid, "tools/call", {"name": tool, "arguments": arguments})


def browser(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return call(rid, "kelpie_browser_control", {"method": method, "params": params or {}})


def response(step: dict[str, Any]) -> dict[str, Any]:
    assert step["step"] == "complete", step
    assert isinstance(step["response"], dict), step
    return step["response"]


def envelope_of(result: dict[str, Any]) -> dict[str, Any]:
    """A tools/call result's envelope; checks the text block and structuredContent agree."""
    env = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == env
    assert result["isError"] is (not env["success"])
    return dict(env)


def gateway(config: dict[str, Any]) -> Gateway:
    return Gateway(config)
