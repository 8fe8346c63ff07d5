"""Remote browsers on real Chromium (issue 31; docs/host.md "Remote browsers").

A real Playwright browser server started by the test on loopback (``playwright run-server --unsafe``),
reached through a WebSocket endpoint the test controls (``remote_testlib.RecordingEndpoint``: it records each
handshake and relays it), with ``serve --browser-endpoint``, two ``--browser-header`` (one from a variable,
one from a file), a token in the endpoint's query and ``--browser-executable`` (sent to the server as its
launch options):

* the MCP journey (Python SDK) passes on the remote browser; two per-client contexts live in it side by side;
* the headers and the launch options reach the endpoint;
* killing the server answers the click in flight at once, then ``BROWSER_UNAVAILABLE`` with
  ``mayHaveCompleted:false``; the host reconnects with backoff (logged) and recovers once it is restarted;
* no header value and no endpoint credential is ever in the log, the audit file, ``--version`` or a message —
  nor, for ``--cdp-endpoint`` (where a token in the URL used to be printed and sent back), the user info
  of an attached browser's endpoint.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from faults_testlib import free_port, kill, refused, start_chromium, until
from host_testlib import ROOT, Host, RecordingSite, start_host
from kelpie_gateway.host.launch import HostProcess, terminate
from mcp_testlib import connect, element, ok, open_tab, run
from remote_testlib import PlaywrightServer, RecordingEndpoint, machine_address

pytestmark = pytest.mark.timeout(300)

URL_SECRET = f"url-token-{uuid.uuid4().hex}"
ENV_SECRET = f"env-secret-{uuid.uuid4().hex}"
FILE_SECRET = f"file-secret-{uuid.uuid4().hex}"
SECRETS = (URL_SECRET, ENV_SECRET, FILE_SECRET)
ENV_VAR = "KELPIE_TEST_GRID_TOKEN"


@dataclass
class Grid:
    server: PlaywrightServer
    endpoint: RecordingEndpoint
    host: Host
    audit: Path
    flags: list[str]


def remote_flags(endpoint: RecordingEndpoint, key_file: Path) -> list[str]:
    return [
        "--browser-endpoint", f"{endpoint.url}/grid?token={URL_SECRET}",
        "--browser-header", f"Authorization: @env:{ENV_VAR}",
        "--browser-header", f"X-Grid-Key: @file:{key_file}",
        "--browser-executable", "/usr/bin/chromium",
        "--browser-backoff-max", "1",
    ]


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    tmp = tmp_path_factory.mktemp("grid")
    key_file = tmp / "grid-key"
    key_file.write_text(FILE_SECRET + "\n")
    server = PlaywrightServer(free_port(), "/grid")
    server.start()
    endpoint = RecordingEndpoint(server.port)
    audit = tmp / "audit.jsonl"
    flags = remote_flags(endpoint, key_file)
    os.environ[ENV_VAR] = f"Bearer {ENV_SECRET}"
    process: HostProcess | None = None
    try:
        process = start_host(["--approve-pairing", "auto", "--pairings", "memory", "--audit-log", str(audit),
                              *flags], "python")
        yield Grid(server, endpoint, Host(process, process.pair("grid-client"), "python"), audit, flags)
    finally:
        if process is not None:
            process.stop()
            if os.environ.get("KELPIE_HOST_LOG"):
                print("\n".join(process.lines))
        os.environ.pop(ENV_VAR, None)
        server.kill()
        endpoint.close()


def no_secret_in(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret is in {where}"


def test_the_mcp_journey_passes_on_a_browser_from_a_playwright_server(grid: Grid) -> None:
    host = grid.host
    line = host.process.wait_for_line("browser chromium", 5) or ""
    assert "remote (Playwright server at ws://127.0.0.1:" in line and "token=***" in line, line
    assert "headers Authorization, X-Grid-Key (values withheld)" in line, line
    assert grid.server.browsers(), "the server launched no browser: the host's is not the remote one"

    async def journey() -> None:
        async with connect(host, "legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "kelpie_browser_control" in names
            tab = await open_tab(client, host, "click.html")
            snap = await ok(client, "tab.snapshot", {"tabId": tab})
            assert await ok(client, "tab.click", {"tabId": tab, "ref": element(snap, "button", "Increment")["ref"]})
            assert "Clicked 1 times" in (await ok(client, "tab.snapshot", {"tabId": tab}))["text"]
            await ok(client, "tab.navigate", {"tabId": tab, "url": host.site("form.html")})
            form = await ok(client, "tab.snapshot", {"tabId": tab})
            typed = await ok(client, "tab.type", {"tabId": tab, "ref": element(form, "input", "name")["ref"],
                                                  "text": "remote"})
            assert typed == {"typed": 6}
            assert "Name has 6 characters" in (await ok(client, "tab.snapshot", {"tabId": tab}))["text"]
            shot = await client.call_tool("kelpie_browser_control",
                                          {"method": "tab.screenshot", "params": {"tabId": tab}})
            images = [block for block in shot.content if block.type == "image"]
            assert len(images) == 1 and base64.b64decode(images[0].data)[:4] == b"\x89PNG"
            await ok(client, "tabs.close", {"tabId": tab})

    run(journey())


def test_the_headers_and_the_launch_options_reach_the_endpoint(grid: Grid) -> None:
    shaken = grid.endpoint.handshakes
    assert shaken, "the host never connected through the endpoint"
    first = shaken[0]
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert first["path"] == f"/grid?token={URL_SECRET}"
    assert headers["authorization"] == f"Bearer {ENV_SECRET}"
    assert headers["x-grid-key"] == FILE_SECRET
    assert headers["x-playwright-browser"] == "chromium"
    launch = json.loads(headers["x-playwright-launch-options"])
    assert launch["executablePath"] == "/usr/bin/chromium" and launch["headless"] is True, launch
    assert "--no-sandbox" in launch["args"]


def test_a_lost_server_retires_work_answers_unavailable_and_recovers(grid: Grid) -> None:
    host = grid.host
    tab = host.call("tabs.open", {"url": host.site("slow.html?busy=8000")})["result"]["tabId"]
    snap = host.call("tab.snapshot", {"tabId": tab})["result"]
    slow = next(e["ref"] for e in snap["elements"] if e["label"] == "Slow increment")
    box: dict[str, Any] = {}

    def click() -> None:
        box["env"] = host.call("tab.click", {"tabId": tab, "ref": slow, "timeoutMs": 25000})
        box["at"] = time.monotonic()

    thread = threading.Thread(target=click)
    thread.start()
    time.sleep(1.0)  # the click is dispatched and the page is busy for 8 s
    killed = time.monotonic()
    grid.server.kill()
    thread.join(20)
    assert box["at"] - killed < 5, "the click was not answered when its browser went away"
    env = box["env"]
    assert env["success"] is False and env["mayHaveCompleted"] is True, env  # dispatched: unknown outcome
    assert host.process.wait_for_line("remote browser at ws://127.0.0.1:", 10)
    for method, params in (("tabs.list", {}), ("tabs.open", {}), ("tab.snapshot", {"tabId": tab})):
        env = host.call(method, params)
        refused(env, "BROWSER_UNAVAILABLE")  # nothing was dispatched
        assert "reconnect" in env["error"]["message"], env
        no_secret_in(json.dumps(env), "a BROWSER_UNAVAILABLE message")
    assert host.call("capabilities")["success"]
    assert host.process.wait_for_line("failed (attempt 1)", 10)

    grid.server.start()  # the same port: the grid is back
    until(lambda: bool(host.call("tabs.list")["success"]), 60, poll_s=0.5)
    assert host.process.wait_for_line("browser reconnected", 10)
    fresh = [t["tabId"] for t in host.call("tabs.list")["result"]["tabs"]]
    assert fresh and tab not in fresh
    refused(host.call("tab.snapshot", {"tabId": tab}), "TAB_NOT_FOUND")
    assert host.call("tab.snapshot", {"tabId": fresh[0]})["success"]
    assert len(grid.endpoint.handshakes) >= 2  # it reconnected through the endpoint, headers again
    latest = {k.lower(): v for k, v in grid.endpoint.handshakes[-1]["headers"].items()}
    assert latest["authorization"] == f"Bearer {ENV_SECRET}"


def policy_host(grid: Grid, tmp_path: Path, endpoint: RecordingEndpoint) -> HostProcess:
    key_file = tmp_path / "grid-key"
    key_file.write_text(FILE_SECRET)
    return start_host(["--approve-pairing", "auto", "--pairings", "memory", "--isolation", "per-client",
                       "--blocked-origins", "http://127.0.0.2:*", *remote_flags(endpoint, key_file)], "python")


def two_clients_isolated(host: Host) -> tuple[str, str]:
    one, two = host.pair("grid-one"), host.pair("grid-two")
    for token, name in ((one, "one"), (two, "two")):
        tab = host.call("tabs.list", token=token)["result"]["tabs"][0]["tabId"]
        env = host.call("tab.navigate", {"tabId": tab, "url": host.site(f"isolation.html?as={name}")}, token)
        assert env["success"], env
    for token, name in ((one, "one"), (two, "two")):
        tab = host.call("tabs.list", token=token)["result"]["tabs"][0]["tabId"]
        host.call("tab.navigate", {"tabId": tab, "url": host.site("isolation.html")}, token)
        text = host.call("tab.snapshot", {"tabId": tab}, token)["result"]["text"]
        assert f"Cookie: {name}" in text and f"Storage: {name}" in text, text
    return one, two


def blocked_twice(host: Host, token: str, blocked: RecordingSite, line: str) -> None:
    """A navigation to ``blocked`` refused before dispatch; a page framing it loads, the frame stopped in the
    browser (the log has ``line``)."""
    tab = host.call("tabs.list", token=token)["result"]["tabs"][0]["tabId"]
    refused(host.call("tab.navigate", {"tabId": tab, "url": f"{blocked.url}/page"}, token), "NOT_AUTHORIZED")
    framed = host.call("tab.navigate", {"tabId": tab, "url": host.site(f"popup.html?frame={blocked.url}/framed")}, token)
    assert framed["success"], framed
    assert host.process.wait_for_line(line, 10), host.process.lines[-20:]


def test_per_client_contexts_and_the_site_policy_through_the_proxy_in_a_browser_on_this_machine(
    grid: Grid, tmp_path: Path
) -> None:
    """Two clients' contexts side by side in one remote browser reached at a loopback endpoint (so it runs on
    this machine and reaches the policy proxy): a navigation to a blocked origin is refused before anything
    runs, and a subframe to it is refused by the proxy every context of the remote browser goes through (the
    blocked server never sees the request)."""
    blocked = RecordingSite("127.0.0.2")
    process = policy_host(grid, tmp_path, grid.endpoint)
    try:
        host = Host(process, "", "python")
        line = process.wait_for_line("site policy", 5) or ""
        assert "every request of this host's browser contexts goes through its proxy" in line, line
        one, _two = two_clients_isolated(host)
        blocked_twice(host, one, blocked, f"site policy: blocked GET to {blocked.url}:")
        assert blocked.hits == []
        no_secret_in("\n".join(process.lines), "the per-client host's log")
    finally:
        process.stop()
        blocked.stop()


def test_the_site_policy_by_routing_in_a_browser_on_another_machine(grid: Grid, tmp_path: Path) -> None:
    """The same Playwright server reached at this machine's own non-loopback address: to the host that is
    another machine, which cannot reach a proxy on its loopback, so no proxy is started and each context's
    request routing applies the policy inside the remote browser: a blocked navigation refused before
    anything runs, a blocked subframe stopped in the browser, a redirect from an allowed server to the
    blocked one stopped at its hop and answered NOT_AUTHORIZED naming the origin — the blocked server never
    hit."""
    address = machine_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to reach the Playwright server at")
    endpoint = RecordingEndpoint(grid.server.port, host=address)
    blocked, allowed = RecordingSite("127.0.0.2"), RecordingSite("127.0.0.3")
    process = policy_host(grid, tmp_path, endpoint)
    try:
        host = Host(process, "", "python")
        line = process.wait_for_line("site policy", 5) or ""
        assert "cannot reach this host's proxy: each browser context's request routing applies it" in line, line
        assert "proxy at" not in line, line
        one, two = two_clients_isolated(host)
        blocked_twice(host, one, blocked, f"site policy: blocked document (subframe) to {blocked.url}")
        other = host.call("tabs.list", token=two)["result"]["tabs"][0]["tabId"]
        hop = host.call("tab.navigate", {"tabId": other, "url": f"{allowed.url}/redirect?to={blocked.url}/hop"}, two)
        assert hop["success"] is False and hop["error"]["code"] == "NOT_AUTHORIZED", hop
        assert blocked.url in hop["error"]["message"] and hop["mayHaveCompleted"] is True, hop
        assert allowed.hits and blocked.hits == []
        no_secret_in("\n".join(process.lines), "the routed host's log")
    finally:
        process.stop()
        blocked.stop()
        allowed.stop()
        endpoint.close()


def test_no_secret_in_the_log_the_audit_or_the_version(grid: Grid) -> None:
    host = grid.host
    host.call("tabs.list")
    no_secret_in("\n".join(host.process.lines), "the host log")
    no_secret_in(grid.audit.read_text(encoding="utf-8"), "the audit log")
    version = subprocess.run(
        [sys.executable, "-m", "kelpie_gateway.host.cli", "serve", *grid.flags, "--version"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "engine"), ENV_VAR: f"Bearer {ENV_SECRET}"},
    )
    assert version.returncode == 0 and "kelpie-gateway" in version.stdout, version
    no_secret_in(version.stdout + version.stderr, "--version")


def test_endpoint_credentials_of_an_attached_browser_never_reach_the_log_or_a_client(tmp_path: Path) -> None:
    """Guards: a token in the --cdp-endpoint URL was printed in the host log and sent back to clients in the
    BROWSER_UNAVAILABLE message."""
    password = f"pw-{uuid.uuid4().hex}"
    dead = subprocess.run(
        [sys.executable, "-m", "kelpie_gateway.host.cli", "serve", "--port", "0", "--pairings", "memory",
         "--cdp-endpoint", f"http://kelpie:{password}@127.0.0.1:{free_port()}/"],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT / "engine")},
    )
    assert dead.returncode == 1 and "could not start" in dead.stderr, dead
    assert password not in dead.stdout + dead.stderr, dead.stderr
    assert "the attached browser at http://***@127.0.0.1:" in dead.stderr, dead.stderr

    port = free_port()
    chromium = start_chromium(port, tmp_path / "profile")
    endpoint = f"http://kelpie:{password}@127.0.0.1:{port}"
    process = start_host(["--approve-pairing", "auto", "--pairings", "memory", "--cdp-endpoint", endpoint,
                          "--browser-backoff-max", "1"], "python")
    try:
        host = Host(process, process.pair("attached"), "python")
        assert host.call("tabs.list")["success"]
        kill([chromium.pid])
        chromium.wait(10)
        assert process.wait_for_line("attached browser at http://***@127.0.0.1:", 10)
        env = host.call("tabs.list")
        refused(env, "BROWSER_UNAVAILABLE")
        assert password not in json.dumps(env) and "http://***@127.0.0.1:" in env["error"]["message"], env
        assert process.wait_for_line("failed (attempt 1)", 10)
        assert password not in "\n".join(process.lines)
    finally:
        process.stop()
        terminate(chromium)
