"""Helpers for the reference-host tests: one host child process per test module (and per gateway mode).

``browser_host`` runs ``kelpie-gateway serve`` with real headless Chromium on the fixture site, once through
the Python API and once through the C library (``--via-abi``); pytest groups the tests by mode so only one
Chromium runs at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))

from kelpie_gateway.host.abi import default_library  # noqa: E402
from kelpie_gateway.host.launch import HostProcess  # noqa: E402


class Host:
    """A running host plus a paired token and small HTTP helpers."""

    def __init__(self, process: HostProcess, token: str, mode: str) -> None:
        self.process = process
        self.url = process.url
        self.port = process.port
        self.token = token
        self.mode = mode

    def pair(self, client: str = "kelpie-test") -> str:
        return self.process.pair(client)

    def post(
        self, path: str, body: Any, token: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        bearer = self.token if token is None else token
        if bearer:
            hdrs["Authorization"] = f"Bearer {bearer}"
        request = urllib.request.Request(self.url + path, data=data, headers=hdrs, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, (json.loads(raw) if raw else None)

    def call(
        self, method: str, params: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        status, envelope = self.post(
            "/v1/browser-control", {"version": 1, "id": 1, "method": method, "params": params or {}}, token
        )
        assert status == 200, (status, envelope)
        return envelope

    def site(self, page: str) -> str:
        """URL of a fixture page: the site's address is printed by the host at start-up."""
        self.process.wait_for_line(" at http://")
        line = next((x for x in list(self.process.lines) if x.startswith("site /") and " at http://" in x), "")
        return line.rsplit(" at ", 1)[1].rstrip("/") + "/" + page



def call(host: Host, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One canonical call; like a careful agent, retries (bounded) only refusals that are retryable and
    guarantee nothing happened (BUSY, a read discarded as RENDERER_CHANGED by a navigation)."""
    envelope = host.call(method, params)
    for _ in range(10):
        if envelope["success"] or not envelope["error"]["retryable"] or envelope["mayHaveCompleted"]:
            break
        time.sleep(0.2)
        envelope = host.call(method, params)
    return envelope


def ok(host: Host, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """:func:`call` that must succeed; its result."""
    envelope = call(host, method, params)
    assert envelope["success"], envelope
    return dict(envelope["result"])


def ext(host: Host, name: str, **arguments: Any) -> dict[str, Any]:
    """``extension.call`` of extension ``name`` with ``arguments`` (retried as :func:`call` retries)."""
    return call(host, "extension.call", {"name": name, "arguments": arguments})


def ext_ok(host: Host, name: str, **arguments: Any) -> dict[str, Any]:
    """:func:`ext` that must succeed; its result."""
    envelope = ext(host, name, **arguments)
    assert envelope["success"], envelope
    return dict(envelope["result"])


def start_host(args: list[str], mode: str) -> HostProcess:
    """``serve`` with ``args``; mode ``abi`` adds ``--via-abi`` and ``--direct-cdp`` (so every host test runs
    once with fixed scripts over Playwright's CDP sessions and once over the host's own CDP connection,
    docs/host.md "Direct CDP"), unless ``args`` names another browser already."""
    extra = list(args)
    if mode == "abi":
        lib = default_library()
        assert lib.exists(), f"--via-abi needs the C library at {lib} (tools/dev setup builds it)"
        extra.append("--via-abi")
        if not any(a in extra for a in ("--cdp-endpoint", "--browser-endpoint", "--browser")):
            extra.append("--direct-cdp")
    process = HostProcess(extra)
    process.start()
    return process


def redirected(handler: http.server.BaseHTTPRequestHandler) -> bool:
    """Answer ``/redirect?to=URL`` with a 302 to URL (True), or do nothing (False)."""
    parts = urllib.parse.urlsplit(handler.path)
    if parts.path != "/redirect":
        return False
    handler.send_response(302)
    handler.send_header("Location", urllib.parse.parse_qs(parts.query).get("to", ["/"])[0])
    handler.send_header("Content-Length", "0")
    handler.end_headers()
    return True


class RecordingSite:
    """A tiny "foreign" web site on another loopback address (``127.0.0.2`` …): it records every path
    requested, answers ``/redirect?to=URL`` with a 302 to URL and everything else with a small page."""

    def __init__(self, address: str) -> None:
        self.hits: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hits.append(self.path)
                if redirected(self):
                    return
                body = b"<!doctype html><title>Foreign</title><h1>A foreign site</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.url = f"http://{address}:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def no_browser_host(state: Path, client: str) -> Iterator[Host]:
    """A host with ``--browser none`` (transport rules need no renderer), its admin socket in ``state``,
    paired automatically as ``client``; stopped on exit."""
    process = HostProcess(["--browser", "none", "--approve-pairing", "auto"],
                          env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
    process.start()
    try:
        host = Host(process, "", "python")
        status, body = host.post("/v1/pair", {"client": client}, token="")
        assert status == 200, (status, body)
        host.token = str(body["token"])
        yield host
    finally:
        process.stop()


APPROVAL_WINDOW_S = 60
"""The module host's pairing window: an operator approving through the CLI (a Python start-up) has ample
time even on a loaded machine. Tests wait on the answer, never on wall time."""


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


def manual_pairing_host(state: Path, window_s: int) -> HostProcess:
    """A started ``--browser none`` host whose pairing requests wait ``window_s`` for the operator."""
    process = HostProcess(
        ["--browser", "none", "--approve-pairing", "manual", "--pairing-timeout", str(window_s)],
        env={"KELPIE_GATEWAY_STATE_DIR": str(state)},
    )
    process.start()
    return process


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


@contextmanager
def manually_paired_host(state: Path, client: str) -> Iterator[Host]:
    """A host whose pairing requests wait for the operator (its admin socket in ``state``), paired once as
    ``client`` through ``pair approve``; stopped on exit."""
    process = manual_pairing_host(state, APPROVAL_WINDOW_S)
    try:
        host = Host(process, "", "python")
        host.token = pair_manually(host, state, client)
        yield host
    finally:
        process.stop()


def in_renderer(body: Callable[[Any, str, str], Awaitable[Any]], **options: Any) -> Any:
    """Run ``body(renderer, tab, site)`` against the host's own renderer (``ChromiumRenderer`` with the host's
    parts and ``options``; real headless Chromium, started on the fixture site's form.html) on a loop of its
    own; returns what it returns."""
    from kelpie_gateway.host.browser import ChromiumRenderer, find_chromium
    from kelpie_gateway.host.parts import PARTS

    async def main(site: str) -> Any:
        renderer = ChromiumRenderer(executable=find_chromium(None), log=print, parts=PARTS, **options)
        await renderer.start(f"{site}/form.html")
        try:
            tab = (await renderer.call("get-tabs", {}))["tabs"][0]["tabId"]
            return await body(renderer, tab, site)
        finally:
            await renderer.close()

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ROOT / "fixtures" / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, main(f"http://127.0.0.1:{server.server_address[1]}")).result()
    finally:
        server.shutdown()
        server.server_close()
