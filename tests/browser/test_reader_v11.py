"""Reader and actions v1.1 (CONTRACT.md §3 scope/cursor/next, §4 NOT_ACTIONABLE/EFFECT_NOT_OBSERVED,
§9 "Reader and actions, v1.1 additions") in real headless Chromium, through a real Gateway.

The three `bugcase-*.html` pages are verbatim copies of ../shared/bugcases/{disabled,select,offscreen}.html
(small pages from public bug reports); each is the test of its kind below.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from gatewayhelp import GatewayTab, labelled
from playwright.sync_api import Page


def open_tab(page: Page, site: Site, name: str) -> GatewayTab:
    page.goto(site.url(f"reader/{name}"), wait_until="load")
    return GatewayTab(page)


def unknown_outcome(env: dict[str, Any], code: str) -> None:
    assert env["success"] is False and env["error"]["code"] == code, env
    assert env["mayHaveCompleted"] is True and env["error"]["retryable"] is False, env


# ---------------------------------------------------------------- disabled and checked (bugcase)


def test_disabled_buttons_are_shown_and_refused_before_any_event(page: Page, fixtures_site: Site) -> None:
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
    g = open_tab(page, fixtures_site, "states.html")
    snap = g.snapshot()
    for label in ("Deep inside", "Inert button", "Inert link"):
        assert "disabled" in labelled(snap, label)["states"], label
    for label in ("Deep inside", "Inert button", "Inert link"):
        g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(g.snapshot(), label)["ref"])
    assert page.evaluate("window.hit === undefined && location.hash === ''")


def test_outside_an_open_modal_dialog_is_inert(page: Page, fixtures_site: Site) -> None:
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


# ---------------------------------------------------------------- select (bugcase)


def test_select_options_are_listed_and_chosen_like_a_user(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "bugcase-select.html")
    snap = g.snapshot()
    rows = [(e["tag"], e["role"], e["label"], e.get("states", [])) for e in snap["elements"]]
    assert rows == [
        ("select", "combobox", "Size", []),
        ("option", "option", "Small", ["selected"]),
        ("option", "option", "Medium", []),
        ("option", "option", "Large", ["disabled"]),
        ("select", "listbox", "Toppings", []),
        ("optgroup", "group", "Veg", []),
        ("option", "option", "Olive", []),
        ("option", "option", "Pepper", []),
        ("optgroup", "group", "Meat", []),
        ("option", "option", "Ham", []),
        ("div", "listbox", "Colour", []),
        ("div", "option", "Red", []),
        ("div", "option", "Blue", ["selected"]),
    ]
    out = "document.getElementById('o').textContent"
    g.refused("NOT_TYPABLE", "tab.type", ref=labelled(snap, "Size")["ref"], text="Medium")
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(g.snapshot(), "Large")["ref"])
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(g.snapshot(), "Veg")["ref"])
    assert page.evaluate(out) == "unchanged"
    assert g.ok("tab.click", ref=labelled(g.snapshot(), "Medium")["ref"]) == {"clicked": True}
    assert page.evaluate(out) == "size m"
    snap = g.snapshot()
    assert labelled(snap, "Medium")["states"] == ["selected"] and "states" not in labelled(snap, "Small")
    # multiple: each click toggles one option; input and change fire on the select
    page.evaluate("window.ev = []; for (const t of ['input', 'change']) "
                  "document.getElementById('t').addEventListener(t, () => window.ev.push(t))")
    for label, log in (("Olive", "toppings olive"), ("Ham", "toppings olive,ham"), ("Olive", "toppings ham")):
        assert g.ok("tab.click", ref=labelled(g.snapshot(), label)["ref"]) == {"clicked": True}
        assert page.evaluate(out) == log
    assert page.evaluate("window.ev") == ["input", "change"] * 3
    assert labelled(g.snapshot(), "Ham")["states"] == ["selected"]
    # choosing the option already chosen changes nothing and fires nothing, as for a user
    assert g.ok("tab.click", ref=labelled(g.snapshot(), "Medium")["ref"]) == {"clicked": True}
    assert page.evaluate("window.ev.length") == 6
    # the ARIA listbox option is clicked as an element
    assert g.ok("tab.click", ref=labelled(g.snapshot(), "Red")["ref"]) == {"clicked": True}
    assert page.evaluate(out) == "colour red"


def test_disabled_select_and_a_page_that_undoes_the_choice(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "verify.html")
    snap = g.snapshot()
    assert labelled(snap, "Frozen")["states"] == ["disabled"]
    assert labelled(snap, "B")["states"] == ["disabled"]
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(snap, "B")["ref"])
    snap = g.snapshot()
    unknown_outcome(g.call("tab.click", ref=labelled(snap, "Y")["ref"]), "EFFECT_NOT_OBSERVED")
    assert page.evaluate("document.getElementById('controlled').value") == "x"
    # after an unknown outcome the tab must be observed before the next action
    g.refused("REFS_INVALIDATED", "tab.click", ref=labelled(snap, "X")["ref"])
    assert g.ok("tab.click", ref=labelled(g.snapshot(), "X")["ref"]) == {"clicked": True}


def test_a_select_whose_change_handler_navigates(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "verify.html")
    with page.expect_navigation():
        env = g.call("tab.click", ref=labelled(g.snapshot(), "Go")["ref"])
    # The choice was made and seen before the page left; the navigation is the page's own reaction.
    assert env == {"version": 1, "id": env["id"], "success": True, "result": {"clicked": True}}
    assert page.url.endswith("/reader/other.html")


# ---------------------------------------------------------------- verified typing


@pytest.mark.parametrize("label", ["Upper", "Digits", "Later", "Reverting editor"])
def test_typing_the_page_does_not_keep_is_effect_not_observed(page: Page, fixtures_site: Site, label: str) -> None:
    g = open_tab(page, fixtures_site, "verify.html")
    env = g.call("tab.type", ref=labelled(g.snapshot(), label)["ref"], text="abc")
    unknown_outcome(env, "EFFECT_NOT_OBSERVED")
    assert "abc" not in str(env) and "ABC" not in str(env)  # never the value


def test_typing_that_is_kept_is_reported_and_disabled_fields_fire_nothing(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "verify.html")
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Plain")["ref"], text="abc") == {"typed": 3}
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Keeping editor")["ref"], text=" more") == {"typed": 5}
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Digits")["ref"], text="42") == {"typed": 2}
    assert page.evaluate("document.getElementById('good').textContent") == "Start more"
    g.refused("NOT_ACTIONABLE", "tab.type", ref=labelled(g.snapshot(), "Disabled")["ref"], text="x")
    assert page.evaluate("window.events") == ["plain:focus", "plain:input", "plain:change"]


# ---------------------------------------------------------------- offscreen (bugcase)


def test_offscreen_is_a_state_not_a_refusal(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "bugcase-offscreen.html")
    snap = g.snapshot()
    assert labelled(snap, "DrawerBtn")["states"] == ["offscreen"]
    assert "states" not in labelled(snap, "BelowBtn")  # below the fold can be scrolled to
    assert g.ok("tab.click", ref=labelled(snap, "DrawerBtn")["ref"]) == {"clicked": True}
    assert page.evaluate("document.getElementById('r').textContent") == "drawer clicked"


def test_clipped_by_an_overflow_hidden_ancestor_is_offscreen(page: Page, fixtures_site: Site) -> None:
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
    # The reader reads each ancestor's clip, overflow and position once per read and reuses them for every
    # element below it: each link's label says what it must be, in every mix of shared clipping, fixed and
    # visually-hidden ancestors, read in one snapshot.
    g = open_tab(page, fixtures_site, "offscreen-shared.html")
    snap = g.snapshot()
    links = [e for e in snap["elements"] if e["role"] == "link"]
    assert len(links) == 16
    for link in links:
        offscreen = "offscreen" in link.get("states", [])
        assert offscreen is link["label"].startswith("off"), link


# ---------------------------------------------------------------- priority, continuation, scope


def test_search_box_and_submit_at_the_end_of_2000_links_are_on_the_first_page(
    page: Page, fixtures_site: Site
) -> None:
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


def test_continuation_reads_the_same_snapshot_exactly_and_old_refs_stay_valid(
    page: Page, fixtures_site: Site
) -> None:
    g = open_tab(page, fixtures_site, "links2000.html")
    whole = g.snapshot(maxChars=12000, maxElements=200)
    pages = g.all_pages(maxChars=9000, maxElements=90)
    assert len(pages) == -(-2007 // 90)  # elements outlast the text here
    assert {p["snapshot"] for p in pages} == {pages[0]["snapshot"]}
    assert [p["truncated"] for p in pages] == [True] * (len(pages) - 1) + [False]
    text = "".join(p["text"] for p in pages)
    assert text.startswith(whole["text"]) and text.endswith("Link number 1999\nSearch")
    assert len(text) > 12000
    elements = [e for p in pages for e in p["elements"]]
    refs = [e["ref"] for e in elements]
    assert len(set(refs)) == len(refs) == 2007  # 2003 links, 2 buttons, the search box, the heading
    labels = sorted((e["role"], e["label"]) for e in elements)
    expected = sorted(
        [("link", f"Link number {i}") for i in range(2000)]
        + [("link", "Home"), ("link", "News"), ("link", "Sport"), ("button", "Menu"),
           ("searchbox", "Search the site"), ("button", "Search"), ("heading", "Index")]
    )
    assert labels == expected
    # after the third page, refs of the first page still act
    assert pages[2]["elements"]
    assert g.ok("tab.type", ref=labelled(pages[0], "Search the site")["ref"], text="x") == {"typed": 1}
    # the action changed the tab: the cursor of that snapshot is now refused, before anything runs
    sent = g.dispatches
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=pages[3]["next"])
    assert g.dispatches == sent


def test_three_pages_then_clicks_on_first_page_refs(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "links2000.html")
    one = g.snapshot(maxElements=3)
    two = g.snapshot(cursor=one["next"], maxElements=3)
    three = g.snapshot(cursor=two["next"], maxElements=3)
    assert [e["label"] for e in one["elements"]] == ["Menu", "Search the site", "Search"]
    assert [e["label"] for e in two["elements"]] == ["Home", "News", "Sport"]
    assert [e["label"] for e in three["elements"]] == ["Link number 0", "Link number 1", "Link number 2"]
    assert one["elements"][0]["ref"] == f"{one['snapshot']}e1" and three["elements"][2]["ref"] == f"{one['snapshot']}e9"
    assert g.ok("tab.click", ref=labelled(one, "Menu")["ref"]) == {"clicked": True}
    assert page.evaluate("window.menu") is True


def test_stale_cursors_are_refused(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "links2000.html")
    first = g.snapshot(maxElements=50)
    second = g.snapshot(cursor=first["next"], maxElements=50)
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=first["next"])  # already continued
    g.refused("INVALID_PARAMS", "tab.snapshot", cursor="s999p2")  # never issued
    g.refused("INVALID_PARAMS", "tab.snapshot", cursor=second["next"], scope=first["elements"][0]["ref"])
    # a changed document (same generation, no invalidation reached the engine): the renderer refuses
    page.evaluate("document.querySelector('h1').textContent = 'Changed'")
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=second["next"])
    # a newer snapshot makes the older one's cursor stale
    again = g.snapshot(maxElements=50)
    g.snapshot(maxElements=50)
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=again["next"])
    # navigation (the host invalidates the tab's refs)
    third = g.snapshot(maxElements=50)
    g.gw.invalidate_refs("t1")
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=third["next"])


def test_scope_snapshots_a_nav_subtree(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "states.html")
    page.evaluate(
        """() => { const n = document.createElement('nav'); n.setAttribute('aria-label', 'Main');
                   n.innerHTML = '<a href="/a">Alpha</a> <a href="/b">Beta</a> <button>More</button>';
                   document.body.appendChild(n);
                   const h = document.createElement('h2'); h.textContent = 'After nav';
                   document.body.appendChild(h); }"""
    )
    g = GatewayTab(page)
    snap = g.snapshot()
    # a <nav> is not listed itself; scope on its first link's ancestor by snapshotting a smaller subtree
    alpha = labelled(snap, "Alpha")
    env = g.call("tab.snapshot", scope=alpha["ref"])
    assert env["success"] is True and [e["label"] for e in env["result"]["elements"]] == ["Alpha"]
    page.evaluate("document.querySelector('nav').tabIndex = 0")  # make the nav itself listed
    nav = labelled(g.snapshot(), "Main")
    scoped = g.snapshot(scope=nav["ref"])
    assert scoped["snapshot"] != snap["snapshot"]
    assert scoped["text"] == "Alpha Beta More"
    assert [(e["role"], e["label"]) for e in scoped["elements"]] == [
        ("navigation", "Main"), ("link", "Alpha"), ("link", "Beta"), ("button", "More")]
    assert g.ok("tab.click", ref=labelled(scoped, "More")["ref"]) == {"clicked": True}
    g.refused("STALE_SNAPSHOT", "tab.snapshot", scope=nav["ref"])  # a scope ref is an ordinary ref


def test_text_pages_never_split_a_pair_and_join_to_the_whole_text(page: Page, fixtures_site: Site) -> None:
    g = open_tab(page, fixtures_site, "emoji.html")
    whole = g.snapshot()["text"]
    assert len(whole.encode("utf-16-le")) // 2 > 10000  # 5,000 astral characters: 10,000 UTF-16 units
    pages = g.all_pages(maxChars=1001)
    assert len(pages) > 9
    for p in pages:
        assert len(p["text"].encode("utf-16-le")) // 2 <= 1001
    assert "".join(p["text"] for p in pages) == whole


def test_disabled_and_names_of_many_elements_sharing_their_ancestors(page: Page, fixtures_site: Site) -> None:
    # A read keeps each ancestor's aria-disabled, inert, modal-dialog and aria-hidden facts once and reuses
    # them for every element below it (docs/reader.md, "Fourth pass"): each label says what its `disabled`
    # state must be, deep and shallow elements under shared ancestors, across frames and a frame's modal
    # dialog; and aria-hidden decides names exactly as before (an untrimmed " true" is not "true").
    g = open_tab(page, fixtures_site, "ancestors-shared.html")
    snap = g.snapshot()
    listed = [e for e in snap["elements"] if e["role"] in ("link", "button")]
    assert len(listed) == 16, [e["label"] for e in listed]
    for e in listed[:13]:
        assert ("disabled" in e.get("states", [])) is e["label"].startswith("dis"), e
    assert [e["label"] for e in listed[13:]] == ["ok named", "ok named SHOWN", "ok under aria-hidden named"]
    assert all("disabled" not in e.get("states", []) for e in listed[13:])
    assert sum(e["label"].startswith("dis") for e in listed) == 8
