"""Renderer results (engine/kelpie_gateway/results.py; CONTRACT.md §3, §4, §8, §9): whatever a renderer
answers, the transaction completes with a bounded, well-formed envelope — a malformed or failed result of
a dispatched mutation is an unknown outcome, a read's never is; page text can never put a lone surrogate
or an unbounded string into the output."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings

from tests.depth import examples
from tests.engine.kit import FakeRenderer, admit, json_values, make, ok, req, response, run


def test_lone_surrogates_from_the_page_never_reach_the_output() -> None:
    gw = make()

    def renderer(kind: str, step: dict[str, Any]) -> dict[str, Any]:
        return {"success": True, "generation": 1, "value": {
            "url": "http://x/\ud800", "title": "T\udfff", "text": "a\ud83d" + "😀" * 10, "truncated": False,
            "elements": [{"handle": "0123456789abcdef-1", "tag": "a", "role": "link", "label": "\udc00x"}]}}

    out = response(run(gw, req("tab.snapshot", tabId="A", maxChars=5), renderer))["result"]
    text = json.dumps(out, ensure_ascii=False)
    text.encode("utf-8")  # would raise on a lone surrogate
    assert out["text"] == "a\ufffd😀" and out["truncated"] is True  # 5 UTF-16 units; the pair is not split
    assert out["elements"][0]["label"] == "\ufffdx" and out["title"] == "T\ufffd"



@given(json_values)
@settings(max_examples=examples(300), deadline=None)
def test_any_renderer_result_completes_the_transaction(value: Any) -> None:
    gw = make()
    for request in (req("tab.snapshot", tabId="A"), req("tab.navigate", tabId="A", url="https://x.test/"),
                    req("tabs.list"), req("tab.screenshot", tabId="A")):
        step = ok(gw, gw.begin(request))
        assert step["step"] == "dispatch"
        for result in (value, {"success": True, "value": value, "tabs": value, "data": value}):
            out = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})
            if out["step"] == "complete":
                break
        assert out["step"] == "complete", out
        env = out["response"]
        if not env["success"]:
            assert env["mayHaveCompleted"] is (request["method"] == "tab.navigate")
        gw._ledger.reconcile.clear()



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



# ---------------------------------------------------------------------- crashed tabs (§5, v1.1)
def test_tabs_list_reports_a_crashed_tab() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    tabs = [{"tabId": "A", "generation": 2, "url": "about:blank", "title": "", "active": True, "crashed": True},
            {"tabId": "B", "generation": 1, "url": "about:blank", "title": "", "active": False, "crashed": False}]
    env = response(ok(gw, step, tabs=tabs))
    assert env["result"]["tabs"][0]["crashed"] is True
    assert "crashed" not in env["result"]["tabs"][1]


def test_navigate_passes_the_hosts_download_object_and_nothing_else() -> None:
    """Issues 27 and 32: a navigation that ended in a download says so with the host's download object
    (``{id, name, state, bytes, sha256, resource, …}``, the same as a click's); anything there that is not
    an object is dropped, never passed to the client."""
    record = {"id": "d1", "name": "f.bin", "state": "complete", "bytes": 3, "sha256": "ab", "resource": "kelpie://downloads/d1"}
    for sent, shown in ((record, record), ({"state": "in-progress"}, {"state": "in-progress"}), ("yes", None), (1, None), (None, None)):
        gw = make()
        step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/f.bin")))
        extra = {} if sent is None else {"download": sent}
        out = response(ok(gw, step, tabId="A", generation=2, url="https://x.test/", **extra))
        assert out["success"], out
        assert out["result"].get("download") == shown, (sent, out)


def test_tabs_list_passes_a_positive_popup_count_only() -> None:
    """Issue 27: the host closes a tab's popups past --max-popups and counts them (``popupsClosed``); the
    engine passes a positive integer through and drops anything else (0, a bool, a string)."""
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    base = {"generation": 1, "url": "about:blank", "title": "", "active": False}
    tabs = [{"tabId": "A", **base, "popupsClosed": 180}, {"tabId": "B", **base, "popupsClosed": 0},
            {"tabId": "C", **base, "popupsClosed": True}, {"tabId": "D", **base, "popupsClosed": "9"}]
    listed = response(ok(gw, step, tabs=tabs))["result"]["tabs"]
    assert listed[0]["popupsClosed"] == 180
    assert all("popupsClosed" not in t for t in listed[1:]), listed



def test_empty_screenshot_is_malformed() -> None:
    """Regression (adversarial review, 487190e): an empty ``data`` was accepted as a screenshot. Guards: it is
    a malformed result (RENDERER_FAILED)."""
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    out = response(ok(gw, step, mimeType="image/png", data="", width=1, height=1))
    assert out["error"]["code"] == "RENDERER_FAILED"



def test_a_snapshot_script_error_is_that_error_and_never_an_unknown_outcome() -> None:
    """Regression (2d79295): a snapshot script's own ``{error}`` value was reported as a malformed result (and
    its ``mayHaveCompleted:true`` believed). Guards: that error is the answer, and a read never has an
    unknown outcome."""
    gw = make()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    out = response(ok(gw, step, value={"error": {"code": "RENDERER_FAILED", "message": "reader threw: boom"},
                                       "mayHaveCompleted": True}))
    assert out["error"] == {"code": "RENDERER_FAILED", "message": "reader threw: boom", "retryable": False}
    assert out["mayHaveCompleted"] is False



def test_engine_bounds_element_strings_even_if_a_renderer_does_not() -> None:
    """Regression (d154790): element tags and labels from a renderer that ignores the bounds reached the client
    unbounded. Guards: the engine cuts tags to 128 and labels to 500 and says the snapshot is truncated."""
    gw = make()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    value = {"url": "u", "title": "t", "text": "x", "truncated": False, "elements": [
        {"handle": "0123456789abcdef-1", "tag": "x-" + "a" * 10_000, "role": "button", "label": "L" * 9000}]}
    out = response(ok(gw, step, value=value))["result"]
    assert len(out["elements"][0]["tag"]) == 128 and len(out["elements"][0]["label"]) == 500
    assert out["truncated"] is True



def test_a_renderer_error_code_that_is_not_a_string_is_renderer_failed() -> None:
    """Regression (issue 26's review of result reading): a renderer failure whose ``error.code`` was an array
    raised (unhashable) while its code was looked up, so the transaction completed INTERNAL. Guards: any
    code that is not a string of the pass-through set is RENDERER_FAILED, naming what the renderer said."""
    gw = make()
    for code in ([1], {"a": 1}, 7):
        step = admit(gw, gw.begin(req("tabs.list")))
        failed = {"success": False, "error": {"code": code, "message": "boom"}}
        out = response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": failed}))
        assert out["error"]["code"] == "RENDERER_FAILED" and out["mayHaveCompleted"] is False, out
        assert out["error"]["message"] == f"boom (renderer code {code!r})"
