"""Pairing persists across host restarts (issue 14): digests only, 0600, revocations too; ``pair list``;
a 401 that says why and how to pair again. Also: ``/mcp`` accepts protocol 2025-03-26 (CONTRACT.md §7).

The hosts run with ``--browser none`` (pairing and the HTTP rules do not need a renderer) and an explicit
``--pairings`` file in the test's directory.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from host_testlib import Host
from kelpie_gateway import VERSION
from kelpie_gateway.host.launch import HostProcess
from stdio_testlib import KELPIE

pytestmark = pytest.mark.timeout(180)


def _host(pairings: Path) -> Host:
    process = HostProcess(["--browser", "none", "--approve-pairing", "auto", "--pairings", str(pairings)])
    process.start()
    return Host(process, "", "python")


def _capabilities(host: Host, token: str) -> tuple[int, dict[str, object]]:
    return host.post(
        "/v1/browser-control", {"version": 1, "id": 1, "method": "capabilities", "params": {}}, token
    )


def test_a_token_survives_a_restart_and_its_revocation_does_too(tmp_path: Path) -> None:
    pairings = tmp_path / "state" / "pairings.json"
    first = _host(pairings)
    try:
        keep = first.pair("kept-client")
        drop = first.pair("dropped-client")
        assert _capabilities(first, keep)[0] == 200
    finally:
        first.process.stop()

    # Digests only, private: the file never holds a token, and nobody else may read it.
    raw = pairings.read_text()
    assert keep not in raw and drop not in raw
    assert stat.S_IMODE(os.stat(pairings).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(pairings.parent).st_mode) == 0o700
    assert {p["client"] for p in json.loads(raw)["pairings"]} == {"kept-client", "dropped-client"}

    second = _host(pairings)
    try:
        status, envelope = _capabilities(second, keep)
        assert status == 200 and envelope["success"] is True  # paired before the restart, still valid
        assert "pairings saved in" in (second.process.wait_for_line("pairings ") or "")
        revoke = _delete_pair(second, drop)
        assert revoke == 200
        status, envelope = _capabilities(second, drop)
        assert status == 401 and "revoked" in envelope["error"]["message"]
    finally:
        second.process.stop()

    third = _host(pairings)
    try:
        status, envelope = _capabilities(third, drop)
        assert status == 401  # the revocation survived the restart
        message = envelope["error"]["message"]
        assert "revoked" in message and "kelpie-gateway pair request" in message
        assert drop not in json.dumps(envelope)
        assert _capabilities(third, keep)[0] == 200  # revoking one client never revokes another

        status, envelope = _capabilities(third, "never-issued-token")
        assert status == 401 and "unknown" in envelope["error"]["message"]
        assert "pair again" in envelope["error"]["message"]
        status, envelope = _capabilities(third, "")
        assert status == 401 and "pair request" in envelope["error"]["message"]
    finally:
        third.process.stop()

    listed = subprocess.run(
        [str(KELPIE), "pair", "list", "--pairings", str(pairings)], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert "'kept-client'" in listed.stdout and "paired 20" in listed.stdout
    assert "1 paired client(s)" in listed.stdout
    assert "1 revoked token(s)" in listed.stdout and "'dropped-client'" in listed.stdout
    assert keep not in listed.stdout and drop not in listed.stdout


def _delete_pair(host: Host, token: str) -> int:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{host.url}/v1/pair", method="DELETE", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_two_hosts_sharing_the_file_see_each_others_pairings(tmp_path: Path) -> None:
    pairings = tmp_path / "pairings.json"
    a, b = _host(pairings), _host(pairings)
    try:
        token = a.pair("from-a")
        assert _capabilities(b, token)[0] == 200  # b re-reads the file it shares with a
        assert _delete_pair(b, token) == 200
        assert _capabilities(a, token)[0] == 401
    finally:
        a.process.stop()
        b.process.stop()


def test_memory_pairings_are_forgotten(tmp_path: Path) -> None:
    process = HostProcess(["--browser", "none", "--approve-pairing", "auto", "--pairings", "memory"])
    process.start()
    host = Host(process, "", "python")
    try:
        token = host.pair("ephemeral")
        assert _capabilities(host, token)[0] == 200
        assert "in memory only" in (process.wait_for_line("pairings ") or "")
    finally:
        process.stop()
    restarted = _host(tmp_path / "p.json")
    try:
        assert _capabilities(restarted, token)[0] == 401
    finally:
        restarted.process.stop()


def test_mcp_2025_03_26_over_http(tmp_path: Path) -> None:
    host = _host(tmp_path / "p.json")
    try:
        token = host.pair("old-client")
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        }
        status, answer = host.post("/mcp", init, token, {"MCP-Protocol-Version": "2025-03-26"})
        assert status == 200 and answer["result"]["protocolVersion"] == "2025-03-26"
        status, answer = host.post(
            "/mcp",
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            token,
            {"MCP-Protocol-Version": "2025-03-26"},
        )
        assert status == 200 and any(t["name"] == "kelpie_browser_control" for t in answer["result"]["tools"])
        status, _ = host.post(
            "/mcp",
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
            token,
            {"MCP-Protocol-Version": "2024-11-05"},
        )
        assert status == 400  # a revision the engine does not speak is still refused
    finally:
        host.process.stop()


def test_module_entry_point_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kelpie_gateway", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith(f"kelpie-gateway {VERSION} (")
    for command in ("serve", "mcp"):
        again = subprocess.run(
            [str(KELPIE), command, "--version"], capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 0 and again.stdout == done.stdout
    assert "2025-03-26" in done.stdout and "2026-07-28" in done.stdout  # every revision a client can pick
