"""Corpus identity: the working reader answers exactly what the recorded reader answered on all 107 pages.

`corpus_golden.json` holds, per corpus entry page, the SHA-256 of the reader's normalised outputs — a
snapshot and all its continuation pages at the default bounds and at small bounds, and the selector
snapshot (`corpusgolden.py` says exactly what and how). A reader change that is meant to be invisible
(performance work) must leave every digest as it is. A digest that differs fails with the page's name
and counts; `tools/bench_reader.py golden --base REV` shows the actual difference against the reader
of commit REV. Regenerating the file (`tools/bench_reader.py golden --write`) is legitimate only for an
intended, reviewed change of the reader's answers (docs/reader.md, "Corpus identity").

No git history is needed: the record is a committed file.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from corpusgolden import load_golden, load_steady, read_outputs, summary
from hostworld import HostWorld
from kelpie_gateway import reader
from playwright.sync_api import Page
from test_corpus import PAGES


def snapshot_script(key: str, max_chars: int, max_elements: int, cursor: dict[str, Any] | None) -> str:
    return reader.snapshot_script(key, max_chars=max_chars, max_elements=max_elements, cursor=cursor)


def test_golden_covers_the_corpus() -> None:
    """Guards the record: it holds a digest for exactly the corpus's entry pages."""
    if not PAGES:
        pytest.skip("third-party corpus not found (test_corpus.py::test_corpus_is_complete says why)")
    assert sorted(load_golden()["pages"]) == sorted(PAGES)


@pytest.mark.parametrize("entry", PAGES)
def test_reader_answers_as_recorded(page: Page, corpus_sites: dict[str, Site], entry: str) -> None:
    """Guards corpus identity: the working reader's normalised answers on the page digest to the recorded
    value (a change meant to be invisible keeps every digest)."""
    group, _, path = entry.partition("/")
    load_steady(page, corpus_sites[group].url(path))
    world = HostWorld(page)
    got = summary(
        read_outputs(
            lambda s: world.evaluate(s, timeout_ms=60000),
            snapshot_script,
            reader.collect_browser_selector_snapshot_expression(),
        )
    )
    want = load_golden()["pages"][entry]
    assert got == want, (
        f"the reader's answers on {entry} differ from the recorded ones (counts: got {got}, recorded {want}); "
        "see the difference with: tools/bench_reader.py golden --base <commit of the recorded reader> "
        f"--only {entry}"
    )
