"""``kelpie-gateway demo``'s journey (engine/kelpie_gateway/host/demo.py) against a real host and Chromium:
the SDK's default mode settles on the stateless revision and the demo says so (CONTRACT.md §7 v1.1).

The journey acts on the host's first tab, so it gets a host of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
from collections.abc import Iterator

import pytest
from host_testlib import Host, start_host
from kelpie_gateway.host.demo import run_journey

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
