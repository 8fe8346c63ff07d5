"""The reference host's rich extensions (press_key, fill, scroll, go_back, go_forward, wait_for_text) in real
headless Chromium, over the canonical route and MCP, through the Python API and the C library (--via-abi).

Each test opens its own tab so the tests stay independent while sharing one host per module.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from host_testlib import Host, RecordingSite, call, ext, ext_ok, ok, start_host
from stdio_testlib import run_async

pytestmark = pytest.mark.timeout(180)


# ---------------------------------------------------------------- helpers
def open_tab(host: Host, page: str) -> str:
    return str(ok(host, "tabs.open", {"url": host.site(page)})["tabId"])


def snapshot(host: Host, tab: str) -> dict[str, Any]:
    return ok(host, "tab.snapshot", {"tabId": tab})


def ref_of(snap: dict[str, Any], label: str, tag: str | None = None) -> str:
    for item in snap["elements"]:
        if label.lower() in str(item.get("label", "")).lower() and (tag is None or item["tag"] == tag):
            return str(item["ref"])
    raise AssertionError(f"no element labelled {label!r} in {snap['elements']}")


def page_text(host: Host, tab: str) -> str:
    return str(snapshot(host, tab)["text"])


def refused(envelope: dict[str, Any], code: str, may_have_completed: bool) -> None:
    assert envelope["success"] is False, envelope
    assert envelope["error"]["code"] == code, envelope
    assert envelope["mayHaveCompleted"] is may_have_completed, envelope


def unknown_effect_not_observed(envelope: dict[str, Any]) -> None:
    """The page did not keep the filled text: an unknown outcome (CONTRACT §4/§9, v1.1). Until the gateway
    passes EFFECT_NOT_OBSERVED through (issue 12), it arrives as RENDERER_FAILED naming that code."""
    assert envelope["success"] is False and envelope["mayHaveCompleted"] is True, envelope
    error = envelope["error"]
    assert error["code"] == "EFFECT_NOT_OBSERVED" or (
        error["code"] == "RENDERER_FAILED" and "EFFECT_NOT_OBSERVED" in error["message"]
    ), envelope
    assert error["retryable"] is False


# ---------------------------------------------------------------- search: fill + Enter
@pytest.mark.parametrize("with_ref", [False, True])
def test_a_search_form_completed_with_fill_and_enter(browser_host: Host, with_ref: bool) -> None:
    host = browser_host
    tab = open_tab(host, "search.html")
    box = ref_of(snapshot(host, tab), "Search the site")
    # The box holds "old query": fill replaces it (tab.type would have appended).
    assert ext_ok(host, "fill", tabId=tab, ref=box, text="kelpie docs") == {"filled": 11}
    if with_ref:
        box = ref_of(snapshot(host, tab), "Search the site")  # fill invalidated the tab's refs
        assert ext_ok(host, "press_key", tabId=tab, key="Enter", ref=box) == {"pressed": "Enter"}
    else:  # fill leaves the focus in the field, as typing would
        assert ext_ok(host, "press_key", tabId=tab, key="Enter") == {"pressed": "Enter"}
    found = ext_ok(host, "wait_for_text", tabId=tab, text="Results for [kelpie docs]", timeoutMs=9000)
    assert found["found"] is True, found
    tabs = ok(host, "tabs.list", {})["tabs"]
    url = next(t["url"] for t in tabs if t["tabId"] == tab)
    assert url.endswith("/results.html?q=kelpie+docs"), url


def test_fill_replaces_existing_text_and_validates_formats(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "fill.html")

    def fill(label: str, text: str) -> dict[str, Any]:
        return ext(host, "fill", tabId=tab, ref=ref_of(snapshot(host, tab), label), text=text)

    assert fill("City", "Paris")["result"] == {"filled": 5}
    assert "Seen change on city: [Paris]" in page_text(host, tab)
    assert fill("Quantity", "42")["result"] == {"filled": 2}
    assert "Seen change on qty: [42]" in page_text(host, tab)
    assert fill("Delivery date", "2026-11-30")["result"] == {"filled": 10}
    assert "Seen change on when: [2026-11-30]" in page_text(host, tab)
    assert fill("Editor", "New editor text")["result"] == {"filled": 15}
    text = page_text(host, tab)
    assert "New editor text" in text and "Old editor text" not in text
    # Refused before any event: nothing happened, no reconcile needed.
    bad_number = fill("Quantity", "forty-two")
    refused(bad_number, "INVALID_PARAMS", False)
    assert "number" in bad_number["error"]["message"]
    refused(fill("Delivery date", "30/11/2026"), "INVALID_PARAMS", False)
    assert "Seen input on editor: [New editor text]" in page_text(host, tab)  # no event reached the page
    refused(fill("Locked field", "x"), "NOT_TYPABLE", False)
    refused(fill("Disabled field", "x"), "NOT_ACTIONABLE", False)  # as tab.type (§9 v1.1)
    refused(fill("I agree", "x"), "NOT_TYPABLE", False)
    # The page upper-cases what it is given: fill notices and does not claim success.
    unknown_effect_not_observed(fill("Shouting field", "quiet"))
    refused(call(host, "tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "RECONCILE_REQUIRED", False)


def test_fill_and_press_key_refuse_bad_refs_before_dispatch(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "keys.html")
    other = open_tab(host, "fill.html")
    first = ref_of(snapshot(host, tab), "First field")
    city = ref_of(snapshot(host, other), "City")
    refused(ext(host, "fill", tabId=tab, ref=city, text="x"), "CROSS_TAB_REF", False)
    refused(ext(host, "press_key", tabId=tab, key="a", ref="s999999e1"), "UNKNOWN_REF", False)
    refused(ext(host, "press_key", tabId=tab, key="a", ref="#first"), "UNKNOWN_REF", False)  # no selectors
    refused(ext(host, "press_key", tabId=tab, key="NotAKey"), "INVALID_PARAMS", False)
    snapshot(host, tab)
    refused(ext(host, "press_key", tabId=tab, key="a", ref=first), "STALE_SNAPSHOT", False)
    assert "First field has 0 characters" in page_text(host, tab)


# ---------------------------------------------------------------- keys
def test_press_key_tab_moves_focus_and_keys_are_trusted(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "keys.html")
    first = ref_of(snapshot(host, tab), "First field")
    assert ext_ok(host, "press_key", tabId=tab, key="Tab", ref=first) == {"pressed": "Tab"}
    text = page_text(host, tab)
    assert "Focused: second" in text, text
    assert "Last key: Tab trusted=true on first" in text, text
    assert ext_ok(host, "press_key", tabId=tab, key="Shift+Tab") == {"pressed": "Shift+Tab"}
    assert "Focused: first" in page_text(host, tab)
    for key in ("k", "e", "l"):
        ext_ok(host, "press_key", tabId=tab, key=key)
    assert "First field has 3 characters" in page_text(host, tab)
    ext_ok(host, "press_key", tabId=tab, key="Control+A")
    ext_ok(host, "press_key", tabId=tab, key="Backspace")
    text = page_text(host, tab)
    assert "First field has 0 characters" in text and "Last key: Backspace trusted=true on first" in text
    ext_ok(host, "press_key", tabId=tab, key="Escape")
    assert "Last key: Escape trusted=true" in page_text(host, tab)


def test_press_key_refuses_targets_that_cannot_take_focus(browser_host: Host) -> None:
    """Disabled (attribute, aria-disabled, inert) or unfocusable targets are NOT_ACTIONABLE before any event,
    like tab.click and tab.type (CONTRACT §4/§9 v1.1; docs/contract-notes.md "press_key targets"): no
    reconcile is needed afterwards and no key reached the page."""
    host = browser_host
    tab = open_tab(host, "keys.html")
    for label in ("A disabled button", "An aria-disabled button", "A button in an inert section", "Keys page"):
        target = ref_of(snapshot(host, tab), label)
        envelope = ext(host, "press_key", tabId=tab, key="Enter", ref=target)
        refused(envelope, "NOT_ACTIONABLE", False)
        assert envelope["error"]["retryable"] is False, envelope
    text = page_text(host, tab)
    assert "Focused: nothing" in text and "No key yet" in text, text
    # Nothing happened, so the next mutation on the tab is not held for a reconcile.
    assert ext_ok(host, "press_key", tabId=tab, key="Tab", ref=ref_of(snapshot(host, tab), "First field"))


def test_press_key_on_a_field_that_pushes_focus_away_is_an_unknown_outcome(browser_host: Host) -> None:
    """The page's focus handler ran and moved focus elsewhere: no key is pressed, and the outcome is unknown
    (EFFECT_NOT_OBSERVED, mayHaveCompleted:true), so the tab needs a fresh snapshot before the next action."""
    host = browser_host
    tab = open_tab(host, "keys.html")
    envelope = ext(host, "press_key", tabId=tab, key="x", ref=ref_of(snapshot(host, tab), "Bouncing field"))
    assert envelope["success"] is False and envelope["mayHaveCompleted"] is True, envelope
    assert envelope["error"]["code"] == "EFFECT_NOT_OBSERVED" and envelope["error"]["retryable"] is False
    refused(ext(host, "press_key", tabId=tab, key="x"), "RECONCILE_REQUIRED", False)
    text = page_text(host, tab)
    assert "Bounced 1 times" in text and "Focused: second" in text and "No key yet" in text, text


# ---------------------------------------------------------------- scroll
def test_scroll_brings_lazy_loaded_items_in(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "lazy.html")
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Item 11", timeoutMs=300)["found"] is False
    page = ext_ok(host, "scroll", tabId=tab, pages=2)
    assert page == {"scrolled": True, "atTop": False, "atBottom": True}, page  # the end of what had loaded
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Item 11", timeoutMs=9000)["found"] is True
    assert "Item 21" not in page_text(host, tab)
    # An element into view: the last loaded item, whose sentinel comes along and loads the next ten.
    snap = snapshot(host, tab)
    last = ref_of(snap, "Item 20", "a")
    assert ext_ok(host, "scroll", tabId=tab, ref=last) == {"scrolled": True, "inView": True}
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Item 21", timeoutMs=9000)["found"] is True
    refused(ext(host, "scroll", tabId=tab, ref=last), "REFS_INVALIDATED", False)  # scrolling mutates
    refused(ext(host, "scroll", tabId=tab, ref=last, pages=2), "INVALID_PARAMS", False)
    back = ext_ok(host, "scroll", tabId=tab, direction="up", pages=10)
    assert back["atTop"] is True and back["scrolled"] is True


# ---------------------------------------------------------------- history
def test_back_and_forward_across_two_pages_invalidate_refs(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "index.html")
    first = ok(host, "tab.navigate", {"tabId": tab, "url": host.site("second.html")})
    button = ref_of(snapshot(host, tab), "A button on the second page")
    back = ext_ok(host, "go_back", tabId=tab)
    assert back["moved"] is True and back["url"] == host.site("index.html"), back
    assert back["generation"] > first["generation"]
    refused(call(host, "tab.click", {"tabId": tab, "ref": button}), "REFS_INVALIDATED", False)
    refused(ext(host, "press_key", tabId=tab, key="Enter", ref=button), "REFS_INVALIDATED", False)
    assert "Kelpie fixture site" in page_text(host, tab)
    forward = ext_ok(host, "go_forward", tabId=tab)
    assert forward["moved"] is True and forward["url"] == host.site("second.html")
    assert forward["generation"] > back["generation"]
    assert "You navigated to the second page." in page_text(host, tab)
    stay = ext_ok(host, "go_forward", tabId=tab)
    assert stay["moved"] is False and stay["url"] == host.site("second.html")


# ---------------------------------------------------------------- wait_for_text
def test_wait_for_text_success_timeout_and_values_stay_private(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "form.html")
    found = ext_ok(host, "wait_for_text", tabId=tab, text="Form   page")  # white space runs compare as one
    assert found["found"] is True
    started = time.monotonic()
    missing = ext_ok(host, "wait_for_text", tabId=tab, text="Not on this page", timeoutMs=400)
    assert missing["found"] is False and missing["elapsedMs"] >= 400
    assert time.monotonic() - started >= 0.4
    name = ref_of(snapshot(host, tab), "Your name")
    ok(host, "tab.type", {"tabId": tab, "ref": name, "text": "zanzibar-secret"})
    assert ext_ok(host, "wait_for_text", tabId=tab, text="zanzibar", timeoutMs=300)["found"] is False
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Name has 15 characters")["found"] is True
    refused(ext(host, "wait_for_text", tabId=tab, text="x", timeoutMs=20000), "INVALID_PARAMS", False)


def test_wait_for_text_sees_text_that_appears_later(browser_host: Host) -> None:
    host = browser_host
    tab = open_tab(host, "click.html")
    snap = snapshot(host, tab)
    button = next(e["ref"] for e in snap["elements"] if e["tag"] == "button")
    ok(host, "tab.click", {"tabId": tab, "ref": button})
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Clicked 1")["found"] is True


# ---------------------------------------------------------------- default site policy
@pytest.fixture(scope="module")
def foreign() -> Iterator[RecordingSite]:
    site = RecordingSite("127.0.0.2")
    yield site
    site.stop()


def test_by_default_every_http_origin_is_allowed(browser_host: Host, foreign: RecordingSite) -> None:
    host = browser_host
    tab = open_tab(host, "index.html")
    went = ok(host, "tab.navigate", {"tabId": tab, "url": foreign.url + "/hello"})
    assert went["url"] == foreign.url + "/hello"
    assert "A foreign site" in page_text(host, tab)
    assert "/hello" in foreign.hits


# ---------------------------------------------------------------- MCP: by name and through kelpie_extension
RICH = ["press_key", "fill", "scroll", "go_back", "go_forward", "wait_for_text"]


def test_every_extension_through_mcp_by_name_and_through_kelpie_extension(browser_host: Host) -> None:
    from mcp_testlib import connect

    host = browser_host

    async def journey() -> None:
        async with connect(host, "auto") as client:
            async def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, arguments)
                envelope = result.structured_content
                assert isinstance(envelope, dict), result
                assert json.loads(result.content[0].text) == envelope
                assert bool(result.is_error) == (not envelope["success"])
                return envelope

            async def bc(method: str, params: dict[str, Any]) -> dict[str, Any]:
                for _ in range(10):
                    env = await tool("kelpie_browser_control", {"method": method, "params": params})
                    if env["success"] or not env["error"]["retryable"]:
                        break
                    await asyncio.sleep(0.2)
                assert env["success"], env
                return dict(env["result"])

            names = (await tool("kelpie_extensions", {}))["result"]
            listed = names["extensions"] if isinstance(names, dict) and "extensions" in names else names
            assert set(RICH) <= {e if isinstance(e, str) else e["name"] for e in listed}, names
            tools = (await tool("kelpie_extension_tools", {"names": RICH}))["result"]
            described = {t["name"]: t for t in (tools["tools"] if isinstance(tools, dict) else tools)}
            assert {n: described[n]["mutates"] for n in RICH} == {
                "press_key": True, "fill": True, "scroll": True, "go_back": True, "go_forward": True,
                "wait_for_text": False,
            }
            assert described["fill"]["inputSchema"]["required"] == ["tabId", "ref", "text"]

            for via in ("name", "kelpie_extension"):
                async def ext_call(name: str, arguments: dict[str, Any], via: str = via) -> dict[str, Any]:
                    if via == "name":
                        env = await tool(name, arguments)
                    else:
                        env = await tool("kelpie_extension", {"name": name, "arguments": arguments})
                    assert env["success"], (via, name, env)
                    return dict(env["result"])

                tab = (await bc("tabs.open", {"url": host.site("search.html")}))["tabId"]
                snap = await bc("tab.snapshot", {"tabId": tab})
                box = ref_of(snap, "Search the site")
                assert await ext_call("fill", {"tabId": tab, "ref": box, "text": via}) == {"filled": len(via)}
                assert (await ext_call("scroll", {"tabId": tab}))["scrolled"] is False  # nothing to scroll
                assert await ext_call("press_key", {"tabId": tab, "key": "Enter"}) == {"pressed": "Enter"}
                wanted = f"Results for [{via}]"
                for _ in range(10):  # the navigation may replace the document mid-read: retryable
                    env = await tool(
                        "wait_for_text" if via == "name" else "kelpie_extension",
                        {"tabId": tab, "text": wanted, "timeoutMs": 9000}
                        if via == "name"
                        else {
                            "name": "wait_for_text",
                            "arguments": {"tabId": tab, "text": wanted, "timeoutMs": 9000},
                        },
                    )
                    if env["success"] or not env["error"]["retryable"]:
                        break
                assert env["success"] and env["result"]["found"] is True, env
                assert (await ext_call("go_back", {"tabId": tab}))["url"].endswith("/search.html")
                assert (await ext_call("go_forward", {"tabId": tab}))["url"].endswith(f"?q={via.replace('_', '_')}")

    run_async(journey())  # on its own thread: the browser suite's Playwright sync API holds the main loop


# ---------------------------------------------------------------- operator filter and read-only sessions
@pytest.fixture(scope="module", params=["python", "abi"])
def limited_hosts(request: pytest.FixtureRequest) -> Iterator[dict[str, Host]]:
    hosts: dict[str, Host] = {}
    try:
        for label, args in (
            ("read-only", ["--read-only"]),
            ("filtered", ["--extensions-exclude", "press_*,go_*,type_*"]),
        ):
            process = start_host(["--approve-pairing", "auto", *args], request.param)
            hosts[label] = Host(process, process.pair("kelpie-tests"), request.param)
        yield hosts
    finally:
        for host in hosts.values():
            host.process.stop()


def test_read_only_sessions_see_only_wait_for_text(limited_hosts: dict[str, Host]) -> None:
    host = limited_hosts["read-only"]
    caps = ok(host, "capabilities", {})
    names = {e["name"] if isinstance(e, dict) else e for e in caps["extensions"]}
    assert names & set(RICH) == {"wait_for_text"}, caps["extensions"]
    tab = ok(host, "tabs.list", {})["tabs"][0]["tabId"]
    assert ext_ok(host, "wait_for_text", tabId=tab, text="Kelpie fixture site")["found"] is True
    assert not names & {"click", "hover", "drag", "type_keys"}, caps["extensions"]  # native input mutates
    for name in ("press_key", "fill", "scroll", "go_back", "click", "type_keys"):
        envelope = ext(host, name, tabId=tab, key="Enter")
        assert envelope["success"] is False and envelope["mayHaveCompleted"] is False, envelope
        assert envelope["error"]["code"] in ("EXTENSION_NOT_ADMITTED", "ACTIONS_DISABLED"), envelope
    status, reply = host.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "press_key", "arguments": {"tabId": tab, "key": "a"}}},
                              headers={"MCP-Protocol-Version": "2025-06-18"})
    assert status == 200 and ("error" in reply or reply["result"]["isError"] is True), reply


def test_the_operator_filter_hides_extensions(limited_hosts: dict[str, Host]) -> None:
    host = limited_hosts["filtered"]
    caps = ok(host, "capabilities", {})
    names = {e["name"] if isinstance(e, dict) else e for e in caps["extensions"]}
    assert names & set(RICH) == {"fill", "scroll", "wait_for_text"}, caps["extensions"]
    tab = ok(host, "tabs.list", {})["tabs"][0]["tabId"]
    refused(ext(host, "press_key", tabId=tab, key="Enter"), "EXTENSION_NOT_ADMITTED", False)
    refused(ext(host, "go_back", tabId=tab), "EXTENSION_NOT_ADMITTED", False)
    refused(ext(host, "type_keys", tabId=tab, text="x"), "EXTENSION_NOT_ADMITTED", False)
    assert {"click", "hover", "drag"} <= names and "type_keys" not in names, caps["extensions"]
    assert ext_ok(host, "scroll", tabId=tab)["scrolled"] is False
