"""Raw HTTP checks of every status rule of the reference host's routes (``host/server.py``; ARCHITECTURE.md,
"Reference Linux host and transport rules"; docs/host.md "HTTP transport"), and the transport defects an
adversarial review found (each test's docstring names what it guards). Pairing is ``test_pairing.py``,
connections (lingering close, ``Expect``, half-close) ``test_http_connections.py``, the CLI ``test_cli.py``.

The host runs ``--browser none`` here: transport rules do not need a renderer, and the no-browser fallback
itself is checked (``browserAvailable:false``, DOM methods truthfully absent). It is paired once through the
operator's ``pair approve``.
"""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_testlib import Host, manually_paired_host, raw
from kelpie_gateway.host.launch import HostProcess

pytestmark = pytest.mark.timeout(120)
CAP = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kelpie-state")


@pytest.fixture(scope="module")
def host(state: Path) -> Iterator[Host]:
    with manually_paired_host(state, "rules-client") as paired:
        yield paired


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


def test_a_malformed_authorization_line_never_echoes_or_logs_the_token(host: Host) -> None:
    """Guards: aiohttp's parser error for a header with a control character quoted the bearer back to the
    client and into the operator log."""
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
    """Guards: a body whose ``Content-Encoding`` does not decode was answered 500 with a traceback."""
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


def test_get_and_delete_on_mcp_check_host_and_bearer_first(host: Host) -> None:
    """Guards: ``GET``/``DELETE /mcp`` answered 405 before the Host and bearer checks (a rebinding page could
    probe the host)."""
    foreign = exchange(host, b"GET /mcp HTTP/1.1\r\nHost: evil.example:1\r\nConnection: close\r\n\r\n")
    assert foreign.startswith(b"HTTP/1.1 403"), foreign[:60]
    anonymous = exchange(host, f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nConnection: close\r\n\r\n"
                         .encode())
    assert anonymous.startswith(b"HTTP/1.1 401"), anonymous[:60]
    paired = exchange(host, (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
                             f"Authorization: Bearer {host.token}\r\nConnection: close\r\n\r\n").encode())
    assert paired.startswith(b"HTTP/1.1 405"), paired[:60]


def test_a_client_cannot_forge_operator_log_lines(host: Host) -> None:
    """Guards: a JSON-RPC method name with a newline wrote a forged line into the operator log."""
    body = b'{"jsonrpc":"2.0","method":"notifications/x\\nrevoked the token of client \'a\'"}'
    reply = exchange(host, (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
                            f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
    assert reply.startswith(b"HTTP/1.1 202"), reply[:60]
    time.sleep(0.3)
    assert not any(line.startswith("revoked the token of client 'a'") for line in host.process.lines)


def test_serving_ipv6_loopback_prints_and_accepts_its_own_address(state: Path) -> None:
    """Guards: ``--bind ::1`` printed and accepted the wrong address (an IPv4 one, not ``[::1]:PORT``)."""
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


def test_a_stalled_body_gets_408_instead_of_holding_the_connection(state: Path) -> None:
    """Guards: a client that stops sending its body held the connection (and a handler) for ever."""
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


def test_a_repeated_member_name_is_refused_on_every_route(host: Host) -> None:
    """Issue 27: ``{"method":"tabs.list","method":"tabs.close",…}`` closed a tab — orjson keeps the last of
    two equal names. Every route refuses a body that repeats a name, at any depth, before anything runs:
    the canonical route 400 ``INVALID_JSON``, ``/mcp`` 400 ``-32600`` (id null: which id was meant is
    ambiguous), ``POST /v1/pair`` 400. No log line quotes the repeated name."""
    canonical = b'{"version":1,"id":1,"method":"capabilities","method":"documentation","params":{}}'
    status, body = raw(host, "POST", "/v1/browser-control", canonical, auth(host))
    env = json.loads(body)
    assert status == 400 and env["error"]["code"] == "INVALID_JSON" and "appears twice" in env["error"]["message"]
    deep = b'{"version":1,"id":1,"method":"capabilities","params":{"a":{"b":1,"b":2}}}'
    assert raw(host, "POST", "/v1/browser-control", deep, auth(host))[0] == 400
    for rpc in (b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}',
                b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":1,"x":2}}}'):
        status, body = raw(host, "POST", "/mcp", rpc, auth(host))
        answer = json.loads(body)
        assert status == 400 and answer["error"]["code"] == -32600 and answer["id"] is None, answer
    status, body = raw(host, "POST", "/v1/pair", b'{"client":"a","client":"b"}', {"Content-Type": "application/json"})
    assert status == 400 and json.loads(body)["error"]["code"] == "INVALID_JSON"
    # a body whose strings hold colons (escaped or not) is no duplicate
    fine = b'{"version":1,"id":"a:b\\u003ac","method":"capabilities","params":{}}'
    status, body = raw(host, "POST", "/v1/browser-control", fine, auth(host))
    assert status == 200 and json.loads(body)["id"] == "a:b:c"


def test_an_empty_host_header_is_403_like_any_wrong_host(host: Host) -> None:
    """Issue 27 reported an empty ``Host:`` accepted. Every route answers it — and a blank one, and an
    HTTP/1.0 request without any — the 403 a foreign host gets, with the same body; an HTTP/1.1 request
    without ``Host`` is malformed (RFC 9112 §3.2: 400, from aiohttp's parser)."""
    wrong = raw(host, "POST", "/v1/browser-control", CAPS, auth(host, Host=f"evil.example:{host.port}"))
    assert wrong[0] == 403
    routes = (("POST", "/v1/browser-control", CAPS), ("POST", "/mcp", PING), ("GET", "/mcp", b""),
              ("POST", "/v1/pair", b'{"client":"x"}'), ("DELETE", "/v1/pair", b""))
    for method, path, body in routes:
        for value in ("", " ", "\t"):
            head = (f"{method} {path} HTTP/1.1\r\nHost:{value}\r\nAuthorization: Bearer {host.token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            reply = exchange(host, head.encode() + body)
            assert reply.startswith(b"HTTP/1.1 403"), (method, path, repr(value), reply[:200])
            if path == "/v1/browser-control":
                assert reply.endswith(wrong[1]), reply
        head = (f"{method} {path} HTTP/1.0\r\nAuthorization: Bearer {host.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        assert exchange(host, head.encode() + body).startswith(b"HTTP/1.0 403"), (method, path)
    head = f"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {len(PING)}\r\n\r\n"
    assert exchange(host, head.encode() + PING).split(b"\r\n")[0].endswith(b"400 Bad Request")


@pytest.mark.parametrize(
    ("version", "host_line"),
    [
        ("1.1", "Host:\r\n"),
        ("1.1", "Host: \r\n"),
        ("1.1", "Host:\t\r\n"),
        ("1.0", "Host:\r\n"),
        ("1.0", ""),
        ("1.1", "Host:\r\nExpect: 100-continue\r\n"),
    ],
    ids=["empty", "space", "tab", "http1.0-empty", "http1.0-none", "empty-expect-100"],
)
def test_an_empty_or_missing_host_header_is_403_on_every_route(
    host: Host, version: str, host_line: str
) -> None:
    """Issue 27: a request whose ``Host:`` header is empty was accepted (only wrong names were refused); an
    empty, blank or missing Host gets the same 403 as any other host the server does not serve, on every
    route, before the bearer is looked at (DNS-rebinding guard), and never a ``100 Continue`` first. (On this
    build it already held; this guards it.)"""
    for method, path, body in (
        ("POST", "/v1/browser-control", CAPS),
        ("POST", "/mcp", PING),
        ("POST", "/v1/pair", b'{"client":"x"}'),
        ("DELETE", "/v1/pair", b""),
    ):
        with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
            head = (
                f"{method} {path} HTTP/{version}\r\n{host_line}Authorization: Bearer {host.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            sock.sendall(head.encode() + body)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        assert reply.split(b" ", 2)[1] == b"403", (method, path, reply[:200])
        assert b"the Host header must name the loopback address served" in reply, reply
