"""Fixtures for the reference-host tests: one host child process per test module (and per gateway mode).

``browser_host`` runs ``kelpie-gateway serve`` with real headless Chromium on the fixture site, once through
the Python API and once through the C library (``--via-abi``, with ``--direct-cdp``: fixed scripts over the
host's own CDP connection); pytest groups the tests by mode so only one Chromium runs at a time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from host_testlib import Host, start_host


@pytest.fixture(scope="module", params=["python", "abi"])
def browser_host(request: pytest.FixtureRequest) -> Iterator[Host]:
    process = start_host(["--approve-pairing", "auto"], request.param)
    try:
        yield Host(process, process.pair("kelpie-tests"), request.param)
    finally:
        process.stop()
        if os.environ.get("KELPIE_HOST_LOG"):
            print("\n".join(process.lines))
