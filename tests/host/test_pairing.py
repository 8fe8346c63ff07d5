"""Pairing and tokens (``host/auth.py``; docs/host.md "Pairing and tokens").

Operator-approved pairing through the CLI on a host whose requests wait for the operator (approve, deny,
403, 408 after the announced window, a token issued once and never logged, revocation by token, the
request body's rules, the state directory's owner). Pairing persists across host restarts (issue 14):
digests only, 0600, revocations too; ``pair list``; a 401 that says why and how to pair again.

The hosts run with ``--browser none`` (pairing does not need a renderer); the persistence tests use an
explicit ``--pairings`` file in the test's directory.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_testlib import (
    APPROVAL_WINDOW_S,
    Host,
    announced,
    answered,
    cli,
    code_for,
    manual_pairing_host,
    manually_paired_host,
    pair_manually,
    pair_request,
    raw,
)
from kelpie_gateway.host.launch import HostProcess
from kelpie_gateway.host.server import state_dir
from stdio_testlib import KELPIE

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kelpie-state")


@pytest.fixture(scope="module")
def host(state: Path) -> Iterator[Host]:
    with manually_paired_host(state, "pairing-client") as paired:
        yield paired


CAPS = json.dumps({"version": 1, "id": 7, "method": "capabilities", "params": {}}).encode()


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


EXPIRY_WINDOW_S = 2
"""A second host's pairing window, for the one test that lets a request expire (408)."""


def test_pairing_denied_is_403(host: Host, state: Path) -> None:
    result: dict[str, Any] = {}
    thread = pair_request(host, "denied-client", result)
    code = code_for(host, "denied-client")
    denied = cli("pair", "deny", code, env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
    assert denied.returncode == 0, denied.stderr
    assert answered(thread, result)["status"] == 403 and "token" not in json.dumps(result["body"])
    # A decided code cannot be approved afterwards.
    late = cli("pair", "approve", code, env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
    assert late.returncode == 1


def test_unapproved_pairing_is_408_after_the_hosts_window(tmp_path: Path) -> None:
    """Nobody approves: 408 once the window the host announced has passed — not before it (the bound is the
    host's own announced window), and not the default 120 s either (the configured window is used)."""
    process = manual_pairing_host(tmp_path, EXPIRY_WINDOW_S)
    try:
        host = Host(process, "", "python")
        result: dict[str, Any] = {}
        started = time.monotonic()
        thread = pair_request(host, "slow-operator", result)
        window = float(announced(host, "slow-operator").rsplit(" within ", 1)[1].split()[0])
        assert window == EXPIRY_WINDOW_S
        assert answered(thread, result)["status"] == 408, result
        assert time.monotonic() - started >= window  # the host waited its whole window first
        assert "token" not in json.dumps(result["body"])
        assert process.wait_for_line("pairing request from client 'slow-operator' timed out", APPROVAL_WINDOW_S)
    finally:
        process.stop()


def test_pairing_token_is_issued_once_and_never_logged(host: Host, state: Path) -> None:
    token = pair_manually(host, state, "second-client")
    assert token != host.token and len(token) >= 43  # 256 bits, base64url
    assert host.call("capabilities", token=token)["success"]
    assert not any(token in line or host.token in line for line in host.process.lines)
    # Revoking one client leaves the other working.
    assert raw(host, "DELETE", "/v1/pair", b"", {"Authorization": f"Bearer {token}"})[0] == 200
    assert (
        raw(
            host,
            "POST",
            "/v1/browser-control",
            CAPS,
            {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )[0]
        == 401
    )
    assert host.call("capabilities")["success"]


def test_pair_request_body_is_checked(host: Host) -> None:
    assert raw(host, "POST", "/v1/pair", b"{oops", {"Content-Type": "application/json"})[0] == 400
    assert raw(host, "POST", "/v1/pair", b'{"client": 5}', {"Content-Type": "application/json"})[0] == 400
    assert raw(host, "POST", "/v1/pair", b'{"client":"x"}', {"Content-Type": "text/plain"})[0] == 415
    assert (
        raw(
            host,
            "POST",
            "/v1/pair",
            b'{"client":"x"}',
            {"Content-Type": "application/json", "Origin": "null"},
        )[0]
        == 403
    )


def test_a_state_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    """Guards: a state directory another user planted (where the admin socket would go) was used."""
    foreign = tmp_path / "planted"
    foreign.mkdir(mode=0o777)
    os.chown(foreign, 65534, 65534)
    os.environ["KELPIE_GATEWAY_STATE_DIR"] = str(foreign)
    try:
        with pytest.raises(RuntimeError, match="not a directory owned by this user"):
            state_dir()
    finally:
        del os.environ["KELPIE_GATEWAY_STATE_DIR"]


def test_pair_request_writes_a_0600_token_file_even_over_an_existing_file(tmp_path: Path) -> None:
    """Guards: ``pair request`` kept an existing token file's looser mode (0644) when it wrote the token."""
    host = _host(tmp_path / "p.json")
    try:
        token_file = tmp_path / "token"
        token_file.write_text("old")
        token_file.chmod(0o644)
        done = cli("pair", "request", "--url", host.url, "--client", "mode-check", "--token-file", str(token_file))
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token_file.read_text() != "old"
    finally:
        host.process.stop()


def test_sigterm_answers_waiting_pairers_503_and_exits_within_5_s(tmp_path: Path) -> None:
    """Issue 27: ``serve`` took 118 s to exit on SIGTERM while a pairing request waited (aiohttp waits for
    the handler, which waits for the operator). At most 16 requests wait (the 17th is 429 at once, with
    ``Retry-After``); SIGTERM answers every waiting one 503 at once and the host exits 0 within 5 s."""
    process = manual_pairing_host(tmp_path, 600)
    try:
        host = Host(process, "", "python")
        results = [{} for _ in range(16)]  # type: list[dict[str, Any]]
        threads = [pair_request(host, f"waiting-{i}", results[i]) for i in range(16)]
        for i in range(16):
            announced(host, f"waiting-{i}")
        status, body = raw(host, "POST", "/v1/pair", b'{"client":"one-too-many"}', {"Content-Type": "application/json"})
        assert status == 429 and json.loads(body)["error"]["code"] == "BUSY", (status, body)
        assert process._proc is not None
        started = time.monotonic()
        process._proc.terminate()
        assert process._proc.wait(5) == 0, "serve did not exit within 5 s of SIGTERM"
        exited = time.monotonic() - started
        for thread, result in zip(threads, results, strict=True):
            thread.join(5)
            assert result.get("status") == 503 and result["body"]["error"]["code"] == "CANCELLED", result
        assert exited < 5, exited
        assert process.wait_for_line("answered 16 waiting pairing request(s) 503", 5)
    finally:
        process.stop()
