"""The tab ledger: what the gateway knows about tabs beyond their refs (CONTRACT.md §4, §5 v1.1, §6;
docs/contract-notes.md "Closed tabs", "Crashed tabs").

* **Reconcile marks** (:attr:`TabLedger.reconcile`): tabs where an action's outcome is unknown. A mutation
  of a marked tab is refused RECONCILE_REQUIRED (:mod:`kelpie_gateway.admission`) until the tab is observed
  (a snapshot of it, a ``tabs.list``), is known to be gone, or its renderer is known to have crashed.
* **Closed tabs** (:attr:`TabLedger.closed`): tabs reported gone — ``advance {"tabClosed"}``, or a
  renderer's TAB_NOT_FOUND. Each is numbered by the close that reported it; a result of a dispatch issued
  before that close cannot bring the tab back, one issued after it (a host reusing ids) can.
* **Recent mutations**: the tab each recently completed mutation acted on, so
  ``advance {"transaction","undelivered":true}`` can mark it when the client never got the answer.

It applies what a renderer result taught (:meth:`TabLedger.record`: generations, listings, closes,
invalidations, and a snapshot's refs, issued by the ref store) and what a completed or abandoned
transaction leaves behind. Both memories are bounded (:data:`CLOSED_TAB_MEMORY`,
:data:`UNDELIVERED_MEMORY`). Runs under the gateway's lock; decides no step and fires no transition.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from .errors import JsonObject
from .refs import Hold, RefStore
from .results import Shaped, since_changes
from .transaction import Transaction

UNDELIVERED_MEMORY: Final = 4096
"""How many completed mutating transactions ``advance({"transaction","undelivered":true})`` can still
mark (the most recent ones; the host reports an undelivered response right after failing to send it)."""
CLOSED_TAB_MEMORY: Final = 4096
"""How many closed tab ids the gateway remembers (``advance {"tabClosed"}``, a renderer's TAB_NOT_FOUND)."""


class TabLedger:
    """Reconcile marks, closed tabs and recent mutations of one gateway, beside its ref store ``refs``.

    ``reconcile`` and ``closed`` are read directly by admission; they are changed only in place, here.
    ``closes`` counts the tabs reported gone so far: a dispatch issued at N (``Transaction.closes``)
    predates closes N+1, N+2 …"""

    def __init__(self, refs: RefStore) -> None:
        self.refs = refs
        self.reconcile: set[str] = set()
        self.closed: OrderedDict[str, int] = OrderedDict()  # tab -> its close's number
        self.closes = 0
        self._recent: OrderedDict[str, str] = OrderedDict()  # transaction id -> the tab it mutated

    # ------------------------------------------------------------------ tabs gone and seen
    def gone(self, tab: str) -> bool:
        """Tab ``tab`` no longer exists (the host reported it closed, or a renderer answered TAB_NOT_FOUND
        for it): its refs are forgotten and a RECONCILE_REQUIRED mark on it is cleared — nothing about a tab
        that is gone can be observed, and any later call naming it is TAB_NOT_FOUND, read or write alike.
        Returns whether a mark was cleared. The id is remembered (newest :data:`CLOSED_TAB_MEMORY`) until a
        renderer result of a dispatch issued after the close reports that tab again (:meth:`seen`), so an
        unknown outcome finishing later does not mark it, and a result the browser produced before the
        close (a ``get-tabs`` still listing it) does not bring it back."""
        self.refs.forget_tab(tab)
        marked = tab in self.reconcile
        self.reconcile.discard(tab)
        closed = self.closed
        self.closes += 1
        closed[tab] = self.closes
        closed.move_to_end(tab)
        if len(closed) > CLOSED_TAB_MEMORY:
            closed.popitem(last=False)
        return marked

    def seen(self, tab: str, generation: int, closes: int) -> bool:
        """The result of a dispatch issued at close count ``closes`` reported ``tab`` open at
        ``generation``. A tab reported gone after that dispatch was issued stays gone (the browser answered
        before the close: the result is stale about it); returns False then. A dispatch issued after the
        close that reports the id again (a host that reuses ids) makes it an ordinary tab once more
        (docs/contract-notes.md "Closed tabs")."""
        closed = self.closed
        if closed:
            when = closed.get(tab)
            if when is not None:
                if when > closes:
                    return False
                del closed[tab]
        self.refs.note_generation(tab, generation)
        return True

    # ------------------------------------------------------------------ what a result taught
    def record(self, shaped: Shaped, closes: int) -> JsonObject:
        """Apply a shaped result's facts (its dispatch issued at close count ``closes``) to the ref store
        and the marks; returns the result object (a snapshot's refs, id and generation filled in). Raises
        :class:`~kelpie_gateway.refs.RefError` when a snapshot's cursor stopped being the tab's latest."""
        refs = self.refs
        stale: set[str] | None = None
        for tab, generation in shaped.generations:
            if not self.seen(tab, generation, closes):
                stale = {tab} if stale is None else stale | {tab}
        if shaped.observed_tabs is not None:
            listed = set(shaped.observed_tabs)
            if stale is not None:  # closed after the listing was taken: not listed as open (seen)
                shaped.result["tabs"] = [t for t in shaped.result["tabs"] if t["tabId"] not in stale]
            self.reconcile.clear()  # every open tab was just observed; unlisted ones are gone
            for known in refs.known_tabs():
                if known not in listed:
                    refs.forget_tab(known)
        if shaped.invalidate is not None:
            refs.invalidate(shaped.invalidate)
        if shaped.closed is not None:
            refs.forget_tab(shaped.closed)
            self.reconcile.discard(shaped.closed)
        out = shaped.result
        snap = shaped.snapshot
        if snap is not None:
            old_refs: dict[str, str | None] = {}
            if snap.since is not None:  # the earlier snapshot's refs, before the new one replaces them
                olds = [h for h in snap.since.was if h is not None] + snap.since.removed
                old_refs = dict(zip(olds, refs.latest_refs(snap.tab_id, olds), strict=True))
            out["generation"], out["snapshot"], issued, next_cursor = refs.issue(
                snap.tab_id, snap.generation, snap.handles, snap.rest, snap.cursor, snap.token
            )
            for item, ref in zip(out["elements"], issued, strict=True):
                item["ref"] = ref
            if next_cursor is not None:
                out["next"] = next_cursor
            if snap.since is not None:
                out["changes"] = since_changes(out["elements"], snap.since, old_refs)
                out["elements"] = []
            self.reconcile.discard(snap.tab_id)
        return out

    def crashed(self, tab: str) -> None:
        """The tab was observed with its renderer crashed (as ``tabs.list`` reports it): the document an
        unknown action ran in is gone, so its mark is settled and ``tab.navigate`` can recover the tab."""
        self.reconcile.discard(tab)

    def invalidate_for(self, txn: Transaction) -> Hold:
        """Mutations dispatched inside the gateway invalidate their target tab's refs (§6): an extension
        naming no ``tabId`` argument invalidates every tab's; ``tabs.open`` none. Returns the hold that
        :meth:`unchanged` undoes when the renderer says the mutation changed nothing."""
        if txn.method == "tabs.open":
            return ()
        target = txn.tab_id
        if txn.ext is not None:
            arguments = txn.request["params"]["arguments"]
            arg = arguments.get("tabId") if isinstance(arguments, dict) else None
            target = arg if isinstance(arg, str) else None
            if target is None:
                return self.refs.hold(None)
        if target is not None:
            return self.refs.hold(target)
        return ()

    def unchanged(self, txn: Transaction) -> None:
        """``txn``'s dispatched mutation was refused before it had any effect (the renderer's
        ``mayHaveCompleted:false``: nothing ran in the page): the refs its dispatch invalidated are valid
        again, unless something else invalidated them meanwhile (docs/contract-notes.md "A refusal that
        changed nothing keeps the refs")."""
        hold, txn.held = txn.held, ()
        if hold:
            self.refs.release(hold)

    # ------------------------------------------------------------------ what a transaction leaves behind
    def finished(self, txn: Transaction, envelope: JsonObject) -> None:
        """``txn`` completes with ``envelope``: an unknown outcome marks its tab (unless it is gone), and a
        dispatched mutation that succeeded or may have is remembered for an undelivered report (the tab a
        ``tabs.open`` opened; none for a ``tabs.close`` that succeeded)."""
        closed = self.closed
        if envelope.get("mayHaveCompleted") and txn.tab_id is not None and txn.tab_id not in closed:
            self.reconcile.add(txn.tab_id)
        if txn.dispatched_mutation and (envelope.get("success") or envelope.get("mayHaveCompleted")):
            result = envelope.get("result")
            tab = txn.tab_id
            if txn.method == "tabs.open" and isinstance(result, dict):
                tab = result.get("tabId")
            elif txn.method == "tabs.close" and envelope.get("success"):
                tab = None
            if isinstance(tab, str) and tab not in closed:
                self._remember(txn.id, tab)

    def abandoned(self, txn_id: str, tab: str | None) -> None:
        """A mutation on ``tab`` was cancelled after its dispatch (an unknown outcome): mark the tab and
        remember it for an undelivered report, unless it is gone."""
        if tab is not None and tab not in self.closed:
            self.reconcile.add(tab)
            self._remember(txn_id, tab)

    def undelivered(self, txn_id: str) -> str | None:
        """The host could not deliver transaction ``txn_id``'s response (its client went away): a dispatched
        mutation's tab becomes RECONCILE_REQUIRED, since the client never learnt what happened (§4).
        Returns that tab, or None (not a recent mutation, already reported, or its tab is gone)."""
        tab = self._recent.pop(txn_id, None)
        if tab is not None and tab in self.closed:
            tab = None  # closed since: there is nothing left to reconcile
        if tab is not None:
            self.reconcile.add(tab)
        return tab

    def _remember(self, txn_id: str, tab: str) -> None:
        recent = self._recent
        recent[txn_id] = tab
        if len(recent) > UNDELIVERED_MEMORY:
            recent.popitem(last=False)
