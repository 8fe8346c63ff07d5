"""``kelpie-gateway mcp --tools full`` (issue 34): besides the compact four, one MCP tool per admitted method
and extension, in both MCP eras, driven by the official Python SDK against real headless Chromium; calling a
method's own tool is the same transaction as through ``kelpie_browser_control``."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from stdio_testlib import KELPIE, run_async

pytestmark = pytest.mark.timeout(240)

COMPACT = {"kelpie_browser_control", "kelpie_extensions", "kelpie_extension_tools", "kelpie_extension"}


async def _session(mode: str, args: list[str]) -> dict[str, Any]:
    server = StdioServerParameters(command=str(KELPIE), args=["mcp", *args])
    async with Client(server, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        seen: dict[str, Any] = {"protocol": client.protocol_version, "tools": set(tools)}
        if "tabs.list" not in tools:
            return seen
        seen["snapshot_schema"] = tools["tab.snapshot"].input_schema
        seen["click_readonly"] = tools["click"].annotations.read_only_hint if tools["click"].annotations else None
        for _ in range(30):  # the first browser call may meet BUSY from nothing else: retry only retryables
            listed = (await client.call_tool("tabs.list", {})).structured_content
            assert isinstance(listed, dict), listed
            if listed["success"] or not (listed.get("error") or {}).get("retryable"):
                break
        assert listed["success"], listed
        tab = listed["result"]["tabs"][0]
        snapshot = (await client.call_tool("tab.snapshot", {"tabId": tab["tabId"]})).structured_content
        assert isinstance(snapshot, dict) and snapshot["success"], snapshot
        seen["title"] = snapshot["result"]["title"]
        return seen


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_tools_full_lists_every_method_and_extension_as_its_own_tool(mode: str) -> None:
    seen = run_async(_session(mode, ["--tools", "full"]))
    if mode == "legacy":
        assert seen["protocol"] in ("2025-06-18", "2025-11-25")
    else:
        assert seen["protocol"] == "2026-07-28"
    tools = seen["tools"]
    assert tools >= COMPACT
    for name in ("documentation", "tabs.list", "tab.snapshot", "tab.click", "tab.navigate", "click", "drag"):
        assert name in tools, sorted(tools)
    assert "extension.call" not in tools  # each extension is its own tool instead
    assert "tabId" in seen["snapshot_schema"]["required"]
    assert seen["click_readonly"] is False
    assert seen["title"] == "Kelpie fixture site"


def test_the_compact_four_stay_the_default() -> None:
    seen = run_async(_session("legacy", []))
    assert seen["tools"] == COMPACT
