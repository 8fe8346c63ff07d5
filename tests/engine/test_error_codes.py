"""One example per error code (CONTRACT.md §4): the exact envelope a user sees."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kelpie_gateway.errors import ERROR_CODES

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run


def _snapshot(gw: Any, r: FakeRenderer, tab: str = "A") -> dict[str, Any]:
    return response(run(gw, req("tab.snapshot", tabId=tab), r))["result"]


def invalid_json() -> dict[str, Any]:
    return response(make().begin(b'{"version": 1,'))


def invalid_request() -> dict[str, Any]:
    return response(make().begin({"version": 2, "id": "x", "method": "tabs.list"}))


def invalid_params() -> dict[str, Any]:
    return response(make().begin(req("tab.snapshot", tabId="A", timeoutMs=0)))


def unsupported_method() -> dict[str, Any]:
    return response(make(nativeMethods=["get-tabs"]).begin(req("tab.navigate", tabId="A", url="https://x.test/")))


def actions_disabled() -> dict[str, Any]:
    return response(make(allowActions=False).begin(req("tab.navigate", tabId="A", url="https://x.test/")))


def browser_unavailable() -> dict[str, Any]:
    return response(make(browserAvailable=False).begin(req("tabs.list")))


def busy() -> dict[str, Any]:
    gw = make()
    first = gw.begin(req("tabs.list"))
    assert first["step"] == "authorize"
    return response(gw.begin(req("tabs.list", rid=2)))


def not_authorized() -> dict[str, Any]:
    return response(run(make(), req("tabs.list"), authorize=False))


def tab_required() -> dict[str, Any]:
    return response(make().begin(req("tab.snapshot")))


def tab_not_found() -> dict[str, Any]:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="Z", url="https://x.test/")))
    return response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {
        "success": False, "error": {"code": "TAB_NOT_FOUND", "message": "no tab Z"}, "mayHaveCompleted": False}}))


def tab_stale() -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    ref = _snapshot(gw, r)["elements"][0]["ref"]
    r.tabs["A"]["generation"] = 7  # the page navigated but nobody called invalidate_refs
    run(gw, req("tabs.list"), r)
    return response(gw.begin(req("tab.click", tabId="A", ref=ref)))


def tab_not_selected() -> dict[str, Any]:
    gw, r = make(targeting="selected"), FakeRenderer()
    return response(run(gw, req("tab.snapshot", tabId="B"), r))


def tab_pinned() -> dict[str, Any]:
    return response(make(pinnedTab="A").begin(req("tab.snapshot", tabId="B")))


def unknown_ref() -> dict[str, Any]:
    return response(make().begin(req("tab.click", tabId="A", ref="s999e1")))


def stale_snapshot() -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    old = _snapshot(gw, r)["elements"][0]["ref"]
    _snapshot(gw, r)
    return response(gw.begin(req("tab.click", tabId="A", ref=old)))


def cross_tab_ref() -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    ref_b = _snapshot(gw, r, "B")["elements"][0]["ref"]
    return response(gw.begin(req("tab.click", tabId="A", ref=ref_b)))


def refs_invalidated() -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    ref = _snapshot(gw, r)["elements"][0]["ref"]
    gw.invalidate_refs("A")
    return response(gw.begin(req("tab.click", tabId="A", ref=ref)))


def _click_with_value(value: dict[str, Any]) -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    ref = _snapshot(gw, r)["elements"][0]["ref"]
    step = admit(gw, gw.begin(req("tab.click", tabId="A", ref=ref)))
    return response(ok(gw, step, value=value))


def node_replaced() -> dict[str, Any]:
    return _click_with_value({"error": {"code": "NODE_REPLACED", "message": "the element was replaced"},
                              "mayHaveCompleted": False})


def _type_with_value(value: dict[str, Any]) -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    ref = _snapshot(gw, r)["elements"][0]["ref"]
    step = admit(gw, gw.begin(req("tab.type", tabId="A", ref=ref, text="hi")))
    return response(ok(gw, step, value=value))


def not_typable() -> dict[str, Any]:
    return _type_with_value({"error": {"code": "NOT_TYPABLE", "message": "a checkbox takes no text"},
                             "mayHaveCompleted": False})


def not_actionable() -> dict[str, Any]:
    return _click_with_value({"error": {"code": "NOT_ACTIONABLE", "message": "the element is disabled"},
                              "mayHaveCompleted": False})


def effect_not_observed() -> dict[str, Any]:
    return _type_with_value({"error": {"code": "EFFECT_NOT_OBSERVED", "message": "the field does not show it"},
                             "mayHaveCompleted": True})


def option_unsupported() -> dict[str, Any]:
    return response(make().begin(req("tab.screenshot", tabId="A", fullPage=True)))


def _cancel(reason: str) -> dict[str, Any]:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    return response(gw.cancel({"transaction": step["transaction"], "reason": reason}))


def timeout() -> dict[str, Any]:
    return _cancel("timeout")


def cancelled() -> dict[str, Any]:
    return _cancel("cancelled")


def renderer_changed() -> dict[str, Any]:
    gw, r = make(), FakeRenderer()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    gw.invalidate_refs("A")  # the page navigated while the reader ran
    return response(ok(gw, step, value=r.snapshot_value("A")))


def renderer_failed() -> dict[str, Any]:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    return response(ok(gw, step, mimeType="image/png", width=1))  # no data, no height


def request_too_large() -> dict[str, Any]:
    return response(make().begin(b'{"version":1,"method":"tabs.list","params":{},"id":"' + b"x" * (4 << 20) + b'"}'))


def response_too_large() -> dict[str, Any]:
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    big = b'{"transaction":"%s","seq":%d,"result":{"success":true,"mimeType":"image/png","width":1,"height":1,"data":"' % (
        step["transaction"].encode(), step["seq"]) + b"A" * (32 << 20) + b'"}}'
    return response(gw.advance(big))


def reconcile_required() -> dict[str, Any]:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
    gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}})  # retires
    return response(gw.begin(req("tab.navigate", tabId="A", url="https://x.test/again")))


def extension_not_admitted() -> dict[str, Any]:
    gw = make(extensions=[{"name": "dialog_accept", "method": "dialog-accept", "description": "d",
                           "inputSchema": {"type": "object"}, "mutates": True}],
              extensionFilter={"exclude": ["dialog_*"]})
    return response(gw.begin(req("extension.call", name="dialog_accept", arguments={})))


def stale_step() -> dict[str, Any]:
    gw = make()
    step = gw.begin(req("tabs.list"))
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"] + 5, "result": {"success": True}})


def internal() -> dict[str, Any]:
    gw = make()
    gw._catalog.capabilities = None  # type: ignore[assignment]  # inject a bug: calling it raises
    return response(run(gw, req("capabilities")))


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "INVALID_JSON": invalid_json, "INVALID_REQUEST": invalid_request, "INVALID_PARAMS": invalid_params,
    "UNSUPPORTED_METHOD": unsupported_method, "ACTIONS_DISABLED": actions_disabled,
    "BROWSER_UNAVAILABLE": browser_unavailable, "BUSY": busy, "NOT_AUTHORIZED": not_authorized,
    "TAB_REQUIRED": tab_required, "TAB_NOT_FOUND": tab_not_found, "TAB_STALE": tab_stale,
    "TAB_NOT_SELECTED": tab_not_selected, "TAB_PINNED": tab_pinned, "UNKNOWN_REF": unknown_ref,
    "STALE_SNAPSHOT": stale_snapshot, "CROSS_TAB_REF": cross_tab_ref, "REFS_INVALIDATED": refs_invalidated,
    "NODE_REPLACED": node_replaced, "NOT_TYPABLE": not_typable, "OPTION_UNSUPPORTED": option_unsupported,
    "NOT_ACTIONABLE": not_actionable, "EFFECT_NOT_OBSERVED": effect_not_observed,
    "TIMEOUT": timeout, "CANCELLED": cancelled, "RENDERER_CHANGED": renderer_changed,
    "RENDERER_FAILED": renderer_failed, "REQUEST_TOO_LARGE": request_too_large,
    "RESPONSE_TOO_LARGE": response_too_large, "RECONCILE_REQUIRED": reconcile_required,
    "EXTENSION_NOT_ADMITTED": extension_not_admitted, "STALE_STEP": stale_step, "INTERNAL": internal,
}

# What the user sees: (mayHaveCompleted, a phrase of the message). STALE_STEP is a rejected step.
EXPECTED: dict[str, tuple[bool, str]] = {
    "INVALID_JSON": (False, "not valid JSON"),
    "INVALID_REQUEST": (False, "/version: must be the integer 1"),
    "INVALID_PARAMS": (False, "/params/timeoutMs: must be at least 1"),
    "UNSUPPORTED_METHOD": (False, "tab.navigate is not implemented by this host"),
    "ACTIONS_DISABLED": (False, "allowActions:false"),
    "BROWSER_UNAVAILABLE": (False, "browserAvailable:false"),
    "BUSY": (False, "lane 'direct' is busy"),
    "NOT_AUTHORIZED": (False, "user said no"),
    "TAB_REQUIRED": (False, "needs params.tabId (direct targeting): get one from tabs.list"),
    "TAB_NOT_FOUND": (False, "no tab Z"),
    "TAB_STALE": (False, "now shows document generation 7"),
    "TAB_NOT_SELECTED": (False, "reads never switch"),
    "TAB_PINNED": (False, "pinned to tab 'A'"),
    "UNKNOWN_REF": (False, "never issued"),
    "STALE_SNAPSHOT": (False, "older snapshot of tab 'A'"),
    "CROSS_TAB_REF": (False, "belongs to tab 'B'"),
    "REFS_INVALIDATED": (False, "take a new tab.snapshot"),
    "NODE_REPLACED": (False, "replaced"),
    "NOT_TYPABLE": (False, "checkbox"),
    "NOT_ACTIONABLE": (False, "disabled"),
    "EFFECT_NOT_OBSERVED": (True, "does not show it"),
    "OPTION_UNSUPPORTED": (False, "/params/fullPage: only [False]"),
    "TIMEOUT": (False, "read-only, nothing changed"),
    "CANCELLED": (False, "read-only, nothing changed"),
    "RENDERER_CHANGED": (False, "changed while it was being read"),
    "RENDERER_FAILED": (False, "malformed field 'data'"),
    "REQUEST_TOO_LARGE": (False, "the cap is 4194304 bytes (4 MiB)"),
    "RESPONSE_TOO_LARGE": (False, "32 MiB"),
    "RECONCILE_REQUIRED": (False, "unknown outcome"),
    "EXTENSION_NOT_ADMITTED": (False, "dialog_accept"),
    "INTERNAL": (False, "internal error"),
}


def test_every_error_code_has_an_example() -> None:
    assert set(SCENARIOS) == set(ERROR_CODES)


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_error_envelope(code: str) -> None:
    out = SCENARIOS[code]()
    if code == "STALE_STEP":
        assert out == {"step": "rejected", "error": {
            "code": "STALE_STEP", "message": out["error"]["message"], "retryable": False}}
        assert "late, duplicated or forged" in out["error"]["message"]
        return
    may, phrase = EXPECTED[code]
    assert set(out) == {"version", "id", "success", "error", "mayHaveCompleted"}
    assert out["version"] == 1 and out["success"] is False
    assert out["error"]["code"] == code
    # CONTRACT.md §4 (v1.1): an unknown outcome is never retryable, whatever the code's default.
    assert out["error"]["retryable"] is (ERROR_CODES[code][0] and not may)
    assert out["mayHaveCompleted"] is may
    assert phrase in out["error"]["message"], out["error"]["message"]


def test_request_id_is_echoed_on_refusals() -> None:
    out = response(make().begin(req("tab.snapshot", rid="abc", tabId="A", maxChars=99999)))
    assert out["id"] == "abc" and out["error"]["code"] == "INVALID_PARAMS"
    assert "/params/maxChars: must be at most 12000" in out["error"]["message"]


def test_unknown_outcome_message_says_observe_first() -> None:
    gw = make()
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="https://x.test/")))
    out = response(gw.cancel({"transaction": step["transaction"], "reason": "timeout"}))
    assert out["error"]["code"] == "TIMEOUT" and out["mayHaveCompleted"] is True
    assert "observe the tab (tab.snapshot) before acting again" in out["error"]["message"]


def test_internal_errors_keep_the_request_id() -> None:
    """Regression (adversarial review, 487190e): an INTERNAL answer (a gateway bug while completing) lost the
    request's id. Guards: the client can still match the answer to its request."""
    gw = make()
    gw._catalog.capabilities = None  # type: ignore[assignment]  # inject a bug
    out = response(run(gw, req("capabilities", rid="abc")))
    assert out["error"]["code"] == "INTERNAL" and out["id"] == "abc"
