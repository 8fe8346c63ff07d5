"""The flat-tree walk across open shadow roots, slots and same-origin frames, and the `unreadable`
placeholders for closed shadow roots and cross-origin frames (contract §9), in real headless Chromium,
with the scripts driven exactly as a host drives them (readerhelp.Reader).
"""

from __future__ import annotations

from conftest import Site
from playwright.sync_api import Page
from readerhelp import by_label, dumps, open_page


def test_open_shadow_roots_are_read_and_closed_ones_reported(page: Page, fixtures_site: Site) -> None:
    """Guards the walk through open shadow roots (nested ones, slotted light text; elements marked `shadow`)
    and the `closed-shadow-root` placeholders of closed ones, whose content never leaks; a nested shadow
    button clicks."""
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
    """Guards the walk's shortcut of asking for a shadow root only on a tag that can host one (DOM Standard
    "valid shadow host name": the 18 names, or a custom element name; a customized built-in keeps its tag's
    name, a declarative root follows the same rule): each host's open root is read, whether text is still
    being read or only elements are (a maxChars spent before the hosts)."""
    r = open_page(page, fixtures_site, "shadow-hosts.html")
    expected = {f"SH {n}" for n in SHADOW_HOST_NAMES} | {"SH declarative section", "SH customized p"}
    for max_chars in (12000, 20):
        snap = r.snapshot(max_chars=max_chars)
        assert {e["label"] for e in snap["elements"] if e["role"] == "button"} == expected, max_chars
    text = r.snapshot()["text"]
    assert all(f"TX {n}" in text for n in SHADOW_HOST_NAMES), text


def test_same_origin_frames_are_read_and_cross_origin_ones_reported(page: Page, fixtures_site: Site) -> None:
    """Guards frames read inline by a host that does not read frames itself (nothing tagged): a same-origin
    frame and a srcdoc frame are read (elements marked `frame: {origin, depth}`, §9 v1.2, which click and
    type), a cross-origin frame is one `cross-origin-frame` placeholder and none of its text is read."""
    r = open_page(page, fixtures_site, "frames.html")
    page.wait_for_function("document.getElementById('cross').contentWindow.length === 0")
    page.wait_for_timeout(200)
    assert len(page.frames) == 4
    snap = r.snapshot()
    assert "Frame child text." in snap["text"] and "Srcdoc text" in snap["text"]
    assert snap["text"].count("Frame child text.") == 1  # the cross-origin copy is not readable
    frame_button = by_label(snap, "Frame button")
    top = fixtures_site.url("").rstrip("/")
    assert frame_button["frame"] == {"origin": top, "depth": 1}
    assert by_label(snap, "Srcdoc link")["frame"] == {"origin": top, "depth": 1}  # srcdoc: its parent's origin
    assert all("frame" not in e for e in snap["elements"] if e.get("unreadable") == "cross-origin-frame")
    cross = [e for e in snap["elements"] if e.get("unreadable") == "cross-origin-frame"]
    assert [(e["tag"], e["label"]) for e in cross] == [("iframe", "Cross-origin frame")]
    assert r.click(frame_button["handle"]) == {"clicked": True}
    same = page.frame_locator("#same").locator("body")
    assert same.evaluate("() => window.clicked") == 1
    assert r.type(by_label(snap, "Frame field")["handle"], "in a frame") == {"typed": 10}
    assert same.evaluate("() => document.getElementById('field').value") == "in a frame"
