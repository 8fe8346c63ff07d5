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
* Old snapshot ids are remembered (to tell ``STALE_SNAPSHOT``/``CROSS_TAB_REF`` from ``UNKNOWN_REF``)
  for the last :data:`SNAPSHOT_MEMORY` snapshots; older refs are refused ``STALE_SNAPSHOT``. Memory stays
  bounded however many transactions run.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

SNAPSHOT_MEMORY: Final = 65_536
_REF_RE: Final = re.compile(r"^s([1-9][0-9]{0,17})e([1-9][0-9]{0,5})$")


class RefError(Exception):
    """A ref refusal: ``code`` is one of UNKNOWN_REF, CROSS_TAB_REF, STALE_SNAPSHOT, REFS_INVALIDATED,
    TAB_STALE; ``message`` says what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class _TabRefs:
    snapshot: int = 0
    generation: int | None = None
    handles: list[str] = field(default_factory=list)
    invalidated: bool = False


class RefStore:
    """Snapshot and ref bookkeeping for one gateway. Only :meth:`enqueue` may be called from any thread."""

    def __init__(self) -> None:
        self._queue_lock = threading.Lock()
        self._queued_tabs: set[str] = set()
        self._queued_all = False
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

    def drain(self) -> None:
        """Apply every queued invalidation (caller holds the gateway lock)."""
        if not self._queued_all and not self._queued_tabs:
            return  # racy read is fine: a concurrent enqueue is applied by the next call
        with self._queue_lock:
            everything, tabs = self._queued_all, self._queued_tabs
            self._queued_all, self._queued_tabs = False, set()
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
        self, tab_id: str, generation: int | None, handles: list[str]
    ) -> tuple[int, list[str]]:
        """Make a new latest snapshot of ``tab_id`` holding ``handles``; returns ``(id, refs)``."""
        self._last_snapshot += 1
        sid = self._last_snapshot
        self._tabs[tab_id] = _TabRefs(sid, generation, list(handles), False)
        self._owner[sid] = tab_id
        if len(self._owner) > SNAPSHOT_MEMORY:
            self._owner.popitem(last=False)
        if generation is not None:
            self._generations[tab_id] = generation
        return sid, [f"s{sid}e{i}" for i in range(1, len(handles) + 1)]

    def owner(self, ref: str) -> str | None:
        """The tab whose snapshot issued ``ref``, when known."""
        m = _REF_RE.match(ref)
        return None if m is None else self._owner.get(int(m.group(1)))

    def resolve(self, ref: str, tab_id: str) -> str:
        """The renderer handle behind ``ref`` for an action on ``tab_id``; raises :class:`RefError`."""
        m = _REF_RE.match(ref)
        if m is None:
            raise RefError("UNKNOWN_REF", f"{ref!r} is not a ref issued by this gateway; take a tab.snapshot")
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
                f"{ref!r} belongs to tab {owner!r}, not {tab_id!r}; snapshot {tab_id!r} for its refs",
            )
        tab = self._tabs.get(tab_id)
        if tab is None or tab.snapshot != sid:
            raise RefError(
                "STALE_SNAPSHOT",
                f"{ref!r} is from an older snapshot of tab {tab_id!r}; use refs from its latest one",
            )
        if tab.invalidated:
            raise RefError(
                "REFS_INVALIDATED",
                f"tab {tab_id!r} changed since its snapshot (navigation, an action or a renderer change); "
                "take a new tab.snapshot",
            )
        if index > len(tab.handles):
            raise RefError("UNKNOWN_REF", f"{ref!r} names no element of its snapshot")
        current = self._generations.get(tab_id)
        if tab.generation is not None and current is not None and current != tab.generation:
            raise RefError(
                "TAB_STALE",
                f"tab {tab_id!r} now shows document generation {current}, the snapshot was of {tab.generation}; "
                "take a new tab.snapshot",
            )
        return tab.handles[index - 1]
