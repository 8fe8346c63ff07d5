"""Captured-node actions (`tab.click`, `tab.type`; contract §9 with the v1.1 additions: NOT_ACTIONABLE,
verified effects, select options) in real headless Chromium.

The tests of the reader's own answers drive the scripts exactly as a host does (readerhelp.Reader); those
of what a client sees go through a real Gateway (gatewayhelp.GatewayTab). `bugcase-select.html` is a
verbatim copy of the project's shared bug case (a small page from a public bug report).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from gatewayhelp import labelled, open_tab, unknown_outcome
from playwright.sync_api import Page
from readerhelp import by_label, dumps, open_page, refused


def test_click_activates_the_captured_node(page: Page, fixtures_site: Site) -> None:
    """Guards `tab.click` on a captured node: a button's handler runs, a checkbox toggles, and the next
    snapshot names the button by its new text."""
    r = open_page(page, fixtures_site, "actions.html")
    snap = r.snapshot()
    assert r.click(by_label(snap, "count: 0")["handle"]) == {"clicked": True}
    assert r.click(by_label(snap, "Agree")["handle"]) == {"clicked": True}
    assert page.evaluate("[document.getElementById('counter').textContent, agree.checked]") == [
        "count: 1",
        True,
    ]
    assert by_label(r.snapshot(), "count: 1")["tag"] == "button"


def test_click_on_second_of_duplicate_ids_clicks_that_node(page: Page, fixtures_site: Site) -> None:
    """Guards that a handle names its node, not an id: of two elements with the same id, the second one's
    handle clicks the second."""
    r = open_page(page, fixtures_site, "duplicates.html")
    snap = r.snapshot()
    assert r.click(by_label(snap, "Second dup")["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicked") == "second"


def test_node_replaced_between_snapshot_and_click_is_refused(page: Page, fixtures_site: Site) -> None:
    """Guards NODE_REPLACED (mayHaveCompleted:false): a handle whose node the page replaced is refused for
    click and type without acting on the replacement, and a removed node is gone from the next snapshot."""
    r = open_page(page, fixtures_site, "actions.html")
    handle = by_label(r.snapshot(), "Replace me")["handle"]
    page.evaluate("replaceButton()")
    refused(r.click(handle), "NODE_REPLACED", False)
    refused(r.type(handle, "x"), "NODE_REPLACED", False)
    assert page.evaluate("window.replacedClicked") is None
    page.evaluate("document.getElementById('replaceable').remove()")
    assert "Replace me" not in dumps(r.snapshot())


@pytest.mark.parametrize(
    ("label", "code"),
    [
        ("Disable on focus", "NOT_TYPABLE"),
        ("Remove on focus", "NODE_REPLACED"),
        ("Retype on focus", "NOT_TYPABLE"),
        ("Replace on focus", "NODE_REPLACED"),
    ],
)
def test_focus_handlers_that_change_the_field_make_the_outcome_uncertain(
    page: Page, fixtures_site: Site, label: str, code: str
) -> None:
    """Guards §9's check after focus: a focus handler that disables, removes, retypes or replaces the field
    makes `tab.type` refuse with mayHaveCompleted:true (the page's handlers ran), and nothing is typed."""
    r = open_page(page, fixtures_site, "actions.html")
    handle = by_label(r.snapshot(), label)["handle"]
    refused(r.type(handle, "never typed"), code, True)
    values = page.evaluate("Array.from(document.querySelectorAll('input'), i => i.value)")
    assert "never typed" not in values


TYPABLE = ["text", "search", "url", "tel", "email", "password", "bogus"]


NOT_TYPABLE = [
    "number",
    "range",
    "color",
    "date",
    "datetime-local",
    "month",
    "week",
    "time",
    "file",
    "checkbox",
    "radio",
    "submit",
    "reset",
    "button",
    "image",
]


def test_every_input_type_types_or_refuses_before_focus(page: Page, fixtures_site: Site) -> None:
    """Guards which fields `tab.type` accepts: text-like input types (an unknown type reads as text), a
    textarea and editing hosts get the text with focus, input and change events; number, range, colour,
    date-like, file, checkable and button inputs, read-only fields and non-editable elements are NOT_TYPABLE
    and disabled ones NOT_ACTIONABLE, all before any focus; a hidden input is never listed; typed text shows
    in no later snapshot."""
    r = open_page(page, fixtures_site, "inputs.html")
    snap = r.snapshot()
    inputs = [e for e in snap["elements"] if e["tag"] == "input"]
    skip = ("Readonly", "Disabled", "Field bogus")
    handles = {f"f-{e['type']}": e["handle"] for e in inputs if e["label"] not in skip}
    assert by_label(snap, "Field date")["type"] == "date"
    assert by_label(snap, "Submit")["type"] == "submit"  # html-aam: a submit input is named by its value
    handles.update(
        {
            "f-textarea": by_label(snap, "Area")["handle"],
            "f-editable": by_label(snap, "Editable area")["handle"],
            "f-plain": by_label(snap, "Plain editable")["handle"],
            "f-readonly": by_label(snap, "Readonly")["handle"],
            "f-disabled": by_label(snap, "Disabled")["handle"],
            "f-div": by_label(snap, "Fake textbox")["handle"],
        }
    )
    assert "f-hidden" not in handles  # a hidden input is never an element
    assert "f-bogus" not in handles and by_label(snap, "Field bogus")["type"] == "text"
    handles["f-bogus"] = by_label(snap, "Field bogus")["handle"]
    text = "a\"b'c</script>\u2028\U0001f600z"
    for t in TYPABLE:
        assert r.type(handles[f"f-{t}"], text) == {"typed": len(text)}, t
        assert page.evaluate(f"document.getElementById('f-{t}').value") == text, t
    for t in NOT_TYPABLE:
        refused(r.type(handles[f"f-{t}"], "x"), "NOT_TYPABLE", False)
    for name in ("f-readonly", "f-div"):
        refused(r.type(handles[name], "x"), "NOT_TYPABLE", False)
    refused(r.type(handles["f-disabled"], "x"), "NOT_ACTIONABLE", False)  # v1.1: disabled before kind
    events: list[list[Any]] = page.evaluate("window.events")
    focused = {e[0] for e in events if e[1] == "focus"}
    assert focused == {f"f-{t}" for t in TYPABLE}  # refusals happened before any focus
    for t in TYPABLE:
        kinds = [e[1:] for e in events if e[0] == f"f-{t}"]
        assert kinds == [["focus", None], ["input", "insertText"], ["change", None]], (t, kinds)
    assert r.type(handles["f-textarea"], "line1\nline2") == {"typed": 11}
    assert page.evaluate("document.getElementById('f-textarea').value") == "line1\nline2"
    assert r.type(handles["f-editable"], " more") == {"typed": 5}
    assert page.evaluate("document.getElementById('f-editable').textContent") == "start more"
    assert r.type(handles["f-plain"], "plain </b>") == {"typed": 10}
    assert page.evaluate("document.getElementById('f-plain').innerHTML") == "plain &lt;/b&gt;"
    after = dumps(r.snapshot())
    assert "line1" not in after and "more" not in after and "plain" not in after.replace("Plain", "")


def test_select_options_are_listed_and_chosen_like_a_user(page: Page, fixtures_site: Site) -> None:
    """Regression (bugcase select.html, from a public bug report): a select's options and optgroups are listed
    after it with their states, and a click chooses an option as a user does (single select: that option;
    `multiple`: toggles it; input then change on the select only when the selection changed); disabled options
    and optgroups are NOT_ACTIONABLE, typing into a select NOT_TYPABLE, and an ARIA listbox's option is
    clicked as an element."""
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
    """Guards a disabled select's options (refused NOT_ACTIONABLE) and a controlled select whose page puts the
    old choice back: EFFECT_NOT_OBSERVED with mayHaveCompleted:true, then REFS_INVALIDATED until the tab is
    observed."""
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
    """Guards a choice whose change handler navigates away: the click answers `clicked` (the choice was made
    and seen before the page left), not an error."""
    g = open_tab(page, fixtures_site, "verify.html")
    with page.expect_navigation():
        env = g.call("tab.click", ref=labelled(g.snapshot(), "Go")["ref"])
    # The choice was made and seen before the page left; the navigation is the page's own reaction.
    assert env == {"version": 1, "id": env["id"], "success": True, "result": {"clicked": True}}
    assert page.url.endswith("/reader/other.html")


@pytest.mark.parametrize("label", ["Upper", "Digits", "Later", "Reverting editor"])
def test_typing_the_page_does_not_keep_is_effect_not_observed(page: Page, fixtures_site: Site, label: str) -> None:
    """Guards verified typing: when the page does not keep what was typed (it upper-cases it, filters it,
    clears it later, or an editor reverts it), `tab.type` answers EFFECT_NOT_OBSERVED with
    mayHaveCompleted:true, and never the value."""
    g = open_tab(page, fixtures_site, "verify.html")
    env = g.call("tab.type", ref=labelled(g.snapshot(), label)["ref"], text="abc")
    unknown_outcome(env, "EFFECT_NOT_OBSERVED")
    assert "abc" not in str(env) and "ABC" not in str(env)  # never the value


def test_typing_that_is_kept_is_reported_and_disabled_fields_fire_nothing(page: Page, fixtures_site: Site) -> None:
    """Guards the other side of verified typing: text the page keeps (a plain field, an editor, digits into a
    digits-only field) is `typed`, and a disabled field is refused before any event fires."""
    g = open_tab(page, fixtures_site, "verify.html")
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Plain")["ref"], text="abc") == {"typed": 3}
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Keeping editor")["ref"], text=" more") == {"typed": 5}
    assert g.ok("tab.type", ref=labelled(g.snapshot(), "Digits")["ref"], text="42") == {"typed": 2}
    assert page.evaluate("document.getElementById('good').textContent") == "Start more"
    g.refused("NOT_ACTIONABLE", "tab.type", ref=labelled(g.snapshot(), "Disabled")["ref"], text="x")
    assert page.evaluate("window.events") == ["plain:focus", "plain:input", "plain:change"]


def test_a_click_refused_before_any_event_keeps_the_snapshot_usable(page: Page, fixtures_site: Site) -> None:
    """Issue 27: a click on a disabled button was refused NOT_ACTIONABLE before any event (the page saw
    nothing) and still invalidated every ref of the tab, so the agent's next click, on the radio beside it
    in the same snapshot, was refused REFS_INVALIDATED. Now the refusal leaves the refs valid (the page
    did not change), the next click acts, and only that click spends them."""
    g = open_tab(page, fixtures_site, "bugcase-disabled.html")
    snap = g.snapshot()
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(snap, "Pay")["ref"])
    g.refused("NOT_ACTIONABLE", "tab.click", ref=labelled(snap, "Submit")["ref"])
    assert page.evaluate("document.getElementById('o').textContent") == "log:"
    assert g.ok("tab.click", ref=labelled(snap, "Agree")["ref"]) == {"clicked": True}
    assert page.evaluate("document.getElementById('o').textContent") == "log: cb=false"
    g.refused("REFS_INVALIDATED", "tab.click", ref=labelled(snap, "Yes")["ref"])
