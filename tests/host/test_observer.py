"""One-shot observers on a running host (docs/host.md "Observers"; CONTRACT.md §9 v1.2): ``POST /v1/observe``
and ``kelpie-gateway observe`` read a tab once through a gateway of their own (``observer: true``), beside
the host's ordinary gateway, in real headless Chromium, through the Python API and the C library.

The observation has no refs, so a ref made up from it is refused by the action gateway; it leaves the action
gateway's refs and registry as they were; it reads the selected tab when no tab is named; and a read during
which the tab navigated away (to another site, its new document in another renderer) is discarded
``RENDERER_CHANGED``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_testlib import ROOT, Host, call, ok
from lane_site import LaneSite

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[LaneSite, LaneSite]]:
    here, there = LaneSite("127.0.0.1"), LaneSite("127.0.0.2")
    yield here, there
    here.stop()
    there.stop()


def observe(host: Host, **params: Any) -> dict[str, Any]:
    status, envelope = host.post("/v1/observe", params)
    assert status == 200, (status, envelope)
    return dict(envelope)


def test_an_observation_has_no_refs_and_leaves_the_action_gateway_alone(browser_host: Host) -> None:
    host = browser_host
    tab = str(ok(host, "tabs.open", {"url": host.site("click.html")})["tabId"])
    snap = ok(host, "tab.snapshot", {"tabId": tab})
    increment = next(e["ref"] for e in snap["elements"] if e["label"] == "Increment")
    seen = observe(host, tabId=tab)
    assert seen["success"] is True, seen
    result = seen["result"]
    assert result["observer"] is True and result["tabId"] == tab and "snapshot" not in result
    assert [e["label"] for e in result["elements"]] == [e["label"] for e in snap["elements"]]
    assert all("ref" not in e for e in result["elements"]) and result["text"] == snap["text"]
    # A ref made up from the observation authorizes nothing: refused before anything runs.
    for i in range(1, len(result["elements"]) + 1):
        for ref in (f"s0e{i}", f"s999e{i}", f"e{i}"):
            refused = call(host, "tab.click", {"tabId": tab, "ref": ref})
            assert refused["success"] is False and refused["mayHaveCompleted"] is False, refused
            assert refused["error"]["code"] in ("UNKNOWN_REF", "STALE_SNAPSHOT"), refused
    assert "Clicked 0 times" in ok(host, "tab.snapshot", {"tabId": tab})["text"]
    # The action gateway's refs are as they were: the observer neither invalidated them nor cleared the
    # registry they name (the snapshot just above is the tab's latest, taken after the observation).
    again = ok(host, "tab.snapshot", {"tabId": tab})
    increment = next(e["ref"] for e in again["elements"] if e["label"] == "Increment")
    assert observe(host, tabId=tab)["success"] is True
    assert ok(host, "tab.click", {"tabId": tab, "ref": increment}) == {"clicked": True}
    assert "Clicked 1 times" in observe(host, tabId=tab)["result"]["text"]


def test_without_a_tab_the_selected_one_is_read(browser_host: Host) -> None:
    host = browser_host
    tab = str(ok(host, "tabs.open", {"url": host.site("second.html")})["tabId"])  # a new tab is selected
    seen = observe(host)
    assert seen["success"] is True and seen["result"]["tabId"] == tab, seen
    refused = observe(host, tabId=tab, scope="s1e1")
    assert refused["error"]["code"] == "INVALID_PARAMS" and refused["mayHaveCompleted"] is False
    assert observe(host, tabId="t999")["error"]["code"] == "TAB_NOT_FOUND"
    status, bad = host.post("/v1/observe", b"[1]")
    assert status == 400 and bad["error"]["code"] == "INVALID_REQUEST"
    status, _ = host.post("/v1/observe", {}, token="not-a-token")
    assert status == 401


def test_a_read_during_a_navigation_is_discarded(browser_host: Host, sites: tuple[LaneSite, LaneSite]) -> None:
    """The page keeps its renderer busy right after it loads, so the observer's read waits behind it; the
    tab meanwhile navigates to another site, whose document commits in another renderer. The read is
    discarded RENDERER_CHANGED (retryable, nothing had effects), never answered with the old document."""
    host = browser_host
    here, there = sites
    tab = str(ok(host, "tabs.open", {})["tabId"])
    ok(host, "tab.navigate", {"tabId": tab, "url": here.page("busy.html?busy=4000"), "timeoutMs": 20000})
    time.sleep(0.6)  # the page is busy now (it starts 300 ms after load)
    answer: dict[str, Any] = {}
    reading = threading.Thread(target=lambda: answer.update(observe(host, tabId=tab)))
    reading.start()
    time.sleep(0.4)
    moved = call(host, "tab.navigate", {"tabId": tab, "url": there.page("child.html"), "timeoutMs": 20000})
    reading.join(60)
    assert moved["success"] is True, moved
    assert answer["success"] is False and answer["error"]["code"] == "RENDERER_CHANGED", answer
    assert answer["error"]["retryable"] is True and answer["mayHaveCompleted"] is False
    after = observe(host, tabId=tab)
    assert after["success"] is True and after["result"]["title"] == "Child", after


def test_the_observe_command(browser_host: Host, tmp_path: Path) -> None:
    host = browser_host
    tab = str(ok(host, "tabs.open", {"url": host.site("click.html")})["tabId"])
    token = tmp_path / "token"
    token.write_text(host.token, encoding="utf-8")
    command = [sys.executable, "-m", "kelpie_gateway.host.cli", "observe", "--url", host.url, "--token-file",
               str(token), "--tab", tab, "--max-elements", "2"]
    env = {"PYTHONPATH": str(ROOT / "engine"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert '"observer": true' in done.stdout and '"ref"' not in done.stdout and "Increment" in done.stdout
    refused = subprocess.run([*command[:-4], "--tab", "t999"], capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 1 and "refused: TAB_NOT_FOUND" in refused.stderr


def test_per_client_isolation_keeps_each_clients_lane_and_observations_its_own(
    sites: tuple[LaneSite, LaneSite],
) -> None:
    """``--isolation per-client``: a client's observation and lane reads are of its own context; another
    client naming the same tab id is answered ``TAB_NOT_FOUND`` (nothing of the first client's is read)."""
    from host_testlib import start_host

    process = start_host(["--approve-pairing", "auto", "--isolation", "per-client"], "python")
    try:
        first, second = (Host(process, process.pair(name), "python") for name in ("first", "second"))
        tab = str(ok(first, "tabs.open", {"url": sites[0].page("lane.html")})["tabId"])
        deadline = time.monotonic() + 30
        while not ok(first, "extension.call", {"name": "console_messages", "arguments": {"tabId": tab}})["messages"]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        seen = observe(first, tabId=tab)
        assert seen["success"] and seen["result"]["observer"] is True, seen
        assert all("ref" not in e for e in seen["result"]["elements"])
        other = observe(second, tabId=tab)
        assert other["success"] is False and other["error"]["code"] == "TAB_NOT_FOUND", other
        for name in ("console_messages", "network_requests", "cookies", "storage"):
            refused = call(second, "extension.call", {"name": name, "arguments": {"tabId": tab}})
            assert refused["error"]["code"] == "TAB_NOT_FOUND", (name, refused)
    finally:
        process.stop()
