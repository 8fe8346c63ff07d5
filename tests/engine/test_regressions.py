"""Regression tests for defects found by an adversarial review (each names the failure it guards)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kelpie_gateway import Gateway, GatewayConfigError

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run


def _utf8(step: dict[str, Any]) -> None:
    json.dumps(step, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate


def test_lone_surrogates_in_dict_results_are_repaired_everywhere() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    out = gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                      "result": {"success": False, "error": {"code": "RENDERER_FAILED", "message": "bad \ud800"}}})
    _utf8(out)
    assert out["response"]["error"]["message"] == "bad \ufffd"
    step = admit(gw, gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))
    out = ok(gw, step, tabId="B", generation=2, url="https://x/\udc00")
    _utf8(out)
    assert out["response"]["result"]["url"] == "https://x/\ufffd"


def test_dict_request_with_lone_surrogate_is_refused_like_json_text() -> None:
    out = response(make().begin(req("tab.snapshot", tabId="A\ud800")))
    assert out["error"]["code"] == "INVALID_REQUEST"


def test_editing_a_returned_step_cannot_change_what_is_dispatched() -> None:
    gw = make()
    step = gw.begin(req("tab.navigate", tabId="A", url="https://ok.example/"))
    step["request"]["params"]["url"] = "javascript:alert(1)"
    dispatch = admit(gw, step)
    assert dispatch["params"]["url"] == "https://ok.example/"
    dispatch["params"].pop("url")
    assert gw.next()["params"]["url"] == "https://ok.example/"


def test_editing_the_callers_request_after_begin_changes_nothing() -> None:
    ext = {"name": "fill", "method": "ext-fill", "description": "d", "mutates": False,
           "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},
                           "additionalProperties": False}}
    gw = make(nativeMethods=["ext-fill"], extensions=[ext])
    request = req("extension.call", name="fill", arguments={"n": 1})
    step = gw.begin(request)
    request["params"]["arguments"]["n"] = 10**6
    assert admit(gw, step)["params"] == {"n": 1}


def test_unknown_outcome_of_a_tab_targeting_extension_requires_reconcile() -> None:
    ext = {"name": "fill", "method": "ext-fill", "description": "d", "mutates": True,
           "inputSchema": {"type": "object"}}
    gw = make(extensions=[ext], nativeMethods=["ext-fill", "navigate", "browser-control-evaluate"])
    step = admit(gw, gw.begin(req("extension.call", name="fill", arguments={"tabId": "A"})))
    out = gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                      "result": {"success": False, "error": {"code": "TIMEOUT", "message": "t"}}})
    assert out["response"]["mayHaveCompleted"] is True
    assert response(gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))["error"]["code"] == (
        "RECONCILE_REQUIRED")
    assert response(gw.begin(req("extension.call", name="fill", arguments={"tabId": "A"})))["error"][
        "code"] == "RECONCILE_REQUIRED"


def test_refusal_after_a_dispatched_switch_is_an_unknown_outcome() -> None:
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
    gw, r = make(targeting="selected"), FakeRenderer()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    switch = admit(gw, step)
    out = response(gw.advance({"transaction": switch["transaction"], "seq": switch["seq"], "result": {
        "success": False, "error": {"code": "TAB_NOT_FOUND", "message": "gone"}, "mayHaveCompleted": False}}))
    assert out["error"]["code"] == "TAB_NOT_FOUND" and out["mayHaveCompleted"] is False, out


@pytest.mark.parametrize("schema", [
    {"type": "object", "$ref": "http://127.0.0.1:9/s.json"},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
])
def test_extension_schema_with_unresolvable_ref_fails_at_create(schema: dict[str, Any]) -> None:
    ext = {"name": "x", "method": "m", "description": "d", "mutates": False, "inputSchema": schema}
    with pytest.raises(GatewayConfigError) as info:
        Gateway({"nativeMethods": ["m"], "extensions": [ext]})
    assert info.value.envelope["error"]["message"].startswith("/extensions/0/inputSchema: ")


def test_internal_errors_keep_the_request_id() -> None:
    gw = make()
    gw._catalog.capabilities = None  # type: ignore[assignment]  # inject a bug
    out = response(run(gw, req("capabilities", rid="abc")))
    assert out["error"]["code"] == "INTERNAL" and out["id"] == "abc"


def test_result_over_32_mib_passed_as_a_dict_is_refused() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    big = {"success": True, "tabs": [{"tabId": "A", "generation": 1, "url": "u", "title": "x" * (33 << 20),
                                      "active": True}]}
    out = response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": big}))
    assert out["error"]["code"] == "RESPONSE_TOO_LARGE"


def test_empty_screenshot_is_malformed() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    out = response(ok(gw, step, mimeType="image/png", data="", width=1, height=1))
    assert out["error"]["code"] == "RENDERER_FAILED"


def test_a_snapshot_script_error_is_that_error_and_never_an_unknown_outcome() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    out = response(ok(gw, step, value={"error": {"code": "RENDERER_FAILED", "message": "reader threw: boom"},
                                       "mayHaveCompleted": True}))
    assert out["error"] == {"code": "RENDERER_FAILED", "message": "reader threw: boom", "retryable": False}
    assert out["mayHaveCompleted"] is False


def test_audit_of_an_early_refusal_names_the_method_and_tab_the_request_named() -> None:
    gw = make()
    out = gw.begin(req("tab.click", tabId="A", ref="s9e9"))
    assert out["audit"]["method"] == "tab.click" and out["audit"]["tabId"] == "A"
    bad = gw.begin(req("tabs.select"))
    assert bad["audit"]["method"] == "tabs.select" and bad["audit"]["code"] == "INVALID_PARAMS"
    assert gw.begin(b"nonsense")["audit"]["method"] is None  # nothing readable, nothing invented


def test_the_32_mib_cap_is_the_results_own_size_not_the_advance_wrapper() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    head = f'{{"transaction":"{step["transaction"]}","seq":{step["seq"]},"result":'.encode()
    prefix = b'{"success":true,"mimeType":"image/png","width":1,"height":1,"data":"'
    filler = (32 << 20) - len(prefix) - 2  # result JSON exactly 32 MiB: allowed
    filler -= filler % 4
    result = prefix + b"A" * filler + b'"}'
    assert len(result) <= 32 << 20 < len(head) + len(result) + 1
    out = response(gw.advance(head + result + b"}"))
    assert out["success"] is True


def test_engine_bounds_element_strings_even_if_a_renderer_does_not() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    value = {"url": "u", "title": "t", "text": "x", "truncated": False, "elements": [
        {"handle": "0123456789abcdef-1", "tag": "x-" + "a" * 10_000, "role": "button", "label": "L" * 9000}]}
    out = response(ok(gw, step, value=value))["result"]
    assert len(out["elements"][0]["tag"]) == 128 and len(out["elements"][0]["label"]) == 500
    assert out["truncated"] is True


def test_ids_beyond_64_bits_are_refused_not_echoed_changed() -> None:
    gw = make()
    canonical = response(gw.begin(b'{"version":1,"id":123456789012345678901,"method":"capabilities","params":{}}'))
    assert canonical["error"]["code"] == "INVALID_REQUEST" and "64 bits" in canonical["error"]["message"]
    exact = gw.begin(b'{"version":1,"id":18446744073709551615,"method":"capabilities","params":{}}')
    assert exact["step"] == "authorize" and exact["request"]["id"] == 18446744073709551615
    gw.cancel({"transaction": exact["transaction"], "reason": "cancelled"})
    rpc = gw.begin_mcp(b'{"jsonrpc":"2.0","id":123456789012345678901,"method":"ping"}')["response"]
    assert rpc["error"]["code"] == -32600


def test_a_navigation_cancelled_before_dispatch_leaves_the_refs_valid() -> None:
    """Issue 19: the deep stateful run's counterexample. A tab.navigate cancelled while its authorize step
    was pending changed nothing, so the tab's latest refs stay valid and a click with one is dispatched
    (the old model wrongly expected REFS_INVALIDATED); a navigation that was dispatched invalidates them."""
    gw, renderer = make(), FakeRenderer()
    refs = [e["ref"] for e in response(run(gw, req("tab.snapshot", tabId="B"), renderer))["result"]["elements"]]
    navigate = gw.begin(req("tab.navigate", tabId="B", url="https://x.test/"))
    cancelled = response(gw.cancel({"transaction": navigate["transaction"], "reason": "timeout"}))
    assert cancelled["error"]["code"] == "TIMEOUT" and cancelled["mayHaveCompleted"] is False
    click = admit(gw, gw.begin(req("tab.click", tabId="B", ref=refs[0])))
    assert click["step"] == "dispatch", click
    assert response(gw.advance({"transaction": click["transaction"], "seq": click["seq"],
                                "result": renderer("tab.click", click)}))["success"] is True
    refs = [e["ref"] for e in response(run(gw, req("tab.snapshot", tabId="B"), renderer))["result"]["elements"]]
    dispatched = admit(gw, gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))
    assert dispatched["step"] == "dispatch"
    gw.cancel({"transaction": dispatched["transaction"], "reason": "timeout"})
    gw.advance({"transaction": dispatched["transaction"], "seq": dispatched["seq"], "result": {"success": True}})
    stale = response(gw.begin(req("tab.click", tabId="B", ref=refs[0])))
    assert stale["error"]["code"] in ("REFS_INVALIDATED", "RECONCILE_REQUIRED") and stale["mayHaveCompleted"] is False
