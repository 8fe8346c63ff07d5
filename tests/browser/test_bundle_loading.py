"""Each document's world compiles a bundle once and reuses it (CONTRACT.md §9; docs/reader.md "Loading the
bundles"), in real headless Chromium, evaluated exactly as a host does (``hostworld.HostWorld``).

What a user would notice if this went wrong: a stale bundle from another build answering, a page's own
script reaching the reader, a handle surviving a navigation or a history traversal.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Site
from hostworld import HostWorld
from kelpie_gateway import reader
from playwright.sync_api import Page
from readerhelp import Reader, by_label

SLOT = reader.bundle_slot("snapshot")
TAMPER = Path(__file__).resolve().parents[2] / "fixtures" / "pages" / "tamper-globals.js"


def tamper_script(slots: list[str]) -> str:
    """The page script of fixtures/pages/tamper-globals.js with fakes under `slots`."""
    return TAMPER.read_text(encoding="utf-8").replace("SLOTS", json.dumps(slots))


PROBE = "(() => { const d = Object.getOwnPropertyDescriptor(globalThis, %s); return d ? {type: typeof d.value, writable: d.writable, configurable: d.configurable, enumerable: d.enumerable, probe: d.value.probe || null} : null; })()"


def kept(world: HostWorld, slot: str = SLOT) -> dict[str, object] | None:
    value = world.evaluate(PROBE % json.dumps(slot))
    assert value is None or isinstance(value, dict)
    return value


def test_a_document_installs_its_bundle_once_and_a_new_document_starts_fresh(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the loader (docs/reader.md "Loading the bundles"): the first script installs its bundle as a
    non-writable, non-configurable, non-enumerable global of the world, later scripts run that very function,
    and a new document's world starts without it and without the old registry."""
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    assert kept(r.world) is None  # a fresh world holds nothing
    first = r.snapshot()
    assert kept(r.world) == {
        "type": "function",
        "writable": False,
        "configurable": False,
        "enumerable": False,
        "probe": None,
    }
    # Mark the kept function; the next snapshot must run that very function, not compile another.
    r.world.evaluate(f"globalThis[{json.dumps(SLOT)}].probe = 'kept'")
    again = r.snapshot()
    assert kept(r.world)["probe"] == "kept"  # type: ignore[index]
    assert [e["label"] for e in again["elements"]] == [e["label"] for e in first["elements"]]
    handle = by_label(again, "Press")["handle"]
    assert r.click(handle) == {"clicked": True}

    page.goto(fixtures_site.url("reader/other.html"))
    assert kept(r.world) is None  # the new document's world: no bundle, nothing of the old registry
    assert r.click(handle)["error"]["code"] == "NODE_REPLACED"
    other = r.snapshot()
    assert by_label(other, "Other button")["role"] == "button"
    assert kept(r.world)["probe"] is None  # type: ignore[index]


def test_a_bundle_of_another_build_is_never_run(page: Page, fixtures_site: Site) -> None:
    """Guards the build-keyed slot: a bundle that another build's loader left in the world, under its own
    digest, is never run by this build's scripts."""
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    # An older build's loader left its snapshot bundle in this world under its own digest.
    stale_slot = SLOT[: -len(reader.sources_digest())] + "0" * 64
    stale = f"{reader.LOADER}({json.dumps(stale_slot)}, () => async () => ({{stale: true}}))({{}})"
    assert r.world.evaluate(stale) == {"stale": True}
    snap = r.snapshot()
    assert "stale" not in snap and by_label(snap, "Press")["role"] == "button"
    assert kept(r.world, stale_slot)["type"] == "function"  # type: ignore[index]  # left alone, unused


def test_a_page_that_redefines_globals_cannot_reach_or_tamper_with_the_bundle(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the isolated world against the page: a page script that runs first in its main world
    (fixtures/pages/tamper-globals.js), plants fakes under the bundles' slots and breaks the built-ins changes
    nothing of the snapshot, click and type the isolated world runs."""
    page.add_init_script(tamper_script([reader.bundle_slot(name) for name in ("snapshot", "click", "type")]))
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    planted = r.world.cdp.send(  # the page's main world (no contextId): its fake is in place
        "Runtime.evaluate", {"expression": f"typeof window[{json.dumps(SLOT)}]", "returnByValue": True}
    )
    assert planted["result"]["value"] == "function"
    snap = r.snapshot()
    assert r.click(by_label(snap, "Press")["handle"]) == {"clicked": True}
    snap = r.snapshot()
    assert by_label(snap, "Pressed")["role"] == "button"  # the real click ran the page's own handler
    assert r.type(by_label(snap, "Name")["handle"], "abc") == {"typed": 3}
    # Read back through the isolated world: the page's main world has no working built-ins left.
    assert r.world.evaluate("document.getElementById('name').value") == "abc"
    assert r.world.evaluate("document.documentElement.dataset.tampered || null") is None
    assert kept(r.world)["type"] == "function"  # type: ignore[index]  # the world's own, not the page's


def test_history_traversal_runs_the_kept_bundle_with_a_cleared_registry(
    page: Page, fixtures_site: Site
) -> None:
    """Guards a document that back/forward brings back (possibly from the back/forward cache, world and bundle
    included): its kept bundle runs with the registry `pagehide` cleared, so an old handle is NODE_REPLACED
    and new snapshots work."""
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    handle = by_label(r.snapshot(), "Press")["handle"]
    page.goto(fixtures_site.url("reader/other.html"))
    assert by_label(r.snapshot(), "Other button")["tag"] == "button"
    page.go_back()  # the document may come back from the back/forward cache, world and bundle included
    assert page.url.endswith("reader/plain.html")
    assert r.click(handle)["error"]["code"] == "NODE_REPLACED"  # pagehide cleared the registry
    snap = r.snapshot()
    assert r.click(by_label(snap, "Press")["handle"]) == {"clicked": True}
    assert by_label(r.snapshot(), "Pressed")["tag"] == "button"
    page.go_forward()
    assert by_label(r.snapshot(), "Other button")["tag"] == "button"


# ---------------------------------------------------------------- the short form (reader.kept_script)
def registry_present(world: HostWorld, key: str) -> bool:
    return bool(
        world.evaluate(
            f"Object.getOwnPropertyDescriptor(globalThis, {json.dumps('__kelpieReader_' + key)}) !== undefined"
        )
    )


def test_the_short_form_runs_the_kept_bundle_and_nothing_in_a_world_without_it(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the short form in a real world: without the bundle it runs nothing (no registry, no typing, no
    click) and answers the marker; once the whole script ran, it runs the kept function with the script's own
    parameters, one effect per call."""
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    full = reader.snapshot_script(r.key, max_chars=12000, max_elements=200)
    made = reader.kept_script(full)
    assert made is not None and made[0] == SLOT
    slot, short = made
    assert len(short) < 600 < len(full)  # the bundle is not in it
    # A world without the bundle: the short form only looks, answers the marker, and runs nothing.
    missing = r.world.evaluate(short)
    assert missing == {reader.KEPT_MISSING: slot} and reader.bundle_missing(missing, slot)
    assert kept(r.world) is None and not registry_present(r.world, r.key)
    first = r.world.evaluate(full)  # the whole script installs the bundle, as before
    r.world.evaluate(f"globalThis[{json.dumps(SLOT)}].probe = 'kept'")
    again = r.world.evaluate(short)  # the kept function itself, with the script's own parameters
    assert kept(r.world)["probe"] == "kept"  # type: ignore[index]
    assert [(e["tag"], e["label"]) for e in again["elements"]] == [
        (e["tag"], e["label"]) for e in first["elements"]
    ]
    assert not reader.bundle_missing(again, slot)
    # Acting through short forms: exactly one effect per call.
    name = by_label(again, "Name")["handle"]
    typing = reader.type_script(r.key, name, "Ada")
    type_slot, type_short = reader.kept_script(typing) or ("", "")
    assert r.world.evaluate(type_short) == {reader.KEPT_MISSING: type_slot}  # not installed yet: no effect
    assert r.world.evaluate("document.getElementById('name').value") == ""
    assert r.world.evaluate(typing) == {"typed": 3}
    assert r.world.evaluate(type_short) == {"typed": 3}
    assert r.world.evaluate("document.getElementById('name').value") == "AdaAda"
    clicking = reader.click_script(r.key, by_label(again, "Press")["handle"])
    press = reader.kept_script(clicking)
    assert press is not None
    assert r.world.evaluate(press[1]) == {reader.KEPT_MISSING: press[0]}  # no click happened
    assert r.world.evaluate("document.getElementById('counter').textContent") == "Press"
    assert r.world.evaluate(clicking) == {"clicked": True}
    assert r.world.evaluate("document.getElementById('counter').textContent") == "Pressed"


def test_the_new_document_script_prepares_top_level_documents_only(page: Page, fixtures_site: Site) -> None:
    """Guards reader.new_document_script: Chromium runs it in every new top-level document's world (the named
    bundles installed, the others not), a same-origin frame's world of that name gets nothing, and the short
    form answers at once in a prepared document."""
    r = Reader(page)
    cdp = r.world.cdp
    cdp.send("Page.enable")
    cdp.send(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": reader.new_document_script(), "worldName": reader.WORLD_NAME},
    )
    page.goto(fixtures_site.url("reader/frames.html"))
    for name in ("snapshot", "click", "type"):
        assert kept(r.world, reader.bundle_slot(name))["type"] == "function"  # type: ignore[index]
    assert kept(r.world, reader.bundle_slot("fill")) is None
    # The same-origin frame's world of that name holds nothing: fixed scripts run in the main frame.
    tree = cdp.send("Page.getFrameTree")
    child = next(f["frame"]["id"] for f in tree["frameTree"]["childFrames"] if f["frame"].get("name") != "x")
    context = cdp.send("Page.createIsolatedWorld", {"frameId": child, "worldName": reader.WORLD_NAME})
    probe = PROBE % json.dumps(SLOT)
    inner = cdp.send(
        "Runtime.evaluate",
        {"expression": probe, "contextId": context["executionContextId"], "returnByValue": True},
    )
    assert inner["result"]["value"] is None
    # The prepared bundle answers the short form at once; a new document is prepared again.
    short = reader.kept_script(reader.snapshot_script(r.key, max_chars=500, max_elements=20))
    assert short is not None
    assert r.world.evaluate(short[1])["title"] == "Frames"
    page.goto(fixtures_site.url("reader/plain.html"))
    assert by_label(r.world.evaluate(short[1]), "Press")["role"] == "button"
