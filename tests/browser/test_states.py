"""Element states (`states`, contract §9 v1.1: disabled, checked, mixed, selected, expanded, collapsed,
pressed, readonly, required, invalid, offscreen) and link `url`s in real headless Chromium, through a real
Gateway (gatewayhelp.GatewayTab): what a client sees, and the NOT_ACTIONABLE refusals a disabled state
means for an action.

`bugcase-disabled.html` and `bugcase-offscreen.html` are verbatim copies of the project's shared bug
cases (small pages from public bug reports); each is the test of its kind below.
"""

from __future__ import annotations

from conftest import Site
from gatewayhelp import labelled, open_tab
from playwright.sync_api import Page


def test_disabled_buttons_are_shown_and_refused_before_any_event(page: Page, fixtures_site: Site) -> None:
    """Regression (bugcase disabled.html, from a public bug report): buttons disabled by the attribute, by
    `aria-disabled` and by a disabled fieldset are listed with `disabled` and a click on them is
    NOT_ACTIONABLE before any handler runs; a checked radio and checkbox say `checked`, and an enabled
    toggle's state follows its click."""
    g = open_tab(page, fixtures_site, "bugcase-disabled.html")
    snap = g.snapshot()
    for label in ("Pay", "Submit", "InFieldset"):
        assert labelled(snap, label, "button")["states"] == ["disabled"]
    assert labelled(snap, "Yes", "radio")["states"] == ["checked"]
    assert labelled(snap, "Agree", "checkbox")["states"] == ["checked"]
    for label in ("Pay", "Submit", "InFieldset"):
        snap = g.snapshot()
        env = g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(snap, label)["ref"])
        assert "disabled" in env["error"]["message"]
    assert page.evaluate("document.getElementById('o').textContent") == "log:"  # no handler ran
    # An enabled toggle still works, and its state follows.
    snap = g.snapshot()
    assert g.ok("tab.click", ref=labelled(snap, "Agree")["ref"]) == {"clicked": True}
    assert page.evaluate("document.getElementById('o').textContent") == "log: cb=false"
    assert "states" not in labelled(g.snapshot(), "Agree")


def test_nested_aria_disabled_and_inert_are_disabled(page: Page, fixtures_site: Site) -> None:
    """Guards `disabled` that comes from an ancestor: `aria-disabled` on an ancestor and an `inert` subtree
    make a button and a link disabled, and clicks on them are refused NOT_ACTIONABLE with nothing run."""
    g = open_tab(page, fixtures_site, "states.html")
    snap = g.snapshot()
    for label in ("Deep inside", "Inert button", "Inert link"):
        assert "disabled" in labelled(snap, label)["states"], label
    for label in ("Deep inside", "Inert button", "Inert link"):
        g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(g.snapshot(), label)["ref"])
    assert page.evaluate("window.hit === undefined && location.hash === ''")


def test_outside_an_open_modal_dialog_is_inert(page: Page, fixtures_site: Site) -> None:
    """Guards the modal-dialog rule: while a `<dialog>` is open modally, what is outside it is disabled (a
    click is NOT_ACTIONABLE) and what is inside acts."""
    g = open_tab(page, fixtures_site, "states.html")
    page.evaluate(
        """() => { const d = document.createElement('dialog');
                   d.innerHTML = '<button onclick="window.hit = 1">In dialog</button>';
                   document.body.appendChild(d); d.showModal(); }"""
    )
    snap = g.snapshot()
    assert "states" not in labelled(snap, "In dialog")
    assert labelled(snap, "Bold")["states"] == ["disabled", "pressed"]
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(snap, "Bold")["ref"])
    assert g.ok("tab.click", ref=labelled(g.snapshot(), "In dialog")["ref"]) == {"clicked": True}
    assert page.evaluate("window.hit") == 1


def test_screen_reader_states_names_roles_and_link_urls(page: Page, fixtures_site: Site) -> None:
    """Guards the states a screen reader announces (expanded/collapsed from ARIA and `<details>`, pressed,
    mixed, checked, readonly, required, invalid), date and time inputs as textboxes with their `type`, link
    `url`s (resolved, `#fragment`, a bare `javascript:`/`mailto:` scheme, cut to 500 units with an ellipsis
    and `truncated`), names from an SVG `<title>`, an `<img alt>` and an `aria-labelledby` chain, and never a
    read-only field's value."""
    g = open_tab(page, fixtures_site, "states.html")
    snap = g.snapshot()
    expect = {
        "Closed details": ["collapsed"], "Open details": ["expanded"], "Menu open": ["expanded"],
        "Menu shut": ["collapsed"], "Bold": ["pressed"], "Italic": ["mixed"], "Some": ["mixed"],
        "Wifi": ["checked"], "Code": ["readonly"], "Needed": ["required"], "Wrong": ["invalid"],
    }
    for label, states in expect.items():
        assert labelled(snap, label)["states"] == states, label
    for label, kind in (("When", "date"), ("At", "time"), ("Month", "month")):
        assert (labelled(snap, label)["role"], labelled(snap, label)["type"]) == ("textbox", kind)
    base = fixtures_site.url("")
    assert labelled(snap, "Home", "link")["url"] == base + "home.html"  # <svg><title> names the icon link
    assert labelled(snap, "Cart", "link")["url"] == base + "reader/cart.html"  # <img alt> in a link
    assert labelled(snap, "Save draft", "button")["tag"] == "button"  # aria-labelledby chain
    assert labelled(snap, "Top of page")["url"] == "#top"
    assert labelled(snap, "Script link")["url"] == "javascript:"
    assert labelled(snap, "Mail us")["url"] == "mailto:"
    long = labelled(snap, "Long link")["url"]
    assert len(long) == 500 and long.endswith("\u2026") and long.startswith(base + "path?q=aaa")
    assert snap["truncated"] is True and "next" not in snap  # a cut url is a cut, not a page
    assert "R-VALUE" not in str(snap)  # readonly is a state; the value stays private
    assert all(e["role"] for e in snap["elements"])  # never an empty role for these controls


def test_disabled_and_names_of_many_elements_sharing_their_ancestors(page: Page, fixtures_site: Site) -> None:
    """Guards the per-read ancestor facts (docs/reader.md, "Fourth pass"): a read keeps each ancestor's
    aria-disabled, inert, modal-dialog and aria-hidden facts once and reuses them for every element below it;
    each label says what its `disabled` state must be, deep and shallow elements under shared ancestors,
    across frames and a frame's modal dialog; and aria-hidden decides names exactly as before (an untrimmed "
    true" is not "true"). A link inside an aria-hidden="true" section is not listed (§9 v1.2)."""
    g = open_tab(page, fixtures_site, "ancestors-shared.html")
    snap = g.snapshot()
    listed = [e for e in snap["elements"] if e["role"] in ("link", "button")]
    assert len(listed) == 15, [e["label"] for e in listed]
    for e in listed[:13]:
        assert ("disabled" in e.get("states", [])) is e["label"].startswith("dis"), e
    assert [e["label"] for e in listed[13:]] == ["ok named", "ok named SHOWN"]
    assert all("disabled" not in e.get("states", []) for e in listed[13:])
    assert sum(e["label"].startswith("dis") for e in listed) == 8


def test_offscreen_is_a_state_not_a_refusal(page: Page, fixtures_site: Site) -> None:
    """Regression (bugcase offscreen.html, from a public bug report): a button in a drawer parked outside the
    viewport is listed `offscreen` and still clicks; one below the fold, which scrolling reaches, is not
    offscreen."""
    g = open_tab(page, fixtures_site, "bugcase-offscreen.html")
    snap = g.snapshot()
    assert labelled(snap, "DrawerBtn")["states"] == ["offscreen"]
    assert "states" not in labelled(snap, "BelowBtn")  # below the fold can be scrolled to
    assert g.ok("tab.click", ref=labelled(snap, "DrawerBtn")["ref"]) == {"clicked": True}
    assert page.evaluate("document.getElementById('r').textContent") == "drawer clicked"


def test_clipped_by_an_overflow_hidden_ancestor_is_offscreen(page: Page, fixtures_site: Site) -> None:
    """Guards overflow clipping: a button pushed out of an `overflow:hidden` box is offscreen, its visible
    neighbour in the box is not."""
    g = open_tab(page, fixtures_site, "states.html")
    page.evaluate(
        """() => { const box = document.createElement('div');
                   box.style.cssText = 'overflow:hidden;width:100px;height:40px;white-space:nowrap';
                   box.innerHTML = '<button>Seen</button><span style="display:inline-block;width:300px"></span>'
                                 + '<button>Slid away</button>';
                   document.body.prepend(box); }"""
    )
    snap = g.snapshot()
    assert "states" not in labelled(snap, "Seen")
    assert labelled(snap, "Slid away")["states"] == ["offscreen"]


def test_offscreen_of_many_elements_sharing_clipping_and_fixed_ancestors(page: Page, fixtures_site: Site) -> None:
    """Guards the per-read clip facts (issue 16): the reader reads each ancestor's clip, overflow and position
    once per read and reuses them for every element below it; each link's label says what it must be, in every
    mix of shared clipping, fixed and visually-hidden ancestors, read in one snapshot. The two links under a
    `clip: rect(0 0 0 0)` ancestor are clipped to nothing and not listed at all (§9 v1.2)."""
    g = open_tab(page, fixtures_site, "offscreen-shared.html")
    snap = g.snapshot()
    links = [e for e in snap["elements"] if e["role"] == "link"]
    assert len(links) == 14
    assert not {"off 10", "off 11"} & {e["label"] for e in links}
    for link in links:
        offscreen = "offscreen" in link.get("states", [])
        assert offscreen is link["label"].startswith("off"), link
