"""HTTP connections (``host/server.py``; docs/host.md "Connections: lingering close, ``Expect``, half-closed
clients"): the rules revision 1.1 adds (ARCHITECTURE.md "Host rules added in revision 1.1", issue 11),
checked against the real host process with ordinary clients and raw sockets:

* a body over 4 MiB is answered 413 and every ordinary client reads that envelope (Python urllib and
  http.client, Node 20 fetch, curl — with and without ``Expect: 100-continue``), 20 tries each, because the
  host lingers (bounded) before it closes;
* the lingering is bounded in bytes and in time (docs/host.md states the bounds);
* ``Expect: 100-continue`` gets the interim 100 only for a request the host would read;
* a request whose client half-closed its side after sending it is answered;
* ``/mcp`` batches and other non-requests are HTTP 400 with the JSON-RPC ``-32600`` body;
* the aiohttp internals the half-close support reads (:data:`AIOHTTP_INTERNALS`) are still there, and the
  installed aiohttp is inside the range ``pyproject.toml`` pins: aiohttp has no public hook for "the client
  closed its side while requests are still queued", so the host reads three private attributes of its
  request handler (plus two of its ``Server`` and one ``AppRunner`` method); those tests fail loudly,
  naming what is missing.
"""

from __future__ import annotations

import asyncio
import collections
import http.client
import importlib
import json
import shutil
import socket
import subprocess
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from host_testlib import ROOT, Host, no_browser_host
from kelpie_gateway.host.server import AIOHTTP_INTERNALS, LINGER_MAX_BYTES, LINGER_MAX_S, MAX_BODY
from packaging.requirements import Requirement
from packaging.version import Version
from stdio_testlib import run_async

pytestmark = pytest.mark.timeout(300)
TRIES = 20
SIZES = (MAX_BODY + 1, 6 * 1024 * 1024)  # just over the cap, and well over it; each used for half the tries
CAPS = b'{"version":1,"id":1,"method":"capabilities","params":{}}'
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    with no_browser_host(tmp_path_factory.mktemp("kelpie-state"), "transport-v11") as paired:
        yield paired


def sizes() -> list[int]:
    return [SIZES[i % 2] for i in range(TRIES)]


def read_413(status: int, raw: bytes) -> bool:
    """True when the answer is the 413 with the REQUEST_TOO_LARGE envelope."""
    try:
        return status == 413 and json.loads(raw)["error"]["code"] == "REQUEST_TOO_LARGE"
    except (ValueError, KeyError, TypeError):
        return False


def head(host: Host, length: int, extra: str = "", path: str = "/v1/browser-control") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\nAuthorization: Bearer {host.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n").encode()


def read_all(sock: socket.socket) -> bytes:
    reply = b""
    try:
        while data := sock.recv(65536):
            reply += data
    except (ConnectionResetError, TimeoutError):
        pass
    return reply


# ---------------------------------------------------------------------- 413 read by ordinary clients
def test_urllib_reads_the_413_envelope_every_time(host: Host) -> None:
    outcomes = []
    for size in sizes():
        request = urllib.request.Request(
            host.url + "/v1/browser-control", data=b" " * size, method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {host.token}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                outcomes.append(read_413(response.status, response.read()))
        except urllib.error.HTTPError as exc:
            outcomes.append(read_413(exc.code, exc.read()))
        except OSError as exc:  # a reset or broken pipe instead of the answer
            outcomes.append(False)
            print("urllib:", type(exc).__name__, exc)
    assert sum(outcomes) == TRIES, f"urllib read the 413 envelope {sum(outcomes)}/{TRIES} times"


def test_http_client_reads_the_413_envelope_every_time(host: Host) -> None:
    outcomes = []
    for size in sizes():
        conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=60)
        try:
            conn.request("POST", "/v1/browser-control", body=b" " * size,
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {host.token}"})
            response = conn.getresponse()
            outcomes.append(read_413(response.status, response.read()))
        except OSError as exc:
            outcomes.append(False)
            print("http.client:", type(exc).__name__, exc)
        finally:
            conn.close()
    assert sum(outcomes) == TRIES, f"http.client read the 413 envelope {sum(outcomes)}/{TRIES} times"


def test_node_fetch_reads_the_413_envelope_every_time(host: Host) -> None:
    node = shutil.which("node")
    assert node, "node (20+) is needed: the project's setup requires it"
    results: list[dict[str, Any]] = []
    for size in SIZES:
        done = subprocess.run([node, str(HERE / "post_big.mjs"), host.url + "/v1/browser-control", host.token,
                               str(size), str(TRIES // 2)], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        results += json.loads(done.stdout)
    good = [r for r in results if r.get("status") == 413 and r.get("code") == "REQUEST_TOO_LARGE"]
    assert len(good) == TRIES, f"Node fetch read the 413 envelope {len(good)}/{TRIES} times: {results}"


@pytest.mark.parametrize("expect", ["default", "no-expect"])
def test_curl_reads_the_413_envelope_every_time(host: Host, tmp_path: Path, expect: str) -> None:
    """curl sends ``Expect: 100-continue`` with a large body (then the host answers 413 before any upload);
    with ``Expect:`` disabled it uploads at once and the host's lingering close is what lets it read 413."""
    curl = shutil.which("curl")
    assert curl, "curl is a Debian base tool on the supported machine"
    outcomes = []
    for i, size in enumerate(sizes()):
        body, answer = tmp_path / f"body{size}", tmp_path / f"answer{i}"
        if not body.exists():
            body.write_bytes(b" " * size)
        args = [curl, "-s", "-o", str(answer), "-w", "%{http_code}", "--max-time", "60",
                "-H", "Content-Type: application/json", "-H", f"Authorization: Bearer {host.token}",
                "--data-binary", f"@{body}", host.url + "/v1/browser-control"]
        if expect == "no-expect":
            args[1:1] = ["-H", "Expect:"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=90)
        status = int(done.stdout or 0)
        outcomes.append(read_413(status, answer.read_bytes() if answer.exists() else b""))
    assert sum(outcomes) == TRIES, f"curl ({expect}) read the 413 envelope {sum(outcomes)}/{TRIES} times"


# ---------------------------------------------------------------------- the lingering is bounded
def test_the_lingering_after_413_is_bounded_in_bytes(host: Host) -> None:
    """A client that keeps uploading (1 GiB announced) reads the 413, and the host stops reading after at
    most LINGER_MAX_BYTES more than the cap (plus what socket buffers hold), then closes."""
    sent = 0
    stop = threading.Event()
    with socket.create_connection(("127.0.0.1", host.port), timeout=30) as sock:
        sock.sendall(head(host, 1 << 30))

        def upload() -> None:
            nonlocal sent
            chunk = b" " * 65536
            try:
                while not stop.is_set():
                    sock.sendall(chunk)
                    sent += len(chunk)
            except OSError:
                pass  # the host closed: the upload is cut

        uploader = threading.Thread(target=upload)
        started = time.monotonic()
        uploader.start()
        reply = read_all(sock)
        elapsed = time.monotonic() - started
        stop.set()
        uploader.join(10)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:80]
    assert b"REQUEST_TOO_LARGE" in reply and b"Connection: close" in reply
    slack = 16 * 1024 * 1024  # loopback socket buffers on both sides
    assert sent <= MAX_BODY + LINGER_MAX_BYTES + slack, f"the host read {sent} bytes of a refused body"
    assert elapsed < LINGER_MAX_S + 10


def test_the_lingering_after_413_is_bounded_in_time(host: Host) -> None:
    """A client that announces 1 GiB and then sends nothing gets the 413 at once and the connection is
    closed within LINGER_MAX_S (it is not held open waiting for the body)."""
    with socket.create_connection(("127.0.0.1", host.port), timeout=30) as sock:
        sock.sendall(head(host, 1 << 30) + b"{")
        started = time.monotonic()
        first = sock.recv(65536)
        answered = time.monotonic() - started
        rest = read_all(sock)
        closed = time.monotonic() - started
    assert (first + rest).startswith(b"HTTP/1.1 413"), first[:80]
    assert answered < 5, "the 413 must not wait for the body"
    assert closed < LINGER_MAX_S + 5, f"the connection stayed open {closed:.1f} s"


def test_expect_100_continue_is_answered_413_without_an_upload(host: Host) -> None:
    with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
        sock.sendall(head(host, MAX_BODY + 1, "Expect: 100-continue\r\n"))
        first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 413"), first[:80]  # no "100 Continue" first
    with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
        sock.sendall(head(host, len(CAPS), "Expect: 100-continue\r\n"))
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(CAPS)
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:80]
    with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
        sock.sendall(head(host, len(CAPS), "Expect: 100-continue\r\n").replace(host.token.encode(), b"wrong"))
        first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 401"), first[:80]


# ---------------------------------------------------------------------- half-closed clients
def half_closed(host: Host, data: bytes) -> tuple[bytes, float]:
    with socket.create_connection(("127.0.0.1", host.port), timeout=60) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        started = time.monotonic()
        reply = read_all(sock)
    return reply, time.monotonic() - started


def test_a_half_closed_request_is_answered(host: Host) -> None:
    reply, _ = half_closed(host, head(host, len(CAPS)) + CAPS)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:80]
    envelope = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert envelope["success"] is True and envelope["result"]["version"] == 1
    ping = b'{"jsonrpc":"2.0","id":5,"method":"ping"}'
    reply, _ = half_closed(host, head(host, len(ping), path="/mcp") + ping)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:80]
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {"jsonrpc": "2.0", "id": 5, "result": {}}


def test_pipelined_requests_before_a_half_close_are_all_answered(host: Host) -> None:
    reply, _ = half_closed(host, (head(host, len(CAPS)) + CAPS) * 3)
    assert reply.count(b"HTTP/1.1 200 OK") == 3, reply[:200]


def test_a_body_cut_short_by_a_half_close_is_400_at_once(host: Host) -> None:
    reply, elapsed = half_closed(host, head(host, len(CAPS)) + CAPS[:-5])
    assert reply.startswith(b"HTTP/1.1 400"), reply[:80]
    assert elapsed < 5, "a body that cannot arrive must not wait for the body timeout"


# ---------------------------------------------------------------------- /mcp non-requests
def mcp_post(host: Host, body: bytes) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=body,
                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {host.token}"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_an_mcp_batch_is_http_400_with_the_invalid_request_body(host: Host) -> None:
    status, body = mcp_post(host, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    assert status == 400
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32600
    assert "batch" in body["error"]["message"]
    for not_a_request in (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', b"7", b'{"jsonrpc":"2.0","id":1,"method":3}'):
        status, body = mcp_post(host, not_a_request)
        assert status == 400 and body["error"]["code"] == -32600, not_a_request
    status, body = mcp_post(host, b'{"jsonrpc":"2.0","id":2,"method":"no/such"}')
    assert status == 200 and body["error"]["code"] == -32601  # a valid request the server cannot serve


def test_after_413_a_client_that_never_sends_the_body_is_not_waited_for_past_the_linger_bound(host: Host) -> None:
    """Guards: the lingering close (v1.1) becoming a way to hold connections — a client that announces a
    gigabyte and sends nothing is answered at once and closed after LINGER_MAX_S (the byte bound and that
    ordinary clients read the 413 are checked above)."""
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


def pinned_range() -> Requirement:
    """The aiohttp requirement of the ``host`` extra in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["optional-dependencies"]["host"]:
        requirement = Requirement(line)
        if requirement.name == "aiohttp":
            return requirement
    raise AssertionError("pyproject.toml's host extra has no aiohttp requirement")


def test_the_pin_has_an_upper_bound_and_the_installed_aiohttp_is_inside_it() -> None:
    pin = pinned_range()
    assert any(spec.operator in ("<", "<=", "~=", "==") for spec in pin.specifier), (
        f"pyproject.toml pins {pin}: without an upper bound a future aiohttp without the private state "
        "host/server.py reads could be installed"
    )
    installed = Version(aiohttp.__version__)
    assert pin.specifier.contains(installed, prereleases=True), (
        f"aiohttp {installed} is installed but pyproject.toml pins {pin} (the range the host's half-close "
        "support was tested on): install a pinned version, or test the new one and widen the pin"
    )


def _resolve(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def test_aiohttp_still_has_the_private_state_the_half_close_support_reads() -> None:
    async def real_objects() -> dict[str, object]:
        async def handler(request: web.BaseRequest) -> web.StreamResponse:
            return web.Response()

        server = web.Server(handler)  # what AppRunner builds; calling it makes a connection's handler
        return {
            "aiohttp.web_protocol.RequestHandler": server(),
            "aiohttp.web_server.Server": server,
            "aiohttp.web_runner.AppRunner": web.AppRunner(web.Application()),
        }

    # On a thread of its own: in the full suite the browser tests' Playwright loop holds this thread.
    objects = run_async(real_objects())
    missing = []
    for path, names in AIOHTTP_INTERNALS.items():
        obj = objects[path]
        assert isinstance(obj, _resolve(path)), (path, obj)
        missing += [f"{path}.{name}" for name in names if not hasattr(obj, name)]
    assert not missing, (
        f"aiohttp {aiohttp.__version__} no longer has {', '.join(missing)}: host/server.py's half-close support "
        f"(_QuietRequestHandler, _QuietServer, QuietAppRunner) reads them. pyproject.toml pins {pinned_range()}; "
        "a release outside that range needs the half-close support reworked before the pin is widened"
    )
    handler = objects["aiohttp.web_protocol.RequestHandler"]
    # The shapes the support relies on: a queue of (message, payload) pairs, no idle waiter before the first
    # request, a request counter, and the Server's loop and RequestHandler keyword arguments.
    assert isinstance(handler._messages, collections.deque) and not handler._messages  # type: ignore[attr-defined]
    assert handler._waiter is None and handler._request_count == 0  # type: ignore[attr-defined]
    server = objects["aiohttp.web_server.Server"]
    assert isinstance(server._loop, asyncio.AbstractEventLoop) and isinstance(server._kwargs, dict)  # type: ignore[attr-defined]
