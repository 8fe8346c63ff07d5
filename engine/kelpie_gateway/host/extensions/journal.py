"""What the read-only lane's captures share (docs/host.md "The read-only lane"): a per-tab ring buffer with
``since`` cursors, the pieces of their input schemas, and the routing of a context-wide browser event to
the tab of its page.

**Cursors.** Every entry a tab's ring keeps gets a sequence number, 1, 2, … in arrival order (per tab and
per ring; a tab keeps its numbers across a renderer crash, since it is the same tab). A read answers the
entries after ``since`` (0 or absent: from the oldest kept), at most ``limit`` of them, with ``next`` (pass
it as ``since`` to read on: the last entry answered when ``more`` is true, else the newest number so far)
and ``dropped`` (entries after ``since`` that the ring no longer holds: it keeps the newest ``capacity``).
A ``since`` beyond the newest number is refused ``INVALID_PARAMS`` (a cursor of another tab or of an
earlier host process).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from playwright.async_api import Page

from kelpie_gateway.host.browser.common import Tab, state_of
from kelpie_gateway.host.renderer import JsonObject, Refused, fail

E = TypeVar("E")

SINCE = {
    "type": "integer",
    "minimum": 0,
    "maximum": 2**53 - 1,
    "description": "answer only entries after this cursor (the previous answer's next); 0 or absent: all kept",
}


def limit_schema(default: int, maximum: int) -> JsonObject:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": maximum,
        "description": f"most entries answered (default {default})",
    }


@dataclass
class Ring(Generic[E]):
    """The newest ``capacity`` entries of one kind for one tab, numbered from 1."""

    capacity: int
    entries: deque[tuple[int, E]] = field(default_factory=deque)
    last: int = 0

    def add(self, entry: E) -> int:
        """Keep ``entry`` (dropping the oldest past ``capacity``); its sequence number."""
        self.last += 1
        self.entries.append((self.last, entry))
        if len(self.entries) > self.capacity:
            self.entries.popleft()
        return self.last

    def read(self, since: int, limit: int, accept: Callable[[E], bool] = lambda _e: True) -> Slice[E]:
        """The entries after ``since`` that ``accept`` keeps, at most ``limit`` (module docstring). Raises
        :class:`Refused` (INVALID_PARAMS) for a ``since`` beyond the newest number."""
        if since > self.last:
            raise Refused(
                fail(
                    "INVALID_PARAMS",
                    f"/params/arguments/since: {since} is beyond this tab's newest entry ({self.last}): pass a "
                    "next this tab answered, or 0",
                    mayHaveCompleted=False,
                )
            )
        oldest = self.entries[0][0] if self.entries else self.last + 1
        dropped = max(0, oldest - since - 1)
        picked: list[tuple[int, E]] = []
        more = False
        for seq, entry in self._after(since):
            if not accept(entry):
                continue
            if len(picked) == limit:
                more = True
                break
            picked.append((seq, entry))
        nxt = picked[-1][0] if more else self.last
        return Slice(picked, nxt, more, dropped)

    def _after(self, since: int) -> Iterator[tuple[int, E]]:
        if not self.entries or since < self.entries[0][0]:
            yield from self.entries
            return
        skip = since - self.entries[0][0] + 1  # numbers are consecutive: the position after ``since``
        for i in range(skip, len(self.entries)):
            yield self.entries[i]


@dataclass
class Slice(Generic[E]):
    """One read of a :class:`Ring`: ``(seq, entry)`` pairs, ``next``, ``more``, ``dropped``."""

    entries: list[tuple[int, E]]
    next: int
    more: bool
    dropped: int

    def cursor(self) -> JsonObject:
        return {"next": self.next, "more": self.more, "dropped": self.dropped}


S = TypeVar("S")

EARLY_PAGES = 16
"""How many pages the captures remember before they become tabs (a popup's first events can come before
the host adopts it); the oldest is forgotten past that."""


class Early(Generic[S]):
    """Per-page state for pages that are not tabs yet, handed to the tab when the page is adopted."""

    def __init__(self, kind: Callable[[], S]) -> None:
        self._kind = kind
        self._pages: dict[int, S] = {}

    def of(self, page: Page) -> S:
        state = self._pages.get(id(page))
        if state is None:
            state = self._pages[id(page)] = self._kind()
            while len(self._pages) > EARLY_PAGES:
                del self._pages[next(iter(self._pages))]
        return state

    def take(self, page: Page) -> S | None:
        return self._pages.pop(id(page), None)


def adopt(tab: Tab, early: Early[S], kind: type[S]) -> None:
    """``tab`` just got its page: what was captured for the page before it was a tab becomes the tab's
    (unless the tab already has its own: a page that replaced a crashed one)."""
    state = early.take(tab.page)
    if state is not None and kind not in tab.state:
        tab.state[kind] = state


def tab_state(tabs: Any, early: Early[S], page: Page | None, kind: type[S]) -> S | None:
    """The state of kind ``kind`` of the tab whose page is ``page`` (``tabs``: the renderer's
    :class:`~kelpie_gateway.host.browser.pages.Pages`), or of the page while it is not a tab yet; None
    without a page (an event of a context's service worker)."""
    if page is None:
        return None
    tab: Tab | None = tabs.of_page(page)
    if tab is not None:
        return state_of(tab, kind)
    return early.of(page)
