"""What a client discovers (CONTRACT.md §7; ``kelpie_gateway.mcp.tools``): the ``tools/list`` tools per
gateway, ``kelpie_browser_control``'s generated schema, the tool description and the instructions."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from kelpie_gateway import Gateway
from kelpie_gateway.schema import METHODS
from mcp import types

from tests.mcp.helpers import CORE, FULL, response, rpc

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
    """For every kind of gateway: ``kelpie_browser_control`` always, the three extension tools only with an
    admitted extension, admitted extensions never listed, every ``inputSchema`` a valid JSON Schema."""
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
    """The generated ``inputSchema`` accepts valid params of every advertised method and refuses unknown ones."""
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


def test_instructions_adapt_to_the_gateway() -> None:
    """The instructions mention only what this gateway offers, and stay short (under 1,200 characters)."""
    bare = response(Gateway({}).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    full = response(Gateway(FULL).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    assert "kelpie_extension" not in bare["result"]["instructions"]
    assert "tab.snapshot" not in bare["result"]["instructions"]
    for text in ("refs", "tab.snapshot", "BUSY", "mayHaveCompleted", "kelpie_extensions"):
        assert text in full["result"]["instructions"]
    assert len(full["result"]["instructions"]) < 1200


def test_instructions_say_when_to_prefer_native_input() -> None:
    """With the reference host's extensions the instructions name the native-input ones for a control that
    ignored tab.click/tab.type (issue 28), still under 1,200 characters; filtered out, they are not named."""
    from kelpie_gateway.host.parts import gateway_config

    def text(config: dict[str, Any]) -> str:
        reply = response(Gateway(config).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
        return str(reply["result"]["instructions"])

    host = text(gateway_config(browser=True))
    assert "ignores tab.click or tab.type" in host and "click, hover, drag, type_keys" in host, host
    assert len(host) < 1200, len(host)
    hidden = text(gateway_config(browser=True, exclude=["click", "drag"]))
    assert "extensions hover, type_keys:" in hidden, hidden
    assert "ignores tab.click" not in text(FULL)


def test_every_mutating_method_declares_itself_in_the_tool_description() -> None:
    """Each method's line in the tool description says whether it mutates (what a model reads before acting)."""
    tools = response(Gateway(FULL).begin_mcp(rpc(1, "tools/list")))["result"]["tools"]
    description = tools[0]["description"]
    for name, method in METHODS.items():
        if name != "extension.call":
            assert f"- {name} ({'mutates' if method.mutates else 'read-only'})" in description


def test_instructions_point_at_the_screenshot_extension_only_when_it_is_admitted() -> None:
    """Issue 32: tab.screenshot stays the viewport PNG; the instructions name the screenshot extension for
    an element, the full page or JPEG — with the host's full extension set, still under 1,200 characters —
    and not when the operator filtered it out."""
    from kelpie_gateway.host.parts import gateway_config

    def text(config: dict[str, Any]) -> str:
        reply = response(Gateway(config).begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
        return str(reply["result"]["instructions"])

    host = text(gateway_config(browser=True))
    assert "screenshot: element, full page, JPEG" in host and len(host) < 1200, host
    assert "screenshot:" not in text(gateway_config(browser=True, exclude=["screenshot"]))
