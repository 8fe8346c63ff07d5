"""Transaction behaviour a host author relies on (CONTRACT.md §5, §6)."""

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


def test_a_click_invalidates_its_tabs_refs_but_not_other_tabs(renderer: FakeRenderer) -> None:
    gw = make()
    a = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]["elements"]
    b = response(run(gw, req("tab.snapshot", tabId="B"), renderer))["result"]["elements"]
    assert response(run(gw, req("tab.click", tabId="A", ref=a[0]["ref"]), renderer))["success"]
    assert response(gw.begin(req("tab.click", tabId="A", ref=a[1]["ref"])))["error"]["code"] == "REFS_INVALIDATED"
    assert response(run(gw, req("tab.click", tabId="B", ref=b[0]["ref"]), renderer))["success"]


def test_refs_are_unique_across_snapshots_and_tabs(renderer: FakeRenderer) -> None:
    gw = make()
    seen: set[str] = set()
    for tab in ("A", "B", "A", "B"):
        for e in response(run(gw, req("tab.snapshot", tabId=tab), renderer))["result"]["elements"]:
            assert e["ref"] not in seen
            seen.add(e["ref"])


def test_invalidation_during_authorization_refuses_before_dispatch(renderer: FakeRenderer) -> None:
    gw = make()
    ref = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]["elements"][0]["ref"]
    step = gw.begin(req("tab.click", tabId="A", ref=ref))
    gw.invalidate_refs(None)  # e.g. the renderer process changed while the user was asked
    out = admit(gw, step)
    assert out["step"] == "complete" and out["response"]["error"]["code"] == "REFS_INVALIDATED"
    assert out["response"]["mayHaveCompleted"] is False and out["audit"]["dispatches"] == 0


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


def test_failed_mutation_is_unknown_unless_the_result_says_otherwise() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    out = response(gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                               "result": {"success": False, "error": {"code": "WEIRD", "message": "boom"}}}))
    assert out["error"]["code"] == "RENDERER_FAILED" and out["mayHaveCompleted"] is True
    assert "WEIRD" in out["error"]["message"]
    # RECONCILE_REQUIRED until a fresh observation of tab A completes
    assert response(gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))["error"]["code"] == (
        "RECONCILE_REQUIRED")
    renderer = FakeRenderer()
    run(gw, req("tab.snapshot", tabId="A"), renderer)
    assert response(run(gw, req("tab.navigate", tabId="A", url="https://x.test/"), renderer))["success"]


def test_missing_required_field_in_mutation_result_is_unknown_outcome() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.open", url="https://x.test/")))
    out = response(ok(gw, step, tabId="T9"))  # no generation
    assert out["error"]["code"] == "RENDERER_FAILED" and out["mayHaveCompleted"] is True


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


def test_selected_read_of_another_tab_is_refused(renderer: FakeRenderer) -> None:
    out = response(run(make(targeting="selected"), req("tab.screenshot", tabId="B"), renderer))
    assert out["error"]["code"] == "TAB_NOT_SELECTED" and out["mayHaveCompleted"] is False
    assert [c[0] for c in renderer.calls] == ["get-tabs"]


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


def test_projection_rules() -> None:
    assert "tab.snapshot" not in make(fixedReader=False)._catalog.methods
    no_actions = make(allowActions=False)._catalog.methods
    assert "tab.click" not in no_actions and "tab.snapshot" in no_actions and "tabs.list" in no_actions
    assert make(browserAvailable=False)._catalog.methods == ["documentation", "capabilities"]
    assert "tabs.select" not in make(pinnedTab="A")._catalog.methods


def _ext(name: str, method: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "method": method, "description": name, "mutates": False,
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
            **extra}


def test_extensions_lanes_filters_and_argument_validation() -> None:
    gw = make(nativeMethods=["get-tabs", "infer", "rec", "dlg"], extensions=[
        _ext("infer", "infer", coordinator="dedicated"), _ext("rec", "rec"), _ext("dlg_ok", "dlg", recovery=True),
        _ext("ghost", "not-there")], extensionFilter={"exclude": ["rec"]})
    assert list(gw._catalog.extensions) == ["infer", "dlg_ok"]
    bad = response(gw.begin(req("extension.call", name="infer", arguments={"n": "x"})))
    assert bad["error"]["code"] == "INVALID_PARAMS" and "/params/arguments/n" in bad["error"]["message"]
    assert response(gw.begin(req("extension.call", name="ghost")))["error"]["code"] == "EXTENSION_NOT_ADMITTED"
    assert response(gw.begin(req("extension.call", name="rec")))["error"]["code"] == "EXTENSION_NOT_ADMITTED"
    direct = gw.begin(req("tabs.list"))
    dedicated = gw.begin(req("extension.call", name="infer", arguments={"n": 1}))
    recovery = gw.begin(req("extension.call", name="dlg_ok"))
    assert (direct["lane"], dedicated["lane"], recovery["lane"]) == ("direct", "dedicated:infer", "recovery")
    d = admit(gw, dedicated)
    assert d["method"] == "infer" and d["params"] == {"n": 1}
    assert response(ok(gw, d, label="cat"))["result"] == {"label": "cat"}


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


def test_gateway_accepts_json_text_and_bytes() -> None:
    gw = Gateway('{"nativeMethods": ["get-tabs"]}')
    step = gw.begin(b'{"version":1,"id":"x","method":"tabs.list","params":{}}')
    step = gw.advance(f'{{"transaction":"{step["transaction"]}","seq":{step["seq"]},"result":{{"success":true}}}}')
    assert step["step"] == "dispatch"
