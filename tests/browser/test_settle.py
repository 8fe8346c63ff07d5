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
    """Guards the walk past the text bound (issue 16): a read whose cases come after 14,000 characters of
    filler lists exactly the elements of a read that meets them while still collecting text (module
    docstring)."""
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
    """Guards the depth cut where no text is read: inside password-styled text the walk descends without
    styling elements, and a tree past the depth bound still cuts (truncated) only when it is rendered, as a
    full walk does."""
    for deep, truncated in (("shown", True), ("hidden", False)):
        page.goto(fixtures_site.url(f"reader/settle-depth.html?deep={deep}"), wait_until="load")
        snap = Reader(page).snapshot()
        assert snap["truncated"] is truncated, deep
        assert [e["label"] for e in snap["elements"]] == ["Done"]


def unreadable_tags(page: Page, site: Site, filler: str) -> tuple[list[str], list[str], list[str]]:
    page.goto(site.url(f"reader/settle-light.html?filler={filler}"), wait_until="load")
    page.frame_locator("iframe").locator("button").wait_for()
    snap = Reader(page).snapshot()
    assert snap["truncated"] is True and len(snap["text"]) == 12000
    suspects = [e for e in snap["elements"] if e.get("unreadable") == "closed-shadow-root"]
    return (
        sorted(e["tag"] for e in suspects if not e.get("frame")),
        sorted(e["tag"] for e in suspects if e.get("frame")),
        [e["label"] for e in snap["elements"] if not e.get("unreadable")],
    )


def test_light_content_of_possible_shadow_hosts_is_read_as_node_by_node(page: Page, fixtures_site: Site) -> None:
    """Guards the light-content test of closed-shadow suspects: the reader decides whether a span/p has light
    content without touching its text nodes (textContent, docs/reader.md "Performance"); that must be the
    node-by-node rule: an element child or a Text node (nodeType 3) that is not only String.prototype.trim
    white space (NBSP, U+2003, U+FEFF, U+2028, U+3000 included). Boxes without such content are closed-shadow
    suspects; boxes sized by their content are not. In an XHTML frame a CDATA section is not a nodeType-3 Text
    node, so a span holding only one has no light content, as before. Read before the text bound and past it:
    the same answer."""
    for filler in ("after", "before"):
        main, frame, listed = unreadable_tags(page, fixtures_site, filler)
        assert main == ["p", "span", "span", "span", "span"], filler  # empties, ws, comment, split; para
        assert frame == ["span"], filler  # the CDATA span, not the one with a text node
        assert listed == ["Frame button", "Last button"], filler


def test_children_past_the_depth_bound_cut_where_no_text_is_read(page: Page, fixtures_site: Site) -> None:
    """Guards the step over text and comment children where no text is read: they are not touched, except past
    the depth bound, where any child node cuts (truncated) as in a walk that visits every node. The span sits
    at depth levels + 3; its comment and text one deeper; the bound is 1,500."""
    for levels, truncated in ((1496, False), (1497, True)):
        page.goto(fixtures_site.url(f"reader/settle-depth.html?levels={levels}"), wait_until="load")
        snap = Reader(page).snapshot()
        assert snap["truncated"] is truncated, levels
        assert [e["tag"] for e in snap["elements"]] == ["span", "button"], levels
