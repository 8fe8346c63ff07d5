"""Refs and snapshots (engine/kelpie_gateway/refs.py; CONTRACT.md §3, §6, §9 v1.1), sans-I/O: a ref
belongs to its tab's latest snapshot until that tab is invalidated; refs are unique across snapshots and
tabs; a snapshot may come in pages whose cursor continues the same snapshot.

The renderer is scripted by hand: what matters here is what the gateway decides — the refs and cursor it
issues, what it refuses before dispatch, how the next page joins the same snapshot, and which renderer
answers are malformed. Real DOM behaviour is tested in tests/browser/ (test_continuation.py, test_states.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run

H = "0123456789abcdef"



def element(i: int, **extra: Any) -> dict[str, Any]:
    return {"handle": f"{H}-{i}", "tag": "button", "role": "button", "label": f"B{i}", **extra}



def page(first: int, count: int, rest: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "url": "http://127.0.0.1/", "title": "T", "text": "x", "truncated": rest is not None,
        "elements": [element(i) for i in range(first, first + count)], **fields,
    }
    if rest is not None:
        value["rest"] = rest
    return value



def rest(text_at: int, element_at: int) -> dict[str, Any]:
    return {"snapshot": f"{H}-1", "textAt": text_at, "elementAt": element_at}



def snap(gw: Any, value: dict[str, Any], tab: str = "A", generation: int | None = None, **params: Any) -> dict[str, Any]:
    step = gw.begin(req("tab.snapshot", tabId=tab, **params))
    step = ok(gw, step)
    assert step["step"] == "dispatch", step
    fields: dict[str, Any] = {"value": value}
    if generation is not None:
        fields["generation"] = generation
    return response(ok(gw, step, **fields))



def refused_before_dispatch(gw: Any, request: dict[str, Any], code: str) -> dict[str, Any]:
    step = gw.begin(request)
    if step["step"] == "authorize":
        step = ok(gw, step)
    assert step["step"] == "complete", step
    env = response(step)
    assert env["success"] is False and env["error"]["code"] == code and env["mayHaveCompleted"] is False, env
    assert step["audit"]["dispatches"] == 0
    return env



def test_next_joins_the_same_snapshot_and_every_ref_stays_valid() -> None:
    gw = make()
    one = snap(gw, page(1, 2, rest(1, 2)), maxElements=2)["result"]
    assert (one["snapshot"], one["next"], one["truncated"]) == ("s1", "s1p2", True)
    assert "rest" not in one
    two = snap(gw, page(3, 2, rest(2, 4)), cursor=one["next"], maxElements=2)["result"]
    three = snap(gw, page(5, 1), cursor=two["next"])["result"]
    assert [e["ref"] for r in (one, two, three) for e in r["elements"]] == [f"s1e{i}" for i in range(1, 6)]
    assert {r["snapshot"] for r in (one, two, three)} == {"s1"} and "next" not in three
    step = ok(gw, gw.begin(req("tab.click", tabId="A", ref="s1e1")))  # a page-1 ref after page 3
    assert step["step"] == "dispatch" and f'"handle":"{H}-1"' in step["params"]["script"]
    assert response(ok(gw, step, value={"clicked": True}))["result"] == {"clicked": True}



def test_the_cursor_carries_the_renderers_position_back() -> None:
    gw = make()
    snap(gw, page(1, 1, rest(7, 1)))
    step = ok(gw, gw.begin(req("tab.snapshot", tabId="A", cursor="s1p2", maxChars=50)))
    literal = step["params"]["script"].rsplit("(", 1)[1]
    params = json.loads(literal.rstrip(")"))
    assert params["cursor"] == rest(7, 1) and params["maxChars"] == 50 and "scope" not in params



def test_cursor_refusals_before_anything_is_dispatched() -> None:
    gw = make()
    one = snap(gw, page(1, 1, rest(1, 1)))["result"]
    snap(gw, page(1, 1), tab="B")
    refused_before_dispatch(gw, req("tab.snapshot", tabId="B", cursor=one["next"]), "CROSS_TAB_REF")
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", cursor="s1p3"), "INVALID_PARAMS")
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", cursor="nonsense"), "INVALID_PARAMS")
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", cursor=one["next"], scope="s1e1"), "INVALID_PARAMS")
    gw.invalidate_refs("A")  # navigation, renderer change, an action outside the gateway
    env = refused_before_dispatch(gw, req("tab.snapshot", tabId="A", cursor=one["next"]), "STALE_SNAPSHOT")
    assert "changed" in env["error"]["message"]
    newer = snap(gw, page(1, 1, rest(1, 1)))["result"]
    snap(gw, page(1, 1))
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", cursor=newer["next"]), "STALE_SNAPSHOT")



def test_a_new_document_generation_makes_the_cursor_stale() -> None:
    gw = make()
    one = snap(gw, page(1, 1, rest(1, 1)), generation=3)["result"]
    env = snap(gw, page(2, 1), generation=4, cursor=one["next"])  # the page was read from a new document
    assert env["error"]["code"] == "STALE_SNAPSHOT" and env["mayHaveCompleted"] is False



def test_scope_sends_the_handle_and_is_a_new_snapshot() -> None:
    gw = make()
    snap(gw, page(1, 3))
    step = ok(gw, gw.begin(req("tab.snapshot", tabId="A", scope="s1e2")))
    assert f'"scope":"{H}-2"' in step["params"]["script"]
    scoped = response(ok(gw, step, value=page(4, 1)))["result"]
    assert scoped["snapshot"] == "s2" and [e["ref"] for e in scoped["elements"]] == ["s2e1"]
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", scope="s1e2"), "STALE_SNAPSHOT")
    refused_before_dispatch(gw, req("tab.snapshot", tabId="A", scope="s2e9"), "UNKNOWN_REF")



def test_states_and_urls_are_checked_and_bounded() -> None:
    gw = make()
    long = "http://127.0.0.1/" + "\U0001f600" * 400  # 834 UTF-16 units
    value = page(1, 0)
    value["elements"] = [
        element(1, states=["checked", "disabled"]),
        {"handle": f"{H}-2", "tag": "a", "role": "link", "label": "L", "url": long},
    ]
    result = snap(gw, value)["result"]
    assert result["elements"][0]["states"] == ["checked", "disabled"]
    url = result["elements"][1]["url"]
    assert url.endswith("\u2026") and len(url.encode("utf-16-le")) // 2 <= 500
    assert result["truncated"] is True
    value["elements"] = [element(1, states=[])]
    assert "states" not in snap(gw, value)["result"]["elements"][0]  # an empty array says nothing
    for bad in (["disabled", "checked"], ["checked", "checked"], ["value"], "checked", [1]):
        value["elements"] = [element(1, states=bad)]
        env = snap(gw, value)
        assert env["error"]["code"] == "RENDERER_FAILED" and "states" in env["error"]["message"], bad



def test_a_malformed_or_overrun_continuation_issues_no_cursor() -> None:
    gw = make()
    env = snap(gw, page(1, 1, {"snapshot": "x y", "textAt": 1, "elementAt": 1}))
    assert env["error"]["code"] == "RENDERER_FAILED"
    env = snap(gw, page(1, 1, {"snapshot": f"{H}-1", "textAt": -1, "elementAt": 1}))
    assert env["error"]["code"] == "RENDERER_FAILED"
    # A renderer that overran the page bound: cut, truncated, and no cursor (it could not be exact).
    over = snap(gw, page(1, 3, rest(1, 3)), maxElements=2)["result"]
    assert len(over["elements"]) == 2 and over["truncated"] is True and "next" not in over



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


# ------------------------------------------------------------------ a refusal that changed nothing (issue 27)
NOT_ACTIONABLE = {"success": True, "value": {"error": {"code": "NOT_ACTIONABLE", "message": "the element is disabled"},
                                             "mayHaveCompleted": False}}
NOT_TYPABLE = {"success": True, "value": {"error": {"code": "NOT_TYPABLE", "message": "a checkbox takes no text"},
                                          "mayHaveCompleted": False}}
NODE_REPLACED = {"success": True, "value": {"error": {"code": "NODE_REPLACED", "message": "the element was replaced"},
                                            "mayHaveCompleted": False}}
NOT_RUN = {"success": False, "error": {"code": "RENDERER_FAILED", "message": "nothing ran"}, "mayHaveCompleted": False}
UNKNOWN = {"success": True, "value": {"error": {"code": "EFFECT_NOT_OBSERVED", "message": "the page put it back"},
                                      "mayHaveCompleted": True}}
EXTENSION = {"name": "poke", "method": "poke", "description": "acts on the page", "mutates": True,
             "inputSchema": {"type": "object", "properties": {"tabId": {"type": "string"}}}}


def _refs(gw: Any, renderer: FakeRenderer, tab: str = "A") -> list[str]:
    return [e["ref"] for e in response(run(gw, req("tab.snapshot", tabId=tab), renderer))["result"]["elements"]]


def _answered(gw: Any, request: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    step = admit(gw, gw.begin(request))
    assert step["step"] == "dispatch", step
    return response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result}))


def _dispatches(gw: Any, request: dict[str, Any]) -> dict[str, Any]:
    step = gw.begin(request)
    if step["step"] == "authorize":
        step = admit(gw, step)
    assert step["step"] == "dispatch", step
    return step


@pytest.mark.parametrize("answer", [NOT_ACTIONABLE, NODE_REPLACED, NOT_RUN], ids=["NOT_ACTIONABLE", "NODE_REPLACED", "not-run"])
def test_a_click_refused_before_any_event_leaves_the_tabs_refs_valid(answer: dict[str, Any]) -> None:
    """Issue 27: a click refused NOT_ACTIONABLE before any event (nothing reached the page's handlers,
    ``mayHaveCompleted:false``) invalidated every ref of the tab, so the agent had to snapshot again for
    nothing. A refusal that changed nothing leaves the refs as they were: the same ref and its siblings
    are dispatched, and a continuation cursor of the snapshot still works."""
    gw, renderer = make(), FakeRenderer()
    refs = _refs(gw, renderer)
    env = _answered(gw, req("tab.click", tabId="A", ref=refs[0]), answer)
    assert env["success"] is False and env["mayHaveCompleted"] is False, env
    click = _dispatches(gw, req("tab.click", tabId="A", ref=refs[1]))
    assert '"handle":"0123456789abcdef-a2"' in click["params"]["script"]
    gw.advance({"transaction": click["transaction"], "seq": click["seq"], "result": renderer("tab.click", click)})
    # That click ran: now the refs are spent.
    assert response(gw.begin(req("tab.click", tabId="A", ref=refs[0])))["error"]["code"] == "REFS_INVALIDATED"


def test_a_type_refused_before_focus_leaves_the_refs_valid() -> None:
    gw, renderer = make(), FakeRenderer()
    refs = _refs(gw, renderer)
    assert _answered(gw, req("tab.type", tabId="A", ref=refs[0], text="x"), NOT_TYPABLE)["error"]["code"] == "NOT_TYPABLE"
    _dispatches(gw, req("tab.type", tabId="A", ref=refs[2], text="x"))


def test_a_cursor_survives_a_refusal_that_changed_nothing() -> None:
    gw = make()
    first = snap(gw, page(1, 2, rest(1, 2)))["result"]
    assert _answered(gw, req("tab.click", tabId="A", ref=first["elements"][0]["ref"]), NOT_ACTIONABLE)["mayHaveCompleted"] is False
    second = snap(gw, page(3, 1), cursor=first["next"])
    assert second["success"] and second["result"]["snapshot"] == first["snapshot"], second


def test_an_invalidation_during_the_refused_dispatch_still_counts() -> None:
    """The page navigated (the host called invalidate_refs) while the click was out: its refusal cannot
    bring back refs of a document that changed."""
    gw, renderer = make(), FakeRenderer()
    refs = _refs(gw, renderer)
    step = _dispatches(gw, req("tab.click", tabId="A", ref=refs[0]))
    gw.invalidate_refs("A")
    gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": NOT_ACTIONABLE})
    assert response(gw.begin(req("tab.click", tabId="A", ref=refs[1])))["error"]["code"] == "REFS_INVALIDATED"
    # and an invalidation of every tab, likewise
    refs = _refs(gw, renderer)
    step = _dispatches(gw, req("tab.click", tabId="A", ref=refs[0]))
    gw.invalidate_refs(None)
    gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": NOT_ACTIONABLE})
    assert response(gw.begin(req("tab.click", tabId="A", ref=refs[1])))["error"]["code"] == "REFS_INVALIDATED"


def test_an_unknown_outcome_or_a_timeout_spends_the_refs() -> None:
    gw, renderer = make(), FakeRenderer()
    refs = _refs(gw, renderer)
    assert _answered(gw, req("tab.click", tabId="A", ref=refs[0]), UNKNOWN)["mayHaveCompleted"] is True
    refs = _refs(gw, renderer)  # the snapshot also settles the reconcile mark
    step = _dispatches(gw, req("tab.click", tabId="A", ref=refs[0]))
    assert response(gw.cancel({"transaction": step["transaction"], "reason": "timeout"}))["mayHaveCompleted"] is True
    gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": NOT_ACTIONABLE})  # late: retired
    stale = response(gw.begin(req("tab.click", tabId="A", ref=refs[1])))
    assert stale["error"]["code"] in ("REFS_INVALIDATED", "RECONCILE_REQUIRED"), stale


def test_an_extension_naming_no_tab_restores_only_the_snapshots_that_were_valid() -> None:
    """A mutating extension without ``tabId`` invalidates every tab; refused before any effect, it gives
    back exactly the snapshots that were valid before it (B's, invalidated by a click earlier, stays so)."""
    gw = make(nativeMethods=["get-tabs", "browser-control-evaluate", "poke"], extensions=[EXTENSION])
    renderer = FakeRenderer()
    a, b = _refs(gw, renderer, "A"), _refs(gw, renderer, "B")
    run(gw, req("tab.click", tabId="B", ref=b[0]), renderer)
    env = _answered(gw, req("extension.call", name="poke", arguments={}), NOT_RUN)
    assert env["mayHaveCompleted"] is False, env
    assert response(gw.begin(req("tab.click", tabId="B", ref=b[1])))["error"]["code"] == "REFS_INVALIDATED"
    _dispatches(gw, req("tab.click", tabId="A", ref=a[0]))


def test_a_refusal_after_a_tab_switch_spends_the_refs() -> None:
    """Selected targeting: a switch-tab ran first (the selection changed), so the refusal is an unknown
    outcome (test_transactions.py) and the refs are not given back."""
    gw, r = make(targeting="selected"), FakeRenderer()
    r.active = "B"
    ref = response(run(gw, req("tab.snapshot"), r))["result"]["elements"][0]["ref"]
    r.active = "A"
    step = admit(gw, gw.begin(req("tab.click", tabId="B", ref=ref)))
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": r("", step)})
    switch = admit(gw, step)
    main = gw.advance({"transaction": switch["transaction"], "seq": switch["seq"], "result": r("", switch)})
    out = response(gw.advance({"transaction": main["transaction"], "seq": main["seq"], "result": NOT_ACTIONABLE}))
    assert out["mayHaveCompleted"] is True, out
