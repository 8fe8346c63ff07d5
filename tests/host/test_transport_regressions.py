"""Regression tests for transport defects found by an adversarial review of the reference host
(ARCHITECTURE.md "Reference Linux host and transport rules"); each test names the failure it guards."""

from __future__ import annotations

import gzip
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import ROOT, Host, no_browser_host
from kelpie_gateway.host.launch import HostProcess
from kelpie_gateway.host.server import LINGER_MAX_S, state_dir

pytestmark = pytest.mark.timeout(120)
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kelpie-state")


@pytest.fixture(scope="module")
def host(state: Path) -> Iterator[Host]:
    with no_browser_host(state, "regressions") as paired:
        yield paired


def exchange(host: Host, request: bytes, wait_s: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", host.port), timeout=wait_s) as sock:
        sock.sendall(request)
        reply = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
        except TimeoutError:
            pass
    return reply


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kelpie_gateway.host.cli", *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "engine"), **(env or {})},
                          timeout=60)


def test_a_malformed_authorization_line_never_echoes_or_logs_the_token(host: Host) -> None:
    head = (f"POST /v1/browser-control HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n"
            f"Authorization: Bearer {host.token}\r\r\n\r\n{{}}")
    reply = exchange(host, head.encode())
    assert reply.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request"), reply[:80]
    assert host.token.encode() not in reply
    time.sleep(0.3)
    assert not any(host.token in line for line in host.process.lines)
    assert any("malformed HTTP request" in line and "details withheld" in line for line in host.process.lines)


def test_a_corrupt_compressed_body_is_400_not_500(host: Host) -> None:
    for path, headers in (("/v1/pair", {}), ("/v1/browser-control", {"Authorization": f"Bearer {host.token}"})):
        body = b"\x1f\x8bnot gzip at all"
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        reply = exchange(host, (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nContent-Type: application/json\r\n"
            f"Content-Encoding: gzip\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body)
        assert reply.startswith(b"HTTP/1.1 400"), (path, reply[:120])
        assert b"Traceback" not in reply
    good = gzip.compress(b'{"version":1,"method":"capabilities","params":{}}')
    reply = exchange(host, (
        f"POST /v1/browser-control HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nContent-Type: application/json\r\n"
        f"Content-Encoding: gzip\r\nContent-Length: {len(good)}\r\nAuthorization: Bearer {host.token}\r\n"
        "Connection: close\r\n\r\n").encode() + good)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:120]


def test_after_413_a_client_that_never_sends_the_body_is_not_waited_for_past_the_linger_bound(host: Host) -> None:
    """The lingering close (v1.1) must not become a way to hold connections: a client that announces a
    gigabyte and sends nothing is answered at once and closed after LINGER_MAX_S (tests/host/
    test_transport_v11.py checks the byte bound and that ordinary clients read the 413)."""
    with socket.create_connection(("127.0.0.1", host.port), timeout=30) as sock:
        sock.sendall((f"POST /v1/browser-control HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
                      f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {1 << 30}\r\n\r\n").encode() + b"{")
        started = time.monotonic()
        reply = b""
        while True:  # read until the server closes; we never send the announced gigabyte
            data = sock.recv(65536)
            if not data:
                break
            reply += data
        assert time.monotonic() - started < LINGER_MAX_S + 5, "the server kept the connection open too long"
    assert reply.startswith(b"HTTP/1.1 413")


def test_get_and_delete_on_mcp_check_host_and_bearer_first(host: Host) -> None:
    foreign = exchange(host, b"GET /mcp HTTP/1.1\r\nHost: evil.example:1\r\nConnection: close\r\n\r\n")
    assert foreign.startswith(b"HTTP/1.1 403"), foreign[:60]
    anonymous = exchange(host, f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nConnection: close\r\n\r\n"
                         .encode())
    assert anonymous.startswith(b"HTTP/1.1 401"), anonymous[:60]
    paired = exchange(host, (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
                             f"Authorization: Bearer {host.token}\r\nConnection: close\r\n\r\n").encode())
    assert paired.startswith(b"HTTP/1.1 405"), paired[:60]


def test_a_client_cannot_forge_operator_log_lines(host: Host) -> None:
    body = b'{"jsonrpc":"2.0","method":"notifications/x\\nrevoked the token of client \'a\'"}'
    reply = exchange(host, (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
                            f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
    assert reply.startswith(b"HTTP/1.1 202"), reply[:60]
    time.sleep(0.3)
    assert not any(line.startswith("revoked the token of client 'a'") for line in host.process.lines)


def test_serving_ipv6_loopback_prints_and_accepts_its_own_address(state: Path) -> None:
    process = HostProcess(["--browser", "none", "--bind", "::1"], env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
    process.start()
    try:
        assert process.url.startswith("http://[::1]:"), process.url
        port = int(process.url.rsplit(":", 1)[1])
        with socket.create_connection(("::1", port), timeout=5) as sock:
            sock.sendall(f"POST /v1/pair HTTP/1.1\r\nHost: [::1]:{port}\r\nContent-Type: text/plain\r\n"
                         "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
            reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 415"), reply[:60]  # past the Host check
    finally:
        process.stop()


def test_a_state_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "planted"
    foreign.mkdir(mode=0o777)
    os.chown(foreign, 65534, 65534)
    os.environ["KELPIE_GATEWAY_STATE_DIR"] = str(foreign)
    try:
        with pytest.raises(RuntimeError, match="not a directory owned by this user"):
            state_dir()
    finally:
        del os.environ["KELPIE_GATEWAY_STATE_DIR"]


def test_pair_request_writes_a_0600_token_file_even_over_an_existing_file(host: Host, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("old")
    token_file.chmod(0o644)
    done = cli("pair", "request", "--url", host.url, "--client", "mode-check", "--token-file", str(token_file))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token_file.read_text() != "old"


def test_cli_never_sends_the_bearer_through_a_proxy(host: Host, tmp_path: Path) -> None:
    seen: list[bytes] = []
    proxy = socket.create_server(("127.0.0.1", 0))
    proxy.settimeout(5)

    def accept() -> None:
        try:
            conn, _ = proxy.accept()
            seen.append(conn.recv(4096))
            conn.close()
        except OSError:
            pass

    threading.Thread(target=accept, daemon=True).start()
    token_file = tmp_path / "token"
    token_file.write_text(host.token)
    proxy_url = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    done = cli("call", "capabilities", "--url", host.url, "--token-file", str(token_file),
               env={"http_proxy": proxy_url, "HTTP_PROXY": proxy_url, "no_proxy": "", "NO_PROXY": ""})
    proxy.close()
    assert done.returncode == 0, done.stderr
    assert seen == []


def test_a_stalled_body_gets_408_instead_of_holding_the_connection(state: Path) -> None:
    process = HostProcess(["--browser", "none"], env={"KELPIE_GATEWAY_STATE_DIR": str(state),
                                                      "KELPIE_GATEWAY_BODY_TIMEOUT_S": "1"})
    process.start()
    try:
        port = int(process.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            # a chunked body that announces a chunk and then stops sending
            sock.sendall((f"POST /v1/pair HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n10\r\n{\"client\"").encode())
            started = time.monotonic()
            reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
        assert time.monotonic() - started < 5
    finally:
        process.stop()
