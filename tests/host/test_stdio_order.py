"""stdio answers one client's requests in arrival order (issue 34): several tool calls sent at once are run
one after another, never ``BUSY``; ``notifications/cancelled`` still reaches the call in flight at once and
removes a queued one before it runs (one still queued when its cancellation arrives, even the first, is
never run). Real headless Chromium behind a start slowed by a wrapper script, so the
first call is in flight (waiting for the browser) while the others arrive.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from stdio_testlib import StdioHost

pytestmark = pytest.mark.timeout(240)


def _call(rid: int, method: str, params: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "kelpie_browser_control", "arguments": {"method": method, "params": params}},
    }
    return json.dumps(message).encode() + b"\n"


def _cancel(rid: int) -> bytes:
    message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
    return json.dumps(message).encode() + b"\n"


def _slow_browser(tmp_path: Path, seconds: int) -> str:
    slow = tmp_path / "slow-chromium"
    slow.write_text(f'#!/bin/sh\nsleep {seconds}\nexec /usr/bin/chromium "$@"\n')
    slow.chmod(0o755)
    return str(slow)


def test_three_calls_sent_at_once_are_answered_in_order_without_busy(tmp_path: Path) -> None:
    with StdioHost(["--browser-executable", _slow_browser(tmp_path, 3)]) as host:
        host.initialize()
        # One write, three calls: the first waits for the browser start while the others arrive.
        host.send_raw(
            _call(2, "tabs.list", {})
            + _call(3, "tab.snapshot", {"tabId": "t1"})
            + _call(4, "tab.navigate", {"tabId": "t1", "url": "about:blank"})
        )
        answers = [host.recv(), host.recv(), host.recv()]
        assert [a["id"] for a in answers] == [2, 3, 4]
        envelopes = [a["result"]["structuredContent"] for a in answers]
        assert all(e["success"] for e in envelopes), envelopes  # no BUSY
        assert envelopes[0]["result"]["tabs"][0]["title"] == "Kelpie fixture site"
        assert envelopes[1]["result"]["title"] == "Kelpie fixture site"
        host.close_stdin()
        assert host.wait(60) == 0
    assert host.garbage == []
    order = [line.split()[1] for line in host.log if line.startswith("tx tab")]
    assert order == ["tabs.list", "tab.snapshot", "tab.navigate"], host.log


def test_cancelling_a_queued_and_the_in_flight_call(tmp_path: Path) -> None:
    with StdioHost(["--browser-executable", _slow_browser(tmp_path, 4)]) as host:
        host.initialize()
        host.send_raw(_call(2, "tab.snapshot", {"tabId": "t1"}))  # in flight: waits for the 4 s start
        time.sleep(1.0)  # let it enter the gateway (the browser is still asleep for 3 s more)
        host.send_raw(
            _call(3, "tab.navigate", {"tabId": "t1", "url": "about:blank"})  # queued
            + _call(4, "tabs.list", {})  # queued
            + _cancel(3)  # removed from the queue: never runs, no answer
            + _cancel(2)  # reaches the gateway at once: answered CANCELLED
        )
        first = host.recv()
        assert first["id"] == 2, first
        cancelled = first["result"]["structuredContent"]
        assert cancelled["error"]["code"] == "CANCELLED", cancelled
        second = host.recv()
        assert second["id"] == 4, second  # 3 was never answered
        envelope = second["result"]["structuredContent"]
        if not envelope["success"]:  # the cancelled read may still hold its lane until it retires
            assert envelope["error"]["code"] == "BUSY" and envelope["error"]["retryable"], envelope
            envelope = host.control(5, "tabs.list", {})
        assert envelope["success"], envelope
        host.close_stdin()
        assert host.wait(60) == 0
        assert host.messages.empty()
    assert any("request 3 cancelled while queued" in line for line in host.log), host.log
    assert not any("request 2 cancelled while queued" in line for line in host.log), host.log
    assert not any(line.startswith("tx tab.navigate") for line in host.log), host.log
