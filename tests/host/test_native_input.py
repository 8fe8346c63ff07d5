"""Native input (issue 28; docs/host.md "Native input"): the host's ``click``, ``hover``, ``drag`` and
``type_keys`` extensions send trusted pointer and key events at a captured element after a hit test, in real
headless Chromium, on the project's own pages under ``fixtures/site/input/`` — controls that listen only to
``pointerdown``, ``mousedown``, ``dblclick``, ``contextmenu`` or ``auxclick``, a ``pointerover`` menu, a
Shift+click range selection, a ``keyup`` autocomplete, an HTML5 drag-and-drop list, a pointer slider, a
button under a fixed cookie dialog, buttons in an open shadow root and a same-origin frame, a button moving by
CSS animation, one removed on ``pointerdown`` and one that steps aside when the pointer arrives — and the
faults: every refusal before any event, and unknown outcomes after one.

One host (Python API) serves the module; the C library (``--via-abi``) runs the covered-dialog journey in
its own test. Each test opens its own tab. Widgets written by others (npm libraries) are driven over MCP in
``test_widgets.py``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from faults_testlib import call_in_thread, chromium_processes, fault_host, kill, unknown_outcome, until
from host_testlib import Host, call, ok, start_host

pytestmark = pytest.mark.timeout(240)
__all__ = ["fault_host"]  # the module's one host (Python API): fixture `host`


# ---------------------------------------------------------------- helpers
def ext(host: Host, name: str, **arguments: Any) -> dict[str, Any]:
    return call(host, "extension.call", {"name": name, "arguments": arguments})


def done(host: Host, name: str, **arguments: Any) -> dict[str, Any]:
    envelope = ext(host, name, **arguments)
    assert envelope["success"], envelope
    return dict(envelope["result"])


def open_tab(host: Host, page: str) -> str:
    return str(ok(host, "tabs.open", {"url": host.site(f"input/{page}")})["tabId"])


def snapshot(host: Host, tab: str) -> dict[str, Any]:
    return ok(host, "tab.snapshot", {"tabId": tab})


def refs(host: Host, tab: str) -> dict[str, str]:
    """label (or visible text) -> ref of a fresh snapshot."""
    return {str(e.get("label") or e.get("text", "")): str(e["ref"]) for e in snapshot(host, tab)["elements"]}


def text(host: Host, tab: str) -> str:
    return str(snapshot(host, tab)["text"])


def refused(envelope: dict[str, Any], code: str) -> str:
    """A refusal before any event; its message."""
    assert envelope["success"] is False, envelope
    assert envelope["error"]["code"] == code, envelope
    assert envelope["mayHaveCompleted"] is False, envelope
    return str(envelope["error"]["message"])


# ---------------------------------------------------------------- what a hand does that tab.click does not
def test_controls_that_tab_click_cannot_reach_react_to_a_hand(host: Host) -> None:
    """pointerdown-, mousedown-, dblclick-, contextmenu- and auxclick-only controls: tab.click (a synthetic
    click) moves none of them; click with the right button/count does, with trusted events, and the first
    control sees a hand's whole sequence in order."""
    tab = open_tab(host, "listeners.html")
    for label in ("Pointerdown only", "Mousedown only", "Double click only", "Context menu only"):
        assert ok(host, "tab.click", {"tabId": tab, "ref": refs(host, tab)[label]}) == {"clicked": True}
    assert "trusted" not in text(host, tab)  # no listener ran
    assert done(host, "click", tabId=tab, ref=refs(host, tab)["Pointerdown only"]) == {
        "clicked": True,
        "target": "same",
    }
    done(host, "click", tabId=tab, ref=refs(host, tab)["Mousedown only"])
    done(host, "click", tabId=tab, ref=refs(host, tab)["Double click only"], clickCount=2)
    done(host, "click", tabId=tab, ref=refs(host, tab)["Context menu only"], button="right")
    done(host, "click", tabId=tab, ref=refs(host, tab)["Middle click only"], button="middle")
    page = text(host, tab)
    for line in (
        "pointerdown on pd trusted=true button=0",
        "mousedown on md trusted=true",
        "dblclick on dbl trusted=true detail=2",
        "contextmenu on ctx trusted=true button=2",
        "auxclick on mid trusted=true button=1",
        "Order: pointerover pointerdown mousedown focus pointerup mouseup click",
    ):
        assert line in page, (line, page)


def test_a_custom_select_that_acts_on_mousedown(host: Host) -> None:
    """bugcases/mousedown-select.html: tab.click neither opens the list nor picks an option; click does both."""
    tab = open_tab(host, "mousedown-select.html")
    ok(host, "tab.click", {"tabId": tab, "ref": refs(host, tab)["Size"]})
    assert "Small" not in text(host, tab)  # the list stayed closed
    done(host, "click", tabId=tab, ref=refs(host, tab)["Size"])
    options = refs(host, tab)
    assert "Large" in options, options  # the open list's options are listed
    done(host, "click", tabId=tab, ref=options["Large"])
    assert "size: L" in text(host, tab)


def test_hover_opens_a_pointerover_menu_and_click_chooses_from_it(host: Host) -> None:
    """bugcases/hover-menu.html: the submenu opens on pointerover only; hover opens it (aria-expanded), the
    pointer stays, and click chooses an item of it."""
    tab = open_tab(host, "hover-menu.html")
    before = refs(host, tab)
    assert "Widgets" not in before
    assert done(host, "hover", tabId=tab, ref=before["Products"]) == {"hovered": True, "target": "same"}
    snap = snapshot(host, tab)
    products = next(e for e in snap["elements"] if e["label"] == "Products")
    assert "expanded" in products.get("states", []), products
    widgets = next(e["ref"] for e in snap["elements"] if e["label"] == "Widgets")
    done(host, "click", tabId=tab, ref=widgets)
    assert "chose widgets" in text(host, tab)


def test_shift_click_extends_a_selection_and_control_click_toggles(host: Host) -> None:
    """A file list selecting ranges on Shift+click: the modifier keys are held (a keydown the page sees)
    and carried by the mouse events."""
    tab = open_tab(host, "range-select.html")
    done(host, "click", tabId=tab, ref=refs(host, tab)["bravo.txt"])
    done(host, "click", tabId=tab, ref=refs(host, tab)["delta.txt"], modifiers=["Shift"])
    snap = snapshot(host, tab)
    assert "Selected: bravo.txt, charlie.txt, delta.txt" in snap["text"], snap["text"]
    assert snap["title"] == "Range selection (Shift down)"
    selected = [e["label"] for e in snap["elements"] if "selected" in e.get("states", [])]
    assert selected == ["bravo.txt", "charlie.txt", "delta.txt"], selected
    done(host, "click", tabId=tab, ref=refs(host, tab)["charlie.txt"], modifiers=["Control"])
    assert "Selected: bravo.txt, delta.txt" in text(host, tab)


def test_type_keys_drives_an_autocomplete_that_listens_to_keyup(host: Host) -> None:
    """tab.type sets the value without a key event, so no suggestion appears; type_keys sends each key and
    the list filters; a suggestion that acts on mousedown is then chosen by click. The text never comes
    back (result, snapshot, host log)."""
    tab = open_tab(host, "autocomplete.html")
    ok(host, "tab.type", {"tabId": tab, "ref": refs(host, tab)["City"], "text": "B"})
    assert "Keys seen: 0" in text(host, tab)
    assert done(host, "fill", tabId=tab, ref=refs(host, tab)["City"], text="") == {"filled": 0}
    assert done(host, "type_keys", tabId=tab, ref=refs(host, tab)["City"], text="Br") == {"typed": 2}
    found = refs(host, tab)
    assert "Keys seen: 2" in text(host, tab)
    assert {"Bratislava", "Brussels"} <= set(found) and "Berlin" not in found, found
    assert done(host, "type_keys", tabId=tab, text="u", delayMs=20) == {"typed": 1}  # the focused field
    found = refs(host, tab)
    assert "Brussels" in found and "Bratislava" not in found, found
    done(host, "click", tabId=tab, ref=found["Brussels"])
    page = text(host, tab)
    assert "Chosen: Brussels" in page and "Bru" not in page.replace("Brussels", ""), page
    assert not any("Bru" in line for line in host.process.lines)


def test_type_keys_sends_line_breaks_tabs_and_characters_outside_the_layout(host: Host) -> None:
    """Enter for a line break (one for CR LF), Tab moves focus, and characters with no US key arrive as
    inserted text: keys.html counts what reaches its first field."""
    tab = str(ok(host, "tabs.open", {"url": host.site("keys.html")})["tabId"])
    first = refs(host, tab)["First field"]
    assert done(host, "type_keys", tabId=tab, ref=first, text="né日🙂") == {"typed": 4}
    assert "First field has 4 characters" in text(host, tab)  # the page counts code points
    done(host, "type_keys", tabId=tab, text="\t")
    assert "Focused: second" in text(host, tab)


def test_html5_drag_and_drop_reorders_a_list_and_drops_into_a_bin(host: Host) -> None:
    """draggable="true" items are listed (so drag has a ref to hold); drag runs a real HTML5 drag
    (dragstart, dragover, drop, dragend) through the browser."""
    tab = open_tab(host, "dnd.html")
    items = refs(host, tab)
    assert {"Write the report", "Call the bank", "Water the plants"} <= set(items), items
    assert done(host, "drag", tabId=tab, ref=items["Water the plants"], toRef=items["Write the report"]) == {
        "dragged": True,
        "via": "html5",
        "target": "same",
    }
    page = text(host, tab)
    assert "Order: Water the plants, Write the report, Call the bank" in page, page
    assert "Events: dragstart dragover drop dragend" in page, page
    items = refs(host, tab)
    done(host, "drag", tabId=tab, ref=items["Call the bank"], toRef=items["Done bin"])  # its heading
    assert "Done: Call the bank" in text(host, tab)


def test_drag_moves_a_pointer_slider_by_a_distance(host: Host) -> None:
    """A slider driven by pointer events only (pointer capture): drag by {x, y} presses its thumb, moves in
    steps and releases; a drag that would leave the viewport is refused before any event."""
    tab = open_tab(host, "slider.html")
    thumb = refs(host, tab)["Volume"]
    assert done(host, "drag", tabId=tab, ref=thumb, by={"x": 200, "y": 0}) == {
        "dragged": True,
        "via": "pointer",
        "target": "same",
    }
    snap = snapshot(host, tab)
    assert "Volume: 50" in snap["text"], snap["text"]
    assert "Moves: 0" not in snap["text"], snap["text"]
    thumb = next(e["ref"] for e in snap["elements"] if e["label"] == "Volume")
    message = refused(ext(host, "drag", tabId=tab, ref=thumb, by={"x": 5000, "y": 0}), "NOT_ACTIONABLE")
    assert "outside the 1280x800 viewport" in message, message
    assert "Volume: 50" in text(host, tab)
    refused(ext(host, "drag", tabId=tab, ref=thumb, toRef=thumb, by={"x": 1, "y": 0}), "INVALID_PARAMS")


# ---------------------------------------------------------------- the hit test
def test_a_button_under_a_cookie_dialog_is_refused_naming_the_dialog(host: Host) -> None:
    """bugcases/covered.html: the button's centre is under a fixed full-screen dialog: refused before any
    event, the message names the dialog, the button's handler never ran; once the agent accepts the
    cookies (a native click on the dialog's own button), the same click works."""
    _covered_journey(host)


def test_the_covered_journey_through_the_c_library() -> None:
    """The same journey with every transaction through the C ABI (--via-abi)."""
    process = start_host(["--approve-pairing", "auto"], "abi")
    try:
        _covered_journey(Host(process, process.pair("native-input-abi"), "abi"))
    finally:
        process.stop()


def _covered_journey(host: Host) -> None:
    tab = open_tab(host, "covered.html")
    message = refused(ext(host, "click", tabId=tab, ref=refs(host, tab)["Buy now"]), "NOT_ACTIONABLE")
    assert "covered by dialog 'We use cookies'" in message, message
    assert "not bought" in text(host, tab)
    # Nothing was dispatched: no reconcile is needed before the next mutation.
    done(host, "click", tabId=tab, ref=refs(host, tab)["Accept cookies"])
    done(host, "click", tabId=tab, ref=refs(host, tab)["Buy now"])
    assert "bought" in text(host, tab).replace("not bought", "")


def test_hit_test_through_an_open_shadow_root_and_a_same_origin_frame(host: Host) -> None:
    """A button inside an open shadow root and one inside a same-origin iframe are hit at their own point
    (the frame's offset, border and padding included); a veil inside the shadow tree and a banner of the
    parent document over the frame are named as covers."""
    tab = open_tab(host, "nested.html")
    assert done(host, "click", tabId=tab, ref=refs(host, tab)["Shadow button"])["target"] == "same"
    assert "Clicked: shadow button trusted=true" in text(host, tab)
    message = refused(
        ext(host, "click", tabId=tab, ref=refs(host, tab)["Veiled shadow button"]), "NOT_ACTIONABLE"
    )
    assert "covered by note 'Shadow veil'" in message, message
    done(host, "click", tabId=tab, ref=refs(host, tab)["Framed button"])
    assert "Clicked in frame: Framed button trusted=true" in text(host, tab)
    ok(host, "tab.navigate", {"tabId": tab, "url": host.site("input/nested.html?cover")})
    message = refused(ext(host, "click", tabId=tab, ref=refs(host, tab)["Framed button"]), "NOT_ACTIONABLE")
    assert "covered by banner 'Sticky header'" in message, message
    done(host, "click", tabId=tab, ref=refs(host, tab)["Low framed button"])
    assert "Clicked in frame: Low framed button trusted=true" in text(host, tab)


def test_a_moving_button_is_refused_and_a_still_one_clicked(host: Host) -> None:
    """A button moving by CSS animation is measured twice across an animation frame and refused."""
    tab = open_tab(host, "moving.html")
    message = refused(ext(host, "click", tabId=tab, ref=refs(host, tab)["Moving target"]), "NOT_ACTIONABLE")
    assert "moving" in message, message
    done(host, "click", tabId=tab, ref=refs(host, tab)["Still target"])
    assert "still clicked" in text(host, tab)


def test_an_element_the_page_removes_on_pointerdown(host: Host) -> None:
    """The press reached the element and the page removed it in answer: a success that says so."""
    tab = open_tab(host, "vanish.html")
    assert done(host, "click", tabId=tab, ref=refs(host, tab)["Remove me on press"]) == {
        "clicked": True,
        "target": "same",
        "removed": True,
    }
    assert "removed on pointerdown (trusted=true)" in text(host, tab)


def test_a_press_that_lands_elsewhere_is_an_unknown_outcome(host: Host) -> None:
    """The button steps aside as the pointer arrives, so the press lands on the decoy below: events were
    sent, the watch saw the press miss — EFFECT_NOT_OBSERVED, mayHaveCompleted:true, and the tab wants a
    fresh snapshot before the next mutation."""
    tab = open_tab(host, "dodge.html")
    envelope = ext(host, "click", tabId=tab, ref=refs(host, tab)["Dodging button"])
    unknown_outcome(envelope, "EFFECT_NOT_OBSERVED")
    assert "observe before acting" in envelope["error"]["message"]
    refused(call(host, "tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "RECONCILE_REQUIRED")
    assert "pressed: Decoy" in text(host, tab)


# ---------------------------------------------------------------- refusals and faults
def test_refusals_before_any_event(host: Host) -> None:
    """Disabled, aria-disabled and inert targets, bad refs, out-of-range arguments and an offset outside the
    box: each refused with mayHaveCompleted:false and nothing dispatched (no reconcile demanded)."""
    tab = str(ok(host, "tabs.open", {"url": host.site("keys.html")})["tabId"])
    other = open_tab(host, "listeners.html")
    for label in ("A disabled button", "An aria-disabled button", "A button in an inert section"):
        for name, more in (
            ("click", {}),
            ("hover", {}),
            ("type_keys", {"text": "x"}),
            ("drag", {"by": {"x": 1, "y": 1}}),
        ):  # a dispatched mutation invalidates the tab's refs even when refused: a fresh snapshot each time
            message = refused(
                ext(host, name, tabId=tab, ref=refs(host, tab)[label], **more), "NOT_ACTIONABLE"
            )
            assert "disabled" in message, (name, message)
    message = refused(
        ext(host, "click", tabId=tab, ref=refs(host, tab)["A plain button"], offset={"x": 9000, "y": 1}),
        "INVALID_PARAMS",
    )
    assert "outside the element" in message, message
    plain = refs(host, tab)["A plain button"]
    for bad in (
        {"clickCount": 4},
        {"button": "thumb"},
        {"modifiers": ["Hyper"]},
        {"modifiers": ["Shift", "Shift"]},
    ):
        refused(ext(host, "click", tabId=tab, ref=plain, **bad), "INVALID_PARAMS")  # schema: not dispatched
    refused(ext(host, "type_keys", tabId=tab, text=""), "INVALID_PARAMS")
    message = refused(ext(host, "type_keys", tabId=tab, text="x" * 20, delayMs=500), "INVALID_PARAMS")
    assert "8000 ms" in message, message
    plain = refs(host, tab)["A plain button"]
    refused(ext(host, "click", tabId=tab, ref=refs(host, other)["Pointerdown only"]), "CROSS_TAB_REF")
    refused(ext(host, "click", tabId=tab, ref="s999999e1"), "UNKNOWN_REF")
    refused(ext(host, "drag", tabId=tab, ref=plain, toRef="s999999e2"), "UNKNOWN_REF")
    refs(host, tab)
    refused(ext(host, "click", tabId=tab, ref=plain), "STALE_SNAPSHOT")
    page = text(host, tab)
    assert "No key yet" in page and "Focused: nothing" in page, page


def test_refs_are_invalidated_after_each_native_action(host: Host) -> None:
    """A mutating extension: the tab's refs die when it is dispatched, as after tab.click."""
    tab = open_tab(host, "listeners.html")
    found = refs(host, tab)
    done(host, "hover", tabId=tab, ref=found["Mousedown only"])
    refused(ext(host, "click", tabId=tab, ref=found["Pointerdown only"]), "REFS_INVALIDATED")


def test_renderer_killed_mid_type_keys_answers_at_once_as_an_unknown_outcome(host: Host) -> None:
    """A renderer crash while keys are being sent (delayMs 300 × 20 keys): answered at once, RENDERER_FAILED
    with mayHaveCompleted:true (some keys reached the page)."""
    tab = str(ok(host, "tabs.open", {"url": host.site("keys.html")})["tabId"])
    first = refs(host, tab)["First field"]
    arguments = {"tabId": tab, "ref": first, "text": "k" * 20, "delayMs": 300}
    thread, box = call_in_thread(host, "extension.call", {"name": "type_keys", "arguments": arguments})
    time.sleep(1.5)
    killed = time.monotonic()
    kill(chromium_processes(host)[1])
    thread.join(15)
    unknown_outcome(box["env"], "RENDERER_FAILED")
    assert box["answered"] - killed < 2.5, "type_keys waited for its deadline instead of the fault"
    until(lambda: ok(host, "tabs.list", {}) is not None, 10)
    assert call(host, "tab.navigate", {"tabId": tab, "url": host.site("keys.html")})["success"]


def test_a_dialog_opened_by_a_native_click_is_answered_while_the_click_waits(host: Host) -> None:
    """A confirm() opened by the trusted click blocks the renderer: the click stays outstanding, the
    recovery extensions see and accept the dialog, and the click then completes as a success."""
    tab = str(ok(host, "tabs.open", {"url": host.site("dialog.html")})["tabId"])
    thread, box = call_in_thread(
        host,
        "extension.call",
        {"name": "click", "arguments": {"tabId": tab, "ref": refs(host, tab)["Ask for confirmation"]}},
    )
    until(lambda: bool(done(host, "dialog_observe", tabId=tab)["dialogs"]), 10)
    assert done(host, "dialog_accept", tabId=tab)["handled"] == "accepted"
    thread.join(15)
    assert box["env"] == {
        "version": 1,
        "id": 1,
        "success": True,
        "result": {"clicked": True, "target": "same"},
    }
    assert "Answer: confirmed" in text(host, tab)
