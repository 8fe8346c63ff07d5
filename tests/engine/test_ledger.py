"""The tab ledger (engine/kelpie_gateway/ledger.py): what the gateway knows about tabs beyond their refs —
reconcile marks, closed tabs and recent mutations (CONTRACT.md §4 RECONCILE_REQUIRED, §5 v1.1, §6;
docs/contract-notes.md "Closed tabs", "Crashed tabs").

Gone tabs: a host reports a tab it closed itself (``advance {"tabClosed"}``), and a renderer's
``TAB_NOT_FOUND`` settles a tab the host did not report. Afterwards every call naming the tab agrees:
``TAB_NOT_FOUND`` with ``mayHaveCompleted:false``, never ``RECONCILE_REQUIRED`` for one native and
``TAB_NOT_FOUND`` for another. The real faults are provoked in tests/host/test_gone_tabs.py.

Undelivered responses: ``advance({"transaction","undelivered":true})`` marks the tab of a recent mutation
whose answer the client never got; reads, refusals and unknown ids mark nothing."""

from __future__ import annotations

import json
from typing import Any

from kelpie_gateway import Gateway

from tests.engine.kit import FakeRenderer, admit, make, req, response, run
from tests.engine.test_refs import page, rest, snap


class HostLikeRenderer(FakeRenderer):
    """The fake renderer, answering a tab it does not have as the reference host does."""

    def __call__(self, kind: str, step: dict[str, Any]) -> dict[str, Any]:
        tab = step["params"].get("tabId")
        if tab is not None and tab not in self.tabs:
            self.calls.append((step["method"], step["params"]))
            return {"success": False, "error": {"code": "TAB_NOT_FOUND", "message": f"no tab {tab!r}"},
                    "mayHaveCompleted": False}
        return super().__call__(kind, step)



def _refs(gw: Gateway, renderer: FakeRenderer, tab: str = "A") -> list[str]:
    env = response(run(gw, req("tab.snapshot", tabId=tab), renderer))
    return [e["ref"] for e in env["result"]["elements"]]



def _timed_out_navigate(gw: Gateway, tab: str = "A") -> dict[str, Any]:
    """A navigate of ``tab`` cancelled at its deadline: an unknown outcome, the tab RECONCILE_REQUIRED."""
    step = admit(gw, gw.begin(req("tab.navigate", rid=5, tabId=tab, url="http://127.0.0.1/slow", timeoutMs=1000)))
    assert step["step"] == "dispatch"
    env = response(gw.cancel({"transaction": step["transaction"], "reason": "timeout"}))
    assert env["error"]["code"] == "TIMEOUT" and env["mayHaveCompleted"] is True
    return step



def _refused(env: dict[str, Any], code: str) -> None:
    assert env["success"] is False and env["error"]["code"] == code, env
    assert env["mayHaveCompleted"] is False, env



def test_a_tab_the_host_closed_at_retirement_is_not_found_for_every_native() -> None:
    """The fault of issue 16's 100k page: the host closes a tab whose script would not stop, reports it,
    then retires the dispatch. Navigate, snapshot, click and screenshot of it all answer TAB_NOT_FOUND."""
    renderer = HostLikeRenderer()
    gw = make()
    refs = _refs(gw, renderer)
    step = _timed_out_navigate(gw)
    renderer.tabs.pop("A")  # the host closed the tab's target ...
    noted = gw.advance({"tabClosed": "A"})  # ... and says so
    assert noted == {"step": "noted", "tabClosed": "A", "reconcileCleared": True}
    assert gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})["step"] == "retired"
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "TAB_NOT_FOUND")
    _refused(response(run(gw, req("tab.snapshot", tabId="A"), renderer)), "TAB_NOT_FOUND")
    _refused(response(run(gw, req("tab.screenshot", tabId="A"), renderer)), "TAB_NOT_FOUND")
    dispatched = len(renderer.calls)
    click = response(run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer))
    _refused(click, "TAB_NOT_FOUND")  # not STALE_SNAPSHOT: a snapshot of that tab cannot help
    assert "closed" in click["error"]["message"]
    assert len(renderer.calls) == dispatched  # refused before anything was dispatched
    # The other tab is untouched, and a mark on it is not cleared by A's close.
    assert response(run(gw, req("tab.navigate", tabId="B", url="http://127.0.0.1/b"), renderer))["success"]



def test_without_a_report_the_first_tab_not_found_settles_the_mark() -> None:
    """A host that does not report closes (the C, Kotlin, Swift hosts of older builds): the snapshot the
    RECONCILE_REQUIRED message asks for answers TAB_NOT_FOUND, and that observation settles the tab, so
    the agent is not sent round in a loop (navigate: reconcile, snapshot: not found, navigate: reconcile …)."""
    renderer = HostLikeRenderer()
    gw = make()
    _refs(gw, renderer)
    step = _timed_out_navigate(gw)
    gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})
    renderer.tabs.pop("A")
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "RECONCILE_REQUIRED")
    _refused(response(run(gw, req("tab.snapshot", tabId="A"), renderer)), "TAB_NOT_FOUND")
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "TAB_NOT_FOUND")



def test_an_unknown_outcome_finishing_after_the_close_does_not_mark_the_gone_tab() -> None:
    """Browser exit: the host reports every tab closed, then the pending click is cancelled renderer-closed.
    The click is still an unknown outcome (it may have run), but its tab is gone: nothing to reconcile."""
    renderer = HostLikeRenderer()
    gw = make()
    ref = _refs(gw, renderer)[0]
    step = admit(gw, gw.begin(req("tab.click", rid=3, tabId="A", ref=ref)))
    assert step["step"] == "dispatch"
    renderer.tabs.clear()
    for tab in ("A", "B"):
        assert gw.advance({"tabClosed": tab})["reconcileCleared"] is False
    env = response(gw.cancel({"transaction": step["transaction"], "reason": "renderer-closed"}))
    assert env["error"]["code"] == "RENDERER_FAILED" and env["mayHaveCompleted"] is True
    assert gw.advance({"transaction": step["transaction"], "undelivered": True})["reconcileRequired"] is None
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "TAB_NOT_FOUND")



def test_a_tab_reported_again_is_an_ordinary_tab() -> None:
    """A host that reuses ids: once a result reports the id open again, it is a tab like any other (its
    new snapshot's refs work, an unknown outcome on it needs a reconcile again)."""
    renderer = HostLikeRenderer()
    gw = make()
    _refs(gw, renderer)
    renderer.tabs.pop("A")
    gw.advance({"tabClosed": "A"})
    renderer.tabs["A"] = {"generation": 1, "url": "http://127.0.0.1/A", "title": "A"}
    assert response(run(gw, req("tabs.list"), renderer))["success"]
    ref = _refs(gw, renderer)[0]
    assert response(run(gw, req("tab.click", tabId="A", ref=ref), renderer))["success"]
    _timed_out_navigate(gw)
    # the cancelled navigate still awaits retirement; a new mutation is BUSY first, then reconcile
    step = gw.next()
    gw.advance({"transaction": step["awaitingRetirement"]["transaction"], "retire": "renderer-closed"})
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "RECONCILE_REQUIRED")



def test_a_cursor_or_scope_of_a_closed_tab_is_not_found() -> None:
    gw = make()
    env = snap(gw, page(1, 1, rest(1, 1)))
    cursor, ref = env["result"]["next"], env["result"]["elements"][0]["ref"]
    gw.advance({"tabClosed": "A"})
    _refused(response(gw.begin(req("tab.snapshot", tabId="A", cursor=cursor))), "TAB_NOT_FOUND")
    _refused(response(gw.begin(req("tab.snapshot", tabId="A", scope=ref))), "TAB_NOT_FOUND")



def test_malformed_tab_closed_reports_are_rejected_and_change_nothing() -> None:
    renderer = HostLikeRenderer()
    gw = make()
    _refs(gw, renderer)
    step = _timed_out_navigate(gw)
    gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})
    for bad in ({"tabClosed": ""}, {"tabClosed": 3}, {"tabClosed": None}, {"tabClosed": "A", "transaction": "t1"},
                {"tabClosed": "A", "extra": 1}):
        answer = gw.advance(bad)
        assert answer["step"] == "rejected" and answer["error"]["code"] == "INVALID_REQUEST", (bad, answer)
    assert gw.advance('{"tabClosed": ["A"]}')["step"] == "rejected"
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "RECONCILE_REQUIRED")



def test_a_read_refused_because_the_renderer_crashed_settles_the_mark() -> None:
    """Crashed tabs (docs/contract-notes.md): the snapshot RECONCILE_REQUIRED asks for is refused
    ``crashed: true``; that observation settles the mark, so tab.navigate can recover the tab. A failure
    without the fact settles nothing."""
    renderer = HostLikeRenderer()
    gw = make()
    _refs(gw, renderer)
    step = _timed_out_navigate(gw)
    gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})

    def read(result: dict[str, Any]) -> dict[str, Any]:
        snap = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
        return response(gw.advance({"transaction": snap["transaction"], "seq": snap["seq"], "result": result}))

    failed = {"success": False, "error": {"code": "RENDERER_FAILED", "message": "the script threw"},
              "mayHaveCompleted": False}
    _refused(read(failed), "RENDERER_FAILED")
    _refused(response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer)), "RECONCILE_REQUIRED")
    crashed = {**failed, "error": {"code": "RENDERER_FAILED", "message": "the renderer of tab A crashed"},
               "crashed": True}
    _refused(read(crashed), "RENDERER_FAILED")
    assert response(run(gw, req("tab.navigate", tabId="A", url="http://127.0.0.1/x"), renderer))["success"]



def _stale_listing(gw: Gateway, renderer: FakeRenderer, request: dict[str, Any]) -> dict[str, Any]:
    """Dispatch ``request``'s get-tabs, let the browser answer it (listing A), then have the host report A
    closed before that answer is advanced: the answer reaches the gateway after the close it predates."""
    step = admit(gw, gw.begin(request))
    assert step["method"] == "get-tabs"
    answer = renderer("", step)  # the browser's answer, taken while A was still open
    assert any(t["tabId"] == "A" for t in answer["tabs"])
    renderer.tabs.pop("A")
    assert gw.advance({"tabClosed": "A"})["step"] == "noted"
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": answer})



def test_a_listing_taken_before_a_close_does_not_bring_the_tab_back() -> None:
    """Review note (stop 22): a get-tabs answer advanced after ``{"tabClosed"}`` made the gateway forget
    the close. The close sticks: the stale listing does not show A, A's refs stay TAB_NOT_FOUND (not a ref
    code that sends the agent to snapshot a tab that is gone), and an unknown outcome on A marks nothing."""
    renderer = HostLikeRenderer()
    gw = make()
    ref = _refs(gw, renderer)[0]
    listed = response(_stale_listing(gw, renderer, req("tabs.list")))
    assert [t["tabId"] for t in listed["result"]["tabs"]] == ["B"]
    dispatched = len(renderer.calls)
    click = response(run(gw, req("tab.click", tabId="A", ref=ref), renderer))
    _refused(click, "TAB_NOT_FOUND")
    assert "closed" in click["error"]["message"] and len(renderer.calls) == dispatched
    # A later listing (dispatched after the close) agrees, and a host reusing the id revives it then.
    assert [t["tabId"] for t in response(run(gw, req("tabs.list"), renderer))["result"]["tabs"]] == ["B"]
    renderer.tabs["A"] = {"generation": 1, "url": "http://127.0.0.1/A", "title": "A"}
    assert [t["tabId"] for t in response(run(gw, req("tabs.list"), renderer))["result"]["tabs"]] == ["B", "A"]
    assert response(run(gw, req("tab.click", tabId="A", ref=_refs(gw, renderer)[0]), renderer))["success"]



def test_a_stale_navigate_answer_does_not_bring_the_tab_back() -> None:
    """The same for any result naming the tab: a navigate the browser finished just before the tab closed."""
    renderer = HostLikeRenderer()
    gw = make()
    ref = _refs(gw, renderer)[0]
    step = admit(gw, gw.begin(req("tab.navigate", tabId="A", url="http://127.0.0.1/n")))
    answer = renderer("tab.navigate", step)
    renderer.tabs.pop("A")
    gw.advance({"tabClosed": "A"})
    assert response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": answer}))["success"]
    _refused(response(run(gw, req("tab.click", tabId="A", ref=ref), renderer)), "TAB_NOT_FOUND")



def test_a_selected_targeting_inspection_taken_before_a_close_does_not_bring_the_tab_back() -> None:
    """Selected targeting: the get-tabs inspection of a read still lists A (selected) although A closed
    before its answer came. The read is refused as before (B is not the selected tab), and A stays closed."""
    renderer = HostLikeRenderer()
    gw = make(targeting="selected")
    ref = _refs(gw, renderer)[0]
    _refused(response(_stale_listing(gw, renderer, req("tab.snapshot", tabId="B"))), "TAB_NOT_SELECTED")
    dispatched = len(renderer.calls)
    _refused(response(run(gw, req("tab.click", tabId="A", ref=ref), renderer)), "TAB_NOT_FOUND")
    assert len(renderer.calls) == dispatched



# ---------------------------------------------------------------------- undelivered responses (§4, v1.1)
def test_an_undelivered_successful_click_makes_its_tab_reconcile_required() -> None:
    renderer = FakeRenderer()
    gw = make()
    refs = _refs(gw, renderer)
    done = run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer)
    assert response(done)["success"] is True
    noted = gw.advance({"transaction": done["transaction"], "undelivered": True})
    assert noted == {"step": "noted", "transaction": done["transaction"], "reconcileRequired": "A"}
    refs = _refs(gw, renderer, "B")
    refused = response(run(gw, req("tab.click", tabId="B", ref=refs[0]), renderer))
    assert refused["success"] is True  # other tabs are unaffected
    refs = _refs(gw, renderer)  # observing tab A clears the mark ...
    assert response(run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer))["success"] is True



def test_undelivered_click_blocks_the_next_mutation_until_observed() -> None:
    renderer = FakeRenderer()
    gw = make()
    refs = _refs(gw, renderer)
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
    refs = _refs(gw, renderer)
    done = run(gw, req("tab.click", tabId="A", ref=refs[0]), renderer)
    text = json.dumps({"transaction": done["transaction"], "undelivered": True})
    assert gw.advance(text)["reconcileRequired"] == "A"
