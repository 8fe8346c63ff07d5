"""``kelpie-gateway demo``'s journey (engine/kelpie_gateway/host/demo.py) against a real host and Chromium:
the SDK's default mode settles on the stateless revision and the demo says so (CONTRACT.md §7 v1.1).

The journey acts on the host's first tab, so it gets a host of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import Host, start_host
from kelpie_gateway.host.demo import next_steps, run_journey

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def demo_host() -> Iterator[Host]:
    process = start_host(["--approve-pairing", "auto"], "python")
    try:
        yield Host(process, process.pair("kelpie-demo-test"), "python")
    finally:
        process.stop()


def test_the_demo_negotiates_the_stateless_revision_and_completes(demo_host: Host) -> None:
    out = io.StringIO()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run_journey(demo_host.url, demo_host.token, out=out)).result()
    lines = out.getvalue().splitlines()
    connect = next(line for line in lines if "1. connect" in line)
    assert "protocol 2026-07-28 (stateless: server/discover" in connect, connect
    assert "kelpie-browser-gateway" in connect
    assert any("one image block" in line for line in lines), lines[-5:]
    assert any("page effect observed" in line for line in lines)
    # The journey says, before its first call, that methods go through the one tool (a method is no tool).
    assert any("tools/call of kelpie_browser_control" in line for line in lines[: lines.index(connect) + 4])


def test_the_demo_ends_with_a_command_that_works_without_the_checkout_on_path() -> None:
    """After ``tools/dev demo``, ``kelpie-gateway`` is this virtualenv's, not on ``PATH``: the last lines
    name it by its full path, in a command an MCP client can be given as printed."""
    lines = next_steps()
    command = next(line for line in lines if "claude mcp add" in line).split("-- ", 1)[1].split()
    assert command[1] == "mcp" and Path(command[0]).is_absolute(), command
    done = subprocess.run([command[0], "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "kelpie-gateway" in done.stdout, done
