"""Liveness: a page can never wedge the host (CONTRACT.md §5 "Retirement is bounded", ARCHITECTURE.md host
rules 1.1; docs/host.md "Liveness"). Provoked for real: a click handler that never returns (``spin.html``),
one busy for 12 s (``busy12.html``), a page that never finishes loading, a renderer that does not yield even
to ``Runtime.terminateExecution`` (stopped with SIGSTOP: the host ends its page and keeps the tab), a whole
browser stalled for 20 s (the tab is kept as it is), a click that opens 200 popups (at most ``--max-popups``
stay open), a page's own 3 s handler under a 500 ms ``timeoutMs`` (it runs to completion within the
retirement grace), a client that disconnects mid-mutation and MCP ``notifications/cancelled``. Each test
asserts the truthful envelope and that the lane frees within the bound, and records the recovery time
(``faults_testlib``)."""

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
    END_S,
    GRACE_S,
    RUNS,
    call_in_thread,
    chromium_processes,
    chromium_tree,
    fault_host,
    lists_tabs,
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
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + END_S + 2) - started
    assert recovered <= timeout_ms / 1000 + GRACE_S + END_S, f"lane held {recovered:.2f} s"
    # The script is stopped only past the retirement grace (issue 27: the host used 2 s, the engine 5 s).
    assert recovered >= timeout_ms / 1000 + GRACE_S, f"the lane was freed (the script stopped) at {recovered:.2f} s"
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
    recovered = until(lambda: opens_a_tab(host), 10 + GRACE_S + END_S + 2) - started
    assert recovered <= 10 + GRACE_S + END_S, f"lane held {recovered:.2f} s"
    record("12 s busy handler (10 s timeout)", recovered)
    # The click's outcome is unknown: the tab needs an observation (its late reply retired it: the tab stays).
    refused(host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "RECONCILE_REQUIRED")
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
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + END_S + 2) - started
    assert recovered <= timeout_ms / 1000 + GRACE_S + END_S, f"lane held {recovered:.2f} s"
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


def test_a_page_whose_renderer_does_not_yield_is_ended_and_its_tab_kept(host: Host) -> None:
    """The fault of issue 16's 100k page, provoked cheaply: the click's handler never yields and its renderer
    is stopped, so terminateExecution cannot end it. Issue 27: the host closed the tab (the agent's only one,
    or with --cdp-endpoint the user's), so the agent lost it. Now the host ends the page and keeps the tab:
    crashed, every call refused RENDERER_FAILED with nothing run, tab.navigate recovers it under the same id."""
    ended_page_keeps_its_tab(host)


def test_a_page_ended_by_bounded_retirement_through_the_c_abi() -> None:
    """The same through the C library (the crash reported to the gateway by the driver over ``_cancel``)."""
    process = start_host(["--approve-pairing", "auto"], "abi")
    try:
        ended_page_keeps_its_tab(Host(process, process.pair("chaos"), "abi"))
    finally:
        process.stop()


def ended_page_keeps_its_tab(host: Host) -> None:
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
        ended = host.process.wait_for_line(f"ended the page of tab {tab}: its script did not stop", timeout_ms / 1000 + 20)
        assert ended is not None, "the host did not end the page whose renderer does not yield"
    finally:
        signal_all(renderers, signal.SIGCONT)  # the other tabs' renderers go on
    recovered = until(lambda: opens_a_tab(host), timeout_ms / 1000 + GRACE_S + END_S + 10) - box["started"]
    assert recovered <= timeout_ms / 1000 + GRACE_S + END_S + 2, f"lane held {recovered:.2f} s"  # + the browser probe
    record("renderer that does not yield (page ended, tab kept)", recovered)
    assert not any(f"closed tab {tab}" in line for line in host.process.lines)
    listed = {t["tabId"]: t for t in host.call("tabs.list")["result"]["tabs"]}
    assert listed[tab]["crashed"] is True, listed  # still the agent's tab
    for method, params in (("tab.snapshot", {"tabId": tab}), ("tab.click", {"tabId": tab, "ref": refs["Spin"]}),
                           ("tab.screenshot", {"tabId": tab})):
        env = host.call(method, params)
        assert env["success"] is False and env["mayHaveCompleted"] is False, (method, env)
        assert env["error"]["code"] in ("RENDERER_FAILED", "REFS_INVALIDATED"), (method, env)
    refused(host.call("tab.snapshot", {"tabId": tab}), "RENDERER_FAILED")
    assert "ended the page" in host.call("tab.snapshot", {"tabId": tab})["error"]["message"]
    revived = host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")})
    assert revived["success"] and revived["result"]["tabId"] == tab, revived
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and snap["result"]["title"], snap
    # The other tab was only paused: it works, and so does a new one.
    snap = host.call("tab.snapshot", {"tabId": other})
    assert snap["success"] and snap["result"]["title"], snap
    for t in (tab, other):
        host.call("tabs.close", {"tabId": t})


def test_a_stalled_browser_keeps_the_agents_tab(host: Host) -> None:
    """Issue 27: the whole browser stopped for 20 s (SIGSTOP) while a click ran: the host closed the tab,
    and after the stall tabs.list was empty. Now the host sees the browser itself does not answer, frees
    the lane without touching the tab, and after the stall the same tab works."""
    tab, refs = open_page(host, "slow.html?busy=100")
    timeout_ms = 2000
    thread, box = call_in_thread(host, "tab.click", {"tabId": tab, "ref": refs["Slow increment"], "timeoutMs": timeout_ms})
    time.sleep(0.3)
    stalled = chromium_tree(host)
    signal_all(stalled, signal.SIGSTOP)
    started = time.monotonic()
    try:
        thread.join(timeout_ms / 1000 + 10)
        env = box["env"]
        assert env["success"] or env["mayHaveCompleted"] is True, env  # done before the stall, or unknown
        kept = host.process.wait_for_line(f"tab {tab} is kept as it is", timeout_ms / 1000 + GRACE_S + 12)
        if not env["success"]:
            assert kept is not None and "the browser itself does not answer" in kept, host.process.lines[-20:]
            # The lane is free during the stall (capabilities dispatches nothing but takes the lane).
            assert host.call("capabilities")["success"]
        remaining = 20 - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
    finally:
        signal_all(stalled, signal.SIGCONT)
    until(lambda: lists_tabs(host), 30)
    listed = {t["tabId"]: t for t in host.call("tabs.list")["result"]["tabs"]}
    assert tab in listed and not listed[tab].get("crashed"), listed
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and "Slow effect count: 1" in snap["result"]["text"], snap
    assert not any(f"closed tab {tab}" in line or f"ended the page of tab {tab}" in line for line in host.process.lines)
    host.call("tabs.close", {"tabId": tab})


def test_a_page_handler_that_finishes_within_the_grace_runs_to_completion(host: Host) -> None:
    """Issue 27: the host's retirement grace was 2 s (the engine's and the README's 5 s): a page's own 3 s
    click handler under a 500 ms timeoutMs was stopped by Runtime.terminateExecution mid-run and its effect
    never landed. With the engine's grace the handler finishes, its late reply retires the click, and the
    effect is there; nothing was stopped."""
    tab, refs = open_page(host, "late.html?work=3000")
    mark = len(host.process.lines)
    stops = sum("stopped the script" in line for line in host.process.lines)
    env = host.call("tab.click", {"tabId": tab, "ref": refs["Work then record"], "timeoutMs": 500})
    unknown_outcome(env, "TIMEOUT")

    def since(needle: str, limit_s: float) -> str:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            line = next((line for line in list(host.process.lines)[mark:] if needle in line), None)
            if line is not None:
                return line
            time.sleep(0.05)
        raise AssertionError(f"no log line {needle!r} within {limit_s} s: {host.process.lines[mark:]}")

    cancelled = since("passed its 500 ms deadline: cancelled", 5)
    txn = cancelled.split("in transaction ", 1)[1].split(":", 1)[0]
    retired = since(f"reply for transaction {txn}: ", 10)
    assert retired.endswith(": retired"), retired
    assert sum("stopped the script" in line for line in host.process.lines) == stops, "the handler was stopped"
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and "Work done: 1" in snap["result"]["text"], snap
    host.call("tabs.close", {"tabId": tab})


def _popups_counted(host: Host, tab: str, before: set[str]) -> tuple[int, int]:
    """(popups open now, popups the host closed) of ``tab``; the agent's tab is never closed. While a page
    floods the browser a ``tabs.list`` may answer TIMEOUT or BUSY (retryable, nothing changed): asked again."""
    for _ in range(30):
        env = host.call("tabs.list")
        if env["success"]:
            break
        assert env["error"]["code"] in ("TIMEOUT", "BUSY") and env["error"]["retryable"], env
        time.sleep(0.5)
    assert env["success"], env
    tabs = env["result"]["tabs"]
    mine = next((t for t in tabs if t["tabId"] == tab), None)
    assert mine is not None, env
    return len({t["tabId"] for t in tabs} - before), int(mine.get("popupsClosed", 0))


def _close_popups(host: Host, tab: str, before: set[str]) -> None:
    for entry in host.call("tabs.list")["result"]["tabs"]:
        if entry["tabId"] not in before:
            host.call("tabs.close", {"tabId": entry["tabId"]})
    host.call("tabs.close", {"tabId": tab})


def test_a_click_that_opens_200_popups_keeps_its_tab_and_at_most_20_popups(host: Host) -> None:
    """Issue 27: a click opening 200 windows kept the browser making tabs until the click timed out and the
    host closed the agent's tab. At most --max-popups (20) of one tab's popups stay open; the rest are closed
    as they open and counted on the opener (tabs.list popupsClosed), with one log line. All 200 windows: the
    page's handler starts the flood and each ``window.open`` runs in a task of its own after the click
    answered, so no deadline ends it and every one of the 200 reaches the cap (20 open, 180 closed). They
    take a minute on this loaded machine: Chromium makes one window per ``window.open`` while the page's
    script waits, and Playwright holds each new target until it has set it up (measured: 200 windows in
    14 s from plain CDP, 37 s with a CDP client attaching to each, 62-70 s through Playwright, the host's
    own adoption 0.1 ms per page; docs/host.md "Liveness")."""
    tab, refs = open_page(host, "popups.html?n=200&after=1")
    before = {t["tabId"] for t in host.call("tabs.list")["result"]["tabs"]}
    env = host.call("tab.click", {"tabId": tab, "ref": refs["Open many windows"]})
    assert env["success"], env  # the handler only started the flood
    until(lambda: sum(_popups_counted(host, tab, before)) >= 200, 240, poll_s=1)
    open_now, closed = _popups_counted(host, tab, before)
    assert (open_now, closed) == (20, 180), (open_now, closed)
    assert host.process.wait_for_line(f"tab {tab} opened more than 20 popups (--max-popups)", 5)
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"] and "Opened: 200 (done)" in snap["result"]["text"], snap
    _close_popups(host, tab, before)


def test_a_handler_that_opens_200_popups_itself_is_stopped_and_the_cap_holds(host: Host) -> None:
    """The other flood: the click's own handler calls ``window.open`` 200 times in one loop. Each call waits
    for Chromium to make its window (about 0.3 s each here), so the handler outlives the click's 3 s
    ``timeoutMs``: the click is TIMEOUT (mayHaveCompleted), and at 3 s + the 5 s retirement grace the host
    stops the handler like any other script — ``Runtime.terminateExecution``, or, when the renderer is
    inside a ``window.open`` and does not take it within 2 s (seen about half the runs here), by ending the
    tab's page (the tab kept, crashed; ``tab.navigate`` revives it) — which ends the flood. The agent's tab
    stays, at most 20 of its popups are open and the others were closed and counted."""
    tab, refs = open_page(host, "popups.html?n=200")
    before = {t["tabId"] for t in host.call("tabs.list")["result"]["tabs"]}
    mark = len(host.process.lines)
    env = host.call("tab.click", {"tabId": tab, "ref": refs["Open many windows"], "timeoutMs": 3000})
    assert env["success"] is False and env["error"]["code"] == "TIMEOUT" and env["mayHaveCompleted"], env
    ends = (f"stopped the script in tab {tab} ", f"ended the page of tab {tab}:")

    def stopped() -> bool:
        return any(line.startswith(ends) for line in host.process.lines[mark:])

    until(stopped, 30, poll_s=0.2)
    ended = any(line.startswith(ends[1]) for line in host.process.lines[mark:])
    counted = sum(_popups_counted(host, tab, before))
    while True:  # windows Chromium was making when the script stopped still arrive; then none
        time.sleep(3)
        now = sum(_popups_counted(host, tab, before))
        if now == counted:
            break
        counted = now
    open_now, closed = _popups_counted(host, tab, before)
    assert open_now + closed < 200, (open_now, closed)  # the stop ended the loop
    if not ended:
        assert open_now <= 20 and (closed == 0 or open_now == 20), (open_now, closed)
    else:  # windows Chromium still made after the page closed have no opener: ordinary tabs (docs/host.md)
        assert closed <= 180 and open_now >= min(20, open_now + closed), (open_now, closed)
    if ended:  # the tab is kept, crashed, and a navigation gives it a fresh page
        mine = next(t for t in host.call("tabs.list")["result"]["tabs"] if t["tabId"] == tab)
        assert mine["crashed"] is True, mine
        went = host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")})
        assert went["success"] and went["result"]["tabId"] == tab, went
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"], snap  # the agent's tab is usable
    _close_popups(host, tab, before)
