"""Small messages of issue 34 on a real host and browser: the operator log line of ``extension.call`` names
the tab its ``arguments.tabId`` targets (admitted or refused), and ``TAB_REQUIRED`` says where a tab id
comes from (docs/host.md "What `serve` prints").
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from host_testlib import Host, start_host

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    process = start_host(["--approve-pairing", "auto", "--pairings", "memory"], "python")
    try:
        paired = Host(process, "", "python")
        paired.token = paired.pair("messages")
        yield paired
    finally:
        process.stop()


def _tx_lines(host: Host, method: str) -> list[str]:
    return [line for line in list(host.process.lines) if f"tx {method} " in line]


def test_extension_call_log_line_names_the_argument_tab(host: Host) -> None:
    tab = host.call("tabs.list")["result"]["tabs"][0]["tabId"]
    done = host.call("extension.call", {"name": "scroll", "arguments": {"tabId": tab, "direction": "down"}})
    assert done["success"] is True, done
    refused = host.call("extension.call", {"name": "no_such_extension", "arguments": {"tabId": tab}})
    assert refused["error"]["code"] == "EXTENSION_NOT_ADMITTED", refused
    deadline = time.monotonic() + 10
    while len(_tx_lines(host, "extension.call")) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = _tx_lines(host, "extension.call")
    assert len(lines) == 2, host.process.lines
    assert f"tab={tab} ok" in lines[0], lines
    assert f"tab={tab} refused EXTENSION_NOT_ADMITTED" in lines[1], lines
    assert not any("tab=-" in line for line in lines)


def test_tab_required_says_where_a_tab_id_comes_from(host: Host) -> None:
    refused = host.call("tab.snapshot", {})
    assert refused["error"]["code"] == "TAB_REQUIRED", refused
    assert refused["error"]["message"].endswith("get one from tabs.list"), refused
