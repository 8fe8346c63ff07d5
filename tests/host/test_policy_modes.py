"""The site policy in the other browser modes (issue 27; docs/host.md "Site policy", "What holds where"):
a persistent profile (``--user-data-dir``) is launched with the same proxy flags; an attached browser
(``--cdp-endpoint``) cannot be given flags, so the host works in a browser context of its own whose proxy is
the policy's — its requests are decided like a launched browser's, and the attached browser's own tabs
(not under the policy) are not adopted.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from policy_testlib import AttackSite, Recorders, base
from stdio_testlib import StdioHost
from test_lifecycle import running_chromium  # noqa: F401  (the fixture: a Chromium the test started)

pytestmark = pytest.mark.timeout(240)

PAGE = """<!doctype html><title>attack</title><script>
fetch("@@B@@/fetched", {mode: "no-cors"}).finally(() => {
  const ws = new WebSocket("ws://@@W@@/ws"); ws.onerror = ws.onclose = () => { document.title = "done"; };
});</script>"""


@pytest.fixture
def attack() -> Iterator[tuple[AttackSite, Recorders]]:
    site, recorders = AttackSite(("127.0.0.1",)), Recorders()
    yield site, recorders
    site.stop()
    recorders.close()


def attack_through(host: StdioHost, site: AttackSite, recorders: Recorders, tab: str) -> None:
    """Open a page that fetches a blocked origin and opens a WebSocket to another; nothing reaches them and
    both refusals are logged."""
    fetched, socket = recorders.tcp("127.0.0.2"), recorders.tcp("127.0.0.2")
    site.page("/attack", PAGE.replace("@@B@@", base(fetched)).replace("@@W@@", f"{socket[0]}:{socket[1]}"))
    assert host.control(20, "tab.navigate", {"tabId": tab, "url": site.bases["127.0.0.1"] + "/attack"})["success"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        titles = {t["tabId"]: t["title"] for t in host.control(21, "tabs.list", {})["result"]["tabs"]}
        if titles.get(tab) == "done":
            break
        time.sleep(0.2)
    for needle in (f"blocked GET to {base(fetched)}:", f"blocked CONNECT (https, wss or ws) to {socket[0]}:{socket[1]}:"):
        deadline = time.monotonic() + 10
        while not any(needle in line for line in host.log) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(needle in line for line in host.log), (needle, host.log[-20:])
    assert recorders.seen(fetched) == [] and recorders.seen(socket) == []


def test_a_persistent_profile_is_launched_through_the_proxy(
    tmp_path: Path, attack: tuple[AttackSite, Recorders]
) -> None:
    site, recorders = attack
    with StdioHost(["--user-data-dir", str(tmp_path / "profile"), "--blocked-origins", "http://127.0.0.2:*"]) as host:
        host.initialize()
        tab = host.control(2, "tabs.list", {})["result"]["tabs"][0]["tabId"]
        attack_through(host, site, recorders, tab)
        assert any("every browser request goes through its proxy" in line for line in host.log), host.log[:12]


def test_an_attached_browser_works_in_a_proxied_context_of_its_own(
    running_chromium: tuple[str, subprocess.Popen[bytes]],  # noqa: F811
    attack: tuple[AttackSite, Recorders],
) -> None:
    endpoint, chromium = running_chromium
    site, recorders = attack
    with StdioHost(["--cdp-endpoint", endpoint, "--blocked-origins", "http://127.0.0.2:*"]) as host:
        host.initialize()
        tabs = host.control(2, "tabs.list", {})["result"]["tabs"]
        # The attached browser's own tab is not under the policy: it is not the agent's.
        assert [t["title"] for t in tabs] == ["Kelpie fixture site"], tabs
        attack_through(host, site, recorders, tabs[0]["tabId"])
        assert any("in a context of its own, through the site policy's proxy" in line for line in host.log)
        host.close_stdin()
        assert host.wait(60) == 0
    time.sleep(1)
    assert chromium.poll() is None  # never closed by the host
    with urllib.request.urlopen(f"{endpoint}/json/list", timeout=10) as response:
        assert "Already open" in response.read().decode()
