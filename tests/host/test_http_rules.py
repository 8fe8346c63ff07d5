"""Raw HTTP checks of every transport rule of the reference host (ARCHITECTURE.md, "Reference Linux host and
transport rules"), pairing with operator approval through the CLI, and the ``call`` command.

The host runs ``--browser none`` here: transport rules do not need a renderer, and the no-browser fallback
itself is checked (``browserAvailable:false``, DOM methods truthfully absent).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_testlib import ROOT, Host
from kelpie_gateway.host.launch import HostProcess

pytestmark = pytest.mark.timeout(120)
CAP = 4 * 1024 * 1024
APPROVAL_WINDOW_S = 60
"""The module host's pairing window: an operator approving through the CLI (a Python start-up) has ample
time even on a loaded machine. Tests wait on the answer, never on wall time."""
EXPIRY_WINDOW_S = 2
"""A second host's pairing window, for the one test that lets a request expire (408)."""


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "engine"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kelpie_gateway.host.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kelpie-state")


def manual_pairing_host(state: Path, window_s: int) -> HostProcess:
    """A started ``--browser none`` host whose pairing requests wait ``window_s`` for the operator."""
    process = HostProcess(
        ["--browser", "none", "--approve-pairing", "manual", "--pairing-timeout", str(window_s)],
        env={"KELPIE_GATEWAY_STATE_DIR": str(state)},
    )
    process.start()
    return process


@pytest.fixture(scope="module")
def host(state: Path) -> Iterator[Host]:
    process = manual_pairing_host(state, APPROVAL_WINDOW_S)
    try:
        wrapper = Host(process, "", "python")
        wrapper.token = pair_manually(wrapper, state, "rules-client")
        yield wrapper
    finally:
        process.stop()


def pair_request(host: Host, client: str, result: dict[str, Any]) -> threading.Thread:
    def run() -> None:
        result["status"], result["body"] = host.post("/v1/pair", {"client": client}, token="")

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def announced(host: Host, client: str) -> str:
    """The host's log line announcing ``client``'s pairing request (its code and its window)."""
    line = host.process.wait_for_line(f"pairing request from client {client!r}: code", APPROVAL_WINDOW_S)
    assert line is not None, host.process.lines
    return line


def code_for(host: Host, client: str) -> str:
    return announced(host, client).split(": code ", 1)[1].split()[0]


def answered(thread: threading.Thread, result: dict[str, Any]) -> dict[str, Any]:
    """Wait for the pairing request's answer (the event), bounded only by the host's approval window."""
    thread.join(APPROVAL_WINDOW_S)
    assert not thread.is_alive() and "status" in result, "the pairing request got no answer"
    return result


def pair_manually(host: Host, state: Path, client: str) -> str:
    result: dict[str, Any] = {}
    thread = pair_request(host, client, result)
    code = code_for(host, client)
    approved = cli("pair", "approve", code, env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
    assert approved.returncode == 0, approved.stderr
    assert answered(thread, result)["status"] == 200, result
    return str(result["body"]["token"])


def raw(
    host: Host, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=20)
    try:
        hdrs = {"Host": f"127.0.0.1:{host.port}", **(headers or {})}
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in hdrs.items():
            conn.putheader(key, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def auth(host: Host, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {host.token}", "Content-Type": "application/json", **extra}


CAPS = json.dumps({"version": 1, "id": 7, "method": "capabilities", "params": {}}).encode()
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def test_first_line_names_the_address(host: Host) -> None:
    assert host.process.lines[0] == f"listening http://127.0.0.1:{host.port}"


def test_no_browser_fallback_is_truthful(host: Host) -> None:
    caps = host.call("capabilities")["result"]
    assert caps["browserAvailable"] is False
    assert caps["methods"] == ["documentation", "capabilities"]
    refused = host.call("tab.snapshot", {"tabId": "t1"})
    assert refused["success"] is False and refused["mayHaveCompleted"] is False
    assert refused["error"]["code"] in ("BROWSER_UNAVAILABLE", "UNSUPPORTED_METHOD")


def test_canonical_refusal_is_http_200_with_the_envelope(host: Host) -> None:
    status, body = raw(
        host, "POST", "/v1/browser-control", b'{"version":1,"method":"nope","params":{}}', auth(host)
    )
    assert status == 200
    envelope = json.loads(body)
    assert envelope["success"] is False and envelope["error"]["code"] == "UNSUPPORTED_METHOD"


def test_missing_or_unknown_bearer_is_401(host: Host) -> None:
    for path, body in (("/v1/browser-control", CAPS), ("/mcp", PING)):
        assert raw(host, "POST", path, body, {"Content-Type": "application/json"})[0] == 401
        bad = {"Content-Type": "application/json", "Authorization": "Bearer not-a-token"}
        assert raw(host, "POST", path, body, bad)[0] == 401
    assert raw(host, "DELETE", "/v1/pair", b"", {"Authorization": "Bearer nope"})[0] == 401


def test_wrong_content_type_is_415(host: Host) -> None:
    for path, body in (("/v1/browser-control", CAPS), ("/mcp", PING)):
        assert raw(host, "POST", path, body, auth(host, **{"Content-Type": "text/plain"}))[0] == 415


def test_malformed_json_is_400(host: Host) -> None:
    status, body = raw(host, "POST", "/v1/browser-control", b'{"version":1,', auth(host))
    assert status == 400 and json.loads(body)["error"]["code"] == "INVALID_JSON"
    status, body = raw(host, "POST", "/mcp", b"{nope", auth(host))
    assert status == 400 and json.loads(body)["error"]["code"] == -32700


def test_a_body_of_exactly_4_mib_is_accepted(host: Host) -> None:
    body = CAPS + b" " * (CAP - len(CAPS))
    status, answer = raw(host, "POST", "/v1/browser-control", body, auth(host))
    assert status == 200 and json.loads(answer)["success"] is True


def test_a_body_over_4_mib_is_413_without_being_read(host: Host) -> None:
    # Announce one byte over the cap but send almost nothing: the answer must come without the body.
    with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
        head = (
            f"POST /v1/browser-control HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
            f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {CAP + 1}\r\n\r\n"
        )
        sock.sendall(head.encode() + b"{")
        started = time.monotonic()
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    assert time.monotonic() - started < 5
    assert b"REQUEST_TOO_LARGE" in reply


def test_a_chunked_body_over_4_mib_is_413(host: Host) -> None:
    with socket.create_connection(("127.0.0.1", host.port), timeout=20) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nAuthorization: Bearer {host.token}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        sock.sendall(head.encode())
        chunk = b" " * (1024 * 1024)
        reply = b""
        try:
            for _ in range(6):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except OSError:
            pass  # the server may close the connection as soon as it answered
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]


def test_host_header_must_be_the_served_loopback_address(host: Host) -> None:
    for path, body in (("/v1/browser-control", CAPS), ("/mcp", PING)):
        assert raw(host, "POST", path, body, auth(host, Host=f"evil.example:{host.port}"))[0] == 403
        assert raw(host, "POST", path, body, auth(host, Host="127.0.0.1:1"))[0] == 403
        assert raw(host, "POST", path, body, auth(host, Host=f"localhost:{host.port}"))[0] == 200


def test_any_origin_is_403_after_bearer_admission(host: Host) -> None:
    for origin in ("http://127.0.0.1:1234", "null", f"http://127.0.0.1:{host.port}"):
        assert raw(host, "POST", "/mcp", PING, auth(host, Origin=origin))[0] == 403
    # Without a bearer the bearer check answers first.
    assert raw(host, "POST", "/mcp", PING, {"Content-Type": "application/json", "Origin": "null"})[0] == 401


def test_mcp_get_is_405(host: Host) -> None:
    assert raw(host, "GET", "/mcp", b"", {"Authorization": f"Bearer {host.token}"})[0] == 405


def test_unsupported_mcp_protocol_version_is_400(host: Host) -> None:
    assert raw(host, "POST", "/mcp", PING, auth(host, **{"MCP-Protocol-Version": "1999-01-01"}))[0] == 400
    for good in ("2025-06-18", "2025-11-25"):
        assert raw(host, "POST", "/mcp", PING, auth(host, **{"MCP-Protocol-Version": good}))[0] == 200


def test_notification_is_202_with_an_empty_body(host: Host) -> None:
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    assert raw(host, "POST", "/mcp", note, auth(host)) == (202, b"")


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


def test_non_loopback_bind_is_refused() -> None:
    done = cli("serve", "--browser", "none", "--bind", "0.0.0.0", "--port", "0", timeout=30)
    assert done.returncode == 2
    assert "loopback" in done.stderr and "listening" not in done.stdout


def test_call_command(host: Host, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(host.token)
    base = ["--url", host.url, "--token-file", str(token_file)]
    done = cli("call", "capabilities", *base)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["browserAvailable"] is False
    done = cli("call", "capabilities", *base, "--json")
    assert json.loads(done.stdout)["success"] is True
    refused = cli("call", "tab.snapshot", "--params", '{"tabId":"t1"}', *base)
    assert refused.returncode == 1 and refused.stderr.startswith("refused: ")
    bad = cli("call", "capabilities", "--params", "{not json", *base)
    assert bad.returncode == 2
    unpaired = cli("call", "capabilities", "--url", host.url, "--token", "wrong")
    assert unpaired.returncode == 2 and "401" in unpaired.stderr
