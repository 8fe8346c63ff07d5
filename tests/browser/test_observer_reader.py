"""The reader's observer mode (``reader.observer_script``, CONTRACT.md §9 v1.2 "Observers") in real headless
Chromium, run exactly as a host runs it (hostworld.HostWorld): the same reader as ``tab.snapshot`` — the same
text and elements, bounded and value-free — but no registry is made or read, no handle is returned and
nothing is installed in the page (no pagehide/popstate/hashchange listener, no MutationObserver)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from kelpie_gateway import reader
from playwright.sync_api import Page
from readerhelp import Reader, by_label, check_snapshot, dumps, open_page

PAGES = ["values.html", "states.html", "shadow.html", "frames.html", "labels.html", "inputs.html"]

# In the isolated world: count what the next script installs (listeners, observers), and list the registry
# slots the world holds. The counters wrap the world's own built-ins, which only fixed scripts use.
SPY = """(() => {
  const spy = globalThis.__kelpieSpy = { listeners: [], observers: 0 };
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, fn, opts) { spy.listeners.push(type); return add.call(this, type, fn, opts); };
  const MO = globalThis.MutationObserver;
  globalThis.MutationObserver = class extends MO { constructor(cb) { super(cb); spy.observers += 1; } };
  return true;
})()"""
SPIED = """(() => ({
  listeners: globalThis.__kelpieSpy.listeners, observers: globalThis.__kelpieSpy.observers,
  registries: Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__kelpieReader_")),
}))()"""


def observe(r: Reader, max_chars: int = 12000, max_elements: int = 200) -> dict[str, Any]:
    value: dict[str, Any] = r.world.evaluate(reader.observer_script(max_chars=max_chars, max_elements=max_elements))
    # Nothing of an observation names a node or a read: no handle, no continuation, no read token (v1.2).
    assert "rest" not in value and "token" not in value, value
    assert all("handle" not in e for e in value["elements"]), value
    # The snapshot's own checks (bounds, fields, states, well-formed text), its handles and token aside.
    stand_in = {**value, "token": "-", "elements": [{"handle": "-", **e} for e in value["elements"]]}
    check_snapshot(stand_in, max_chars, max_elements)
    return value


def without_handles(snap: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in snap.items() if k not in ("rest", "token")}
    out["elements"] = [{k: v for k, v in e.items() if k != "handle"} for e in snap["elements"]]
    return out


@pytest.mark.parametrize("name", PAGES)
def test_an_observation_reads_what_a_snapshot_reads(page: Page, fixtures_site: Site, name: str) -> None:
    r = open_page(page, fixtures_site, name)
    for max_chars, max_elements in ((12000, 200), (40, 3)):
        assert observe(r, max_chars, max_elements) == without_handles(r.snapshot(max_chars, max_elements))


def test_an_observation_is_value_free(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "values.html")
    page.fill("#t", "TYPED-SECRET")
    page.fill("#pw", "TYPED-PASSWORD")
    text = dumps(observe(r))
    for secret in ("SECRET", "TYPED", "PASSWORD-"):
        assert secret not in text.replace("SELECT-SECRET", ""), text  # a select's option text is markup


def test_an_observation_makes_no_registry_and_installs_nothing(page: Page, fixtures_site: Site) -> None:
    """The control first: an ordinary snapshot makes its registry, three history listeners and a
    MutationObserver. An observer's read of the same document adds none of them, and leaves the other
    gateway's registry and handles as they were."""
    r = open_page(page, fixtures_site, "nav.html")
    r.world.evaluate(SPY)
    observe(r)
    # Only the value watch (24-values.js): three capturing listeners that keep which elements a person
    # typed into, so that no reader, an observer included, takes a caption from such a value. The host
    # installs them in every document at its creation (reader.new_document_script); this bare world gets
    # them from the first read. They remember nothing for the observation and invalidate no ref.
    assert r.world.evaluate(SPIED) == {"listeners": ["beforeinput", "input", "change"], "observers": 0,
                                       "registries": []}
    r.world.evaluate("globalThis.__kelpieSpy.listeners.length = 0")
    counter = by_label(r.snapshot(), "Counter")["handle"]
    spied = r.world.evaluate(SPIED)
    assert sorted(spied["listeners"]) == ["hashchange", "pagehide", "popstate"] and spied["observers"] == 1
    assert spied["registries"] == [f"__kelpieReader_{r.key}"]
    r.world.evaluate("globalThis.__kelpieSpy.listeners.length = 0, globalThis.__kelpieSpy.observers = 0")
    for _ in range(3):
        observe(r)
    assert r.world.evaluate(SPIED) == {"listeners": [], "observers": 0, "registries": [f"__kelpieReader_{r.key}"]}
    assert r.click(counter) == {"clicked": True}  # the other gateway's handle still works
    assert page.evaluate("window.clicks") == 1


def test_an_observation_of_a_corpus_page_matches_its_snapshot(page: Page, corpus_sites: dict[str, Site]) -> None:
    for group, path in (("realworld", "adac.de.kindersitze.html"), ("playwright", "input/select.html"),
                        ("accname", "name/comp_embedded_control.html")):
        page.goto(corpus_sites[group].url(path), wait_until="load")
        r = Reader(page)
        assert observe(r) == without_handles(r.snapshot()), path
