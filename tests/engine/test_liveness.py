"""Liveness and truthful outcomes in the engine (CONTRACT.md §4 retryable rule, §5 bounded retirement,
§7 cancellation; issue 11): overdue retirement through ``next``, undelivered responses, MCP
``notifications/cancelled``, crashed tabs in ``tabs.list``."""

from __future__ import annotations

import json
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


# ---------------------------------------------------------------------- undelivered responses (§4, v1.1)
def test_an_undelivered_successful_click_makes_its_tab_reconcile_required() -> None:
    renderer = FakeRenderer()
    gw = make()
    refs = _snapshot(gw, renderer)
    done = run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer)
    assert response(done)["success"] is True
    noted = gw.advance({"transaction": done["transaction"], "undelivered": True})
    assert noted == {"step": "noted", "transaction": done["transaction"], "reconcileRequired": "A"}
    refs = _snapshot(gw, renderer, "B")
    refused = response(run(gw, req("tab.click", tabId="B", ref=refs[0]), renderer))
    assert refused["success"] is True  # other tabs are unaffected
    refs = _snapshot(gw, renderer)  # observing tab A clears the mark ...
    assert response(run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer))["success"] is True


def test_undelivered_click_blocks_the_next_mutation_until_observed() -> None:
    renderer = FakeRenderer()
    gw = make()
    refs = _snapshot(gw, renderer)
    done = run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer)
    gw.advance({"transaction": done["transaction"], "undelivered": True})
    nav = response(run(gw, req("tab.navigate", tabId="A", url="https://x.test/"), renderer))
    assert nav["error"]["code"] == "RECONCILE_REQUIRED" and nav["mayHaveCompleted"] is False


def test_undelivered_reads_refusals_and_unknown_ids_mark_nothing() -> None:
    renderer = FakeRenderer()
    gw = make()
    snap = run(gw, req("tab.snapshot", tabId="A"), renderer)
    refs = [e["ref"] for e in response(snap)["result"]["elements"]]
    busy_free = run(gw, req("tab.click", tabId="A", ref="s999e1"), renderer)  # refused: unknown ref
    for tid in (snap["transaction"], busy_free["transaction"], "t999", "nope"):
        assert gw.advance({"transaction": tid, "undelivered": True})["reconcileRequired"] is None
    assert response(run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer))["success"] is True
    for bad in ({"transaction": "t1", "undelivered": False}, {"transaction": "t1", "undelivered": True, "seq": 1},
                {"transaction": 3, "undelivered": True}):
        assert gw.advance(bad)["error"]["code"] == "INVALID_REQUEST"


def test_undelivered_tabs_open_marks_the_new_tab_and_the_memory_is_bounded() -> None:
    renderer = FakeRenderer()
    gw = make()
    opened = run(gw, req("tabs.open", url="https://x.test/"), renderer)
    new_tab = response(opened)["result"]["tabId"]
    assert gw.advance({"transaction": opened["transaction"], "undelivered": True})["reconcileRequired"] == new_tab
    assert gw.advance({"transaction": opened["transaction"], "undelivered": True})["reconcileRequired"] is None
    refused = response(run(gw, req("tab.navigate", tabId=new_tab, url="https://y.test/"), renderer))
    assert refused["error"]["code"] == "RECONCILE_REQUIRED"


def test_undelivered_through_json_text_like_the_c_abi() -> None:
    renderer = FakeRenderer()
    gw = make()
    refs = _snapshot(gw, renderer)
    done = run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer)
    text = json.dumps({"transaction": done["transaction"], "undelivered": True})
    assert gw.advance(text)["reconcileRequired"] == "A"


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


# ---------------------------------------------------------------------- crashed tabs (§5, v1.1)
def test_tabs_list_reports_a_crashed_tab() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    tabs = [{"tabId": "A", "generation": 2, "url": "about:blank", "title": "", "active": True, "crashed": True},
            {"tabId": "B", "generation": 1, "url": "about:blank", "title": "", "active": False, "crashed": False}]
    env = response(ok(gw, step, tabs=tabs))
    assert env["result"]["tabs"][0]["crashed"] is True
    assert "crashed" not in env["result"]["tabs"][1]
