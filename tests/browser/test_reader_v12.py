"""Reader v1.2 (contract §9 "Reader and snapshots, v1.2 additions"; issue 29) in real headless Chromium, driven
through a real Gateway as a host drives it (gatewayhelp.GatewayTab): grid and treegrid cells, pointer-clickable
elements, CSS generated content in names, range values and their privacy, and the `include`, `find` and
`since` snapshot params. `bugcase-gridcells.html` and `bugcase-css-content-name.html` are verbatim copies of
the project's shared bug cases (each a regression test here); the live-cursor one is in test_continuation.py.
Where Chromium's own accessibility tree is the reference (names), the test reads it over CDP and compares.
"""

from __future__ import annotations

import json
import re
from typing import Any

from conftest import Site
from gatewayhelp import GatewayTab, open_tab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import Page


def rows(snap: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(e["tag"], e["role"], e["label"] or e.get("text", ""), *e.get("states", [])) for e in snap["elements"]]


def chromium_names(page: Page) -> dict[str, str]:
    """Chromium's accessible names by role+name for the page's buttons and checkboxes (CDP AX tree)."""
    cdp = page.context.new_cdp_session(page)
    try:
        tree = cdp.send("Accessibility.getFullAXTree")
    finally:
        cdp.detach()
    names = []
    for n in tree["nodes"]:
        if not n.get("ignored") and n.get("role", {}).get("value") in ("button", "checkbox"):
            names.append(str(n.get("name", {}).get("value", "")))
    return {name: name for name in names}


# ---------------------------------------------------------------- grids and treegrids (HTML-AAM)


def test_grid_and_treegrid_cells_are_listed_with_their_html_aam_roles(page: Page, fixtures_site: Site) -> None:
    """Guards the widget-role rule and HTML-AAM's table mapping: every td of a grid/treegrid is a gridcell
    (listed whatever its tabindex, with selected/disabled), th a columnheader or rowheader (listed when
    focusable), treegrid rows are listed with their expanded state, ARIA gridcells too; the cells of a
    plain data table are not listed (cell is no widget) and their text is still read."""
    g = open_tab(page, fixtures_site, "grids.html")
    snap = g.snapshot()
    assert rows(snap) == [
        ("th", "columnheader", "Mo"),
        ("td", "gridcell", "1"),
        ("td", "gridcell", "2"),
        ("td", "gridcell", "3", "selected"),
        ("td", "gridcell", "4", "disabled"),
        ("tr", "row", "Name Size"),
        ("tr", "row", "docs 2 files", "expanded"),
        ("th", "rowheader", "docs"),
        ("td", "gridcell", "2 files"),
        ("tr", "row", "readme.md 1 KB"),
        ("td", "gridcell", "readme.md"),
        ("td", "gridcell", "1 KB"),
        ("div", "gridcell", "A1"),
        ("div", "gridcell", "A2", "selected"),
    ]
    assert snap["text"].endswith("Item\nPrice\nTea\n2")


def test_the_gridcells_bug_case_lists_every_day_and_each_click_reaches_its_handler(
    page: Page, fixtures_site: Site
) -> None:
    """Regression (bugcase gridcells.html, from a public bug report): the `td tabindex=-1` day cells of a
    role=grid were not listed, so "click 15" could not be planned; both peers list them as gridcell. Now
    each is a gridcell named by its day, and tab.click on 14 and 15 runs the script-attached and the
    onclick handler."""
    g = open_tab(page, fixtures_site, "bugcase-gridcells.html")
    snap = g.snapshot()
    assert rows(snap) == [("td", "gridcell", "14"), ("td", "gridcell", "15"), ("td", "gridcell", "16")]
    refs = {e["label"]: e["ref"] for e in snap["elements"]}
    assert g.ok("tab.click", ref=refs["14"]) == {"clicked": True}
    assert page.title() == "clicked 14"
    assert g.ok("tab.click", ref=g.snapshot()["elements"][1]["ref"]) == {"clicked": True}
    assert page.evaluate("document.querySelectorAll('td')[1].textContent") == "15!"


# ---------------------------------------------------------------- pointer-clickable elements

POINTER_LISTED = [
    ("div", "", "Card title and its text"),
    ("li", "listitem", "First suggestion"),
    ("li", "listitem", "Second suggestion"),
    ("span", "", "Save draft"),
    ("span", "", "Go there"),
    ("div", "", "Outer inner"),
    ("span", "", "Media rule"),
    ("span", "", "Nested rule"),
    ("span", "", "Custom cursor"),
    ("span", "", "Inline style"),
    ("button", "button", "Inside a button"),
    ("a", "link", "Inside a link"),
    ("input", "checkbox", "Remember me"),
    ("input", "checkbox", "Custom box", "offscreen"),
    ("span", "", "Pointer under default"),
]


def test_pointer_clickable_elements_are_listed_once_with_their_text(page: Page, fixtures_site: Site) -> None:
    """Guards the pointer-clickable rule: an element whose cursor is pointer while its parent's is not is
    listed with its text (rules by class, tag in a descendant selector, attribute, id, inside @media, CSS
    nesting, a url() cursor with a pointer fallback, an inline style); the inner span of a pointer card is
    not listed again, nor the pointer span inside a button or link; a pointer under a `cursor: default`
    parent starts a run of its own; nothing under aria-hidden, nothing sized to nothing; a visually hidden
    checkbox with a shown label stays. Page text is never listed. The same holds when the elements come
    after 14,000 characters of text (past the text bound: found through the cursor-rule index, not read
    past the bound), and a click on a listed span reaches the page."""
    for query in ("", "?filler=before"):
        g = open_tab(page, fixtures_site, f"pointer.html{query}")
        pages = g.all_pages()
        listed = [row for p in pages for row in rows(p)]
        assert listed == POINTER_LISTED, query
    page.evaluate("document.getElementById('go').onclick = () => { document.title = 'went'; }")
    ref = next(e["ref"] for e in pages[0]["elements"] if e["label"] == "Go there")
    assert g.ok("tab.click", ref=ref) == {"clicked": True}
    assert page.title() == "went"


def test_pointer_rules_of_a_cross_origin_sheet(page: Page, fixtures_site: Site) -> None:
    """A style sheet no script may read (another origin, no CORS): an element with an attribute becomes a
    candidate whose cursor is read, so the classed span is listed; a bare `li` matched only by a tag in
    that sheet cannot be told from any other and is not listed (docs/reader.md "Pointer-clickable
    elements"), nor the plain span."""
    g = open_tab(page, fixtures_site, "pointer-cross.html")
    page.wait_for_function("getComputedStyle(document.querySelector('.x-pointer')).cursor === 'pointer'")
    assert rows(g.snapshot()) == [("span", "", "Classed pointer")]


# ---------------------------------------------------------------- CSS generated content


def test_css_generated_content_gives_its_alternative_text_never_a_url(page: Page, fixtures_site: Site) -> None:
    """Guards accname 1.2 with CSS Generated Content: an image (url(), image-set(), a gradient) contributes
    nothing unless it has an alternative text (`/ "Star"`), which stands apart like an image's; strings and
    attr() contribute; every name is Chromium's own except where Chromium computes quotes (the reader does
    not); no name carries a URL or `data:`."""
    g = open_tab(page, fixtures_site, "css-content.html")
    labels = [e["label"] for e in g.snapshot()["elements"]]
    assert labels == [
        "Lettuce",
        "Star Rating",
        "Download",
        "Gradient",
        "Image set",
        "Note: Save",
        "Favourite Star",
        "New Arrivals",
        "Inbox (3)",
        ". Counted",
        "Quoted",
    ]
    theirs = chromium_names(page)
    assert [label for label in labels if label not in theirs] == ["Quoted"]
    assert "\u201cQuoted" in theirs
    assert not re.search(r"url|data:|svg|\.png", json.dumps(labels))


def test_the_css_content_name_bug_case_names_the_checkbox_as_chromium_does(
    page: Page, fixtures_site: Site
) -> None:
    """Regression (bugcase css-content-name.html, from a public bug report): the checkbox came out as
    `data:image/svg+xml,%3Csvg …%3E%3C/svg%3ELettuce`; Chromium names it "Lettuce", and so does the reader."""
    g = open_tab(page, fixtures_site, "bugcase-css-content-name.html")
    assert rows(g.snapshot()) == [("div", "checkbox", "Lettuce")]
    assert "Lettuce" in chromium_names(page)


# ---------------------------------------------------------------- range values


def test_range_widgets_carry_their_value_and_text_entry_never_does(page: Page, fixtures_site: Site) -> None:
    """Guards `value: {now, min?, max?, text?}` for every range role, native and ARIA: a native range (its
    default 0..100 and midpoint too), progress (an indeterminate one has none), meter; ARIA slider,
    spinbutton, scrollbar, progressbar and meter with the defaults ARIA gives (a slider's now is the middle
    of its range, scrollbar/progressbar/meter run 0..100), aria-valuetext as `text` cut at 200 UTF-16 units;
    no value without aria-valuenow where ARIA gives no default. Text entry — input type=number, a text
    input with a range role, a contenteditable spinbutton — never shows one, and the values the page set
    appear nowhere in the answer. Every value agrees with Chromium's accessibility tree."""
    g = open_tab(page, fixtures_site, "ranges.html")
    snap = g.snapshot()
    got = {e["label"]: e.get("value") for e in snap["elements"]}
    assert got == {
        "Red": {"now": 255, "min": 0, "max": 255},
        "Volume": {"now": 50, "min": 0, "max": 100},
        "Upload": {"now": 50, "min": 0, "max": 200},
        "Waiting": None,
        "Disk": {"now": 7.5, "min": 0, "max": 10},
        "Hue": {"now": 120, "min": 0, "max": 360, "text": "120 degrees, green"},
        "Balance": {"now": 0, "min": -10, "max": 10},
        "Adults": {"now": 3, "min": 1, "max": 9, "text": "3 adults"},
        "Rooms": {"now": 2},
        "Nights": None,
        "Scroll": {"now": 40, "min": 0, "max": 100},
        "Steps": {"now": 2, "min": 0, "max": 5, "text": "Step 2 of 5"},
        "Loading": None,
        "Battery": {"now": 80, "min": 0, "max": 100},
        "Long text": {"now": 1, "min": 0, "max": 100, "text": "x" * 200},
        "Guests": None,
        "Typed spin": None,
        "Typed slider": None,
        "Editable spin": None,
    }
    cdp = page.context.new_cdp_session(page)
    tree = cdp.send("Accessibility.getFullAXTree")
    cdp.detach()
    chromium = {str(n["name"]["value"]): n.get("value", {}).get("value") for n in tree["nodes"] if "name" in n}
    for label, value in got.items():
        if value is not None:
            assert chromium[label] == value["now"], label
    private = json.dumps([e for e in snap["elements"] if e["label"] in ("Guests", "Typed spin", "Typed slider")])
    assert not re.search(r'"[4-7]"|: [4-7]\b', private)


TEXT_ENTRY_TYPES = ["text", "search", "email", "url", "tel", "password", "number", ""]
RANGE_ROLES = ["", "spinbutton", "slider", "scrollbar", "progressbar", "meter", "combobox", "textbox"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["input", "textarea", "editable", "select"]),
    input_type=st.sampled_from(TEXT_ENTRY_TYPES),
    role=st.sampled_from(RANGE_ROLES),
    typed=st.booleans(),
    valuetext=st.booleans(),
)
def test_text_entry_never_shows_a_value_whatever_role_it_claims(
    page: Page, fixtures_site: Site, kind: str, input_type: str, role: str, typed: bool, valuetext: bool
) -> None:
    """Property (value privacy, §9 v1.2): a text-entry control of any type — input of every text type,
    number and password included, textarea, contenteditable, an editable combobox (select stands in for a
    listbox whose option text is markup, not a value) — whatever range role and aria-value* it claims,
    whether the page set its value or a person typed it, never carries `value` and its value (a marker
    number) appears nowhere in the answer."""
    if page.url == "about:blank":
        page.goto(fixtures_site.url("reader/plain.html"), wait_until="load")
    marker = "734021"
    attrs = f'aria-label="Field" aria-valuenow="{marker}"' + (f' role="{role}"' if role else "")
    attrs += f' aria-valuetext="{marker} units"' if valuetext else ""
    html = {
        "input": f'<input {attrs} type="{input_type}" value="{"" if typed else marker}">',
        "textarea": f"<textarea {attrs}>{'' if typed else marker}</textarea>",
        "editable": f'<div contenteditable="true" {attrs}>{"" if typed else marker}</div>',
        "select": f'<input {attrs} list="l" value="{"" if typed else marker}"><datalist id="l"></datalist>',
    }[kind]
    page.evaluate("(html) => { document.body.innerHTML = html; }", html)
    if typed:
        page.focus("[aria-label=Field]")
        page.keyboard.type(marker)
    snap = GatewayTab(page).snapshot()
    listed = [e for e in snap["elements"] if e["label"] == "Field"]
    assert listed and all("value" not in e for e in listed), snap
    assert marker not in json.dumps(snap), snap


# ---------------------------------------------------------------- include, find, since


def test_include_controls_lists_only_controls_and_no_text(page: Page, fixtures_site: Site) -> None:
    """Guards `include: "controls"`: the headings and images of a page are left out, every control is listed
    as in the full snapshot (same order, same labels) and `text` is empty; the refs act."""
    g = open_tab(page, fixtures_site, "labels.html")
    full = g.snapshot()
    controls = g.snapshot(include="controls")
    assert controls["text"] == ""
    strip = [{k: v for k, v in e.items() if k != "ref"} for e in controls["elements"]]
    notable = {"heading", "img"}
    assert strip == [{k: v for k, v in e.items() if k != "ref"} for e in full["elements"] if e["role"] not in notable]
    assert any(e["role"] in notable for e in full["elements"])
    assert g.ok("tab.click", ref=controls["elements"][1]["ref"]) == {"clicked": True}


def test_find_by_role_name_and_text(page: Page, fixtures_site: Site) -> None:
    """Guards `find`: by role (exact, "" finds generics), by name (contains, case-insensitive,
    whitespace-normalised), by nearby text; an element matching none is left out; the text holds only the
    lines around the matches; no match is an empty answer, not an error; a cursor with `find` is refused
    INVALID_PARAMS before anything runs."""
    g = open_tab(page, fixtures_site, "actions.html")
    assert [e["label"] for e in g.snapshot(find={"role": "button"})["elements"]] == ["count: 0", "Replace me"]
    assert [e["label"] for e in g.snapshot(find={"name": "REPLACE  me"})["elements"]] == ["Replace me"]
    assert [e["label"] for e in g.snapshot(find={"name": "on focus"})["elements"]] == [
        "Disable on focus",
        "Remove on focus",
        "Retype on focus",
        "Replace on focus",
    ]
    none = g.snapshot(find={"name": "Submit"})
    assert none["elements"] == [] and none["text"] == ""
    hit = g.snapshot(find={"role": "checkbox"})
    assert [e["label"] for e in hit["elements"]] == ["Agree"]
    assert g.ok("tab.click", ref=hit["elements"][0]["ref"]) == {"clicked": True}
    assert page.is_checked("#agree")
    g2 = open_tab(page, fixtures_site, "links2000.html")
    found = g2.snapshot(find={"name": "Link number 1234"})
    assert [e["label"] for e in found["elements"]] == ["Link number 1234"]
    assert "Link number 1234" in found["text"] and "Link number 10\n" not in found["text"]
    assert len(found["text"]) < 2000  # the lines around the match, not the page
    env = g2.call("tab.snapshot", cursor="s1p2", find={"role": "link"})
    assert env["success"] is False and env["error"]["code"] == "INVALID_PARAMS" and g2.dispatches == 1


def test_since_reports_what_an_action_changed(page: Page, fixtures_site: Site) -> None:
    """Guards `since`: after a click (which invalidates the refs of the first snapshot, not its read) and page
    changes, the difference names the added button with a new ref, the removed one by its old ref, the
    checkbox whose checked state changed under a new ref, and the text lines added and removed; nothing
    changed is an empty difference; a snapshot id that is not the tab's latest is refused STALE_SNAPSHOT,
    refs of a replaced since read too, and after a navigation the old document's snapshot is refused."""
    g = open_tab(page, fixtures_site, "actions.html")
    first = g.snapshot()
    refs = {e["label"]: e["ref"] for e in first["elements"]}
    assert g.ok("tab.click", ref=refs["Agree"]) == {"clicked": True}  # invalidates first's refs, not its read
    page.evaluate(
        """() => { document.getElementById('slot').remove();
                   document.body.insertAdjacentHTML('beforeend', '<p>Saved at noon</p><button>Undo</button>'); }"""
    )
    after = g.snapshot(since=first["snapshot"])
    diff = after["changes"]
    assert [(e["role"], e["label"]) for e in diff["added"]] == [("button", "Undo")]
    assert diff["removed"] == [refs["Replace me"]]
    assert [(c.get("states"), c["ref"].startswith(after["snapshot"] + "e")) for c in diff["changed"]] == [
        (["checked"], True)
    ]
    assert "Saved at noon" in diff["textAdded"] and "Replace me" in diff["textRemoved"]
    undo = diff["added"][0]["ref"]
    same = g.snapshot(since=after["snapshot"])
    assert same["changes"] == {"added": [], "removed": [], "changed": [], "textAdded": [], "textRemoved": []}
    g.refused("STALE_SNAPSHOT", "tab.snapshot", since=first["snapshot"])  # not the tab's latest
    g.refused("STALE_SNAPSHOT", "tab.click", ref=undo)  # a newer snapshot replaced it
    latest = g.snapshot()["snapshot"]
    page.goto(fixtures_site.url("reader/plain.html"), wait_until="load")
    g.refused("STALE_SNAPSHOT", "tab.snapshot", since=latest)


SHOWN_LATER = """<!doctype html><title>shown later</title>
<div id="list">BUTTONS</div>
<div id="menu" aria-hidden="true"><button>Hidden at first</button></div>
<select id="sel" style="position:absolute;clip:rect(0 0 0 0)"><option>Option of a clipped select</option></select>
<button style="width:0;height:0;padding:0;border:0;overflow:hidden">Never shown</button>"""


def test_shown_is_decided_when_a_page_gets_to_an_element(page: Page) -> None:
    """What no person is shown (aria-hidden, clipped, sized to nothing) is decided for a candidate when the
    plain snapshot's page gets to it (docs/reader.md "Reader v1.2", "When it is decided"): a menu hidden at
    the first read and shown before its page is listed there; the options of a clipped select are not
    listed with it; what stays hidden is on no page, and no page is empty for it."""
    from kelpie_gateway import reader as kreader
    from readerhelp import Reader

    page.set_content(SHOWN_LATER.replace("BUTTONS", "".join(f"<button>B{i}</button>" for i in range(12))))
    r = Reader(page)
    first = r.snapshot(12000, 5)
    assert [e["label"] for e in first["elements"]] == [f"B{i}" for i in range(5)]
    page.evaluate("document.getElementById('menu').removeAttribute('aria-hidden')")
    pages = [first]
    while "rest" in pages[-1]:
        pages.append(r.snapshot(12000, 5, cursor=pages[-1]["rest"]))
    labels = [e["label"] for p in pages for e in p["elements"]]
    assert labels == [f"B{i}" for i in range(12)] + ["Hidden at first"]
    assert all(p["elements"] for p in pages) and len(pages) == 3
    # the same page read afresh with the menu hidden again: neither it nor the clipped select's option
    page.evaluate("document.getElementById('menu').setAttribute('aria-hidden', 'true')")
    again = r.world.evaluate(kreader.snapshot_script(r.key, max_chars=12000, max_elements=200))
    assert [e["label"] for e in again["elements"]] == [f"B{i}" for i in range(12)]
    assert "rest" not in again
