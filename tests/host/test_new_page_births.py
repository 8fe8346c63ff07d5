"""``Pages.new_page`` (``host/browser/pages.py``) on a slow machine: a healthy page that takes longer than the patience to
be made is not mistaken for one born with a dead renderer, and the host's own close of a late answer never
aborts the next attempt nor shows up as a tab.

The race needs Chromium to answer ``new_page`` late on demand, which a real browser cannot be made to do;
these tests drive the real ``new_page`` code with a stand-in context whose pages are announced and answered
on a schedule. The real-Chromium side (pages born dead right after every renderer was killed) is
``test_chaos.py::test_tabs_open_right_after_every_renderer_was_killed_is_usable_or_cleanly_refused``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kelpie_gateway.host.browser import ChromiumRenderer, pages
from stdio_testlib import run_async

PATIENCE_S = 0.3


class StandInPage:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.handlers: dict[str, list[Callable[[Any], None]]] = {}

    def on(self, event: str, handler: Callable[[Any], None]) -> None:
        self.handlers.setdefault(event, []).append(handler)

    once = on

    def is_closed(self) -> bool:
        return self.closed

    async def close(self, run_before_unload: bool = False) -> None:
        if not self.closed:
            self.closed = True
            for handler in list(self.handlers.get("close", [])):
                handler(self)


class StandInContext:
    """``new_page`` number i announces its page after ``announce[i]`` s and answers ``answer[i]`` s later."""

    def __init__(
        self, renderer: ChromiumRenderer, announce: list[float], answer: list[float]
    ) -> None:
        self.renderer, self.announce, self.answer = renderer, announce, answer
        self.pages: list[StandInPage] = []

    async def new_page(self) -> StandInPage:
        i = len(self.pages)
        page = StandInPage(f"P{i + 1}")
        self.pages.append(page)
        await asyncio.sleep(self.announce[i])
        self.renderer.pages.on_page(page)  # type: ignore[arg-type]  # the context's "page" event
        await asyncio.sleep(self.answer[i])
        return page


class Closed:
    """The renderer's event sink: records the tabs reported closed for good."""

    def __init__(self, closed: list[str]) -> None:
        self.closed = closed

    def refs_invalidated(self, tab_id: str) -> None:
        return None

    def tab_closed(self, tab_id: str) -> None:
        self.closed.append(tab_id)

    def renderer_gone(self, tab_id: str | None) -> None:
        return None


def make(announce: list[float], answer: list[float]) -> tuple[Any, ...]:
    async def run() -> tuple[Any, ...]:
        logs: list[str] = []
        closed: list[str] = []
        # No parts: nothing opens a CDP session on the stand-in pages; the tabs' own events still count.
        renderer = ChromiumRenderer(executable=None, log=logs.append, parts=())
        renderer.listen(Closed(closed))
        context = StandInContext(renderer, announce, answer)
        renderer.lifecycle.context = context  # type: ignore[assignment]
        made = await renderer.pages.new_page("a new tab")
        await asyncio.sleep(max(a + b for a, b in zip(announce, answer, strict=True)) + 0.2)  # late answers
        return made, context.pages, {tab.tab_id: tab for tab in renderer.pages}, closed, logs

    return run_async(run())  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def short_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "BIRTH_PATIENCE_S", PATIENCE_S)


def test_a_page_announced_alive_but_answered_late_is_made_in_one_attempt() -> None:
    made, pages, tabs, closed, logs = make(announce=[0.05, 0.05], answer=[2 * PATIENCE_S, 0.0])
    assert made is pages[0] and not made.closed
    assert len(pages) == 1, "a second page was made although the first was alive"
    assert tabs == {} and closed == [], (tabs, closed)  # the caller binds the page: no tab came or went
    assert not any("died" in line for line in logs), logs


def test_a_late_answer_is_closed_without_aborting_the_next_attempt_or_becoming_a_tab() -> None:
    # The first page is neither announced nor answered within the patience; it arrives while the second
    # attempt runs. The host closes it (its own close, not a birth that died), and the second attempt's
    # page is made.
    made, pages, tabs, closed, _logs = make(announce=[PATIENCE_S + 0.1, 0.2], answer=[0.0, 0.1])
    assert len(pages) == 2 and made is pages[1] and not made.closed
    assert pages[0].closed, "the late first page was left open"
    assert tabs == {} and closed == [], (tabs, closed)
