"""The reader's warm-up (docs/reader.md "Warm-up"; reader.new_document_script): once per document, after
`load`, the snapshot bundle reads a small inert document of its own so that the first real snapshot finds
its code compiled. In real headless Chromium, registered exactly as the reference host registers it.

What a user would notice if this went wrong: a page that sees or changes something because of the
warm-up (mutations, calls into its hooked built-ins, an element of the warm-up in its document), a snapshot
that differs from one taken without the warm-up, or a warm-up that disturbs a snapshot already taken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Site
from hostworld import HostWorld
from kelpie_gateway import reader
from playwright.sync_api import Page
from readerhelp import Reader, by_label

HOOK_DOM = Path(__file__).resolve().parents[2] / "fixtures" / "pages" / "hook-dom.js"

# Registered after the product's new-document script, in the same world: counts the warm-up's calls of
# the world's own document factory, so a test can wait until the warm-up ran (the page cannot see this).
SPY = (
    "(() => { const real = DOMImplementation.prototype.createHTMLDocument; globalThis.__warmSpy = [];"
    " DOMImplementation.prototype.createHTMLDocument = function (...a) {"
    " globalThis.__warmSpy.push(document.readyState); return real.apply(this, a); }; })()"
)


def register(r: Reader, *, warm: bool = True, spy: bool = True) -> None:
    """Register the bundles' new-document script as the host does (with or without the warm-up)."""
    cdp = r.world.cdp
    cdp.send("Page.enable")
    source = (
        reader.new_document_script() if warm else f"({reader.preload_script(('snapshot', 'click', 'type'))})"
    )
    cdp.send("Page.addScriptToEvaluateOnNewDocument", {"source": source, "worldName": reader.WORLD_NAME})
    if spy:
        cdp.send("Page.addScriptToEvaluateOnNewDocument", {"source": SPY, "worldName": reader.WORLD_NAME})


def warmed(world: HostWorld) -> list[str]:
    """The document states in which the warm-up ran so far (waits up to 5 s for the first)."""
    for _ in range(100):
        runs = world.evaluate("globalThis.__warmSpy || []")
        assert isinstance(runs, list)
        if runs:
            return runs
        world.page.wait_for_timeout(50)
    return []


WARM_ALL = """(async () => {
  const run = globalThis[SLOT];
  const answers = [];
  let doc = null;
  for (let part = 0; part < 20; part++) {
    const v = await run({ warm: true, doc, part });
    // A count, the warm-up's own inert document (never the page's), whether a part is left.
    answers.push({ keys: Object.keys(v).sort(), own: v.doc !== document && v.doc.defaultView === null,
      same: doc === null || v.doc === doc, warmed: v.warmed });
    if (!v.more) return answers;
    doc = v.doc;
  }
  return answers;
})()"""


def warm_all(world: HostWorld) -> int:
    """Run every part of the warm-up by hand, as reader.WARM_UP does; the elements it described."""
    answers = world.evaluate(WARM_ALL.replace("SLOT", json.dumps(reader.bundle_slot("snapshot"))))
    assert isinstance(answers, list) and 1 < len(answers) < 20, answers
    for answer in answers:
        assert answer["keys"] == ["doc", "more", "warmed"] and answer["own"] and answer["same"], answer
    return sum(int(answer["warmed"]) for answer in answers)


def comparable(snap: dict[str, Any]) -> dict[str, Any]:
    """A snapshot without its handles and its read's token (fresh per read) and its `rest` token."""
    out = {k: v for k, v in snap.items() if k not in ("elements", "rest", "token")}
    out["elements"] = [{k: v for k, v in e.items() if k != "handle"} for e in snap["elements"]]
    return out


def test_the_warm_up_runs_once_after_load_and_reads_nothing_of_the_page(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the warm-up's timing and footprint: it runs once per document, after `load`, leaves no registry,
    answers only counts, and a reloaded document warms up again, once."""
    r = Reader(page)
    register(r)
    page.goto(fixtures_site.url("reader/states.html"))
    assert warmed(r.world) == ["complete"]  # once, after load
    page.wait_for_timeout(200)
    assert len(warmed(r.world)) == 1
    # It left nothing a snapshot keeps: no registry under any key of this gateway's kind.
    assert (
        r.world.evaluate(
            "Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith('__kelpieReader_'))"
        )
        == []
    )
    # Its answer is a count, nothing of the page (and nothing of a field's value).
    assert warm_all(r.world) >= 15
    page.reload()
    page.wait_for_timeout(200)
    assert warmed(r.world) == ["complete"]  # a new document warms up again, once


def test_a_page_that_hooks_the_dom_sees_nothing_of_the_warm_up_and_cannot_change_the_snapshot(
    page: Page, fixtures_site: Site
) -> None:
    """Guards the warm-up's invisibility: a page that hooks its DOM built-ins and observes mutations sees no
    call and no record, the document's element count is unchanged, and the snapshot equals one of the same
    page without hooks and without warm-up."""
    page.add_init_script(HOOK_DOM.read_text(encoding="utf-8"))
    r = Reader(page)
    register(r)
    page.goto(fixtures_site.url("reader/states.html"))
    assert warmed(r.world) == ["complete"]
    page.wait_for_timeout(100)  # anything the warm-up could have caused has been delivered by now
    main_world = r.world.cdp.send(
        "Runtime.evaluate", {"expression": "JSON.stringify(window.__seen)", "returnByValue": True}
    )
    assert json.loads(main_world["result"]["value"]) == []  # no hooked call, no mutation, no observer
    elements = r.world.evaluate("document.getElementsByTagName('*').length")
    hooked = r.snapshot()
    assert r.world.evaluate("document.getElementsByTagName('*').length") == elements

    # The same page without the hooks and without the warm-up, in another tab: the same snapshot.
    other = page.context.new_page()
    plain = Reader(other, key=r.key)
    register(plain, warm=False, spy=False)
    other.goto(fixtures_site.url("reader/states.html"))
    cold = plain.snapshot()
    assert comparable(hooked) == comparable(cold)
    assert not {"Send", "Heading", "Choice", "More"} & {e["label"] for e in hooked["elements"]}
    other.close()


def test_a_warm_up_after_a_snapshot_keeps_its_refs_and_continuation(page: Page, fixtures_site: Site) -> None:
    """Guards a snapshot taken before `load` (or before the warm-up): the warm-up must not clear or replace
    its handles or its continuation."""
    page.goto(fixtures_site.url("reader/plain.html"))
    r = Reader(page)
    first = r.snapshot(max_chars=5, max_elements=1)
    assert "rest" in first
    assert warm_all(r.world) >= 15
    more = r.snapshot(max_chars=5, max_elements=1, cursor=first["rest"])
    assert more["elements"] and more["elements"][0]["handle"] != first["elements"][0]["handle"]
    press = by_label(r.snapshot(), "Press")
    assert r.click(press["handle"]) == {"clicked": True}
    assert by_label(r.snapshot(), "Pressed")["role"] == "button"


def test_only_a_new_document_script_with_the_snapshot_bundle_warms_up() -> None:
    """Guards where the warm-up is: in a new-document script that names the snapshot bundle, never in one
    without it or in a preload script."""
    assert reader.WARM_UP in reader.new_document_script()
    assert reader.WARM_UP in reader.new_document_script(("click", "snapshot"))
    assert reader.WARM_UP not in reader.new_document_script(("click", "type"))
    assert reader.WARM_UP not in reader.preload_script(("snapshot",))
