"""Each document's world compiles a bundle once and reuses it (CONTRACT.md §9; docs/reader.md "Loading the
bundles"), in real headless Chromium, evaluated exactly as a host does (``hostworld.HostWorld``).

What a user would notice if this went wrong: a stale bundle from another build answering, a page's own
script reaching the reader, a handle surviving a navigation or a history traversal.
"""

from __future__ import annotations

import json

from conftest import Site
from hostworld import HostWorld
from kelpie_gateway import reader
from playwright.sync_api import Page
from readerhelp import Reader, by_label

SLOT = reader.bundle_slot("snapshot")
PROBE = "(() => { const d = Object.getOwnPropertyDescriptor(globalThis, %s); return d ? {type: typeof d.value, writable: d.writable, configurable: d.configurable, enumerable: d.enumerable, probe: d.value.probe || null} : null; })()"


def kept(world: HostWorld, slot: str = SLOT) -> dict[str, object] | None:
    value = world.evaluate(PROBE % json.dumps(slot))
    assert value is None or isinstance(value, dict)
    return value


def test_a_document_installs_its_bundle_once_and_a_new_document_starts_fresh(
    page: Page, fixtures_site: Site
) -> None:
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    assert kept(r.world) is None  # a fresh world holds nothing
    first = r.snapshot()
    assert kept(r.world) == {
        "type": "function", "writable": False, "configurable": False, "enumerable": False, "probe": None
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
    # The page's own script runs first, in its main world: it plants a fake bundle under the real slot
    # names and replaces the built-ins the loader and the reader use; any call into its code marks the DOM.
    slots = json.dumps([reader.bundle_slot(name) for name in ("snapshot", "click", "type")])
    page.add_init_script(
        f"""(() => {{
  const mark = (what) => () => {{ document.documentElement.dataset.tampered = what; return {{clicked: true, typed: 99, elements: []}}; }};
  for (const slot of {slots}) Object.defineProperty(window, slot, {{ value: mark(slot), configurable: false }});
  Object.getOwnPropertyDescriptor = mark("getOwnPropertyDescriptor");
  Object.defineProperty = mark("defineProperty");
  Function.prototype.call = mark("call");
  Function.prototype.apply = mark("apply");
  Array.prototype.map = mark("map");
  Array.prototype.push = mark("push");
  JSON.stringify = mark("stringify");
  Map.prototype.set = mark("Map.set");
  Promise.prototype.then = mark("then");
  window.setTimeout = mark("setTimeout");
  Object.setPrototypeOf(EventTarget.prototype, new Proxy({{}}, {{ get: (_t, name) => {{
    if (typeof name === "string" && name.startsWith("__kelpie")) document.documentElement.dataset.tampered = name;
    return undefined;
  }} }}));
}})();"""
    )
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


def test_history_traversal_runs_the_kept_bundle_with_a_cleared_registry(page: Page, fixtures_site: Site) -> None:
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
