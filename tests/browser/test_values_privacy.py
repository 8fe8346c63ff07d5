"""Value-freedom (contract §9): no answer of the reader carries a form value, editable content or
password-like text, in real headless Chromium, with the scripts driven exactly as a host drives them
(readerhelp.Reader). The corpus test (test_corpus.py) checks the same rule with marker values on 107 real
pages.
"""

from __future__ import annotations

from conftest import Site
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kelpie_gateway import reader
from playwright.sync_api import Page
from readerhelp import Reader, by_label, dumps, open_page

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


def test_snapshot_never_returns_values_editable_content_or_password_like_text(
    page: Page, fixtures_site: Site
) -> None:
    """Guards value-freedom: no snapshot or selector snapshot, before or after typing into a password field,
    carries a field's value, editable content, password-like (`-webkit-text-security`) text, a hidden input's
    value or an embedded control's value; a select's options are listed as page markup with the chosen one
    `selected`, but the select itself carries no value and names nothing with it."""
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


def test_typed_value_reaches_the_page_with_events_and_never_a_snapshot(
    page: Page, fixtures_site: Site
) -> None:
    """Guards typed text: hostile text (quotes, `</script>`, U+2028/U+2029, astral characters) reaches the
    field verbatim with its input and change events, and shows in no later snapshot or selector snapshot."""
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


# ---------------------------------------------------------------------------------- values a person set
def test_no_button_is_named_by_a_value_a_person_set(page: Page, fixtures_site: Site) -> None:
    """Issue 27: a text field the page turns into a button after the user typed took the typed text as its
    caption (the value becomes the `value` attribute when the type changes). Every way a value can get
    there — the gateway's type, the gateway's fill, a person's keys (trusted key events), the page's own
    script setting it after the person's input — leaves the button unnamed by it; a value only the page's
    script set is page data and still names it, and a button's own `value` attribute is its caption."""
    r = open_page(page, fixtures_site, "typed-button.html")
    snap = r.snapshot()
    assert r.type(by_label(snap, "Typed field")["handle"], "TYPED-SECRET") == {"typed": 12}
    filled = r.world.evaluate(reader.fill_script(r.key, by_label(snap, "Filled field")["handle"], "FILLED-SECRET"))
    assert filled.get("error") is None, filled
    page.click("#keys")
    page.keyboard.type("KEYS-SECRET")
    page.click("#after")
    page.keyboard.type("after-secret")
    page.keyboard.press("Tab")  # change: the page's script rewrites the person's value
    assert page.evaluate("document.getElementById('after').value") == "AFTER-SECRET (checked)"
    page.evaluate("document.getElementById('scripted').value = 'Scripted caption'")
    for field in ("typed", "filled", "keys", "after", "scripted"):
        page.evaluate("(id) => toButton(id)", field)
    assert page.evaluate("document.getElementById('typed').getAttribute('value')") == "TYPED-SECRET"
    after = r.snapshot()
    out = dumps(after) + dumps(r.selector_snapshot())
    for secret in ("TYPED-SECRET", "FILLED-SECRET", "KEYS-SECRET", "AFTER-SECRET", "after-secret"):
        assert secret not in out, (secret, out)
    labels = [e["label"] for e in after["elements"] if e["tag"] == "input"]
    assert labels.count("") == 4 and "Scripted caption" in labels and "Save" in labels, labels


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=3,
                    max_size=40).filter(lambda t: t.strip() == t and len(set(t)) > 1))
def test_property_a_typed_value_never_becomes_a_name(page: Page, fixtures_site: Site, text: str) -> None:
    """Property (issue 27): whatever a person types into a field, turning it into a button never puts that
    text (nor any answer's copy of it) into a snapshot."""
    r = open_page(page, fixtures_site, "typed-button.html")
    field = by_label(r.snapshot(), "Typed field")["handle"]
    assert r.type(field, text) == {"typed": len(text)}
    page.evaluate("(id) => toButton(id)", "typed")
    assert page.evaluate("document.getElementById('typed').getAttribute('value')") == text
    snap = r.snapshot()
    assert all(text not in e["label"] for e in snap["elements"]), snap["elements"]
    assert text not in dumps(snap) and text not in dumps(r.selector_snapshot())


def test_a_value_typed_before_any_reader_call_is_known_from_the_new_document_script(
    page: Page, fixtures_site: Site
) -> None:
    """Issue 27, the host's way (reader.new_document_script registered as the reference host registers it):
    a person types into a field — and into a same-origin frame's — before any snapshot ran in the document;
    the page then turns both into buttons; neither is named by what the person typed. Without the
    new-document script only values set after the first reader call are known (the bundles start watching
    then): this is why the host registers it."""
    r = Reader(page)
    r.world.cdp.send("Page.enable")
    r.world.cdp.send(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": reader.new_document_script(), "worldName": reader.WORLD_NAME},
    )
    page.goto(fixtures_site.url("reader/typed-button.html"), wait_until="load")
    page.click("#keys")
    page.keyboard.type("EARLY-SECRET")
    page.frame_locator("#inner").locator("#inframe").click()
    page.keyboard.type("FRAME-SECRET")
    for field in ("keys", "inframe"):
        page.evaluate("(id) => toButton(id)", field)
    assert page.evaluate("document.getElementById('keys').getAttribute('value')") == "EARLY-SECRET"
    snap = r.snapshot()
    out = dumps(snap) + dumps(r.selector_snapshot())
    assert "EARLY-SECRET" not in out and "FRAME-SECRET" not in out, out
    assert "Save" in {e["label"] for e in snap["elements"]}
