"""The MCP journey with the official TypeScript SDK (``@modelcontextprotocol/sdk`` from npm, installed by
``tools/build.d/40-node.sh``) over Streamable HTTP, through the Python API and through the C library.

``tools/node/mcp-journey.mjs`` pairs by itself, prints one JSON line per step and exits 0 when every step
behaved as the contract says.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from host_testlib import ROOT, Host

pytestmark = pytest.mark.timeout(180)

STEPS = [
    "pair",
    "initialize",
    "tools/list",
    "snapshot+click",
    "type",
    "cross-tab refusal",
    "stale-ref refusal",
    "BUSY under a concurrent call",
    "timed-out mutation",
    "screenshot",
    "dialog while the click is outstanding",
    "revoke",
]


def test_typescript_sdk_journey(browser_host: Host) -> None:
    node = shutil.which("node")
    assert node, "node is required (tools/build.d/40-node.sh installs it)"
    assert (ROOT / "tools/node/node_modules/@modelcontextprotocol/sdk").is_dir(), (
        "run tools/dev setup (npm ci)"
    )
    site = browser_host.site("").rstrip("/")
    done = subprocess.run(
        [node, str(ROOT / "tools/node/mcp-journey.mjs"), "--url", browser_host.url, "--site", site],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=ROOT / "tools/node",
    )
    steps = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failures = [s for s in steps if not s["ok"]]
    assert not failures, (failures, done.stderr[-2000:])
    assert [s["step"] for s in steps] == STEPS, done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
