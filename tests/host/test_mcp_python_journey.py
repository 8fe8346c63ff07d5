"""MCP journeys with the official Python SDK (PyPI ``mcp``) over Streamable HTTP against the reference host
serving ``fixtures/site`` in real headless Chromium — through the Python API and through the C library.

Every journey runs in each way a client can connect (CONTRACT.md §7 v1.1): ``mode="legacy"`` (the
initialize handshake), the SDK's default ``mode="auto"`` (probes ``server/discover`` and must settle on the
stateless revision instead of falling back) and pinned to ``"2026-07-28"`` (no probe at all: the first
request already carries the per-request ``_meta`` envelope and routing headers).

Each test opens its own tab so the tests stay independent while sharing one host per module. The SDK
helpers are ``mcp_testlib.py``; the dialog journey is ``test_dialogs.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request

import httpx2
import pytest
from host_testlib import Host
from mcp_testlib import MODERN, bc, connect, element, mode, ok, open_tab, run

pytestmark = pytest.mark.timeout(120)
__all__ = ["mode"]  # the SDK connection mode fixture, used by name


def test_connect_and_tools_list(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            if mode == "legacy":
                assert client.protocol_version in ("2025-06-18", "2025-11-25")
            if mode == "auto":  # the probe's answer is kept: both eras offered, cacheable for 5 minutes,
                # and its serverInfo stamp names the server without a handshake
                assert client.server_info is not None and client.server_info.name == "kelpie-browser-gateway"
                found = client.session.discover_result
                assert found is not None and found.ttl_ms == 300_000 and found.cache_scope == "private"
                assert {MODERN, "2025-11-25", "2025-06-18"} <= set(found.supported_versions)
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {
                "kelpie_browser_control",
                "kelpie_extensions",
                "kelpie_extension_tools",
                "kelpie_extension",
            } <= names
            listed = await client.call_tool("kelpie_extensions", {})
            assert {"dialog_observe", "dialog_accept", "dialog_dismiss"} <= set(
                json.dumps(listed.structured_content).split('"')
            )

    run(body())


def test_snapshot_then_click_changes_the_page(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "click.html")
            snap = await ok(client, "tab.snapshot", {"tabId": tab})
            assert snap["title"] == "Click page" and "Clicked 0 times" in snap["text"]
            assert all(
                item["ref"].startswith(f"s{snap['snapshot']}") or "ref" in item for item in snap["elements"]
            )
            assert "handle" not in json.dumps(snap)
            button = element(snap, "button", "Increment")
            assert await ok(client, "tab.click", {"tabId": tab, "ref": button["ref"]}) == {"clicked": True}
            after = await ok(client, "tab.snapshot", {"tabId": tab})
            assert "Clicked 1 times" in after["text"]

    run(body())


def test_type_reaches_the_page_but_never_the_snapshot(browser_host: Host, mode: str) -> None:
    secret = "Kelpie types ✓ 🐕"

    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "form.html")
            snap = await ok(client, "tab.snapshot", {"tabId": tab})
            field = element(snap, "input", "name")
            typed = await ok(client, "tab.type", {"tabId": tab, "ref": field["ref"], "text": secret})
            assert typed == {"typed": len(secret)}
            seen = await ok(client, "tab.snapshot", {"tabId": tab})
            assert f"Name has {len(secret)} characters" in seen["text"]
            assert secret not in json.dumps(seen, ensure_ascii=False)
            # The page itself holds the value: its echo button copies it into page text.
            await ok(client, "tab.click", {"tabId": tab, "ref": element(seen, "button", "Echo")["ref"]})
            echoed = await ok(client, "tab.snapshot", {"tabId": tab})
            assert f"Echo: {secret}" in echoed["text"]
            # A number input refuses before focus: nothing happened.
            age = element(echoed, "input", "age")
            refused = await bc(client, "tab.type", {"tabId": tab, "ref": age["ref"], "text": "42"})
            assert refused["error"]["code"] == "NOT_TYPABLE" and refused["mayHaveCompleted"] is False

    run(body())


def test_stale_ref_after_navigation_is_refused(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "click.html")
            snap = await ok(client, "tab.snapshot", {"tabId": tab})
            old = element(snap, "button", "Increment")["ref"]
            moved = await ok(client, "tab.navigate", {"tabId": tab, "url": browser_host.site("second.html")})
            assert moved["url"].endswith("/second.html") and moved["generation"] > 0
            refused = await bc(client, "tab.click", {"tabId": tab, "ref": old})
            assert refused["error"]["code"] in ("REFS_INVALIDATED", "STALE_SNAPSHOT", "TAB_STALE")
            assert refused["mayHaveCompleted"] is False
            title = (await ok(client, "tab.snapshot", {"tabId": tab}))["title"]
            assert title == "Second page"

    run(body())


def test_a_ref_of_another_tab_is_refused(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            first = await open_tab(client, browser_host, "click.html")
            second = await open_tab(client, browser_host, "click.html")
            ref = element(await ok(client, "tab.snapshot", {"tabId": first}), "button", "Increment")["ref"]
            await ok(client, "tab.snapshot", {"tabId": second})
            refused = await bc(client, "tab.click", {"tabId": second, "ref": ref})
            assert refused["error"]["code"] == "CROSS_TAB_REF" and refused["mayHaveCompleted"] is False
            counts = [(await ok(client, "tab.snapshot", {"tabId": t}))["text"] for t in (first, second)]
            assert all("Clicked 0 times" in text for text in counts)

    run(body())


def test_busy_while_another_call_is_outstanding(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "slow.html?busy=2500")
            button = element(await ok(client, "tab.snapshot", {"tabId": tab}), "button", "Slow")
            click = asyncio.ensure_future(
                ok(client, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000})
            )
            await asyncio.sleep(0.8)
            busy = await bc(client, "tabs.list", {})
            assert busy["error"]["code"] == "BUSY" and busy["error"]["retryable"] is True
            assert busy["mayHaveCompleted"] is False
            assert await click == {"clicked": True}
            assert "Slow effect count: 1" in (await ok(client, "tab.snapshot", {"tabId": tab}))["text"]

    run(body())


def test_timed_out_mutation_may_have_completed_and_is_not_repeated(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "slow.html?busy=2000")
            elsewhere = browser_host.site("second.html")
            button = element(await ok(client, "tab.snapshot", {"tabId": tab}), "button", "Slow")
            late_lines = sum("late " in line for line in browser_host.process.lines)
            timed_out = await bc(client, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 300})
            assert timed_out["success"] is False and timed_out["mayHaveCompleted"] is True
            assert timed_out["error"]["code"] == "TIMEOUT"
            # The renderer reply is still due: the lane stays exclusive until it retires.
            busy = await bc(client, "tabs.list", {})
            assert busy["error"]["code"] == "BUSY"
            for _ in range(100):
                if sum("late " in line for line in browser_host.process.lines) > late_lines:
                    break
                await asyncio.sleep(0.1)
            retired = [line for line in browser_host.process.lines if "late " in line][-1]
            assert "retired" in retired
            # Ambiguity stops the agent: the next mutation of that tab waits for a fresh observation.
            again = await bc(client, "tab.navigate", {"tabId": tab, "url": elsewhere})
            assert again["error"]["code"] == "RECONCILE_REQUIRED" and again["mayHaveCompleted"] is False
            text = (await ok(client, "tab.snapshot", {"tabId": tab}))["text"]
            assert "Slow effect count: 1" in text  # the effect landed exactly once
            await ok(client, "tab.navigate", {"tabId": tab, "url": elsewhere})

    run(body())


def test_screenshot_is_one_image_block(browser_host: Host, mode: str) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "click.html")
            shot = await client.call_tool(
                "kelpie_browser_control", {"method": "tab.screenshot", "params": {"tabId": tab}}
            )
            images = [block for block in shot.content if block.type == "image"]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            png = base64.b64decode(images[0].data)
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            envelope = shot.structured_content
            assert envelope["success"] and "data" not in envelope["result"]
            assert envelope["result"]["imageBytes"] == len(png)
            assert (envelope["result"]["width"], envelope["result"]["height"]) == (1280, 800)
            texts = "".join(block.text for block in shot.content if block.type == "text")
            assert images[0].data not in texts

    run(body())


def test_revoked_bearer_is_refused_and_others_keep_working(browser_host: Host, mode: str) -> None:
    token = browser_host.pair("short-lived")

    async def body() -> None:
        async with connect(browser_host, mode, token) as client:
            await ok(client, "tabs.list", {})

    run(body())
    status, _ = browser_host.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
    assert status == 200
    request = urllib.request.Request(
        f"{browser_host.url}/v1/pair", headers={"Authorization": f"Bearer {token}"}, method="DELETE"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    status, _ = browser_host.post("/mcp", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, token)
    assert status == 401
    status, _ = browser_host.post(
        "/v1/browser-control", {"version": 1, "method": "tabs.list", "params": {}}, token
    )
    assert status == 401
    assert browser_host.call("tabs.list")["success"]  # the module's own token still works
    assert not any(token in line for line in browser_host.process.lines)


SHARED = 150
"""Retries (0.2 s apart) for calls two clients make at once on one lane: one of them gets BUSY until the
other's action is done, however slow the machine."""


def test_legacy_and_modern_clients_interleaved_without_cross_talk(browser_host: Host) -> None:
    """A handshake client and a stateless client on one host at once, their calls interleaved and partly
    concurrent: each sees only its own answers, in its own era (no resultType for the handshake client,
    resultType on every stateless result), and the host mints no session id for either."""
    legacy_seen: list[httpx2.Response] = []
    modern_seen: list[httpx2.Response] = []

    async def body() -> None:
        async with (
            connect(browser_host, "legacy", seen=legacy_seen) as old,
            connect(browser_host, MODERN, seen=modern_seen) as new,
        ):
            assert old.protocol_version != new.protocol_version == MODERN
            old_tab, new_tab = await asyncio.gather(
                open_tab(old, browser_host, "click.html", retries=SHARED),
                open_tab(new, browser_host, "form.html", retries=SHARED),
            )
            old_snap, new_snap = await asyncio.gather(
                ok(old, "tab.snapshot", {"tabId": old_tab}, retries=SHARED),
                ok(new, "tab.snapshot", {"tabId": new_tab}, retries=SHARED),
            )
            assert old_snap["title"] == "Click page" and new_snap["title"] != "Click page"
            # Each client acts with its own refs; the other's refs are foreign to its tab.
            crossed = await bc(
                new, "tab.click", {"tabId": new_tab, "ref": element(old_snap, "button", "Increment")["ref"]}
            )
            assert crossed["error"]["code"] == "CROSS_TAB_REF"
            clicked, typed = await asyncio.gather(
                ok(
                    old,
                    "tab.click",
                    {"tabId": old_tab, "ref": element(old_snap, "button", "Increment")["ref"]},
                    retries=SHARED,
                ),
                ok(
                    new,
                    "tab.type",
                    {"tabId": new_tab, "ref": element(new_snap, "input", "name")["ref"], "text": "abc"},
                    retries=SHARED,
                ),
            )
            assert clicked == {"clicked": True} and typed == {"typed": 3}
            old_after, new_after = await asyncio.gather(
                ok(old, "tab.snapshot", {"tabId": old_tab}, retries=SHARED),
                ok(new, "tab.snapshot", {"tabId": new_tab}, retries=SHARED),
            )
            assert "Clicked 1 times" in old_after["text"] and "Name has 3 characters" in new_after["text"]
            assert "Clicked 1 times" not in new_after["text"]

    run(body())
    for seen, modern in ((legacy_seen, False), (modern_seen, True)):
        answers = [json.loads(r.content) for r in seen if r.content]
        results = [a["result"] for a in answers if isinstance(a, dict) and "result" in a]
        assert len(results) >= 5  # initialize (legacy only), tabs.open, 2-3 snapshots, click or type
        assert all(("resultType" in r) is modern for r in results), (modern, results)
        assert all(r.get("resultType", "complete") == "complete" for r in results)
        assert not any("mcp-session-id" in r.headers for r in seen)
    # The stateless client never sent initialize: its first request was already a tool call.
    assert json.loads(modern_seen[0].request.content)["method"] == "tools/call"
    assert [json.loads(r.request.content)["method"] for r in legacy_seen][:2] == [
        "initialize",
        "notifications/initialized",
    ]
