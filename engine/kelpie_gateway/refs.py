"""Reference ownership per tab and snapshot, and the invalidation queue (CONTRACT.md §6).

Theory of operation
-------------------
* Every completed ``tab.snapshot`` gets a snapshot id ``n`` unique for the gateway's lifetime; its
  elements get refs ``s<n>e<i>`` (``i`` from 1), so a ref names its snapshot and is unique across
  snapshots and tabs. The renderer handle behind each ref stays in this module and never leaves it.
* A ref is valid only for its own tab, in that tab's **latest** snapshot, until that tab's refs are
  invalidated. :meth:`RefStore.resolve` refuses, in this order: ``UNKNOWN_REF`` (never issued, or no
  such element), ``CROSS_TAB_REF`` (another tab's snapshot), ``STALE_SNAPSHOT`` (an older snapshot of
  the same tab), ``REFS_INVALIDATED`` (the latest snapshot, invalidated since), ``TAB_STALE`` (the
  tab has since reported a newer document ``generation`` without an invalidation reaching us).
* :meth:`RefStore.enqueue` may be called from any thread at any time. It never takes the gateway's
  transaction lock: it adds the tab to a *coalescing* queue (a set plus an "all tabs" flag) guarded by
  its own lock, held only for a set insertion. Coalescing keeps the queue bounded by the number of
  distinct tabs however fast a renderer thread invalidates (an append-only queue grew without bound
  under eight spamming threads and its drain never caught up). The gateway calls :meth:`drain` under its
  lock at the start of every ``begin``, ``next``, ``advance`` and ``cancel``.
* Each tab has an *epoch* that every drained invalidation of it (or of all tabs) bumps; a read records
  the epoch when dispatched and is discarded ``RENDERER_CHANGED`` if it moved meanwhile.
* A mutation invalidates its tab's refs when it is dispatched, through :meth:`RefStore.hold`, which
  remembers the snapshots that were valid and the epochs it left them at. If the renderer then says the
  mutation changed nothing (a refusal before any event, ``mayHaveCompleted:false``: ``NOT_ACTIONABLE``,
  ``NOT_TYPABLE`` before focus, ``NODE_REPLACED`` …), :meth:`RefStore.release` makes those snapshots
  valid again — only where nothing else invalidated them meanwhile (the epoch is still the one the hold
  left) and the snapshot is still the tab's latest (docs/contract-notes.md "A refusal that changed
  nothing keeps the refs").
* A snapshot may come in pages (CONTRACT.md §3, §9 v1.1). When the renderer says more is left, the
  snapshot's latest page carries an opaque ``next`` cursor ``s<n>p<k>`` (page ``k + 1`` of snapshot
  ``n``) and this module keeps, privately, the renderer's position behind it. A ``tab.snapshot`` with that
  cursor continues the **same** snapshot: its new elements get the following refs ``s<n>e<i>`` and every
  earlier page's ref stays valid. :meth:`RefStore.resume` refuses a cursor before anything is
  dispatched: ``INVALID_PARAMS`` (malformed or never issued), ``CROSS_TAB_REF`` (another tab's),
  ``STALE_SNAPSHOT`` (an older snapshot, a page already continued, refs invalidated since — navigation,
  an action, a renderer change — or a newer document generation). The renderer refuses
  ``STALE_SNAPSHOT`` itself when the document changed under an unchanged generation.
* A snapshot also keeps the renderer's token of its read (never shown). ``tab.snapshot {since}`` (§9 v1.2)
  names the tab's latest snapshot by id: :meth:`RefStore.since_anchor` gives that token, and refuses
  before anything is dispatched — ``INVALID_PARAMS`` (not a snapshot id of this gateway),
  ``CROSS_TAB_REF`` (another tab's), ``STALE_SNAPSHOT`` (an older snapshot of this tab, a newer document
  generation, or a renderer that gave no token). Refs invalidated by an action do not stop it: what an
  action changed is what ``since`` is for.
* :meth:`RefStore.issue` is the one place refs are issued: a snapshot's renderer handles become the refs
  of a new snapshot, or of the next page of the snapshot a cursor continues.
* Old snapshot ids are remembered (to tell ``STALE_SNAPSHOT``/``CROSS_TAB_REF`` from ``UNKNOWN_REF``)
  for the last :data:`SNAPSHOT_MEMORY` snapshots; older refs are refused ``STALE_SNAPSHOT``. Memory stays
  bounded however many transactions run.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import REF_SHAPE, TAB_ID_SHAPE, Refusal, shown

SNAPSHOT_MEMORY: Final = 65_536
_REF_RE: Final = re.compile(r"^s([1-9][0-9]{0,17})e([1-9][0-9]{0,6})$")
_CURSOR_RE: Final = re.compile(r"^s([1-9][0-9]{0,17})p([1-9][0-9]{0,5})$")
_SNAPSHOT_ID_RE: Final = re.compile(r"^s([1-9][0-9]{0,17})$")


def _tab(tab_id: str) -> str:
    """The client's ``tabId`` as a message shows it (quoted only when it looks like a tab id)."""
    return shown(tab_id, "a tab id", TAB_ID_SHAPE)


class RefError(Refusal):
    """A ref or cursor refusal: ``code`` is one of UNKNOWN_REF, CROSS_TAB_REF, STALE_SNAPSHOT,
    REFS_INVALIDATED, TAB_STALE, INVALID_PARAMS (a cursor never issued); ``message`` says what to do.
    The engine's refusal type (:class:`~kelpie_gateway.errors.Refusal`, ``mayHaveCompleted:false``), so a
    guard or a native call lets it through as it is."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


@dataclass
class _TabRefs:
    snapshot: int = 0
    generation: int | None = None
    handles: list[str] = field(default_factory=list)
    invalidated: bool = False
    pages: int = 1
    next: str | None = None
    rest: Any = None
    token: str | None = None


Hold = tuple[tuple[str, "_TabRefs", int], ...]
"""What :meth:`RefStore.hold` invalidated: ``(tab, its snapshot record, the epoch it was left at)``."""


class RefStore:
    """Snapshot and ref bookkeeping for one gateway. Only :meth:`enqueue` may be called from any thread."""

    def __init__(self) -> None:
        self._queue_lock = threading.Lock()
        self._queued_tabs: set[str] = set()
        self._queued_all = False
        self.queued = False
        """True while invalidations wait in the queue. Callers holding the gateway lock read it without the
        queue's lock (``if refs.queued: refs.drain()``: no call when nothing is queued, the usual case); a
        racy read is fine, an enqueue it misses is applied by the next drain."""
        self._tabs: dict[str, _TabRefs] = {}
        self._owner: OrderedDict[int, str] = OrderedDict()
        self._last_snapshot = 0
        self._epochs: dict[str, int] = {}
        self._global_epoch = 0
        self._generations: dict[str, int] = {}

    # ------------------------------------------------------------- invalidation queue
    def enqueue(self, tab_id: str | None) -> None:
        """Queue an invalidation of ``tab_id`` (None = every tab). Any thread; never takes the
        transaction lock (only the queue's own lock, for one set insertion)."""
        with self._queue_lock:
            if tab_id is None:
                self._queued_all = True
            else:
                self._queued_tabs.add(tab_id)
            self.queued = True

    def drain(self) -> None:
        """Apply every queued invalidation (caller holds the gateway lock)."""
        if not self.queued:
            return  # racy read is fine: a concurrent enqueue is applied by the next call
        with self._queue_lock:
            everything, tabs = self._queued_all, self._queued_tabs
            self._queued_all, self._queued_tabs, self.queued = False, set(), False
        if everything:
            self.invalidate_all()
        for tab_id in tabs:
            self.invalidate(tab_id)

    def invalidate(self, tab_id: str) -> None:
        """Invalidate ``tab_id``'s refs now (caller holds the lock)."""
        self._epochs[tab_id] = self._epochs.get(tab_id, 0) + 1
        tab = self._tabs.get(tab_id)
        if tab is not None:
            tab.invalidated = True

    def invalidate_all(self) -> None:
        self._global_epoch += 1
        for tab in self._tabs.values():
            tab.invalidated = True

    def hold(self, tab_id: str | None) -> Hold:
        """Invalidate ``tab_id``'s refs (None: every tab's) for a mutation being dispatched, and return what
        :meth:`release` needs to undo it if the mutation turns out to have changed nothing: each snapshot
        that was valid, with the epoch this invalidation left its tab at (caller holds the lock)."""
        if tab_id is None:
            valid = [(t, rec) for t, rec in self._tabs.items() if not rec.invalidated]
            self.invalidate_all()
        else:
            rec = self._tabs.get(tab_id)
            valid = [] if rec is None or rec.invalidated else [(tab_id, rec)]
            self.invalidate(tab_id)
        return tuple((t, rec, self.epoch(t)) for t, rec in valid)

    def release(self, hold: Hold) -> None:
        """The mutation that made ``hold`` changed nothing: its snapshots are valid again, each only if it is
        still its tab's latest and nothing invalidated the tab since (its epoch is the one ``hold`` left)."""
        for tab_id, rec, epoch in hold:
            if self._tabs.get(tab_id) is rec and self.epoch(tab_id) == epoch:
                rec.invalidated = False

    def epoch(self, tab_id: str | None) -> int:
        """A number that changes whenever ``tab_id``'s refs are invalidated (None: any tab's)."""
        if tab_id is None:
            return self._global_epoch + sum(self._epochs.values())
        return self._global_epoch + self._epochs.get(tab_id, 0)

    # ------------------------------------------------------------- tabs and generations
    def note_generation(self, tab_id: str, generation: int) -> None:
        """Record the latest document generation a renderer result reported for ``tab_id``."""
        self._generations[tab_id] = generation

    def generation(self, tab_id: str) -> int | None:
        return self._generations.get(tab_id)

    def forget_tab(self, tab_id: str) -> None:
        """The tab is gone: its refs are invalid (their snapshot ids stay known for CROSS/STALE)."""
        self.invalidate(tab_id)
        self._tabs.pop(tab_id, None)
        self._generations.pop(tab_id, None)

    def known_tabs(self) -> list[str]:
        return list(self._tabs)

    # ------------------------------------------------------------- snapshots and refs
    def issue_snapshot(
        self,
        tab_id: str,
        generation: int | None,
        handles: list[str],
        rest: Any = None,
        token: str | None = None,
    ) -> tuple[int, list[str], str | None]:
        """Make a new latest snapshot of ``tab_id`` holding ``handles``; returns ``(id, refs, next)``.

        ``rest``: the renderer's private position of the next page (None: nothing left); ``next`` is the
        cursor that continues it, or None. ``token``: the renderer's name of the read, for ``since``."""
        self._last_snapshot += 1
        sid = self._last_snapshot
        tab = _TabRefs(sid, generation, list(handles), False, token=token)
        self._tabs[tab_id] = tab
        self._owner[sid] = tab_id
        if len(self._owner) > SNAPSHOT_MEMORY:
            self._owner.popitem(last=False)
        if generation is not None:
            self._generations[tab_id] = generation
        return sid, [f"s{sid}e{i}" for i in range(1, len(handles) + 1)], self._set_rest(tab, rest)

    @staticmethod
    def _set_rest(tab: _TabRefs, rest: Any) -> str | None:
        tab.rest = rest
        tab.next = None if rest is None else f"s{tab.snapshot}p{tab.pages + 1}"
        return tab.next

    def resume(self, cursor: str, tab_id: str) -> Any:
        """The renderer position behind ``cursor`` for a continuation on ``tab_id``; raises :class:`RefError`
        (INVALID_PARAMS, CROSS_TAB_REF, STALE_SNAPSHOT) before anything is dispatched."""
        m = _CURSOR_RE.match(cursor)
        if m is None or int(m.group(1)) > self._last_snapshot:
            raise RefError(
                "INVALID_PARAMS",
                "/params/cursor: not a cursor issued by this gateway; pass a snapshot's `next`",
            )
        sid, page = int(m.group(1)), int(m.group(2))
        tab = self._latest(
            sid,
            tab_id,
            f"cursor {cursor!r}",
            f"is of an older snapshot of tab {_tab(tab_id)}; take a new tab.snapshot",
        )
        current = self._generations.get(tab_id)
        if tab.invalidated or (
            tab.generation is not None and current is not None and current != tab.generation
        ):
            raise RefError(
                "STALE_SNAPSHOT",
                f"tab {_tab(tab_id)} changed since snapshot s{sid} (navigation, an action or a renderer change); "
                "take a new tab.snapshot",
            )
        if tab.next != cursor:
            if page <= tab.pages:
                raise RefError(
                    "STALE_SNAPSHOT",
                    f"cursor {cursor!r} was already continued; use the latest page's `next`",
                )
            raise RefError(
                "INVALID_PARAMS",
                "/params/cursor: not a cursor issued by this gateway; pass a snapshot's `next`",
            )
        return tab.rest

    def _latest(self, sid: int, tab_id: str, what: str, older: str) -> _TabRefs:
        """``tab_id``'s refs when snapshot ``sid`` is its latest; else CROSS_TAB_REF (another tab's) or
        STALE_SNAPSHOT (``what`` + ``older``)."""
        owner = self._owner.get(sid)
        if owner is not None and owner != tab_id:
            raise RefError("CROSS_TAB_REF", f"{what} belongs to tab {owner!r}, not {_tab(tab_id)}")
        tab = self._tabs.get(tab_id)
        if owner is None or tab is None or tab.snapshot != sid:
            raise RefError("STALE_SNAPSHOT", f"{what} {older}")
        return tab

    def since_anchor(self, since: str, tab_id: str) -> str:
        """The renderer's token of the snapshot ``since`` names, for ``tab.snapshot {since}`` on ``tab_id``
        (§9 v1.2); raises :class:`RefError` (INVALID_PARAMS, CROSS_TAB_REF, STALE_SNAPSHOT) before anything
        is dispatched. The snapshot must be the tab's latest, of the document the tab still shows; its refs
        may have been invalidated by an action since."""
        m = _SNAPSHOT_ID_RE.match(since)
        if m is None or int(m.group(1)) > self._last_snapshot:
            raise RefError(
                "INVALID_PARAMS",
                "/params/since: not a snapshot id issued by this gateway; pass a snapshot's `snapshot`",
            )
        tab = self._latest(
            int(m.group(1)),
            tab_id,
            f"snapshot {since!r}",
            f"is not the latest snapshot of tab {_tab(tab_id)}; pass the latest one's id, or take a new tab.snapshot",
        )
        current = self._generations.get(tab_id)
        if tab.generation is not None and current is not None and current != tab.generation:
            raise RefError(
                "STALE_SNAPSHOT",
                f"the document of snapshot {since!r} is gone (tab {_tab(tab_id)} navigated); take a new tab.snapshot",
            )
        if tab.token is None:
            raise RefError(
                "STALE_SNAPSHOT", f"snapshot {since!r} cannot be compared with; take a new tab.snapshot"
            )
        return tab.token

    def latest_refs(self, tab_id: str, handles: list[str]) -> list[str | None]:
        """The ref of each of ``handles`` in ``tab_id``'s latest snapshot (None where it has none)."""
        tab = self._tabs.get(tab_id)
        if tab is None:
            return [None] * len(handles)
        index = {h: i for i, h in enumerate(tab.handles, 1)}
        return [f"s{tab.snapshot}e{index[h]}" if h in index else None for h in handles]

    def extend_snapshot(
        self, tab_id: str, cursor: str, handles: list[str], rest: Any
    ) -> tuple[int, list[str], str | None]:
        """Add the next page (``handles``) to the snapshot ``cursor`` continues; returns ``(id, refs, next)``
        where refs continue the snapshot's numbering. Raises :class:`RefError` if the cursor stopped being
        the tab's latest meanwhile."""
        self.resume(cursor, tab_id)
        tab = self._tabs[tab_id]
        first = len(tab.handles) + 1
        tab.handles.extend(handles)
        tab.pages += 1
        sid = tab.snapshot
        return sid, [f"s{sid}e{i}" for i in range(first, first + len(handles))], self._set_rest(tab, rest)

    def issue(
        self,
        tab_id: str,
        generation: int | None,
        handles: list[str],
        rest: Any = None,
        cursor: str | None = None,
        token: str | None = None,
    ) -> tuple[int | None, str, list[str], str | None]:
        """Issue the refs of a snapshot's ``handles`` (in element order): a new latest snapshot of
        ``tab_id`` or, with ``cursor``, the next page of the snapshot that cursor continues (§3, §9 v1.1).
        ``generation``: the renderer's, or None (the tab's last known one); ``rest``: the renderer's private
        position of the page after this one (None: nothing left); ``token``: the renderer's name of a new
        snapshot's read (for ``since``).

        Returns ``(generation, snapshot id "s<n>", refs, next cursor or None)``. Raises :class:`RefError`
        (STALE_SNAPSHOT, …) when the cursor stopped being the tab's latest while the page was read."""
        seen = generation if generation is not None else self._generations.get(tab_id)
        if cursor is not None:
            if seen != self._generations.get(tab_id):
                raise RefError(
                    "STALE_SNAPSHOT", f"tab {_tab(tab_id)} shows a new document; take a new tab.snapshot"
                )
            sid, refs, next_cursor = self.extend_snapshot(tab_id, cursor, handles, rest)
        else:
            sid, refs, next_cursor = self.issue_snapshot(tab_id, seen, handles, rest, token)
        return seen, f"s{sid}", refs, next_cursor

    def owner(self, ref: str) -> str | None:
        """The tab whose snapshot issued ``ref``, when known."""
        m = _REF_RE.match(ref)
        return None if m is None else self._owner.get(int(m.group(1)))

    def resolve(self, ref: str, tab_id: str) -> str:
        """The renderer handle behind ``ref`` for an action on ``tab_id``; raises :class:`RefError`."""
        m = _REF_RE.match(ref)
        if m is None:
            raise RefError(
                "UNKNOWN_REF",
                f"{shown(ref, 'a ref', REF_SHAPE)} is not a ref issued by this gateway; take a tab.snapshot",
            )
        sid, index = int(m.group(1)), int(m.group(2))
        if sid > self._last_snapshot:
            raise RefError("UNKNOWN_REF", f"{ref!r} was never issued by this gateway; take a tab.snapshot")
        owner = self._owner.get(sid)
        if owner is None:
            raise RefError(
                "STALE_SNAPSHOT", f"{ref!r} is from an old snapshot; use refs from the latest tab.snapshot"
            )
        if owner != tab_id:
            raise RefError(
                "CROSS_TAB_REF",
                f"{ref!r} belongs to tab {owner!r}, not {_tab(tab_id)}; snapshot {_tab(tab_id)} for its refs",
            )
        tab = self._tabs.get(tab_id)
        if tab is None or tab.snapshot != sid:
            raise RefError(
                "STALE_SNAPSHOT",
                f"{ref!r} is from an older snapshot of tab {_tab(tab_id)}; use refs from its latest one",
            )
        if tab.invalidated:
            raise RefError(
                "REFS_INVALIDATED",
                f"tab {_tab(tab_id)} changed since its snapshot (navigation, an action or a renderer change); "
                "take a new tab.snapshot",
            )
        if index > len(tab.handles):
            raise RefError("UNKNOWN_REF", f"{ref!r} names no element of its snapshot")
        current = self._generations.get(tab_id)
        if tab.generation is not None and current is not None and current != tab.generation:
            raise RefError(
                "TAB_STALE",
                f"tab {_tab(tab_id)} now shows document generation {current}, the snapshot was of {tab.generation}; "
                "take a new tab.snapshot",
            )
        return tab.handles[index - 1]
