"""The reference host prepares each document's isolated world while it loads (docs/host.md "Fixed scripts:
one world per document"; CONTRACT.md §9), against real headless Chromium through the Python API and the
C library.

A user notices this only as speed — unless it goes wrong: a snapshot of the previous document, a ref that
outlives its document, a history traversal or a crashed/relaunched renderer that leaves the reader broken.
Each test provokes that transition for real and then reads and acts on the page.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from faults_testlib import chromium_processes, kill, until
from host_testlib import ROOT, Host, call, in_renderer, ok
from kelpie_gateway import WORLD_NAME, reader
from kelpie_gateway.host.browser import ChromiumRenderer
from kelpie_gateway.host.browser.world import World

pytestmark = pytest.mark.timeout(240)

PROBE = (
    "(() => { const d = Object.getOwnPropertyDescriptor(globalThis, %s);"
    " return d ? typeof d.value : 'absent'; })()"
)


def labels(snapshot: dict[str, Any]) -> dict[str, str]:
    return {e["label"]: e["ref"] for e in snapshot["elements"]}


def open_tab(host: Host, page: str) -> str:
    return str(ok(host, "tabs.open", {"url": host.site(page)})["tabId"])


def read_and_act(host: Host, tab: str) -> None:
    """On form.html: a snapshot, a type into "Your name" and a click on "Echo the name" all work, and the
    page shows their effect."""
    refs = labels(ok(host, "tab.snapshot", {"tabId": tab}))
    assert ok(host, "tab.type", {"tabId": tab, "ref": refs["Your name"], "text": "Ada"}) == {"typed": 3}
    refs = labels(ok(host, "tab.snapshot", {"tabId": tab}))
    assert ok(host, "tab.click", {"tabId": tab, "ref": refs["Echo the name"]}) == {"clicked": True}
    assert "Echo: Ada" in ok(host, "tab.snapshot", {"tabId": tab})["text"]


def test_the_first_snapshot_after_a_navigation_reads_the_new_document(browser_host: Host) -> None:
    tab = open_tab(browser_host, "click.html")
    old = labels(ok(browser_host, "tab.snapshot", {"tabId": tab}))
    for _ in range(3):  # back and forth: every document gets its own world and bundle
        ok(browser_host, "tab.navigate", {"tabId": tab, "url": browser_host.site("form.html")})
        stale = call(browser_host, "tab.click", {"tabId": tab, "ref": old["Increment"]})
        assert stale["success"] is False and stale["mayHaveCompleted"] is False, stale
        assert stale["error"]["code"] in ("REFS_INVALIDATED", "STALE_SNAPSHOT"), stale
        snap = ok(browser_host, "tab.snapshot", {"tabId": tab})
        assert snap["title"] == "Form page" and "Your name" in labels(snap), snap
        ok(browser_host, "tab.navigate", {"tabId": tab, "url": browser_host.site("click.html")})
        old = labels(ok(browser_host, "tab.snapshot", {"tabId": tab}))
        assert ok(browser_host, "tab.click", {"tabId": tab, "ref": old["Increment"]}) == {"clicked": True}
        assert "Clicked 1 times" in ok(browser_host, "tab.snapshot", {"tabId": tab})["text"]
        old = labels(ok(browser_host, "tab.snapshot", {"tabId": tab}))
    ok(browser_host, "tabs.close", {"tabId": tab})


def test_a_navigation_to_a_page_busy_after_load_is_answered_loaded_within_its_timeout(browser_host: Host) -> None:
    # tab.navigate waits, after load, for the document's first style and layout (docs/host.md "Navigate:
    # load, then the first layout") — but never past its own timeoutMs: this page blocks its renderer for
    # 6 s right after load, so the wait runs out and the navigation is answered as loaded (not TIMEOUT,
    # which a wait bounded only by the gateway's deadline would give), and the tab stays usable.
    tab = open_tab(browser_host, "click.html")
    url = browser_host.site("busy-after-load.html")
    went = call(browser_host, "tab.navigate", {"tabId": tab, "url": url, "timeoutMs": 3000})
    assert went["success"], went
    assert went["result"]["url"] == url
    snap = ok(browser_host, "tab.snapshot", {"tabId": tab, "timeoutMs": 20000})  # after the page lets go
    assert snap["title"] == "Busy after load" and "Still here" in labels(snap), snap
    ok(browser_host, "tabs.close", {"tabId": tab})


def test_a_navigation_to_a_page_that_alerts_after_load_is_answered_without_waiting_behind_the_dialog(
    browser_host: Host,
) -> None:
    # The first-layout wait after load (docs/host.md) cannot finish while a JavaScript dialog blocks the
    # renderer, and only the caller can answer the dialog once it has the navigation's answer: the wait
    # ends when the dialog opens, instead of lasting until timeoutMs (less 0.5 s) has run out.
    tab = open_tab(browser_host, "click.html")
    url = browser_host.site("dialog.html") + "?alert-after-load"
    started = time.monotonic()
    went = call(browser_host, "tab.navigate", {"tabId": tab, "url": url, "timeoutMs": 25000})
    waited = time.monotonic() - started
    assert went["success"] and went["result"]["url"] == url, went
    assert waited < 15, f"navigate waited {waited:.1f} s behind the page's alert"
    ext = {"name": "dialog_observe", "arguments": {"tabId": tab}}
    until(lambda: bool(ok(browser_host, "extension.call", ext)["dialogs"]), 10)
    assert ok(browser_host, "extension.call", ext)["dialogs"][0]["message"] == "Welcome"
    ok(browser_host, "extension.call", {"name": "dialog_accept", "arguments": {"tabId": tab}})
    snap = ok(browser_host, "tab.snapshot", {"tabId": tab})
    assert "Answer: welcome closed" in snap["text"], snap
    ok(browser_host, "tabs.close", {"tabId": tab})


def test_history_traversal_documents_are_read_and_acted_on(browser_host: Host) -> None:
    tab = open_tab(browser_host, "form.html")
    before = labels(ok(browser_host, "tab.snapshot", {"tabId": tab}))
    ok(browser_host, "tab.navigate", {"tabId": tab, "url": browser_host.site("click.html")})
    assert ok(browser_host, "tab.snapshot", {"tabId": tab})["title"] == "Click page"
    back = call(browser_host, "extension.call", {"name": "go_back", "arguments": {"tabId": tab}})
    assert back["success"] and back["result"]["moved"] is True, back
    stale = call(browser_host, "tab.click", {"tabId": tab, "ref": before["Echo the name"]})
    assert stale["success"] is False and stale["mayHaveCompleted"] is False, stale
    read_and_act(browser_host, tab)
    forward = call(browser_host, "extension.call", {"name": "go_forward", "arguments": {"tabId": tab}})
    assert forward["success"] and forward["result"]["moved"] is True, forward
    refs = labels(ok(browser_host, "tab.snapshot", {"tabId": tab}))
    assert ok(browser_host, "tab.click", {"tabId": tab, "ref": refs["Increment"]}) == {"clicked": True}
    ok(browser_host, "tabs.close", {"tabId": tab})


def test_a_crashed_renderer_and_a_relaunched_browser_get_the_bundle_again(browser_host: Host) -> None:
    tab = open_tab(browser_host, "form.html")
    read_and_act(browser_host, tab)
    kill(chromium_processes(browser_host)[1])  # every renderer: the tab's page is gone
    # This tab's crash, not merely the first listed tab's: a navigate dispatched before its own crash is
    # heard is retired by it (RENDERER_FAILED, mayHaveCompleted), as the liveness rules say.
    until(lambda: crashed(browser_host, tab), 10)
    ok(browser_host, "tab.navigate", {"tabId": tab, "url": browser_host.site("form.html")})  # recovers it
    read_and_act(browser_host, tab)
    for other in ok(browser_host, "tabs.list", {})["tabs"]:  # other tabs crashed too: recover or close
        if other.get("crashed") and other["tabId"] != tab:
            ok(browser_host, "tabs.close", {"tabId": other["tabId"]})

    exits = exited(browser_host)
    kill(chromium_processes(browser_host)[0])  # the browser itself: the host relaunches it
    # The host hears the exit a moment later; a tabs.list answered before that proves nothing.
    until(lambda: exited(browser_host) > exits, 20)
    deadline = time.monotonic() + 60
    while not call(browser_host, "tabs.list", {})["success"]:
        assert time.monotonic() < deadline, "the browser was not relaunched"
        time.sleep(0.2)
    fresh = open_tab(browser_host, "form.html")
    read_and_act(browser_host, fresh)


def crashed(host: Host, tab: str) -> bool:
    """``tabs.list`` says ``tab`` is crashed."""
    return any(t["tabId"] == tab and t.get("crashed") for t in call(host, "tabs.list", {})["result"]["tabs"])


def exited(host: Host) -> int:
    """How many times the host has logged that its browser exited."""
    return sum("browser exited" in line for line in list(host.process.lines))


KEY = "0123456789abcdef0123456789abcdef"


async def evaluate(renderer: ChromiumRenderer, tab: str, script: str, world: str = WORLD_NAME) -> Any:
    params = {"tabId": tab, "world": world, "script": script, "timeoutMs": 10000}
    answer = await renderer.call("browser-control-evaluate", params)
    assert answer["success"], answer
    return answer["value"]


async def navigate(renderer: ChromiumRenderer, tab: str, url: str) -> None:
    nav = await renderer.call("navigate", {"tabId": tab, "url": url, "timeoutMs": 10000})
    assert nav["success"], nav


def sent_expressions(renderer: ChromiumRenderer, tab: str) -> list[str]:
    """Every ``Runtime.evaluate`` expression the tab's session sends from now on (a spy, in order)."""
    known = renderer.pages.get(tab)
    assert known is not None
    session = known.cdp
    assert session is not None
    sent: list[str] = []
    send = session.send

    async def spy(method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "Runtime.evaluate" and params:
            sent.append(str(params["expression"]))
        return await send(method, params)

    session.send = spy  # type: ignore[method-assign]
    return sent


async def type_and_echo(renderer: ChromiumRenderer, tab: str) -> tuple[list[str], dict[str, str]]:
    """On form.html: from now on spy on the evaluations, then a snapshot, "Ada" typed into "Your name" and
    a click on "Echo the name"; returns the expressions sent and the snapshot's handles by label."""
    sent = sent_expressions(renderer, tab)
    snap = await evaluate(renderer, tab, reader.snapshot_script(KEY, max_chars=1000, max_elements=20))
    refs = {e["label"]: e["handle"] for e in snap["elements"]}
    assert await evaluate(renderer, tab, reader.type_script(KEY, refs["Your name"], "Ada")) == {"typed": 3}
    assert await evaluate(renderer, tab, reader.click_script(KEY, refs["Echo the name"])) == {"clicked": True}
    return sent, refs


def test_the_host_installs_the_snapshot_bundle_before_the_first_script() -> None:
    """The preparation is real: right after ``navigate``, the new document's world already holds this
    build's snapshot, click and type bundles before any reader script ran there (the probe installs
    nothing); the other bundles (an extension's ``fill``) come with their first script. Run in-process
    against the host's own renderer."""
    probes = [PROBE % json.dumps(reader.bundle_slot(name)) for name in ("snapshot", "click", "type", "fill")]
    fill_probe = probes[-1]

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> list[Any]:
        seen: list[Any] = []
        for page in ("click.html", "form.html"):
            await navigate(renderer, tab, f"{site}/{page}")
            seen.append([await evaluate(renderer, tab, probe) for probe in probes])
        snap = await evaluate(renderer, tab, reader.snapshot_script(KEY, max_chars=1000, max_elements=20))
        name = next(e["handle"] for e in snap["elements"] if e["label"] == "Your name")
        seen.append(await evaluate(renderer, tab, reader.fill_script(KEY, name, "Ada")))
        seen.append(await evaluate(renderer, tab, fill_probe))  # installed by its first script
        return seen

    preloaded = ["function", "function", "function", "absent"]
    assert in_renderer(body) == [preloaded, preloaded, {"filled": 3}, "function"]


def test_scripts_travel_without_their_bundle_once_the_world_holds_it() -> None:
    """After a navigation every snapshot, click and type goes out in its short form (no 55 KB bundle), and
    the page shows each effect exactly once; an extension's first ``fill`` carries its bundle, later ones
    do not."""

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> list[int]:
        await navigate(renderer, tab, f"{site}/form.html")
        sent, refs = await type_and_echo(renderer, tab)
        for text in ("x", "yz"):
            assert await evaluate(renderer, tab, reader.fill_script(KEY, refs["Notes"], text)) == {
                "filled": len(text)
            }
        snap = await evaluate(renderer, tab, reader.snapshot_script(KEY, max_chars=1000, max_elements=20))
        assert "Echo: Ada" in snap["text"] and "Name has 3 characters" in snap["text"], snap["text"]
        assert "Notes have 2 characters" in snap["text"], snap["text"]
        return [len(expression) for expression in sent]

    sizes = in_renderer(body)
    assert len(sizes) == 6, sizes  # one evaluation per call: nothing was sent twice
    full = len(reader.bundle("fill"))
    assert [size > full for size in sizes] == [False, False, False, True, False, False], sizes


def test_a_world_without_an_expected_bundle_gets_the_whole_script_exactly_once() -> None:
    """When the host's expectation is wrong (a world that does not hold the bundle), the short form runs
    nothing and the whole script follows once: the field gets the text once, not twice; from then on the
    short form serves."""

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[list[int], str]:
        world_name = "KelpieProbeWorld"  # a world of another name: nothing preloaded there
        known, world_part = renderer.pages.get(tab), renderer.part(World)
        assert known is not None and world_part is not None
        world = await world_part.world(known, world_name)
        assert world.kept == set()
        world.kept.update(reader.bundle_slot(name) for name in ("snapshot", "type"))  # a wrong expectation
        sent = sent_expressions(renderer, tab)
        snap = await evaluate(
            renderer, tab, reader.snapshot_script(KEY, max_chars=1000, max_elements=20), world_name
        )
        name = next(e["handle"] for e in snap["elements"] if e["label"] == "Your name")
        for text in ("Ada", "Bob"):
            typed = await evaluate(renderer, tab, reader.type_script(KEY, name, text), world_name)
            assert typed == {"typed": 3}
        value = await evaluate(renderer, tab, "document.getElementById('name').value", world_name)
        return [len(expression) for expression in sent], value

    sizes, value = in_renderer(body)
    assert value == "AdaBob"
    full = len(reader.bundle("type"))
    # snapshot: short (missing) + whole; type Ada: short (missing) + whole; type Bob: short; the probe.
    assert [size > full for size in sizes] == [False, True, False, True, False, False], sizes


TAMPER = ROOT / "fixtures" / "pages" / "tamper-globals.js"


def test_a_page_that_tampers_with_globals_cannot_reach_the_short_form() -> None:
    """A page that plants fakes under every bundle slot and replaces the built-ins the short form and the
    reader use, in its own world: the host's short forms still run the isolated world's own bundles, the
    effects are real and none of the page's fakes is ever called."""
    slots = json.dumps([reader.bundle_slot(name) for name in reader.BUNDLES])
    tamper = TAMPER.read_text(encoding="utf-8").replace("SLOTS", slots)

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[list[int], Any, Any]:
        page = renderer.page_of(tab)
        assert page is not None
        await page.add_init_script(tamper)
        await navigate(renderer, tab, f"{site}/form.html")
        planted = await page.evaluate(f"typeof window[{json.dumps(reader.bundle_slot('snapshot'))}]")
        assert planted == "function"
        sent, _refs = await type_and_echo(renderer, tab)
        after = await evaluate(renderer, tab, reader.snapshot_script(KEY, max_chars=1000, max_elements=20))
        tampered = await evaluate(renderer, tab, "document.documentElement.dataset.tampered || null")
        return [len(expression) for expression in sent], after["text"], tampered

    sizes, text, tampered = in_renderer(body)
    assert all(size < 2000 for size in sizes[:4]), sizes  # every call went out in its short form
    assert "Echo: Ada" in text and "Name has 3 characters" in text, text
    assert tampered is None


@pytest.mark.parametrize("mode", ["python", "abi"])
def test_a_snapshot_as_the_very_first_call_names_its_documents_generation(mode: str) -> None:
    """A client whose first call is ``tab.snapshot`` gets the tab's generation (an integer), the same one
    ``tabs.list`` then reports — not null because the gateway had not observed the tab yet."""
    from host_testlib import start_host

    process = start_host(["--approve-pairing", "auto"], mode)
    try:
        host = Host(process, process.pair("first-call"), mode)
        snapshot = ok(host, "tab.snapshot", {"tabId": "t1"})
        assert isinstance(snapshot["generation"], int), snapshot["generation"]
        listed = next(t for t in ok(host, "tabs.list", {})["tabs"] if t["tabId"] == "t1")
        assert snapshot["generation"] == listed["generation"]
        ok(host, "tab.navigate", {"tabId": "t1", "url": host.site("form.html")})
        again = ok(host, "tab.snapshot", {"tabId": "t1"})
        assert again["generation"] > snapshot["generation"]  # a new document, a new generation
    finally:
        process.stop()
