"""Faults provoked for real against the reference host and headless Chromium (issue 11; CONTRACT.md §4, §5
"Retirement is bounded", §7; ARCHITECTURE.md host rules 1.1): the Chromium processes under a host and how to
kill or stop them, the truthful envelopes a fault must give, polling for recovery, and the recovery figures.

The fault suites are ``test_liveness.py`` (stuck work, bounded retirement, clients that go away),
``test_pages.py`` (renderer crashes) and ``test_lifecycle.py`` (the browser's exit, relaunch and reattach).
Each records its recovery times with :func:`record`; :func:`write_report` prints (median, max) per fault and
writes every figure so far to ``build/chaos-recovery.json``. ``KELPIE_CHAOS_RUNS`` (default 2) repeats each
fault.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from host_testlib import ROOT, Host, start_host
from kelpie_gateway.host.browser import CHROMIUM_FLAGS

RUNS = int(os.environ.get("KELPIE_CHAOS_RUNS", "2"))
GRACE_S = 5.0
"""The retirement grace (CONTRACT.md §5: at most 5 s; the engine's default, which the host uses): a cancelled
dispatch is overdue ``timeoutMs`` + 5 s after it began, and only then does the host stop the page's script."""
END_S = 3.0
"""What the host may take, once a dispatch is overdue, to end it: terminateExecution's answer (at most 2 s
when the renderer does not answer) and the late reply after it (at most 1 s), plus one watch interval."""
FIGURES: dict[str, list[float]] = {}


def record(fault: str, seconds: float) -> None:
    FIGURES.setdefault(fault, []).append(round(seconds, 3))


def write_report() -> None:
    """Print (median, max) per fault recorded so far and write them to ``build/chaos-recovery.json``."""
    if not FIGURES:
        return
    summary = {
        fault: {"runs": len(v), "median_s": round(statistics.median(v), 3), "max_s": max(v), "all_s": v}
        for fault, v in FIGURES.items()
    }
    out = ROOT / "build" / "chaos-recovery.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print("\nrecovery time per fault (median, max):")
    for fault, s in summary.items():
        print(f"  {fault:34s} median {s['median_s']:6.2f} s   max {s['max_s']:6.2f} s   ({s['runs']} runs)")


@pytest.fixture(scope="module", autouse=True, name="report")
def recovery_report() -> Iterator[None]:
    """A fault module's fixture: after its tests, :func:`write_report`."""
    yield
    write_report()


@pytest.fixture(scope="module", name="host")
def fault_host() -> Iterator[Host]:
    """A fault module's fixture: one host (Python API, paired as ``chaos``) for its tests; stopped
    afterwards (its log printed with ``KELPIE_HOST_LOG``)."""
    process = start_host(["--approve-pairing", "auto"], "python")
    try:
        yield Host(process, process.pair("chaos"), "python")
    finally:
        process.stop()
        if os.environ.get("KELPIE_HOST_LOG"):
            print("\n".join(process.lines))


# ---------------------------------------------------------------------------------------------- processes
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def chromium_processes(host: Host) -> tuple[list[int], list[int]]:
    """(browser pids, renderer pids) among the host process's descendants."""
    assert host.process._proc is not None
    tree, stack, found = _children(), [host.process._proc.pid], []
    while stack:
        pid = stack.pop()
        for child in tree.get(pid, []):
            found.append(child)
            stack.append(child)
    browsers, renderers = [], []
    for pid in found:
        args = cmdline(pid)
        line = " ".join(args)  # zygote children rewrite their command line into one string
        if not args or "chrom" not in args[0]:
            continue
        if "--type=renderer" in line:
            renderers.append(pid)
        elif "--type=" not in line:
            browsers.append(pid)
    return browsers, renderers


def chromium_tree(host: Host) -> list[int]:
    """Every Chromium process under the host (browser, renderers, GPU, utilities, zygotes)."""
    assert host.process._proc is not None
    tree, stack, found = _children(), [host.process._proc.pid], []
    while stack:
        pid = stack.pop()
        for child in tree.get(pid, []):
            args = cmdline(child)
            if args and "chrom" in args[0]:
                found.append(child)
            stack.append(child)
    return found


def kill(pids: list[int]) -> None:
    assert pids, "no process to kill"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


# ---------------------------------------------------------------------------------------------- helpers
def unknown_outcome(env: dict[str, Any], code: str) -> None:
    """The truthful envelope of a mutation whose outcome is unknown (CONTRACT.md §4, v1.1)."""
    assert env["success"] is False, env
    assert env["error"]["code"] == code, env
    assert env["mayHaveCompleted"] is True, env
    assert env["error"]["retryable"] is False, env


def refused(env: dict[str, Any], code: str) -> None:
    assert env["success"] is False and env["error"]["code"] == code, env
    assert env["mayHaveCompleted"] is False, env


def until(what: Callable[[], bool], limit_s: float, poll_s: float = 0.1) -> float:
    """Poll ``what`` until it is true; returns when (monotonic) the successful attempt was sent: the lane
    was free from then on. Fails after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while True:
        sent = time.monotonic()
        if what():
            return sent
        assert time.monotonic() < deadline, f"not recovered within {limit_s:.1f} s"
        time.sleep(poll_s)


def opens_a_tab(host: Host, *, crash: bool = False) -> bool:
    """tabs.open works again (BUSY while the lane is still held); the tab is closed again. Right after
    renderers were killed (``crash``), a new tab may land in a dying renderer twice running: that tabs.open
    is then refused RENDERER_FAILED with nothing left of it (mayHaveCompleted:false), never an unknown
    outcome, and the host is not yet recovered."""
    env = host.call("tabs.open", {})
    if not env["success"]:
        if crash and env["error"]["code"] == "RENDERER_FAILED":
            refused(env, "RENDERER_FAILED")
            return False
        assert env["error"]["code"] == "BUSY" and env["error"]["retryable"] is True, env
        return False
    host.call("tabs.close", {"tabId": env["result"]["tabId"]})
    return True


def lists_tabs(host: Host) -> bool:
    """tabs.list works (BUSY, or a read's TIMEOUT, while the browser is coming back: nothing changed)."""
    env = host.call("tabs.list")
    if not env["success"]:
        assert env["error"]["code"] in ("BUSY", "TIMEOUT") and env["mayHaveCompleted"] is False, env
    return bool(env["success"])


def open_page(host: Host, page: str) -> tuple[str, dict[str, str]]:
    """A new tab on a fixture page; returns (tabId, label -> ref of its snapshot)."""
    env = host.call("tabs.open", {"url": host.site(page)})
    assert env["success"], env
    tab = env["result"]["tabId"]
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"], snap
    return tab, {e["label"]: e["ref"] for e in snap["result"]["elements"]}


def call_in_thread(host: Host, method: str, params: dict[str, Any]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        box["started"] = time.monotonic()
        box["env"] = host.call(method, params)
        box["answered"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def kill_mid_click(host: Host, victims: Callable[[], list[int]]) -> tuple[str, dict[str, str], float]:
    """Kill ``victims()`` while a 4 s click handler runs; the click must be answered at once as an unknown
    outcome (RENDERER_FAILED), not at its 10 s deadline. Returns (tabId, refs, when killed)."""
    tab, refs = open_page(host, "slow.html?busy=4000")
    thread, box = call_in_thread(host, "tab.click", {"tabId": tab, "ref": refs["Slow increment"]})
    time.sleep(0.8)
    pids = victims()
    killed = time.monotonic()
    kill(pids)
    thread.join(15)
    unknown_outcome(box["env"], "RENDERER_FAILED")
    assert box["answered"] - killed < 2.5, "the click waited for its deadline instead of the fault"
    return tab, refs, killed


def close_all_tabs(host: Host) -> None:
    """Back to one healthy tab: the others closed, the first recovered if its renderer crashed too."""
    tabs = host.call("tabs.list")["result"]["tabs"]
    for tab in tabs[1:]:
        host.call("tabs.close", {"tabId": tab["tabId"]})
    if tabs and tabs[0].get("crashed"):
        assert host.call("tab.navigate", {"tabId": tabs[0]["tabId"], "url": host.site("index.html")})["success"]


def every_native_says_not_found(host: Host, tab: str, ref: str) -> None:
    """A gone tab, asked about by every kind of call: one answer, TAB_NOT_FOUND, nothing run."""
    answers = {
        "tab.navigate": host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")}),
        "tab.snapshot": host.call("tab.snapshot", {"tabId": tab}),
        "tab.click": host.call("tab.click", {"tabId": tab, "ref": ref}),
        "tab.screenshot": host.call("tab.screenshot", {"tabId": tab}),
        "press_key": host.call("extension.call", {"name": "press_key", "arguments": {"tabId": tab, "key": "a"}}),
        "tabs.close": host.call("tabs.close", {"tabId": tab}),
    }
    for method, env in answers.items():
        refused(env, "TAB_NOT_FOUND")
        assert env["error"]["retryable"] is False, (method, env)
    # The same answer twice: nothing above changed what the gateway knows about the tab.
    refused(host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")}), "TAB_NOT_FOUND")


WORKS = '#!/bin/sh\nexec /usr/bin/chromium "$@"\n'
"""A browser executable that starts Chromium (the tests below rewrite it to break or slow the relaunch)."""


def executable(path: Path, script: str) -> Path:
    path.write_text(script)
    path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_chromium(port: int, profile: Path) -> subprocess.Popen[bytes]:
    """A Chromium the test (not the host) starts, serving CDP on 127.0.0.1:``port``."""
    proc = subprocess.Popen(
        [
            "/usr/bin/chromium",
            "--headless=new",
            "--remote-debugging-address=127.0.0.1",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}",
            *CHROMIUM_FLAGS,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        assert proc.poll() is None, "chromium exited"
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=2):
            return True
        return False

    until(answers, 60, poll_s=0.2)
    return proc
