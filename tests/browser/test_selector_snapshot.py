"""The selector snapshot (contract §9, `collect_browser_selector_snapshot_expression`: the reader without a
registry) in real headless Chromium: every selector matches exactly its own node in the main document.
"""

from __future__ import annotations

from conftest import Site
from playwright.sync_api import Page
from readerhelp import by_label, open_page


def test_selectors_match_exactly_their_node_despite_duplicate_ids_and_second_body(
    page: Page, fixtures_site: Site
) -> None:
    """Guards selector exactness: each selector matches exactly its own node, resolved in the page's own
    world, despite duplicate ids and a second `<body>` element, or is null when it would be longer than 2,000
    characters."""
    r = open_page(page, fixtures_site, "duplicates.html")
    snap = r.selector_snapshot()
    labels = [e["label"] for e in snap["elements"]]
    assert labels[:3] == ["Duplicate ids and body-like markup", "First dup", "Second dup"]
    for el in snap["elements"]:
        if el["label"] == "Deep button":
            assert el["selector"] is None  # the only selector is longer than 2,000 characters
            continue
        assert el["selector"], el
        # Resolved in the page's own world: exactly one node, and it is the element described.
        matched = page.evaluate(
            "sel => Array.from(document.querySelectorAll(sel), n => n.textContent)", el["selector"]
        )
        assert matched == [el["label"]], (el, matched)
    second_body = by_label(snap, "Button in second body")["selector"]
    assert second_body.startswith("#holder > body")
