"""Value-freedom (contract §9): no answer of the reader carries a form value, editable content or
password-like text, in real headless Chromium, with the scripts driven exactly as a host drives them
(readerhelp.Reader). The corpus test (test_corpus.py) checks the same rule with marker values on 107 real
pages.
"""

from __future__ import annotations

from conftest import Site
from playwright.sync_api import Page
from readerhelp import by_label, dumps, open_page

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
