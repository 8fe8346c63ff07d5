"""The read-only lane's reader entries (``links_script``, ``element_script``, ``element_node_script``,
``storage_script``; docs/reader.md source map) in real headless Chromium, run as a host runs them: the same
walk and names as a snapshot, nothing kept, never a value. The host side (redaction, the extensions) is
tests/host/test_read_lane.py."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Site
from kelpie_gateway import element_node_script, element_script, links_script, storage_script
from playwright.sync_api import Page
from readerhelp import Reader, by_label, dumps, open_page, refused

SPIED_REGISTRIES = 'Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__kelpieReader_"))'


def links(r: Reader, **options: int) -> dict[str, Any]:
    value: dict[str, Any] = r.world.evaluate(links_script(**options))
    return value


@pytest.mark.parametrize("name", ["links2000.html", "frames.html", "shadow.html", "nav.html"])
def test_links_are_the_snapshots_links(page: Page, fixtures_site: Site, name: str) -> None:
    r = open_page(page, fixtures_site, name)
    listed = links(r, limit=500)
    every: list[dict[str, Any]] = list(listed["links"])
    while len(every) < listed["total"]:
        every += links(r, offset=len(every), limit=500)["links"]
    assert len(every) == listed["total"]
    in_snapshots = [e for snap in r.pages() for e in snap["elements"] if e["role"] == "link"]
    assert sorted((e["label"] or e.get("text", ""), e.get("url")) for e in in_snapshots) == sorted(
        (link["text"], link.get("url")) for link in every
    )
    assert r.world.evaluate(SPIED_REGISTRIES) == [f"__kelpieReader_{r.key}"]  # only the snapshot's


def test_links_pages_and_bounds(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "links2000.html")
    first = links(r, limit=3)
    assert [link["text"] for link in first["links"]] == ["Home", "News", "Sport"] and first["total"] >= 2003
    assert links(r, offset=first["total"], limit=5)["links"] == []
    with pytest.raises(ValueError):
        links_script(limit=501)


def test_element_facts_never_a_value(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "values.html")
    page.fill("#t", "TYPED-SECRET")
    page.evaluate("document.getElementById('t').setAttribute('aria-valuetext', 'ARIA-SECRET')")
    snap = r.snapshot()
    for label in ("Name", "Password", "Notes", "Choice", "Email", "Editor"):
        facts = r.world.evaluate(element_script(r.key, by_label(snap, label)["handle"]))
        assert "error" not in facts, facts
        text = dumps(facts)
        for secret in ("SECRET", "TYPED"):
            assert secret not in text, (label, facts)
        assert all(a["name"] != "value" for a in facts["attributes"])
        assert facts["name"] == label and facts["visible"] is True and facts["box"]["width"] > 0
    name = r.world.evaluate(element_script(r.key, by_label(snap, "Name")["handle"]))
    assert {a["name"] for a in name["attributes"]} == {"id"}
    page.evaluate("document.getElementById('t').remove()")
    refused(r.world.evaluate(element_script(r.key, by_label(snap, "Name")["handle"])), "NODE_REPLACED", False)
    refused(r.world.evaluate(element_node_script(r.key, by_label(snap, "Name")["handle"])), "NODE_REPLACED", False)


def test_storage_sizes_and_names_never_values(page: Page, fixtures_site: Site) -> None:
    r = open_page(page, fixtures_site, "plain.html")
    page.evaluate("""() => { localStorage.clear(); sessionStorage.clear();
        localStorage.setItem('k1', 'VALUE-SECRET'); localStorage.setItem('k\\u00e9', '');
        sessionStorage.setItem('s', 'x'.repeat(300)); }""")
    value = r.world.evaluate(storage_script(max_keys=1))
    assert value["origin"] == fixtures_site.url("").rstrip("/")
    assert value["localStorage"]["count"] == 2 and len(value["localStorage"]["keys"]) == 1
    assert value["localStorage"]["truncated"] is True
    assert value["sessionStorage"] == {"count": 1, "keys": [{"key": "s", "size": 300}], "truncated": False}
    assert "VALUE-SECRET" not in dumps(value) and "databases" in value["indexedDB"]
    page.goto("about:blank")  # an opaque origin: no storage to read
    r = Reader(page)
    blank = r.world.evaluate(storage_script())
    assert "unavailable" in blank["localStorage"] or blank["localStorage"]["count"] == 0, blank
