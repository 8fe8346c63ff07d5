"""The walk after the text bound (docs/reader.md, "Performance"): exactly the elements of a full walk.

Once the text bound is reached the reader stops reading the style of elements that cannot be listed and
settles an element's rendering only when something below it may be listed. `settle.html` holds the
cases where that could go wrong — candidates under `display:none`, `visibility:hidden`,
`display:contents` and `content-visibility:hidden` ancestors, an `<area>` of a hidden map, shadow hosts
(open, closed, hidden), CSS and attribute editing hosts, password-styled text, hidden and shown frames,
selects, closed details, attribute-less listable tags. Its cases come once after 14,000 characters of
filler (read past the bound) and once before it (read while text is still collected): both answers
must list the very same elements.
"""

from __future__ import annotations

from typing import Any

from conftest import Site
from playwright.sync_api import Page
from readerhelp import Reader


def elements(page: Page, site: Site, filler: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    page.goto(site.url(f"reader/settle.html?filler={filler}"), wait_until="load")
    snap = Reader(page).snapshot()
    assert snap["truncated"] is True and len(snap["text"]) == 12000  # the bound was reached
    return [{k: v for k, v in e.items() if k != "handle"} for e in snap["elements"]], snap


def test_elements_after_the_text_bound_are_those_of_a_full_walk(page: Page, fixtures_site: Site) -> None:
    eager, eager_snap = elements(page, fixtures_site, "after")
    lazy, lazy_snap = elements(page, fixtures_site, "before")
    assert not eager_snap["text"].startswith("filler") and lazy_snap["text"].startswith("filler")
    assert lazy == eager
    labels = {e["label"] or e.get("text", "") for e in eager}
    for shown in ("Visible again", "Contents button", "Shadow button",
                  "Frame button", "Choice", "One", "Two", "Group", "More", "Focusable item", "Loose option",
                  "SVG link", "Contents heading", "Name", "Notes", "Agree"):
        assert shown in labels, shown
    for hidden in ("Hidden button", "Hidden link", "Hidden field", "Hidden heading", "Invisible button",
                   "Skipped content link", "Hidden area", "Inside editing",
                   "Hidden frame button", "Gone", "Closed details link", "Closed shadow button"):
        assert hidden not in labels, hidden
    unreadable = sorted(e["tag"] for e in eager if e.get("unreadable") == "closed-shadow-root")
    assert unreadable == ["span", "x-closed"]
    assert any(e["role"] == "textbox" and e["tag"] == "div" for e in eager)  # the contenteditable host


def test_depth_bound_counts_only_rendered_levels_where_no_text_is_read(page: Page, fixtures_site: Site) -> None:
    # Inside password-styled text nothing is read, so the walk descends there without styling elements;
    # a tree past the depth bound still cuts (truncated) only when it is rendered, as a full walk does.
    for deep, truncated in (("shown", True), ("hidden", False)):
        page.goto(fixtures_site.url(f"reader/settle-depth.html?deep={deep}"), wait_until="load")
        snap = Reader(page).snapshot()
        assert snap["truncated"] is truncated, deep
        assert [e["label"] for e in snap["elements"]] == ["Done"]
