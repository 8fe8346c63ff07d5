"""Property (CONTRACT.md §4, v1.1): every envelope with ``mayHaveCompleted: true`` has ``retryable: false``.

Hypothesis drives random gateways (targeting, authorization, extensions on every lane) through random
interleavings of every path that makes an envelope: canonical and MCP begins, refusals before a lane,
BUSY, authorize refusals, renderer failures with every error code (and unknown ones, with and without
``mayHaveCompleted:false``), malformed results, script-level ``{error}`` values, every cancel reason in
every state, late results and retirements, ``notifications/cancelled`` and undelivered responses. Every
``complete`` step it sees — including the one riding in a ``notifications/cancelled`` step — is checked.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway
from kelpie_gateway.errors import ERROR_CODES

from tests.depth import examples
from tests.engine.kit import ALL_NATIVE, FakeRenderer

EXTENSIONS = [
    {"name": "ext_direct", "method": "ext-direct", "description": "d", "mutates": True,
     "inputSchema": {"type": "object"}},
    {"name": "ext_read", "method": "ext-read", "description": "r", "mutates": False,
     "inputSchema": {"type": "object"}},
    {"name": "ext_recovery", "method": "ext-recovery", "description": "rc", "mutates": True, "recovery": True,
     "inputSchema": {"type": "object"}},
    {"name": "ext_dedicated", "method": "ext-dedicated", "description": "dd", "mutates": True,
     "coordinator": "dedicated", "inputSchema": {"type": "object"}},
]
CODES = [*sorted(ERROR_CODES), "WEIRD_CODE", None]
REASONS = ("timeout", "cancelled", "renderer-closed")


def check_envelope(env: Any) -> None:
    if isinstance(env, dict) and env.get("success") is False:
        assert isinstance(env["error"]["retryable"], bool)
        if env["mayHaveCompleted"] is True:
            assert env["error"]["retryable"] is False, env


def check(step: dict[str, Any], seen: list[dict[str, Any]]) -> dict[str, Any]:
    if step.get("step") == "complete":
        response = step["response"]
        if isinstance(response, dict) and "jsonrpc" in response:
            result = response.get("result")
            if isinstance(result, dict) and "structuredContent" in result:
                check_envelope(result["structuredContent"])
        else:
            check_envelope(response)
        if isinstance(response, dict):
            seen.append(response)
    if isinstance(step.get("cancelled"), dict):
        check(step["cancelled"], seen)
    return step


def request(draw: Any, refs: list[str]) -> tuple[bool, Any]:
    """(mcp, message)."""
    tab = draw(st.sampled_from(["A", "B", "Z", None]))
    ref = draw(st.sampled_from([*refs[-4:], "s999e1", "bogus"]))
    timeout = draw(st.sampled_from([1000, 10000]))
    method, params = draw(st.sampled_from([
        ("tabs.list", {}),
        ("tabs.open", {"url": "https://x.test/"}),
        ("tabs.select", {"tabId": tab}),
        ("tabs.close", {"tabId": tab}),
        ("tab.snapshot", {"tabId": tab}),
        ("tab.click", {"tabId": tab, "ref": ref, "timeoutMs": timeout}),
        ("tab.type", {"tabId": tab, "ref": ref, "text": "hi"}),
        ("tab.navigate", {"tabId": tab, "url": "https://x.test/", "timeoutMs": timeout}),
        ("tab.screenshot", {"tabId": tab}),
        ("extension.call", {"name": "ext_direct", "arguments": {"tabId": tab}}),
        ("extension.call", {"name": "ext_read", "arguments": {}}),
        ("extension.call", {"name": "ext_recovery", "arguments": {"tabId": tab}}),
        ("extension.call", {"name": "ext_dedicated", "arguments": {}}),
        ("capabilities", {}),
        ("no.such", {}),
    ]))
    params = {k: v for k, v in params.items() if v is not None}
    rid = draw(st.sampled_from([1, "x", 2]))
    if draw(st.booleans()):
        return True, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                      "params": {"name": "kelpie_browser_control",
                                 "arguments": {"method": method, "params": params}}}
    return False, {"version": 1, "id": rid, "method": method, "params": params}


def result_for(draw: Any, renderer: FakeRenderer, kind: str, step: dict[str, Any]) -> Any:
    choice = draw(st.sampled_from(["ok", "ok", "fail", "value-error", "malformed"]))
    if choice == "ok":
        try:
            return renderer(kind, step)
        except KeyError:
            return {"success": False, "error": {"code": "TAB_NOT_FOUND", "message": "gone"}}
    if choice == "fail":
        error: dict[str, Any] = {"message": "renderer says no"}
        code = draw(st.sampled_from(CODES))
        if code is not None:
            error["code"] = code
        result: dict[str, Any] = {"success": False, "error": error}
        if draw(st.booleans()):
            result["mayHaveCompleted"] = draw(st.booleans())
        return result
    if choice == "value-error":
        value: dict[str, Any] = {"error": {"code": draw(st.sampled_from(CODES)), "message": "page says no"}}
        if draw(st.booleans()):
            value["mayHaveCompleted"] = draw(st.booleans())
        return {"success": True, "value": value}
    return draw(st.sampled_from([{"success": "yes"}, {"success": True}, [], None, {"success": True, "value": 3}]))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_envelope_with_may_have_completed_is_retryable(data: st.DataObject) -> None:
    draw = data.draw
    gw = Gateway({
        "nativeMethods": [*ALL_NATIVE, *(e["method"] for e in EXTENSIONS)],
        "fixedReader": True,
        "targeting": draw(st.sampled_from(["direct", "selected"])),
        "requireAuthorization": draw(st.booleans()),
        "allowActions": draw(st.sampled_from([True, True, False])),
        "extensions": EXTENSIONS,
    })
    renderer = FakeRenderer(("A", "B"))
    seen: list[dict[str, Any]] = []
    open_steps: dict[str, tuple[str, dict[str, Any]]] = {}  # transaction -> (kind, pending step)
    late: list[tuple[str, dict[str, Any]]] = []
    refs: list[str] = []
    completed: list[str] = []
    for i in range(draw(st.integers(1, 25))):
        action = "begin" if i == 0 else draw(st.sampled_from(
            ["begin", "begin", "advance", "advance", "cancel", "late", "retire", "mcp-cancel", "undelivered",
             "invalidate"]))
        if action == "begin":
            mcp, message = request(draw, refs)
            step = check(gw.begin_mcp(message) if mcp else gw.begin(message), seen)
            kind = message["params"]["arguments"]["method"] if mcp else message["method"]
            if step["step"] in ("authorize", "dispatch"):
                open_steps[step["transaction"]] = (kind, step)
            elif step["step"] == "complete":
                completed.append(step["transaction"])
        elif action == "advance" and open_steps:
            tid = draw(st.sampled_from(sorted(open_steps)))
            kind, step = open_steps.pop(tid)
            if step["step"] == "authorize":
                result = {"success": True} if draw(st.integers(0, 4)) else {
                    "success": False, "error": {"code": "NOT_AUTHORIZED", "message": "no"}}
            else:
                result = result_for(draw, renderer, kind, step)
            nxt = check(gw.advance({"transaction": tid, "seq": step["seq"], "result": result}), seen)
            if nxt["step"] in ("authorize", "dispatch"):
                open_steps[tid] = (kind, nxt)
            elif nxt["step"] == "complete":
                completed.append(tid)
                env = nxt["response"]
                if isinstance(env, dict) and "jsonrpc" in env:
                    env = (env.get("result") or {}).get("structuredContent") or {}
                if env.get("success") and kind == "tab.snapshot":
                    refs.extend(e["ref"] for e in env["result"]["elements"])
        elif action == "cancel" and open_steps:
            tid = draw(st.sampled_from(sorted(open_steps)))
            kind, step = open_steps.pop(tid)
            reason = draw(st.sampled_from(REASONS))
            out = check(gw.cancel({"transaction": tid, "reason": reason}), seen)
            if out["step"] == "complete" and step["step"] == "dispatch" and reason != "renderer-closed":
                late.append((kind, step))
        elif action == "late" and late:
            kind, step = late.pop(draw(st.integers(0, len(late) - 1)))
            check(gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                              "result": result_for(draw, renderer, kind, step)}), seen)
        elif action == "retire" and late:
            _, step = late.pop(draw(st.integers(0, len(late) - 1)))
            check(gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"}), seen)
        elif action == "mcp-cancel":
            rid = draw(st.sampled_from([1, "x", 2]))
            note = check(gw.begin_mcp({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": rid}}), seen)
            if "cancelled" in note:
                tid = note["cancelled"]["transaction"]
                kind, step = open_steps.pop(tid)
                if step["step"] == "dispatch":
                    late.append((kind, step))
        elif action == "undelivered" and completed:
            gw.advance({"transaction": draw(st.sampled_from(completed)), "undelivered": True})
        elif action == "invalidate":
            gw.invalidate_refs(draw(st.sampled_from(["A", "B", None])))
    # Every open transaction can still be cancelled; its envelope obeys the rule too.
    for tid in sorted(open_steps):
        check(gw.cancel({"transaction": tid, "reason": draw(st.sampled_from(REASONS))}), seen)
    assert seen, "the first begin always completes or is cancelled above"
