"""The MCP journey with the official TypeScript SDK (from npm, installed by ``tools/build.d/40-node.sh``) over
Streamable HTTP, through the Python API and through the C library, in both eras (CONTRACT.md §7 v1.1):

- ``@modelcontextprotocol/sdk`` 1.32.2, the current 1.x release, which only knows the initialize handshake;
- ``@modelcontextprotocol/client`` 2.4.0, the current 2.x release, which speaks 2026-07-28: once in
  ``versionNegotiation`` mode ``auto`` (probes ``server/discover``; must settle on the stateless revision,
  not fall back) and once pinned to ``2026-07-28``.

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
    "connect",
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


@pytest.mark.parametrize(
    ("sdk", "mode", "era"),
    [("v1", "legacy", "legacy"), ("v2", "auto", "modern"), ("v2", "2026-07-28", "modern")],
    ids=["sdk1-legacy", "client2-auto", "client2-pinned"],
)
def test_typescript_sdk_journey(browser_host: Host, sdk: str, mode: str, era: str) -> None:
    node = shutil.which("node")
    assert node, "node is required (tools/build.d/40-node.sh installs it)"
    assert (ROOT / "tools/node/node_modules/@modelcontextprotocol/sdk").is_dir(), (
        "run tools/dev setup (npm ci)"
    )
    site = browser_host.site("").rstrip("/")
    done = subprocess.run(
        [
            node,
            str(ROOT / "tools/node/mcp-journey.mjs"),
            *("--url", browser_host.url, "--site", site, "--sdk", sdk, "--mode", mode),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=ROOT / "tools/node",
    )
    steps = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failures = [s for s in steps if not s["ok"]]
    assert not failures, (failures, done.stderr[-2000:])
    assert [s["step"] for s in steps] == STEPS, done.stdout
    connected = steps[1]
    assert connected["era"] == era, connected
    if era == "modern":
        assert connected["version"] == "2026-07-28", connected
    assert done.returncode == 0, done.stderr[-2000:]
