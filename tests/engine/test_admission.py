"""Admission (engine/kelpie_gateway/admission.py; CONTRACT.md §2, §4, §6): what a request must pass before
it takes a lane and again before each dispatch — the capability projection, extension admission and
arguments, selected targeting's switch rules, the refs it carries, and RECONCILE_REQUIRED. A refused
request dispatches nothing and completes ``mayHaveCompleted:false``. Ref-bearing extensions have their own
file (tests/engine/test_ref_extensions.py)."""

from __future__ import annotations

from typing import Any

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run


def test_invalidation_during_authorization_refuses_before_dispatch(renderer: FakeRenderer) -> None:
    gw = make()
    ref = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]["elements"][0]["ref"]
    step = gw.begin(req("tab.click", tabId="A", ref=ref))
    gw.invalidate_refs(None)  # e.g. the renderer process changed while the user was asked
    out = admit(gw, step)
    assert out["step"] == "complete" and out["response"]["error"]["code"] == "REFS_INVALIDATED"
    assert out["response"]["mayHaveCompleted"] is False and out["audit"]["dispatches"] == 0



def test_selected_read_of_another_tab_is_refused(renderer: FakeRenderer) -> None:
    out = response(run(make(targeting="selected"), req("tab.screenshot", tabId="B"), renderer))
    assert out["error"]["code"] == "TAB_NOT_SELECTED" and out["mayHaveCompleted"] is False
    assert [c[0] for c in renderer.calls] == ["get-tabs"]



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



def test_unknown_outcome_of_a_tab_targeting_extension_requires_reconcile() -> None:
    """Regression (adversarial review, 487190e): a mutating extension naming ``arguments.tabId`` escaped
    RECONCILE_REQUIRED after an unknown outcome. Guards: its tab is marked, and both a core mutation and the
    extension itself are refused until the tab is observed."""
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
