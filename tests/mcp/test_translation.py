"""``tools/call`` (CONTRACT.md §7, §8; ``kelpie_gateway.mcp.translation``): calls become canonical
transactions and envelopes come back as tool results — SDK types, screenshot image blocks, ``Next step:``
guidance, discovery tools, extensions called by name."""

from __future__ import annotations

import base64
import os
from typing import Any

from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import dumps
from mcp import types

from tests.mcp.helpers import FULL, NOAUTH, browser, call, envelope_of, response


def test_tool_results_parse_with_the_official_sdk_types() -> None:
    """A ``tools/call`` result is a valid SDK ``CallToolResult``; an unknown name is reported per name."""
    gw = Gateway(NOAUTH)
    done = response(gw.begin_mcp(call(2, "kelpie_extension_tools", {"names": ["page_summary", "nope"]})))
    result = types.CallToolResult.model_validate(done["result"])
    assert result.is_error is False
    described = result.structured_content["result"]["tools"]
    assert described[0]["inputSchema"]["required"] == ["tabId"]
    assert described[1]["error"]["code"] == "EXTENSION_NOT_ADMITTED"


def _screenshot(gw: Gateway, data: str, rid: int = 1) -> dict[str, Any]:
    step = gw.begin_mcp(browser(rid, "tab.screenshot", {"tabId": "A"}))
    assert step["step"] == "dispatch" and step["method"] == "screenshot"
    result = {"success": True, "mimeType": "image/png", "data": data, "width": 640, "height": 480}
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})


def test_screenshot_base64_appears_exactly_once_in_the_whole_response() -> None:
    """Guards the screenshot's base64 travelling twice: it is in the one ``image`` block only; the envelope
    (text block and ``structuredContent``) carries ``imageBytes`` instead of ``data``."""
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
    """Guards a renderer's unusable screenshot data reaching the client as an image: it is a RENDERER_FAILED
    tool error with no ``image`` block."""
    step = _screenshot(Gateway(NOAUTH), "not base64!!")
    result = response(step)["result"]
    assert [b["type"] for b in result["content"]] == ["text"]
    env = envelope_of(result)
    assert env["error"]["code"] == "RENDERER_FAILED" and env["mayHaveCompleted"] is False


def test_screenshot_refused_before_dispatch_has_no_image_block() -> None:
    """Guards an ``image`` block on a screenshot refused before dispatch (bad params): text only."""
    result = response(
        Gateway(NOAUTH).begin_mcp(browser(1, "tab.screenshot", {"tabId": "A", "fullPage": True}))
    )
    assert [b["type"] for b in result["result"]["content"]] == ["text"]


def test_unknown_outcome_tells_the_model_not_to_repeat() -> None:
    """An unknown outcome adds the ``Next step:`` hint not to repeat the action; guards hint fields leaking
    into ``structuredContent`` (it stays exactly the envelope)."""
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
    """A refusal that needs no different next move (INVALID_PARAMS) has no ``Next step:`` block."""
    result = response(Gateway(NOAUTH).begin_mcp(browser(1, "tab.snapshot", {"tabId": "A", "maxChars": 0})))
    assert len(result["result"]["content"]) == 1


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
    """Guards a filtered extension being reachable by its own name: the engine refuses it
    (EXTENSION_NOT_ADMITTED, rendered ``-32602`` unknown tool), nothing is dispatched and the lane is free."""
    gw = Gateway(FULL)
    step = gw.begin_mcp(call(1, "secret_dump", {"tabId": "A"}))
    assert step["audit"]["method"] == "extension.call" and step["audit"]["code"] == "EXTENSION_NOT_ADMITTED"
    assert step["audit"]["dispatches"] == 0
    assert response(step)["error"]["code"] == -32602
    assert gw.next() == {"step": "idle"}


def test_an_unknown_tool_names_the_tool_to_call_instead() -> None:
    """Issue 34: calling a method by its name, or a made-up tool, says what to call instead."""
    gw = Gateway(FULL)
    method = response(gw.begin_mcp(call(1, "tab.snapshot", {"tabId": "A"})))["error"]
    assert method["code"] == -32602
    assert method["message"] == (
        "unknown tool 'tab.snapshot': a method is not a tool; call kelpie_browser_control "
        '{method:"tab.snapshot", params:{…}}'
    )
    other = response(gw.begin_mcp(call(2, "browser_navigate", {"url": "https://x.test/"})))["error"]
    assert other["code"] == -32602
    assert other["message"].startswith("unknown tool 'browser_navigate': the tools are kelpie_browser_control")
    assert "kelpie_extensions lists the extension names" in other["message"]
    assert gw.next() == {"step": "idle"}
