"""Bounds (contract §8) and the priority order when they bite (§9 v1.1), in real headless Chromium: text
cut at `maxChars` UTF-16 units without splitting a pair, elements cut at `maxElements` with text entry,
buttons and toggles first, page-made tag names cut. Reader-level tests drive the scripts as a host does
(readerhelp.Reader); client-level ones go through a real Gateway (gatewayhelp.GatewayTab).
"""

from __future__ import annotations

import pytest
from conftest import Site
from gatewayhelp import labelled, open_tab
from playwright.sync_api import Page
from readerhelp import by_label, dumps, open_page, utf16_len


def test_big_list_keeps_the_one_button_when_max_elements_bites(page: Page, fixtures_site: Site) -> None:
    """Guards the priority order when maxElements bites: on a page of 20,000 list items (every 50th a heading)
    the one button after the list is kept in place of a heading, the elements stay in document order, and the
    button clicks."""
    r = open_page(page, fixtures_site, "biglist.html")
    snap = r.snapshot(max_chars=3000, max_elements=25)
    assert snap["truncated"] is True
    assert len(snap["elements"]) == 25
    button = by_label(snap, "The one button at the end")
    assert snap["elements"][-1] == button  # document order is kept
    assert [e["role"] for e in snap["elements"][:24]] == ["heading"] * 24
    assert snap["text"].startswith("Item 0\nItem 1\n") and utf16_len(snap["text"]) <= 3000
    assert r.click(button["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicked") is True


def test_search_box_and_submit_at_the_end_of_2000_links_are_on_the_first_page(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the priority classes (§9 v1.1): after 2,000 links, the search box and its submit button (and a
    menu button) are on the first page of 200 elements, listed in page order; the links kept are the first
    ones in page order; the search box types."""
    g = open_tab(page, fixtures_site, "links2000.html")
    first = g.snapshot()
    assert first["truncated"] is True and isinstance(first["next"], str)
    assert len(first["elements"]) == 200
    roles = [e["role"] for e in first["elements"]]
    assert roles[0] == "link" and roles.count("link") == 197
    search = labelled(first, "Search the site")
    submit = labelled(first, "Search", "button")
    assert labelled(first, "Menu", "button")
    assert first["elements"][-2:] == [search, submit]  # listed in page order
    # the links kept are the first ones in page order
    links = [e["label"] for e in first["elements"] if e["role"] == "link"]
    assert links[:3] == ["Home", "News", "Sport"] and links[-1] == "Link number 193"
    assert g.ok("tab.type", ref=search["ref"], text="kelpie") == {"typed": 6}


@pytest.mark.parametrize("max_chars", [1, 2, 6, 7, 8, 9, 10, 101, 1000])
def test_text_bound_never_splits_a_pair_and_lone_surrogates_are_replaced(
    page: Page, fixtures_site: Site, max_chars: int
) -> None:
    """Guards the text bound: `text` is the page text cut at maxChars UTF-16 units, or one less where a
    surrogate pair would be split; lone surrogates in text, title and labels become U+FFFD."""
    r = open_page(page, fixtures_site, "emoji.html")
    snap = r.snapshot(max_chars=max_chars)
    full = "A\ufffdB\ufffdC\nX" + "\U0001f600" * 5000 + "\nGo \ufffd\U0001f680"
    assert snap["truncated"] is True
    assert full.encode("utf-16-le")[: 2 * utf16_len(snap["text"])].decode("utf-16-le") == snap["text"]
    assert utf16_len(snap["text"]) in (max_chars, max_chars - 1)
    assert snap["title"] == "Emoji \U0001f600 lone \ufffd end"
    assert by_label(snap, "Go \ufffd\U0001f680")["tag"] == "button"


def test_untruncated_emoji_text_is_whole(page: Page, fixtures_site: Site) -> None:
    """Guards text within the bound: it is whole (astral characters included) and `truncated` is false."""
    r = open_page(page, fixtures_site, "emoji.html")
    snap = r.snapshot(max_chars=12000)
    assert snap["truncated"] is False
    assert snap["text"] == "A\ufffdB\ufffdC\nX" + "\U0001f600" * 5000 + "\nGo \ufffd\U0001f680"


def test_page_made_element_names_are_bounded_and_well_formed(page: Page, fixtures_site: Site) -> None:
    """Regression: a page could make every snapshot of itself exceed 32 MiB through 100,000-character custom
    element names, and pass lone surrogates through ``tag``: tags are cut to 128 units and well-formed."""
    r = open_page(page, fixtures_site, "long-tags.html")
    snap = r.snapshot(max_chars=10)
    assert snap["truncated"] is True
    assert len(dumps(snap)) < 200_000
    tags = [e["tag"] for e in snap["elements"]]
    assert tags and all(utf16_len(t) <= 128 for t in tags)
    assert sum(t.startswith("x-0aaa") for t in tags) == 1
    dumps(snap).encode("utf-8")  # no lone surrogate anywhere
