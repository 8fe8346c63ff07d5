"""Liveness in the engine (CONTRACT.md §5 bounded retirement, §7 cancellation; issue 11): a cancelled
dispatch's callback is awaited at most ``timeoutMs`` + ``retirementGraceMs`` before ``next`` says it is
overdue, and MCP ``notifications/cancelled`` cancels exactly the one in-flight call it names. Undelivered
responses and crashed tabs are the ledger's (tests/engine/test_ledger.py, test_results.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kelpie_gateway import Gateway, GatewayConfigError

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now



def _snapshot(gw: Gateway, renderer: FakeRenderer, tab: str = "A") -> list[str]:
    env = response(run(gw, req("tab.snapshot", tabId=tab), renderer))
    return [e["ref"] for e in env["result"]["elements"]]



def _click_dispatched(gw: Gateway, renderer: FakeRenderer, timeout_ms: int = 1000) -> dict[str, Any]:
    ref = _snapshot(gw, renderer)[0]
    step = admit(gw, gw.begin(req("tab.click", rid=7, tabId="A", ref=ref, timeoutMs=timeout_ms)))
    assert step["step"] == "dispatch"
    return step



# ---------------------------------------------------------------------- overdue retirement (§5, v1.1)
def test_cancelled_dispatch_becomes_overdue_after_timeout_plus_default_grace() -> None:
    clock, renderer = Clock(), FakeRenderer()
    gw = make(clock=clock)
    step = _click_dispatched(gw, renderer, timeout_ms=1000)
    clock.now += 1.001
    assert gw.next()["overdue"] is True  # the dispatch itself: the host must cancel
    done = gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    env = response(done)
    assert env["error"]["code"] == "TIMEOUT" and env["mayHaveCompleted"] is True
    assert env["error"]["retryable"] is False
    waiting = gw.next()["awaitingRetirement"]
    assert waiting == {"transaction": step["transaction"], "seq": step["seq"],
                       "method": "browser-control-evaluate", "tabId": "A"}
    clock.now += 4.9  # 1 s + 4.9 s: still within timeoutMs + 5 s
    assert "overdue" not in gw.next(step["transaction"])["awaitingRetirement"]
    clock.now += 0.2
    assert gw.next(step["transaction"])["awaitingRetirement"]["overdue"] is True
    busy = response(gw.begin(req("tabs.list", rid=8)))
    assert busy["error"]["code"] == "BUSY" and "overdue" in busy["error"]["message"]
    # The host ends the stuck work and reports it: the lane is free at once.
    assert gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})["step"] == "retired"
    assert gw.next() == {"step": "idle"}
    assert gw.begin(req("tabs.list", rid=9))["step"] == "authorize"



def test_retirement_grace_is_a_config_value_of_at_most_five_seconds() -> None:
    clock, renderer = Clock(), FakeRenderer()
    gw = make(clock=clock, retirementGraceMs=250)
    step = _click_dispatched(gw, renderer, timeout_ms=2000)
    gw.cancel({"transaction": step["transaction"], "reason": "cancelled"})
    clock.now += 2.2
    assert "overdue" not in gw.next()["awaitingRetirement"]
    clock.now += 0.1
    assert gw.next()["awaitingRetirement"]["overdue"] is True
    for bad in (5001, -1, 1.5, "100", None):
        with pytest.raises(GatewayConfigError) as info:
            make(retirementGraceMs=bad)
        assert info.value.envelope["error"]["message"].startswith("/retirementGraceMs")
    make(retirementGraceMs=0)
    make(retirementGraceMs=5000)



def test_late_result_after_overdue_still_retires() -> None:
    clock, renderer = Clock(), FakeRenderer()
    gw = make(clock=clock)
    step = _click_dispatched(gw, renderer)
    gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    clock.now += 60
    assert gw.next()["awaitingRetirement"]["overdue"] is True
    assert ok(gw, step, value={"clicked": True})["step"] == "retired"
    assert gw.next() == {"step": "idle"}



# ---------------------------------------------------------------------- MCP notifications/cancelled (§7)
def _tools_call(rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "kelpie_browser_control", "arguments": {"method": method, "params": params}}}



def _cancelled(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "user"}}



def test_notifications_cancelled_cancels_an_in_flight_mutation() -> None:
    renderer = FakeRenderer()
    gw = make()
    ref = _snapshot(gw, renderer)[0]
    step = admit(gw, gw.begin_mcp(_tools_call("c-1", "tab.click", {"tabId": "A", "ref": ref})))
    assert step["step"] == "dispatch"
    note = gw.begin_mcp(_cancelled("c-1"))
    assert note["step"] == "complete" and note["response"] is None and note["httpStatus"] == 202
    cancelled = note["cancelled"]
    assert cancelled["step"] == "complete" and cancelled["transaction"] == step["transaction"]
    rpc = cancelled["response"]
    assert rpc["id"] == "c-1" and rpc["result"]["isError"] is True
    env = rpc["result"]["structuredContent"]
    assert env["error"]["code"] == "CANCELLED"
    assert env["mayHaveCompleted"] is True and env["error"]["retryable"] is False
    # The click's renderer callback is still out: the lane stays exclusive until it retires.
    assert gw.next()["awaitingRetirement"]["transaction"] == step["transaction"]
    assert ok(gw, step, value={"clicked": True})["step"] == "retired"
    reconcile = response(run(gw, req("tab.navigate", tabId="A", url="https://x.test/"), renderer))
    assert reconcile["error"]["code"] == "RECONCILE_REQUIRED"



def test_notifications_cancelled_of_a_read_is_refused_nothing_changed() -> None:
    gw = make()
    step = admit(gw, gw.begin_mcp(_tools_call(5, "tabs.list", {})))
    note = gw.begin_mcp(_cancelled(5))
    env = note["cancelled"]["response"]["result"]["structuredContent"]
    assert env["error"]["code"] == "CANCELLED" and env["mayHaveCompleted"] is False
    assert env["error"]["retryable"] is True
    assert ok(gw, step, tabs=[])["step"] == "retired"



def test_notifications_cancelled_matches_only_mcp_calls_with_the_same_id() -> None:
    gw = make()
    canonical = admit(gw, gw.begin(req("tabs.list", rid=5)))
    for other in (5, "5", 5.5):  # a canonical request with id 5 is not an MCP call
        note = gw.begin_mcp(_cancelled(other))
        assert note["httpStatus"] == 202 and "cancelled" not in note
    assert gw.next(canonical["transaction"])["step"] == "dispatch"  # untouched
    assert ok(gw, canonical, tabs=[])["step"] == "complete"
    mcp = admit(gw, gw.begin_mcp(_tools_call(5, "tabs.list", {})))
    assert "cancelled" not in gw.begin_mcp(_cancelled("5"))  # id types must match
    assert "cancelled" not in gw.begin_mcp(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    assert gw.begin_mcp(_cancelled(5))["cancelled"]["transaction"] == mcp["transaction"]
    assert "cancelled" not in gw.begin_mcp(_cancelled(5))  # already cancelled: nothing more to do
