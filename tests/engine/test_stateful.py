"""Hypothesis stateful test of the transaction rules (CONTRACT.md §5, §6).

Random interleavings of begin / next / advance (right, late, duplicated, forged results) / cancel /
retire / invalidate_refs (from other threads) against a model. Invariants, checked on every step:

* every dispatch step (transaction, seq) is issued at most once;
* a cancelled or failed dispatched mutation completes with ``mayHaveCompleted: true`` and its
  transaction never dispatches again;
* a begin on the busy lane gets BUSY and the active transaction's pending step is unchanged;
* a click is dispatched only with a ref of its own tab's latest, non-invalidated snapshot;
* a mutation the page refused before any effect (``mayHaveCompleted: false``) leaves its tab's refs as
  they were before its dispatch, unless something invalidated them meanwhile (issue 27);
* a snapshot whose tab was invalidated while it was dispatched never issues refs;
* after an unknown outcome (``mayHaveCompleted: true``) on a tab, no mutation of that tab is dispatched
  until a snapshot of it succeeds (RECONCILE_REQUIRED, §4);
* a transaction that was never dispatched completes with ``mayHaveCompleted: false``;
* no envelope says ``retryable: true`` next to ``mayHaveCompleted: true`` (§4, v1.1).

The model credits a transaction with an effect only when the engine dispatched it: a request refused
(at authorize, by validation, BUSY) or cancelled before its dispatch changed nothing, so its tab's refs
and reconcile mark stay as they were (issue 19: the old rule invalidated a tab on every completed
``tab.navigate``, and a deep run found that model bug).

Examples: 120 x 40 steps in CI; ``KELPIE_HYPOTHESIS_PROFILE=deep`` (``tools/dev deep-properties``) runs
10,000 (tests/depth.py).
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kelpie_gateway.gateway import GatewayCore

from tests.depth import examples
from tests.engine.kit import FakeRenderer, make, req

TABS = ("A", "B")


class TransactionRules(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.gw = make()
        self.renderer = FakeRenderer(TABS)
        self.issued: set[tuple[str, int]] = set()
        self.requests: dict[str, dict[str, Any]] = {}
        self.dead: set[str] = set()  # cancelled/failed mutations: must never dispatch again
        self.history: list[tuple[str, int]] = []
        self.latest: dict[str, set[str]] = {t: set() for t in TABS}
        self.all_refs: list[str] = ["s999e1", "bogus"]
        self.invalid: dict[str, bool] = {t: True for t in TABS}
        self.inval_during: dict[str, bool] = {}
        self.retiring: tuple[str, int] | None = None
        self.dispatched: set[str] = set()  # transactions the engine dispatched at least once
        self.reconcile: dict[str, bool] = {t: False for t in TABS}
        self.no_effect: set[str] = set()  # the page itself said nothing happened (mayHaveCompleted:false)
        self.valid_before: dict[str, bool] = {}  # mutation -> its tab's refs were valid when it was dispatched

    # ------------------------------------------------------------ checks
    def check(self, step: dict[str, Any]) -> dict[str, Any]:
        kind = step["step"]
        if kind in ("authorize", "dispatch"):
            self.history.append((step["transaction"], step["seq"]))
        if kind == "dispatch":
            key = (step["transaction"], step["seq"])
            assert key not in self.issued, f"dispatch issued twice: {key}"
            assert step["transaction"] not in self.dead, "a dead mutation dispatched again"
            self.issued.add(key)
            self.dispatched.add(step["transaction"])
            request = self.requests[step["transaction"]]
            tab = request["params"].get("tabId")
            if step["mutates"] and tab is not None:
                assert not self.reconcile[tab], f"{request['method']} dispatched on {tab} before reconciling"
            if request["method"] == "tab.click":
                ref = request["params"]["ref"]
                assert ref in self.latest[tab] and not self.invalid[tab], f"click dispatched with bad ref {ref}"
            if step["mutates"] and tab is not None:
                self.valid_before[step["transaction"]] = not self.invalid[tab]
                self.invalid[tab] = True
            if request["method"] == "tab.snapshot" or step["mutates"]:
                self.inval_during[step["transaction"]] = False
        if kind == "complete":
            self.on_complete(step)
        return step

    def on_complete(self, step: dict[str, Any]) -> None:
        env = step["response"]
        if not env["success"]:
            assert not (env["error"]["retryable"] and env["mayHaveCompleted"]), f"retryable unknown outcome: {env}"
        request = self.requests.get(step["transaction"])
        if request is None:
            return
        tab = request["params"].get("tabId")
        if request["method"] == "tab.snapshot" and env["success"]:
            assert not self.inval_during.get(step["transaction"], False), "refs issued from a changed tab"
            refs = {e["ref"] for e in env["result"]["elements"]}
            self.latest[tab] = refs
            self.all_refs.extend(sorted(refs))
            self.invalid[tab] = False
            self.reconcile[tab] = False
        # Effects are credited only to dispatched transactions: the dispatch itself invalidated the tab
        # (check), so a navigation refused or cancelled before its dispatch leaves the refs valid.
        dispatched = step["transaction"] in self.dispatched
        mutation = request["method"] in ("tab.click", "tab.navigate")
        if not dispatched:
            assert env["mayHaveCompleted"] is False, f"undispatched transaction may have completed: {env}"
        elif mutation and not env["success"]:
            said_no_effect = step["transaction"] in self.no_effect and request["method"] == "tab.click"
            assert env["mayHaveCompleted"] is not said_no_effect, env
            self.dead.add(step["transaction"])
            if env["mayHaveCompleted"] is False and tab is not None:
                # Refused before any effect: the refs its dispatch invalidated are given back, unless
                # something else invalidated the tab meanwhile (docs/contract-notes.md).
                txn = step["transaction"]
                self.invalid[tab] = not self.valid_before.get(txn, False) or self.inval_during.get(txn, True)
        if env.get("mayHaveCompleted") and tab is not None:
            self.reconcile[tab] = True

    def pending(self) -> dict[str, Any]:
        return self.gw.next()

    # ------------------------------------------------------------ rules
    def _begin(self, request: dict[str, Any]) -> None:
        before = self.pending()
        step = self.gw.begin(request)
        if step["step"] == "complete" and step["response"].get("error", {}).get("code") == "BUSY":
            assert self.pending() == before, "BUSY touched the active transaction"
            assert before["step"] != "idle" or "awaitingRetirement" in before
            return
        self.requests[step["transaction"]] = request
        self.check(step)

    @rule(tab=st.sampled_from(TABS))
    def begin_snapshot(self, tab: str) -> None:
        self._begin(req("tab.snapshot", tabId=tab))

    @rule(tab=st.sampled_from(TABS), pick=st.integers(0, 10_000))
    def begin_click(self, tab: str, pick: int) -> None:
        self._begin(req("tab.click", tabId=tab, ref=self.all_refs[pick % len(self.all_refs)]))

    @rule(tab=st.sampled_from(TABS), pick=st.integers(0, 10_000))
    def begin_click_latest(self, tab: str, pick: int) -> None:
        refs = sorted(self.latest[tab])
        if refs:
            self._begin(req("tab.click", tabId=tab, ref=refs[pick % len(refs)]))

    @rule(tab=st.sampled_from(TABS))
    def begin_navigate(self, tab: str) -> None:
        self._begin(req("tab.navigate", tabId=tab, url="https://example.test/"))

    @rule(outcome=st.sampled_from(["ok", "failed", "page-refused"]),
          code=st.sampled_from(["RENDERER_FAILED", "TIMEOUT", "RENDERER_CHANGED", "NODE_REPLACED"]))
    def answer_pending(self, outcome: str, code: str) -> None:
        """Admit the pending authorize step, or answer the pending dispatch: the renderer's result, a
        failure (any code), or the page's own refusal before any effect (``mayHaveCompleted: false``)."""
        step = self.pending()
        if step["step"] == "authorize":
            self.check(self.gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                                        "result": {"success": True}}))
        elif step["step"] == "dispatch":
            kind = self.requests[step["transaction"]]["method"]
            result: dict[str, Any]
            if outcome == "ok":
                result = self.renderer(kind, step)
            elif outcome == "failed":
                result = {"success": False, "error": {"code": code, "message": "x"}}
            else:
                result = {"success": True, "value": {"error": {"code": code, "message": "x"}, "mayHaveCompleted": False}}
                self.no_effect.add(step["transaction"])
            self.check(self.gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result}))

    @rule(pick=st.integers(0, 10_000), delta=st.sampled_from([0, 1, -1, 7]))
    def answer_stale(self, pick: int, delta: int) -> None:
        if not self.history:
            return
        txn, seq = self.history[pick % len(self.history)]
        current = self.pending()
        if current.get("transaction") == txn and current.get("seq") == seq + delta:
            return  # that would be the right answer, not a stale one
        if self.retiring == (txn, seq + delta):
            return
        out = self.gw.advance({"transaction": txn, "seq": seq + delta, "result": {"success": True}})
        assert out["step"] == "rejected" and out["error"]["code"] == "STALE_STEP", out
        assert self.pending() == current

    @rule()
    def refuse_authorization(self) -> None:
        step = self.pending()
        if step["step"] != "authorize":
            return
        refusal = {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": "policy"}}
        out = self.check(self.gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": refusal}))
        assert out["step"] == "complete" and out["response"]["error"]["code"] == "NOT_AUTHORIZED", out
        assert out["response"]["mayHaveCompleted"] is False

    @rule(reason=st.sampled_from(["timeout", "cancelled", "renderer-closed"]))
    def cancel_pending(self, reason: str) -> None:
        step = self.pending()
        if step["step"] not in ("authorize", "dispatch"):
            return
        out = self.check(self.gw.cancel({"transaction": step["transaction"], "reason": reason}))
        assert out["step"] == "complete"
        if step["step"] == "dispatch":
            assert out["response"]["mayHaveCompleted"] is step["mutates"]
            if reason != "renderer-closed":  # a closed renderer sends no late callback: nothing to retire
                self.retiring = (step["transaction"], step["seq"])
            if step["mutates"]:
                self.dead.add(step["transaction"])
        else:
            assert out["response"]["mayHaveCompleted"] is False
        assert self.gw.next() == {"step": "idle"} or self.retiring is not None

    @precondition(lambda self: self.retiring is not None)
    @rule(late=st.booleans())
    def late_result_retires(self, late: bool) -> None:
        """The cancelled dispatch's late callback, or the host's report that its renderer closed."""
        assert self.retiring is not None
        txn, seq = self.retiring
        report = ({"transaction": txn, "seq": seq, "result": {"success": True}} if late
                  else {"transaction": txn, "retire": "renderer-closed"})
        out = self.gw.advance(report)
        assert out == {"step": "retired", "transaction": txn, "seq": seq}
        self.retiring = None
        assert self.gw.next() == {"step": "idle"}

    @rule(tab=st.sampled_from((*TABS, None)))
    def invalidate_from_thread(self, tab: str | None) -> None:
        worker = threading.Thread(target=self.gw.invalidate_refs, args=(tab,))
        worker.start()
        worker.join()
        for t in TABS if tab is None else (tab,):
            self.invalid[t] = True
        for txn in self.inval_during:
            request = self.requests[txn]
            if tab is None or request["params"].get("tabId") == tab:
                self.inval_during[txn] = True

    @invariant()
    def next_is_pure(self) -> None:
        assert self.gw.next() == self.gw.next()

    @invariant()
    def next_fast_path_answers_what_the_locked_path_answers(self) -> None:
        """``next()`` answers a free direct lane without the lock (docs/engine.md, "Performance"); the
        general path under the lock is the authority, in every state the machine reaches."""
        general = self.gw._run(GatewayCore._next, None)
        assert self.gw.next() == general and type(self.gw.next()) is type(general)


TransactionRules.TestCase.settings = settings(max_examples=examples(120), stateful_step_count=40, deadline=None)
test_transaction_rules = TransactionRules.TestCase


def test_concurrent_invalidations_and_transactions_from_many_threads() -> None:
    """Eight threads invalidate while the main thread runs 300 snapshot+click transactions: nothing
    raises, every transaction completes, and no click runs on an invalidated snapshot's ref."""
    gw = make()
    renderer = FakeRenderer(TABS)
    stop = threading.Event()

    def spam(tab: str | None) -> None:
        for _ in range(200_000):  # bounded: each thread stops by itself
            if stop.is_set():
                return
            gw.invalidate_refs(tab)

    threads = [threading.Thread(target=spam, args=(t,)) for t in (*TABS, None, "A", "B", None, "A", "B")]
    for t in threads:
        t.start()
    outcomes: dict[str, int] = {}
    try:
        for i in range(300):
            for request in (req("tab.snapshot", tabId=TABS[i % 2]), None):
                if request is None:
                    request = req("tab.click", tabId=TABS[i % 2], ref=f"s{i + 1}e1")
                step = gw.begin(request)
                while step["step"] != "complete":
                    result: dict[str, Any] = (
                        {"success": True} if step["step"] == "authorize" else renderer(request["method"], step))
                    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})
                env = step["response"]
                code = "ok" if env["success"] else env["error"]["code"]
                outcomes[code] = outcomes.get(code, 0) + 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert sum(outcomes.values()) == 600
    assert set(outcomes) <= {"ok", "RENDERER_CHANGED", "REFS_INVALIDATED", "UNKNOWN_REF", "STALE_SNAPSHOT"}
    assert gw.next() == {"step": "idle"}
