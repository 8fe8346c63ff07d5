"""``--direct-cdp`` (issue 35; docs/host.md "Direct CDP"): the main frame's fixed scripts go over the host's own
CDP connection to the browser it launched, not through Playwright's driver — against real headless Chromium,
in-process with the host's own renderer, so the test can see which connection carried each script.

What a user would notice if it went wrong: a snapshot of the previous document, a script that hangs after its
renderer crashed or its document navigated away, a browser relaunch that leaves scripts failing, a DevTools
port reachable from the network. Each is provoked for real here; the whole host suite's ``--via-abi`` mode
runs with ``--direct-cdp`` too (tests/host/conftest.py), so every refusal and fault test of the host covers it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from faults_testlib import _children, cmdline
from host_testlib import in_renderer
from kelpie_gateway import reader
from kelpie_gateway.host.browser import ChromiumRenderer
from kelpie_gateway.host.browser.world import World

pytestmark = pytest.mark.timeout(240)
KEY = "0123456789abcdef0123456789abcdef"
SNAPSHOT = reader.snapshot_script(KEY, max_chars=1000, max_elements=20)


def run_renderer(body: Callable[[ChromiumRenderer, str, str], Awaitable[Any]], *, direct: bool = True) -> Any:
    """``body(renderer, tab, site)`` against the host's own renderer with ``direct_cdp`` (``in_renderer``)."""
    return in_renderer(body, direct_cdp=direct)


async def evaluate(renderer: ChromiumRenderer, tab: str, script: str, timeout_ms: int = 10000) -> dict[str, Any]:
    params = {"tabId": tab, "script": script, "timeoutMs": timeout_ms}
    return dict(await renderer.call("browser-control-evaluate", params))


async def value(renderer: ChromiumRenderer, tab: str, script: str) -> Any:
    answer = await evaluate(renderer, tab, script)
    assert answer["success"], answer
    return answer["value"]


async def navigate(renderer: ChromiumRenderer, tab: str, url: str) -> None:
    nav = await renderer.call("navigate", {"tabId": tab, "url": url, "timeoutMs": 10000})
    assert nav["success"], nav


def spies(renderer: ChromiumRenderer, tab: str) -> dict[str, list[str]]:
    """From now on, the methods each connection of the tab sends: ``playwright`` (the tab's Playwright CDP
    session) and ``direct`` (its flat session on the host's own connection)."""
    known = renderer.pages.get(tab)
    world = renderer.part(World)
    assert known is not None and world is not None and known.cdp is not None
    flat = world.of(known).direct
    assert flat is not None, "no direct session: --direct-cdp did not take"
    sent: dict[str, list[str]] = {"playwright": [], "direct": []}
    for name, session in (("playwright", known.cdp), ("direct", flat)):
        send = session.send

        async def spy(method: str, params: Any = None, _send: Any = send, _log: list[str] = sent[name]) -> Any:
            _log.append(method)
            return await _send(method, params)

        session.send = spy  # type: ignore[method-assign]
    return sent


def browser_and_renderers(renderer: ChromiumRenderer) -> tuple[int, list[int], int]:
    """(browser pid, its renderer pids, its DevTools port) of this renderer's own browser."""
    direct = renderer.lifecycle.link.direct
    assert direct is not None
    port = renderer.lifecycle.link._debugging_port
    tree = _children()
    todo, found = [os.getpid()], []
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    browser = next(p for p in found if f"--remote-debugging-port={port}" in cmdline(p))
    below, todo = [], [browser]
    while todo:
        for child in tree.get(todo.pop(), []):
            below.append(child)
            todo.append(child)
    renderers = [p for p in below if "--type=renderer" in " ".join(cmdline(p))]
    assert port is not None
    return browser, renderers, port


def listening_on(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp* has them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as handle:
            for line in handle.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    found.append(local.rsplit(":", 1)[0])
    return found


def test_fixed_scripts_go_over_the_direct_session_and_their_effects_show() -> None:
    """Snapshot, type and click: each one ``Runtime.evaluate`` on the direct session, none on Playwright's;
    the page shows each effect exactly once. The endpoint listens on loopback only."""

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[dict[str, list[str]], str, list[str]]:
        await navigate(renderer, tab, f"{site}/form.html")
        sent = spies(renderer, tab)
        snap = await value(renderer, tab, SNAPSHOT)
        refs = {e["label"]: e["handle"] for e in snap["elements"]}
        assert await value(renderer, tab, reader.type_script(KEY, refs["Your name"], "Ada")) == {"typed": 3}
        assert await value(renderer, tab, reader.click_script(KEY, refs["Echo the name"])) == {"clicked": True}
        text = (await value(renderer, tab, SNAPSHOT))["text"]
        return sent, text, listening_on(browser_and_renderers(renderer)[2])

    sent, text, addresses = run_renderer(body)
    assert sent == {"playwright": [], "direct": ["Runtime.evaluate"] * 4}, sent
    assert "Echo: Ada" in text and "Name has 3 characters" in text, text
    assert addresses == ["0100007F"], addresses  # 127.0.0.1, nothing else


def test_without_the_flag_there_is_no_debugging_port_and_scripts_use_playwright() -> None:
    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[Any, Any, bool]:
        await navigate(renderer, tab, f"{site}/form.html")
        snap = await value(renderer, tab, SNAPSHOT)
        known = renderer.pages.get(tab)
        world = renderer.part(World)
        assert known is not None and world is not None
        ports = [a for p in _children().get(os.getpid(), []) for a in cmdline(p) if "remote-debugging-port" in a]
        return renderer.lifecycle.link.direct, world.of(known).direct, bool(snap["elements"]) and not ports

    assert run_renderer(body, direct=False) == (None, None, True)


def test_a_document_that_navigates_away_under_a_script_is_renderer_changed_then_read_anew() -> None:
    """World loss exactly as without the flag: a script whose document navigates away under it is answered
    RENDERER_CHANGED (not a hang, not a value of the old document); the next script runs in the new
    document's world, over the direct session again."""

    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[dict[str, Any], str, list[str]]:
        await navigate(renderer, tab, f"{site}/form.html")
        away = f"new Promise(() => {{ location.href = {site + '/click.html'!r}; }})"
        started = time.monotonic()
        answer = await evaluate(renderer, tab, away)
        assert time.monotonic() - started < 8, "the script waited for its deadline"
        for _ in range(50):  # the new document commits
            if (await renderer.call("get-tabs", {}))["tabs"][0]["url"].endswith("click.html"):
                break
            await asyncio.sleep(0.1)
        sent = spies(renderer, tab)
        title = (await value(renderer, tab, SNAPSHOT))["title"]
        return answer, title, sent["direct"]

    answer, title, direct = run_renderer(body)
    assert answer["success"] is False and answer["error"]["code"] == "RENDERER_CHANGED", answer
    assert title == "Click page" and direct == ["Runtime.evaluate"], (title, direct)


def test_a_renderer_crash_under_a_script_answers_at_once_and_the_tab_recovers_over_direct_cdp() -> None:
    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[dict[str, Any], float, list[str], str]:
        await navigate(renderer, tab, f"{site}/form.html")
        _browser, renderers, _port = browser_and_renderers(renderer)
        pending = asyncio.ensure_future(evaluate(renderer, tab, "new Promise(r => setTimeout(r, 8000))", 9000))
        await asyncio.sleep(0.5)
        for pid in renderers:
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        answer = await pending
        took = time.monotonic() - killed
        for _ in range(100):  # Playwright's crash event may come after the direct session's answer
            if (await renderer.call("get-tabs", {}))["tabs"][0].get("crashed"):
                break
            await asyncio.sleep(0.1)
        await navigate(renderer, tab, f"{site}/click.html")  # a fresh page for the crashed tab
        sent = spies(renderer, tab)
        title = (await value(renderer, tab, SNAPSHOT))["title"]
        return answer, took, sent["direct"], title

    answer, took, direct, title = run_renderer(body)
    assert answer["success"] is False and answer["error"]["code"] == "RENDERER_FAILED", answer
    assert took < 4, f"the script was answered {took:.1f} s after its renderer died"
    assert title == "Click page" and direct == ["Runtime.evaluate"], (title, direct)


def test_a_relaunched_browser_gets_a_new_direct_connection() -> None:
    async def body(renderer: ChromiumRenderer, tab: str, site: str) -> tuple[bool, list[str], str]:
        browser, _renderers, _port = browser_and_renderers(renderer)
        old = renderer.lifecycle.link.direct
        os.kill(browser, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            tabs = await renderer.call("get-tabs", {})
            now = renderer.lifecycle.link.direct
            if tabs.get("success", True) and tabs.get("tabs") and now is not None and now is not old:
                break
            assert time.monotonic() < deadline, "the browser was not relaunched"
            await asyncio.sleep(0.2)
        opened = await renderer.call("new-tab", {"url": f"{site}/click.html", "timeoutMs": 10000})
        assert opened.get("tabId"), opened
        fresh = opened["tabId"]
        sent = spies(renderer, fresh)
        title = (await value(renderer, fresh, SNAPSHOT))["title"]
        return bool(old is not None and old.closed), sent["direct"], title

    old_closed, direct, title = run_renderer(body)
    assert old_closed and direct == ["Runtime.evaluate"] and title == "Click page", (old_closed, direct, title)
