"""Fixed reader, captured-node actions and selector snapshot in real headless Chromium (contract §8-§9).

Each test opens one page from fixtures/pages/reader/ and drives the generated scripts exactly as a host
does (isolated world "KelpieBrowserControl", Runtime.evaluate with returnByValue/awaitPromise).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from playwright.sync_api import Page
from readerhelp import Reader, by_label, dumps, utf16_len

SECRETS = [
    "INPUT-SECRET",
    "PASSWORD-SECRET",
    "TEXTAREA-SECRET",
    "EMAIL-SECRET",
    "HIDDEN-SECRET",
    "EDITABLE-SECRET",
    "BOLD-SECRET",
    "MASKED-SECRET",
    "EMBEDDED-SECRET",
]


def open_page(page: Page, site: Site, name: str, host: str = "127.0.0.1") -> Reader:
    page.goto(site.url(f"reader/{name}", host), wait_until="load")
    return Reader(page)


def refused(result: dict[str, Any], code: str, may_have_completed: bool) -> None:
    assert set(result) == {"error", "mayHaveCompleted"}, result
    assert result["error"]["code"] == code, result
    assert isinstance(result["error"]["message"], str) and result["error"]["message"]
    assert result["mayHaveCompleted"] is may_have_completed, result


# ---------------------------------------------------------------- duplicate ids, document roots


def test_selectors_match_exactly_their_node_despite_duplicate_ids_and_second_body(
    page: Page, fixtures_site: Site
) -> None:
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


def test_click_on_second_of_duplicate_ids_clicks_that_node(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "duplicates.html")
    snap = r.snapshot()
    assert r.click(by_label(snap, "Second dup")["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicked") == "second"


# ---------------------------------------------------------------- shadow roots


def test_open_shadow_roots_are_read_and_closed_ones_reported(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "shadow.html")
    snap = r.snapshot()
    text = snap["text"]
    for visible in ("Light text before.", "Open heading", "slotted light text", "Nested open text"):
        assert visible in text
    assert by_label(snap, "Open button")["shadow"] is True
    nested = by_label(snap, "Nested button")
    unreadable = {e["tag"]: e for e in snap["elements"] if e.get("unreadable")}
    assert set(unreadable) == {"x-closed", "x-deep-closed", "span"}
    assert all(e["unreadable"] == "closed-shadow-root" for e in unreadable.values())
    assert unreadable["x-closed"]["label"] == "Closed widget"
    assert "secret" not in dumps(snap).lower() and "CLOSED-TEXT" not in dumps(snap)
    assert r.click(nested["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicked") == "nested"


SHADOW_HOST_NAMES = ["article", "aside", "blockquote", "body", "div", "footer", "h1", "h2", "h3", "h4", "h5", "h6",
                     "header", "main", "nav", "p", "section", "span", "x-widget"]


def test_an_open_shadow_root_on_every_valid_shadow_host_is_read(page: Page, fixtures_site: Site) -> None:
    # The walk asks for a shadow root only on a tag that can host one (DOM Standard "valid shadow host
    # name": the 18 names, or a custom element name; a customized built-in keeps its tag's name, a
    # declarative root follows the same rule). Each host's open root is read, whether text is still being
    # read or only elements are (a maxChars spent before the hosts).
    r = open_page(page, fixtures_site, "shadow-hosts.html")
    expected = {f"SH {n}" for n in SHADOW_HOST_NAMES} | {"SH declarative section", "SH customized p"}
    for max_chars in (12000, 20):
        snap = r.snapshot(max_chars=max_chars)
        assert {e["label"] for e in snap["elements"] if e["role"] == "button"} == expected, max_chars
    text = r.snapshot()["text"]
    assert all(f"TX {n}" in text for n in SHADOW_HOST_NAMES), text


# ---------------------------------------------------------------- frames


def test_same_origin_frames_are_read_and_cross_origin_ones_reported(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "frames.html")
    page.wait_for_function("document.getElementById('cross').contentWindow.length === 0")
    page.wait_for_timeout(200)
    assert len(page.frames) == 4
    snap = r.snapshot()
    assert "Frame child text." in snap["text"] and "Srcdoc text" in snap["text"]
    assert snap["text"].count("Frame child text.") == 1  # the cross-origin copy is not readable
    frame_button = by_label(snap, "Frame button")
    assert frame_button["frame"] is True
    cross = [e for e in snap["elements"] if e.get("unreadable") == "cross-origin-frame"]
    assert [(e["tag"], e["label"]) for e in cross] == [("iframe", "Cross-origin frame")]
    assert r.click(frame_button["handle"]) == {"clicked": True}
    same = page.frame_locator("#same").locator("body")
    assert same.evaluate("() => window.clicked") == 1
    assert r.type(by_label(snap, "Frame field")["handle"], "in a frame") == {"typed": 10}
    assert same.evaluate("() => document.getElementById('field').value") == "in a frame"


# ---------------------------------------------------------------- value-free


def test_snapshot_never_returns_values_editable_content_or_password_like_text(
    page: Page, fixtures_site: Site
) -> None:
    r = open_page(page, fixtures_site, "values.html")
    snap = r.snapshot()
    sel = r.selector_snapshot()
    typed = r.type(by_label(snap, "Password")["handle"], "TYPED-PASSWORD")
    assert typed == {"typed": 14}
    assert page.evaluate("document.getElementById('pw').value") == "PASSWORD-SECRETTYPED-PASSWORD"
    after = r.snapshot()
    for answer in (snap, sel, after):
        out = dumps(answer)
        for secret in [*SECRETS, "TYPED-PASSWORD"]:
            assert secret not in out, (secret, out)
        assert "Visible paragraph." in answer["text"]
    labels = {e["label"] for e in snap["elements"]}
    assert {"Name", "Password", "Notes", "Choice", "Email", "Editor", "Remember days"} <= labels
    # v1.1 (§9): a select's options are page markup listed as elements, the chosen one marked `selected`;
    # the select itself still carries no value and names nothing else with it.
    choice = snap["elements"].index(by_label(snap, "Choice"))
    options = snap["elements"][choice + 1 : choice + 3]
    assert [(e["role"], e["label"], e.get("states")) for e in options] == [
        ("option", "ONE", None),
        ("option", "SELECT-SECRET", ["selected"]),
    ]
    assert "SELECT-SECRET" not in dumps([e for e in snap["elements"] if e["tag"] != "option"])
    assert "SELECT-SECRET" not in snap["text"]
    assert by_label(snap, "Editor")["role"] == "textbox"


# ---------------------------------------------------------------- every input type

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


# ---------------------------------------------------------------- bounds


def test_big_list_keeps_the_one_button_when_max_elements_bites(page: Page, fixtures_site: Site) -> None:
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


@pytest.mark.parametrize("max_chars", [1, 2, 6, 7, 8, 9, 10, 101, 1000])
def test_text_bound_never_splits_a_pair_and_lone_surrogates_are_replaced(
    page: Page, fixtures_site: Site, max_chars: int
) -> None:
    r = open_page(page, fixtures_site, "emoji.html")
    snap = r.snapshot(max_chars=max_chars)
    full = "A\ufffdB\ufffdC\nX" + "\U0001f600" * 5000 + "\nGo \ufffd\U0001f680"
    assert snap["truncated"] is True
    assert full.encode("utf-16-le")[: 2 * utf16_len(snap["text"])].decode("utf-16-le") == snap["text"]
    assert utf16_len(snap["text"]) in (max_chars, max_chars - 1)
    assert snap["title"] == "Emoji \U0001f600 lone \ufffd end"
    assert by_label(snap, "Go \ufffd\U0001f680")["tag"] == "button"


def test_untruncated_emoji_text_is_whole(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "emoji.html")
    snap = r.snapshot(max_chars=12000)
    assert snap["truncated"] is False
    assert snap["text"] == "A\ufffdB\ufffdC\nX" + "\U0001f600" * 5000 + "\nGo \ufffd\U0001f680"


def test_page_made_element_names_are_bounded_and_well_formed(page: Page, fixtures_site: Site) -> None:
    """Regression: a page could make every snapshot of itself exceed 32 MiB through 100,000-character
    custom element names, and pass lone surrogates through ``tag``."""
    r = open_page(page, fixtures_site, "long-tags.html")
    snap = r.snapshot(max_chars=10)
    assert snap["truncated"] is True
    assert len(dumps(snap)) < 200_000
    tags = [e["tag"] for e in snap["elements"]]
    assert tags and all(utf16_len(t) <= 128 for t in tags)
    assert sum(t.startswith("x-0aaa") for t in tags) == 1
    dumps(snap).encode("utf-8")  # no lone surrogate anywhere


# ---------------------------------------------------------------- registry lifetime


def test_hash_change_clears_the_registry(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "nav.html")
    snap = r.snapshot()
    counter = by_label(snap, "Counter")["handle"]
    assert r.click(counter) == {"clicked": True}
    assert r.click(by_label(snap, "Hash link")["handle"]) == {"clicked": True}
    page.wait_for_function("location.hash === '#section'")
    refused(r.click(counter), "NODE_REPLACED", False)
    assert page.evaluate("window.clicks") == 1
    fresh = r.snapshot()
    assert r.click(by_label(fresh, "Counter")["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicks") == 2


def test_popstate_and_pagehide_clear_the_registry(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "nav.html")
    counter = by_label(r.snapshot(), "Counter")["handle"]
    page.evaluate("history.pushState({}, '', '?pushed')")
    assert r.click(counter) == {"clicked": True}  # pushState alone fires nothing: the page is the same
    page.evaluate("history.back()")
    page.wait_for_function("!location.search")
    refused(r.click(counter), "NODE_REPLACED", False)
    counter = by_label(r.snapshot(), "Counter")["handle"]
    # pagehide is what a back/forward-cache entry sees before it is frozen.
    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: true}))")
    refused(r.click(counter), "NODE_REPLACED", False)
    assert page.evaluate("window.clicks") == 1


def test_navigation_and_back_forward_never_revive_a_handle(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "nav.html")
    snap = r.snapshot()
    counter = by_label(snap, "Counter")["handle"]
    assert r.click(by_label(snap, "Other page")["handle"]) == {"clicked": True}
    page.wait_for_url("**/other.html")
    refused(r.click(counter), "NODE_REPLACED", False)
    other = by_label(r.snapshot(), "Other button")["handle"]
    page.go_back(wait_until="load")
    refused(r.click(counter), "NODE_REPLACED", False)
    page.go_forward(wait_until="load")
    refused(r.click(other), "NODE_REPLACED", False)
    page.go_back(wait_until="load")
    assert page.evaluate("window.clicks || 0") == 0


def test_a_new_snapshot_or_another_key_does_not_reach_old_handles(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "nav.html")
    old = by_label(r.snapshot(), "Counter")["handle"]
    stranger = Reader(page)  # another gateway: another key, another registry
    refused(stranger.click(old), "NODE_REPLACED", False)
    new = by_label(r.snapshot(), "Counter")["handle"]
    assert new != old
    refused(r.click(old), "NODE_REPLACED", False)
    assert r.click(new) == {"clicked": True}
    assert page.evaluate("window.clicks") == 1


# ---------------------------------------------------------------- actions


def test_click_activates_the_captured_node(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "actions.html")
    snap = r.snapshot()
    assert r.click(by_label(snap, "count: 0")["handle"]) == {"clicked": True}
    assert r.click(by_label(snap, "Agree")["handle"]) == {"clicked": True}
    assert page.evaluate("[document.getElementById('counter').textContent, agree.checked]") == [
        "count: 1",
        True,
    ]
    assert by_label(r.snapshot(), "count: 1")["tag"] == "button"


def test_node_replaced_between_snapshot_and_click_is_refused(page: Page, fixtures_site: Site) -> None:
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
    r = open_page(page, fixtures_site, "actions.html")
    handle = by_label(r.snapshot(), label)["handle"]
    refused(r.type(handle, "never typed"), code, True)
    values = page.evaluate("Array.from(document.querySelectorAll('input'), i => i.value)")
    assert "never typed" not in values


def test_typed_value_reaches_the_page_with_events_and_never_a_snapshot(
    page: Page, fixtures_site: Site
) -> None:
    r = open_page(page, fixtures_site, "actions.html")
    plain = by_label(r.snapshot(), "Plain")["handle"]
    hostile = 'He said "hi" </script><script>alert(1)</script> \u2028\u2029 \U0001d11e\U0001f680 ok'
    assert r.type(plain, hostile) == {"typed": len(hostile)}
    assert r.type(plain, "!") == {"typed": 1}
    assert page.evaluate("document.getElementById('plain').value") == hostile + "!"
    assert page.evaluate("window.seen") == [
        ["input", hostile],
        ["change", hostile],
        ["input", hostile + "!"],
        ["change", hostile + "!"],
    ]
    out = dumps(r.snapshot()) + dumps(r.selector_snapshot())
    assert "alert(1)" not in out and "\U0001d11e" not in out


def test_labels_are_computed_like_assistive_technology(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "labels.html")
    snap = r.snapshot()
    got = [(e["tag"], e["role"], e["label"], e.get("text")) for e in snap["elements"]]
    assert got == [
        ("a", "link", "Link in an aria-hidden menu", None),
        ("div", "generic", "", "Clickable div text"),
        ("button", "button", "Completed", None),
        ("button", "button", "Inbox (3)", None),
        ("input", "textbox", "Billing address", None),
        ("input", "textbox", "E-mail", None),
        ("button", "button", "Close dialog", None),
        ("button", "button", "Only a tooltip", None),
        ("img", "img", "A tiny picture", None),
        ("a", "link", "Logo home", None),
        ("img", "img", "Logo", None),
        ("h2", "heading", "Heading with emphasis", None),
    ]
    assert snap["elements"][-1]["level"] == 4  # aria-level wins over the tag
