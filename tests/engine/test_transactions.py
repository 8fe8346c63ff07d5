"""The transaction protocol a host author relies on (engine/kelpie_gateway/gateway.py and the state table
in transaction.py; CONTRACT.md §5, §6): steps, BUSY, next, cancel and retirement, selected targeting's
inspection and tab switch, close."""

from __future__ import annotations

from typing import Any

import pytest
from kelpie_gateway import Gateway, GatewayPendingError
from kelpie_gateway.transaction import STATES, TRANSITIONS, Transaction, build_machine

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run


def test_full_snapshot_then_click_flow(renderer: FakeRenderer) -> None:
    gw = make()
    snap = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]
    assert snap["tabId"] == "A" and snap["generation"] == 1 and snap["snapshot"].startswith("s")
    assert [e["ref"] for e in snap["elements"]] == [f"{snap['snapshot']}e{i}" for i in (1, 2, 3)]
    assert all("handle" not in e for e in snap["elements"])  # renderer handles never leave the gateway
    step = gw.begin(req("tab.click", tabId="A", ref=snap["elements"][1]["ref"]))
    assert step["step"] == "authorize" and step["mutates"] is True
    assert step["target"] == {"tabId": "A", "generation": 1}
    dispatch = admit(gw, step)
    assert dispatch["method"] == "browser-control-evaluate"
    assert dispatch["params"]["world"] == "KelpieBrowserControl" and dispatch["params"]["tabId"] == "A"
    assert "0123456789abcdef-a2" in dispatch["params"]["script"]  # the private handle goes to the renderer only
    done = ok(gw, dispatch, value={"clicked": True})
    assert response(done) == {"version": 1, "id": 1, "success": True, "result": {"clicked": True}}
    assert done["audit"]["outcome"] == "success" and done["audit"]["dispatches"] == 1



def test_busy_does_not_touch_the_active_transaction() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    before = gw.next()
    busy = gw.begin(req("tabs.list", rid=9))
    assert response(busy)["error"] == {"code": "BUSY", "message": busy["response"]["error"]["message"], "retryable": True}
    assert gw.next() == before == step
    assert response(ok(gw, step, tabId="A", generation=2, url="https://x.test/"))["success"]



def test_next_is_a_pure_reread_and_marks_overdue_dispatches() -> None:
    now = [100.0]
    gw = make(clock=lambda: now[0])
    assert gw.next() == {"step": "idle"}
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A", timeoutMs=500)))
    assert gw.next() == step and gw.next(step["transaction"]) == step
    now[0] += 0.6
    assert gw.next() == {**step, "overdue": True}
    out = gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    assert out["response"]["error"]["code"] == "TIMEOUT" and out["audit"]["elapsedMs"] == pytest.approx(600.0)



def test_duplicated_and_late_results_never_advance_or_replay() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    result = {"transaction": step["transaction"], "seq": step["seq"],
              "result": {"success": True, "tabId": "A", "generation": 2, "url": "https://x.test/"}}
    assert gw.advance(result)["step"] == "complete"
    again = gw.advance(result)
    assert again["step"] == "rejected" and again["error"]["code"] == "STALE_STEP"
    forged = gw.advance({**result, "transaction": "t999"})
    assert forged["error"]["code"] == "STALE_STEP"
    assert gw.next() == {"step": "idle"}



def test_cancelled_mutation_is_unknown_and_lane_waits_for_retirement() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    done = gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    assert done["step"] == "complete" and done["response"]["mayHaveCompleted"] is True
    assert done["audit"]["outcome"] == "unknown"
    assert gw.next() == {"step": "idle", "awaitingRetirement": {
        "transaction": step["transaction"], "seq": step["seq"], "method": "navigate", "tabId": "A"}}
    assert response(gw.begin(req("tabs.list", rid=2)))["error"]["code"] == "BUSY"
    with pytest.raises(GatewayPendingError):
        gw.close()
    late = ok(gw, step, tabId="A", generation=2, url="https://x.test/")
    assert late == {"step": "retired", "transaction": step["transaction"], "seq": step["seq"]}
    assert gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}})[
        "error"]["code"] == "STALE_STEP"
    assert gw.begin(req("tabs.list", rid=3))["step"] == "authorize"



def test_cancelled_read_is_refused_not_unknown_and_retire_message_frees_lane() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    done = gw.cancel({"transaction": step["transaction"], "reason": "cancelled"})
    assert done["response"]["error"]["code"] == "CANCELLED" and done["response"]["mayHaveCompleted"] is False
    assert gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})["step"] == "retired"
    assert gw.next() == {"step": "idle"}



def test_cancel_during_authorize_completes_and_frees_lane() -> None:
    gw = make()
    step = gw.begin(req("tab.navigate", tabId="A", url="https://x.test/"))
    done = gw.cancel({"transaction": step["transaction"], "reason": "cancelled"})
    assert done["response"]["error"]["code"] == "CANCELLED" and done["response"]["mayHaveCompleted"] is False
    assert gw.begin(req("tabs.list"))["step"] == "authorize"



def test_renderer_closed_cancel_does_not_wait_for_a_callback_that_cannot_come() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    done = gw.cancel({"transaction": step["transaction"], "reason": "renderer-closed"})
    assert done["response"]["mayHaveCompleted"] is True
    assert gw.next() == {"step": "idle"}
    gw.close()



def test_selected_targeting_reads_inspect_first_and_never_switch(renderer: FakeRenderer) -> None:
    gw = make(targeting="selected")
    step = admit(gw, gw.begin(req("tab.snapshot")))
    assert step["method"] == "get-tabs" and step["mutates"] is False
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": renderer("", step)})
    assert step["method"] == "browser-control-evaluate" and step["params"]["tabId"] == "A"
    assert [c[0] for c in renderer.calls] == ["get-tabs"]



def test_selected_targeting_write_switch_has_its_own_authorization(renderer: FakeRenderer) -> None:
    gw = make(targeting="selected")
    renderer.active = "B"
    run(gw, req("tab.snapshot"), renderer)  # snapshot of B (selected)
    renderer.active = "A"
    ref = response(run(gw, req("tabs.list"), renderer))  # observe
    b_ref = None
    renderer.active = "B"
    b_ref = response(run(gw, req("tab.snapshot"), renderer))["result"]["elements"][0]["ref"]
    renderer.active = "A"
    step = gw.begin(req("tab.click", tabId="B", ref=b_ref))
    assert step["step"] == "authorize" and step["request"]["method"] == "tab.click"
    inspect = admit(gw, step)
    assert inspect["method"] == "get-tabs"
    switch_auth = gw.advance({"transaction": inspect["transaction"], "seq": inspect["seq"],
                              "result": renderer("", inspect)})
    assert switch_auth["step"] == "authorize"
    assert switch_auth["request"]["method"] == "tabs.select" and switch_auth["target"]["tabId"] == "B"
    switch = admit(gw, switch_auth)
    assert switch["method"] == "switch-tab" and switch["mutates"] is True
    click = gw.advance({"transaction": switch["transaction"], "seq": switch["seq"], "result": renderer("", switch)})
    assert click["method"] == "browser-control-evaluate" and click["params"]["tabId"] == "B"
    assert response(ok(gw, click, value={"clicked": True}))["success"]
    assert ref["success"]



def test_refusal_after_a_dispatched_switch_is_an_unknown_outcome() -> None:
    """Regression (adversarial review, 487190e): a refusal after selected targeting's switch-tab had run (here
    the click's refs invalidated meanwhile) claimed nothing happened. Guards: it is an unknown outcome."""
    gw, r = make(targeting="selected"), FakeRenderer()
    r.active = "A"
    ref = None
    r.active = "B"
    ref = response(run(gw, req("tab.snapshot"), r))["result"]["elements"][0]["ref"]
    r.active = "A"
    step = admit(gw, gw.begin(req("tab.click", tabId="B", ref=ref)))  # inspect
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    switch = admit(gw, step)
    assert switch["method"] == "switch-tab"
    gw.invalidate_refs("B")
    out = response(ok(gw, switch, tabId="B", generation=1))
    assert out["error"]["code"] == "REFS_INVALIDATED" and out["mayHaveCompleted"] is True



def _switched_then(gw: Gateway, r: FakeRenderer, method: str, **params: Any) -> dict[str, Any]:
    """Selected targeting: ``method`` names tab B while A is selected; returns its main dispatch, issued
    after the switch-tab ran (the renderer now shows B)."""
    step = admit(gw, gw.begin(req(method, tabId="B", **params)))  # inspect
    assert step["method"] == "get-tabs"
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    switch = admit(gw, step)
    assert switch["method"] == "switch-tab"
    main = gw.advance({"transaction": switch["transaction"], "seq": switch["seq"], "result": r("", switch)})
    assert main["step"] == "dispatch" and r.active == "B"
    return main



@pytest.mark.parametrize("answer", [
    # the native itself says it ran nothing (the reference host's TAB_NOT_FOUND, a page that never loaded)
    {"success": False, "error": {"code": "TAB_NOT_FOUND", "message": "no tab"}, "mayHaveCompleted": False},
    {"success": False, "error": {"code": "RENDERER_FAILED", "message": "x"}, "mayHaveCompleted": False},
    # the generated script refused before any effect (CONTRACT.md §4, §9: NOT_ACTIONABLE, NODE_REPLACED)
    {"success": True, "value": {"error": {"code": "NOT_ACTIONABLE", "message": "disabled"},
                                "mayHaveCompleted": False}},
])
def test_a_not_run_answer_after_a_dispatched_switch_is_an_unknown_outcome(answer: dict[str, Any]) -> None:
    """Review finding (stop 22): the main dispatch answered "not run" after the switch-tab had changed the
    selection was reported mayHaveCompleted:false, which promises nothing but reads ran (§4); the refusal
    path after a switch already said true. Both now agree, and the tab needs a reconcile like any unknown
    outcome."""
    gw, r = make(targeting="selected"), FakeRenderer()
    r.active = "B"
    ref = response(run(gw, req("tab.snapshot"), r))["result"]["elements"][0]["ref"]
    r.active = "A"
    main = _switched_then(gw, r, "tab.click", ref=ref)
    out = response(gw.advance({"transaction": main["transaction"], "seq": main["seq"], "result": answer}))
    assert out["success"] is False and out["mayHaveCompleted"] is True, out
    assert out["error"]["retryable"] is False and "selection changed" in out["error"]["message"], out
    if answer.get("error", {}).get("code") == "TAB_NOT_FOUND":
        return  # B is gone (closed after the switch): nothing left to reconcile (test_closed_tabs.py)
    assert response(gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))["error"]["code"] == (
        "RECONCILE_REQUIRED")



def test_a_not_run_answer_without_a_switch_stays_a_refusal() -> None:
    """The same answers on the selected tab (no switch dispatched): nothing changed, mayHaveCompleted:false."""
    gw, r = make(targeting="selected"), FakeRenderer()
    ref = response(run(gw, req("tab.snapshot"), r))["result"]["elements"][0]["ref"]
    step = admit(gw, gw.begin(req("tab.click", ref=ref)))
    main = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    assert main["step"] == "dispatch" and main["method"] == "browser-control-evaluate"
    out = response(gw.advance({"transaction": main["transaction"], "seq": main["seq"], "result": {
        "success": False, "error": {"code": "TAB_NOT_FOUND", "message": "no tab"}, "mayHaveCompleted": False}}))
    assert out["error"]["code"] == "TAB_NOT_FOUND" and out["mayHaveCompleted"] is False, out



def test_a_switch_that_says_it_ran_nothing_stays_a_refusal() -> None:
    """Guards the other side of the switch rule (stop 22's review, 5b0357e): a switch-tab that itself answers
    "not run" changed no selection, so the transaction stays a refusal (``mayHaveCompleted:false``)."""
    gw, r = make(targeting="selected"), FakeRenderer()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    switch = admit(gw, step)
    out = response(gw.advance({"transaction": switch["transaction"], "seq": switch["seq"], "result": {
        "success": False, "error": {"code": "TAB_NOT_FOUND", "message": "gone"}, "mayHaveCompleted": False}}))
    assert out["error"]["code"] == "TAB_NOT_FOUND" and out["mayHaveCompleted"] is False, out



def test_no_authorize_step_when_not_required(renderer: FakeRenderer) -> None:
    gw = make(requireAuthorization=False)
    step = gw.begin(req("tabs.list"))
    assert step["step"] == "dispatch"



def test_documentation_and_capabilities_answer_without_dispatch() -> None:
    gw = make(nativeMethods=["get-tabs"], fixedReader=False)
    caps = response(run(gw, req("capabilities")))["result"]
    assert caps["methods"] == ["documentation", "capabilities", "tabs.list"]
    assert caps["limits"]["maxRequestBytes"] == 4 * 1024 * 1024
    doc = response(run(gw, req("documentation")))["result"]
    assert doc["format"] == "markdown" and "`tabs.list`" in doc["text"] and "tab.click" not in doc["text"]



def test_close_refuses_only_while_a_callback_is_pending() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    with pytest.raises(GatewayPendingError):
        gw.close()
    assert gw.next() == step  # intact
    ok(gw, step, tabs=[])
    gw.close()
    assert response(gw.begin(req("tabs.list")))["error"]["message"] == "this gateway is closed"



def test_transition_table_matches_a_transitions_machine() -> None:
    """The dict the hot path uses and the transitions.Machine built from the same table agree on
    every (state, event) pair (transitions is the oracle)."""
    from transitions.core import MachineError

    events = sorted({e for e, _, _ in TRANSITIONS})
    for state in STATES:
        for event in events:
            class Model:
                pass

            model = Model()
            build_machine(model)
            model.state = state  # type: ignore[attr-defined]
            try:
                getattr(model, event)()
                expected: str | None = model.state  # type: ignore[attr-defined]
            except MachineError:
                expected = None
            txn = Transaction("t", "direct", "m", None, {}, False, 0.0)
            txn.state = state  # the starting point under test (the gateway only ever moves it by fire)
            try:
                got: str | None = txn.fire(event)
            except Exception:
                got = None
            assert got == expected, (state, event)
