"""MCP translation behaviour a client notices (CONTRACT.md §7, §8): schemas, SDK compatibility,
screenshot image blocks, next-step guidance, input forms."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import jsonschema
import pytest
from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import MAX_REQUEST_BYTES, dumps
from kelpie_gateway.schema import METHODS
from mcp import types

from tests.mcp.helpers import CORE, FULL, NOAUTH, browser, call, envelope_of, response, rpc

CONFIGS = {
    "bare": {},
    "full": FULL,
    "read-only": {**FULL, "allowActions": False},
    "selected": {**FULL, "targeting": "selected"},
    "pinned": {**FULL, "pinnedTab": "P"},
    "no-reader": {"nativeMethods": CORE},
    "no-browser": {**FULL, "browserAvailable": False},
    "filtered-out": {**FULL, "extensionFilter": {"exclude": ["*"]}},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_tools_list_offers_exactly_what_the_gateway_advertises(name: str) -> None:
    gw = Gateway(CONFIGS[name])
    listed = types.ListToolsResult.model_validate(response(gw.begin_mcp(rpc(1, "tools/list")))["result"])
    tools = {t.name: t for t in listed.tools}
    control = tools["kelpie_browser_control"].input_schema
    assert control["properties"]["method"]["enum"] == gw._catalog.methods
    extension_tools = {"kelpie_extensions", "kelpie_extension_tools", "kelpie_extension"}
    assert (extension_tools <= set(tools)) is bool(gw._catalog.extensions)
    assert set(tools) - extension_tools == {"kelpie_browser_control"}
    for tool in listed.tools:  # admitted extensions are callable by name but never listed
        assert tool.name not in gw._catalog.extensions
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)


@pytest.mark.parametrize("name", ["full", "selected", "pinned", "read-only"])
def test_browser_control_schema_accepts_every_advertised_method_with_valid_params(name: str) -> None:
    gw = Gateway(CONFIGS[name])
    tools = response(gw.begin_mcp(rpc(1, "tools/list")))["result"]["tools"]
    validator = jsonschema.Draft202012Validator(tools[0]["inputSchema"])
    samples: dict[str, dict[str, Any]] = {
        "tabs.select": {"tabId": "A"},
        "tabs.close": {"tabId": "A"},
        "tabs.open": {"url": "https://example.com/"},
        "tab.snapshot": {"tabId": "A", "maxChars": 100},
        "tab.click": {"tabId": "A", "ref": "s1e1"},
        "tab.type": {"tabId": "A", "ref": "s1e1", "text": "hi"},
        "tab.navigate": {"tabId": "A", "url": "about:blank"},
        "tab.screenshot": {"tabId": "A"},
        "extension.call": {"name": "page_summary", "arguments": {"tabId": "A"}},
    }
    for method in gw._catalog.methods:
        validator.validate({"method": method, "params": samples.get(method, {})})
    assert not validator.is_valid({"method": "tab.scroll", "params": {}})
    assert not validator.is_valid({"method": "tabs.list", "params": {"bogus": 1}})
    assert not validator.is_valid({"method": "tabs.list", "tabId": "A"})
    if name == "full" and "tab.snapshot" in gw._catalog.methods:  # direct targeting: tabId is required
        assert not validator.is_valid({"method": "tab.click", "params": {"ref": "s1e1"}})


def test_responses_parse_with_the_official_sdk_types() -> None:
    gw = Gateway(NOAUTH)
    init = response(gw.begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})))
    types.JSONRPCResponse.model_validate(init)
    parsed = types.InitializeResult.model_validate(init["result"])
    assert parsed.server_info.name == "kelpie-browser-gateway"
    assert parsed.capabilities.tools is not None
    done = response(gw.begin_mcp(call(2, "kelpie_extension_tools", {"names": ["page_summary", "nope"]})))
    result = types.CallToolResult.model_validate(done["result"])
    assert result.is_error is False
    described = result.structured_content["result"]["tools"]
    assert described[0]["inputSchema"]["required"] == ["tabId"]
    assert described[1]["error"]["code"] == "EXTENSION_NOT_ADMITTED"
    failure = response(gw.begin_mcp(rpc(3, "nope/nope")))
    types.JSONRPCError.model_validate(failure)


def _screenshot(gw: Gateway, data: str, rid: int = 1) -> dict[str, Any]:
    step = gw.begin_mcp(browser(rid, "tab.screenshot", {"tabId": "A"}))
    assert step["step"] == "dispatch" and step["method"] == "screenshot"
    result = {"success": True, "mimeType": "image/png", "data": data, "width": 640, "height": 480}
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})


def test_screenshot_base64_appears_exactly_once_in_the_whole_response() -> None:
    png = b"\x89PNG\r\n\x1a\n" + os.urandom(300_000)
    data = base64.b64encode(png).decode()
    step = _screenshot(Gateway(NOAUTH), data)
    assert dumps(step).count(data.encode()) == 1
    result = types.CallToolResult.model_validate(response(step)["result"])
    images = [b for b in result.content if b.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png" and images[0].data == data
    env = envelope_of(response(step)["result"])
    assert "data" not in env["result"]
    assert env["result"] == {"mimeType": "image/png", "width": 640, "height": 480, "imageBytes": len(png)}


def test_screenshot_with_broken_base64_is_a_tool_error_without_image() -> None:
    step = _screenshot(Gateway(NOAUTH), "not base64!!")
    result = response(step)["result"]
    assert [b["type"] for b in result["content"]] == ["text"]
    env = envelope_of(result)
    assert env["error"]["code"] == "RENDERER_FAILED" and env["mayHaveCompleted"] is False


def test_screenshot_refused_before_dispatch_has_no_image_block() -> None:
    result = response(
        Gateway(NOAUTH).begin_mcp(browser(1, "tab.screenshot", {"tabId": "A", "fullPage": True}))
    )
    assert [b["type"] for b in result["result"]["content"]] == ["text"]


def test_unknown_outcome_tells_the_model_not_to_repeat() -> None:
    gw = Gateway(NOAUTH)
    step = gw.begin_mcp(browser(1, "tabs.open", {"url": "https://example.com/"}))
    done = gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    result = response(done)["result"]
    env = envelope_of(result)
    assert env["mayHaveCompleted"] is True and result["isError"] is True
    assert result["content"][1]["text"].startswith("Next step:")
    assert "Do not repeat" in result["content"][1]["text"]
    # structuredContent stays exactly the envelope: no hint fields added to it
    assert set(env) == {"version", "id", "success", "error", "mayHaveCompleted"}


def test_plain_failures_carry_no_next_step_block() -> None:
    result = response(Gateway(NOAUTH).begin_mcp(browser(1, "tab.snapshot", {"tabId": "A", "maxChars": 0})))
    assert len(result["result"]["content"]) == 1


def test_mapping_and_text_inputs_give_the_same_answer() -> None:
    gw = Gateway(FULL)
    message = rpc("x", "tools/list")
    by_dict = response(gw.begin_mcp(message))
    by_text = response(gw.begin_mcp(json.dumps(message)))
    by_bytes = response(gw.begin_mcp(json.dumps(message).encode()))
    assert by_dict == by_text == by_bytes
    # the cached tools list is never shared with the caller
    by_dict["result"]["tools"].clear()
    assert response(gw.begin_mcp(message)) == by_text


def test_mapping_inputs_follow_the_json_rules() -> None:
    gw = Gateway(FULL)
    bad = response(gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": object()}}))
    assert bad["error"]["code"] == -32600
    huge = response(
        gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"p": "x" * MAX_REQUEST_BYTES}})
    )
    assert huge["error"] == {
        "code": -32600,
        "message": huge["error"]["message"],
        "data": {"code": "REQUEST_TOO_LARGE"},
    }
    assert huge["id"] is None
    lone = response(gw.begin_mcp({"jsonrpc": "2.0", "id": "\ud800", "method": "ping"}))
    assert lone["id"] == "\ufffd" and lone["result"] == {}


def test_discovery_tools_answer_at_once_but_calls_are_authorized() -> None:
    """Decision (docs/mcp.md): kelpie_extensions and kelpie_extension_tools are discovery, like tools/list."""
    gw = Gateway(FULL)  # requireAuthorization defaults to true
    assert gw.begin_mcp(call(1, "kelpie_extensions", {}))["step"] == "complete"
    assert gw.begin_mcp(call(2, "kelpie_extension_tools", {"names": ["form_fill"]}))["step"] == "complete"
    step = gw.begin_mcp(call(3, "kelpie_extension", {"name": "form_fill", "arguments": {"tabId": "A"}}))
    assert step["step"] == "authorize" and step["mutates"] is True
    assert step["request"]["method"] == "extension.call"
    refused = gw.advance(
        {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": False}}
    )
    assert envelope_of(response(refused)["result"])["error"]["code"] == "NOT_AUTHORIZED"


def test_direct_extension_call_of_a_filtered_name_goes_through_the_engine() -> None:
    gw = Gateway(FULL)
    step = gw.begin_mcp(call(1, "secret_dump", {"tabId": "A"}))
    assert step["audit"]["method"] == "extension.call" and step["audit"]["code"] == "EXTENSION_NOT_ADMITTED"
    assert step["audit"]["dispatches"] == 0
    assert response(step)["error"]["code"] == -32602
    assert gw.next() == {"step": "idle"}


def test_a_closed_gateway_refuses_requests() -> None:
    gw = Gateway(FULL)
    gw.close()
    assert response(gw.begin_mcp(rpc(1, "ping")))["error"]["code"] == -32600


def test_instructions_adapt_to_the_gateway() -> None:
    bare = response(Gateway({}).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    full = response(Gateway(FULL).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    assert "kelpie_extension" not in bare["result"]["instructions"]
    assert "tab.snapshot" not in bare["result"]["instructions"]
    for text in ("refs", "tab.snapshot", "BUSY", "mayHaveCompleted", "kelpie_extensions"):
        assert text in full["result"]["instructions"]
    assert len(full["result"]["instructions"]) < 1200


def test_every_mutating_method_declares_itself_in_the_tool_description() -> None:
    tools = response(Gateway(FULL).begin_mcp(rpc(1, "tools/list")))["result"]["tools"]
    description = tools[0]["description"]
    for name, method in METHODS.items():
        if name != "extension.call":
            assert f"- {name} ({'mutates' if method.mutates else 'read-only'})" in description


def test_server_info_reports_the_one_version() -> None:
    """Guards the version written in two places (issue 26: ``__init__`` held it and ``mcp`` imported it
    from the package, an import cycle): ``serverInfo.version`` in both eras is ``kelpie_gateway.VERSION``,
    which is what the installed distribution's metadata says (pyproject.toml reads ``version.py``)."""
    import importlib.metadata

    import kelpie_gateway

    gw = Gateway({})
    init = response(gw.begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    found = response(gw.begin_mcp(rpc(2, "server/discover", {"_meta": meta})))
    stamp = found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    installed = importlib.metadata.version("kelpie-browser-gateway")
    assert init["result"]["serverInfo"]["version"] == found["result"]["serverInfo"]["version"] == installed
    assert stamp["version"] == kelpie_gateway.VERSION == kelpie_gateway.__version__ == installed


def test_the_public_json_rpc_error_builder_is_the_engines() -> None:
    """``kelpie_gateway.jsonrpc_error``, what every host transport answers its own failures with, builds
    what the engine's frontend answers: the same object for the same error, valid for the official SDK
    (a ``null`` id when the request's is not known), ``kelpie`` as ``data.code`` beside ``data``."""
    from kelpie_gateway import jsonrpc_error

    engine = response(Gateway({}).begin_mcp(b"{"))
    assert jsonrpc_error(None, -32700, engine["error"]["message"], "INVALID_JSON") == engine
    plain = jsonrpc_error(None, -32600, "only POST is supported on /mcp")
    assert plain == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": plain["error"]["message"]},
    }
    types.JSONRPCError.model_validate(plain)
    rich = jsonrpc_error(7, -32022, "unsupported", "INVALID_REQUEST", {"supported": ["2026-07-28"]})
    assert rich["id"] == 7
    assert rich["error"]["data"] == {"supported": ["2026-07-28"], "code": "INVALID_REQUEST"}
    types.JSONRPCError.model_validate(rich)
