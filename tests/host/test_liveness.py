"""Liveness: a page can never wedge the host (CONTRACT.md §5 "Retirement is bounded", ARCHITECTURE.md host
rules 1.1; docs/host.md "Liveness"). Provoked for real: a click handler that never returns (``spin.html``),
one busy for 12 s (``busy12.html``), a page that never finishes loading, a renderer that does not yield even
to ``Runtime.terminateExecution`` (stopped with SIGSTOP: the host closes its tab), a client that disconnects
mid-mutation and MCP ``notifications/cancelled``. Each test asserts the truthful envelope and that the lane
frees within the bound, and records the recovery time (``faults_testlib``)."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from faults_testlib import (
    GRACE_S,
    RUNS,
    call_in_thread,
    chromium_processes,
    every_native_says_not_found,
    fault_host,
    open_page,
    opens_a_tab,
    record,
    recovery_report,
    refused,
    signal_all,
    unknown_outcome,
    until,
)
from host_testlib import Host, start_host

FIXTURES = (fault_host, recovery_report)  # this module's "host" (one fault host) and "report" (figures)


# ---------------------------------------------------------------------------------------------- stuck scripts
@pytest.mark.parametrize("run", range(RUNS))
def test_infinite_loop_handler_is_stopped_and_the_host_recovers(host: Host, run: int) -> None:
    stuck_script_recovers(host, "infinite-loop handler (3 s timeout)")


def test_infinite_loop_handler_through_the_c_abi() -> None:
    """The same, with the overdue signal read through the C library's ``next`` (``--via-abi``)."""
    process = start_host(["--approve-pairing", "auto"], "abi")
    try:
        stuck_script_recovers(Host(process, process.pair("chaos"), "abi"), "infinite-loop handler, C ABI")
    finally:
        process.stop()


def stuck_script_recovers(host: Host, fault: str) -> None:
    timeout_ms = 3000
    tab, refs = open_page(host, "spin.html")
    started = time.monotonic()
    env = host.call("tab.click", {"tabId": tab, "ref": refs["Spin"], "timeoutMs": timeout_ms})
    answered = time.monotonic() - started
    unknown_outcome(env, "TIMEOUT")
    assert timeout_ms / 1000 <= answered < timeout_ms / 1000 + 2, answered
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + 2) - started
    assert recovered <= timeout_ms / 1000 + GRACE_S, f"lane held {recovered:.2f} s"
    record(fault, recovered)
    assert host.process.wait_for_line("(Runtime.terminateExecution)", 5), "the script was not stopped"
    # The tab itself works again: the handler was stopped, not the tab closed.
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and "spinning" in snap["result"]["text"], snap
    host.call("tabs.close", {"tabId": tab})


@pytest.mark.parametrize("run", range(RUNS))
def test_twelve_second_handler_times_out_and_the_lane_frees_within_the_grace(host: Host, run: int) -> None:
    tab, refs = open_page(host, "busy12.html")
    started = time.monotonic()
    env = host.call("tab.click", {"tabId": tab, "ref": refs["Work"]})  # default timeoutMs 10000
    answered = time.monotonic() - started
    unknown_outcome(env, "TIMEOUT")
    assert 10 <= answered < 12, answered
    # Meanwhile everything is BUSY (nothing dispatched), never a false answer.
    busy = host.call("tabs.list")
    assert busy["success"] or (busy["error"]["code"] == "BUSY" and busy["mayHaveCompleted"] is False)
    recovered = until(lambda: opens_a_tab(host), 10 + GRACE_S + 2) - started
    assert recovered <= 10 + GRACE_S, f"lane held {recovered:.2f} s"
    record("12 s busy handler (10 s timeout)", recovered)
    # The click's outcome is unknown: the tab needs an observation — unless the host had to close it (its
    # script did not stop within 1 s of terminateExecution, which happens under load): then it is gone.
    closed = any(f"closed tab {tab}: its script did not stop" in line for line in host.process.lines)
    navigate = host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")})
    refused(navigate, "TAB_NOT_FOUND" if closed else "RECONCILE_REQUIRED")
    host.call("tabs.close", {"tabId": tab})


# ---------------------------------------------------------------------------------------------- slow loads
class _Hanging(BaseHTTPRequestHandler):
    """``/`` is a page whose image never arrives, so its load event never fires."""

    def do_GET(self) -> None:
        if self.path == "/":
            body = b"<!doctype html><title>Never loads</title><h1>Loading forever</h1><img src='/hang'>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        time.sleep(60)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hanging_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hanging)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.parametrize("run", range(RUNS))
def test_a_page_that_never_finishes_loading(host: Host, hanging_site: str, run: int) -> None:
    timeout_ms = 3000
    tab, _ = open_page(host, "index.html")
    started = time.monotonic()
    env = host.call("tab.navigate", {"tabId": tab, "url": hanging_site, "timeoutMs": timeout_ms})
    unknown_outcome(env, "TIMEOUT")
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + 2) - started
    assert recovered <= timeout_ms / 1000 + GRACE_S, f"lane held {recovered:.2f} s"
    record("page that never finishes loading (3 s)", recovered)
    snap = host.call("tab.snapshot", {"tabId": tab})  # the document is there, only its load never fired
    assert snap["success"] and "Loading forever" in snap["result"]["text"], snap
    host.call("tabs.close", {"tabId": tab})


# ---------------------------------------------------------------------------------------------- clients
@pytest.mark.parametrize("run", range(RUNS))
def test_client_disconnect_mid_mutation_leaves_the_tab_reconcile_required(host: Host, run: int) -> None:
    tab, refs = open_page(host, "slow.html?busy=2000")
    body = json.dumps({"version": 1, "id": 1, "method": "tab.click",
                       "params": {"tabId": tab, "ref": refs["Slow increment"]}}).encode()
    sock = socket.create_connection(("127.0.0.1", host.port))
    sock.sendall(
        b"POST /v1/browser-control HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (host.port, host.token.encode(), len(body), body)
    )
    time.sleep(0.5)
    sock.close()  # the client is gone before the click's answer exists
    gone = time.monotonic()
    line = host.process.wait_for_line(f"tab {tab} needs a reconcile", 10)
    assert line is not None, "the host did not notice the undelivered answer"
    # The click happened, but nobody learnt it: the next mutation on that tab must observe first.
    refused(host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "RECONCILE_REQUIRED")
    record("client disconnect mid-mutation", time.monotonic() - gone)
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and "Slow effect count: 1" in snap["result"]["text"], snap
    assert host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")})["success"]
    host.call("tabs.close", {"tabId": tab})


@pytest.mark.parametrize("run", range(RUNS))
def test_mcp_notifications_cancelled_answers_the_call_at_once(host: Host, run: int) -> None:
    tab, refs = open_page(host, "slow.html?busy=3000")
    rid = f"chaos-{run}"
    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "kelpie_browser_control",
                       "arguments": {"method": "tab.click", "params": {"tabId": tab, "ref": refs["Slow increment"]}}}}
    box: dict[str, Any] = {}

    def run_call() -> None:
        box["status"], box["rpc"] = host.post("/mcp", call)
        box["answered"] = time.monotonic()

    thread = threading.Thread(target=run_call, daemon=True)
    thread.start()
    time.sleep(0.8)
    cancelled = time.monotonic()
    status, body = host.post("/mcp", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": rid, "reason": "user pressed stop"}})
    assert status == 202 and body is None
    thread.join(15)
    assert box["answered"] - cancelled < 1.5, "the cancelled call was not answered at once"
    assert box["status"] == 200 and box["rpc"]["id"] == rid
    result = box["rpc"]["result"]
    assert result["isError"] is True
    unknown_outcome(result["structuredContent"], "CANCELLED")
    recovered = until(lambda: opens_a_tab(host), 3 + GRACE_S) - cancelled
    record("MCP notifications/cancelled", recovered)
    refused(host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "RECONCILE_REQUIRED")
    host.call("tabs.close", {"tabId": tab})


def test_a_tab_closed_by_bounded_retirement_is_not_found_for_every_native(host: Host) -> None:
    """The fault of issue 16's 100k page, provoked cheaply: the click's handler never yields and its renderer
    is stopped, so terminateExecution cannot end it; the host closes the tab at timeoutMs + grace + 1 s and
    retires the click. Before the fix the tab then answered RECONCILE_REQUIRED to a navigate and
    TAB_NOT_FOUND to a snapshot, until a tabs.list."""
    closed_by_retirement_is_not_found(host)


def test_a_tab_closed_by_bounded_retirement_through_the_c_abi() -> None:
    """The same, with the close reported to the gateway through the C library's ``_advance``."""
    process = start_host(["--approve-pairing", "auto"], "abi")
    try:
        closed_by_retirement_is_not_found(Host(process, process.pair("chaos"), "abi"))
    finally:
        process.stop()


def closed_by_retirement_is_not_found(host: Host) -> None:
    tab, refs = open_page(host, "spin.html")
    other, _ = open_page(host, "index.html")
    timeout_ms = 2000
    thread, box = call_in_thread(host, "tab.click", {"tabId": tab, "ref": refs["Spin"], "timeoutMs": timeout_ms})
    time.sleep(0.6)  # the handler spins now
    _, renderers = chromium_processes(host)
    signal_all(renderers, signal.SIGSTOP)  # no renderer yields: not to the script stop, not to anything
    try:
        thread.join(timeout_ms / 1000 + 10)
        unknown_outcome(box["env"], "TIMEOUT")
        closed = host.process.wait_for_line(f"closed tab {tab}: its script did not stop", timeout_ms / 1000 + 20)
        assert closed is not None, "the host did not close the tab whose renderer does not yield"
    finally:
        signal_all(renderers, signal.SIGCONT)  # the other tabs' renderers go on (the spinning one is gone)
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + 10) - box["started"]
    assert recovered <= timeout_ms / 1000 + GRACE_S + 6, f"lane held {recovered:.2f} s"  # + stop 2 s, close
    record("renderer that does not yield (tab closed)", recovered)
    every_native_says_not_found(host, tab, refs["Spin"])
    assert host.process.wait_for_line(f"tab {tab} is closed: its RECONCILE_REQUIRED mark is void", 5)
    listed = host.call("tabs.list")
    assert listed["success"] and tab not in {t["tabId"] for t in listed["result"]["tabs"]}, listed
    # The other tab was only paused: it works, and so does a new one.
    snap = host.call("tab.snapshot", {"tabId": other})
    assert snap["success"] and snap["result"]["title"], snap
    assert host.call("tab.navigate", {"tabId": other, "url": host.site("spin.html")})["success"]
    host.call("tabs.close", {"tabId": other})
