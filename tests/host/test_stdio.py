"""``kelpie-gateway mcp``: MCP over stdio, launched the way MCP clients launch servers (issue 14).

Real headless Chromium on the built-in fixture site; the clients are the official Python SDK (its stdio
client spawns the command), the official TypeScript SDK (its StdioClientTransport) and raw pipes for the
rules a user notices: stdout carries only JSON-RPC, 2025-03-26 is accepted, over-long lines are refused,
the process exits when stdin closes, ``--config`` makes a read-only session.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from stdio_testlib import KELPIE, ROOT, StdioHost, run_async

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])
def test_python_sdk_stdio_journey(mode: str) -> None:
    """The SDK launches ``kelpie-gateway mcp`` and drives a click with a visible effect and a screenshot, in
    each era a client can pick over stdio (CONTRACT.md §7 v1.1): the handshake (``legacy``), the SDK's
    default ``auto`` (must settle on the stateless revision) and the stateless revision pinned."""

    async def journey() -> dict[str, object]:
        server = StdioServerParameters(command=str(KELPIE), args=["mcp"])
        async with Client(server, mode=mode) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]

            async def control(method: str, params: dict[str, object]) -> dict[str, object]:
                for _ in range(6):
                    result = await client.call_tool(
                        "kelpie_browser_control", {"method": method, "params": params}
                    )
                    envelope = result.structured_content
                    assert isinstance(envelope, dict), result
                    error = envelope.get("error") or {}
                    if envelope["success"] or not error.get("retryable") or envelope.get("mayHaveCompleted"):
                        break
                    await asyncio.sleep(0.2)
                assert envelope["success"], envelope
                return dict(envelope["result"])

            tabs = (await control("tabs.list", {}))["tabs"]
            tab = next(t for t in tabs if t["active"])  # type: ignore[union-attr]
            snapshot = await control("tab.snapshot", {"tabId": tab["tabId"]})
            button = next(
                e for e in snapshot["elements"] if e["tag"] == "button" and "Increment" in e["label"]
            )  # type: ignore[union-attr]
            await control("tab.click", {"tabId": tab["tabId"], "ref": button["ref"]})
            after = await control("tab.snapshot", {"tabId": tab["tabId"]})
            shot = await client.call_tool(
                "kelpie_browser_control", {"method": "tab.screenshot", "params": {"tabId": tab["tabId"]}}
            )
            return {
                "protocol": client.protocol_version,
                "tools": tools,
                "title": tab["title"],
                "text": after["text"],
                "images": [
                    (b.type, getattr(b, "mime_type", None)) for b in shot.content if b.type == "image"
                ],
            }

    seen = run_async(journey())
    if mode == "legacy":
        assert seen["protocol"] in ("2025-06-18", "2025-11-25")
    else:
        assert seen["protocol"] == "2026-07-28", (mode, seen["protocol"])
    assert "kelpie_browser_control" in seen["tools"]  # type: ignore[operator]
    assert seen["title"] == "Kelpie fixture site"
    assert "Clicked 1 times" in str(seen["text"])
    assert seen["images"] == [("image", "image/png")]


def test_typescript_sdk_stdio_journey() -> None:
    node = shutil.which("node")
    assert node, "node is required (tools/build.d/40-node.sh installs it)"
    assert (ROOT / "tools/node/node_modules/@modelcontextprotocol/sdk").is_dir(), (
        "run tools/dev setup (npm ci)"
    )
    done = subprocess.run(
        [node, str(ROOT / "tools/node/mcp-stdio-journey.mjs"), str(KELPIE), "mcp"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT / "tools/node",
    )
    steps = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [s["step"] for s in steps] == [
        "initialize",
        "tools/list",
        "tabs.list",
        "snapshot+click",
        "screenshot",
        "close",
    ], (
        done.stdout,
        done.stderr[-2000:],
    )
    assert all(s["ok"] for s in steps), steps
    assert done.returncode == 0, done.stderr[-2000:]


def test_raw_client_2025_03_26_line_rules_and_exit_on_stdin_close() -> None:
    with StdioHost() as host:
        init = host.initialize("2025-03-26")
        assert init["result"]["protocolVersion"] == "2025-03-26"
        assert init["result"]["serverInfo"]["name"] == "kelpie-browser-gateway"

        host.send_raw(b"\n   \n")  # blank lines are not messages: no answer
        host.send([{"jsonrpc": "2.0", "id": 5, "method": "ping"}])  # batches are refused
        batch = host.recv()
        assert batch["error"]["code"] == -32600 and batch["id"] is None

        # A line over the 4 MiB cap is refused without being parsed, and the next line still works.
        host.send_raw(
            b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"' + b"x" * (4 * 1024 * 1024) + b'"}}\n'
        )
        too_large = host.recv()
        assert too_large["error"]["code"] == -32600 and too_large["id"] is None
        assert host.request(7, "ping")["result"] == {}

        envelope = host.control(8, "tabs.list", {})
        assert envelope["success"] and envelope["result"]["tabs"][0]["title"] == "Kelpie fixture site"

        # Issue 27: a line repeating a member name is -32600 (id null); it used to run its last name.
        tab = envelope["result"]["tabs"][0]["tabId"]
        host.send_raw(
            b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"kelpie_browser_control",'
            b'"arguments":{"method":"tabs.list","method":"tabs.close","params":{"tabId":"%s"}}}}\n' % tab.encode()
        )
        repeated = host.recv()
        assert repeated["error"]["code"] == -32600 and repeated["id"] is None, repeated
        assert tab in {t["tabId"] for t in host.control(10, "tabs.list", {})["result"]["tabs"]}

        host.close_stdin()
        assert host.wait(60) == 0
        assert host.garbage == []  # stdout carried JSON-RPC and nothing else
        assert host.messages.empty()  # the notification and the blank lines got no answer
        assert any(line.startswith("tx tabs.list") for line in host.log)  # the log went to stderr
        assert any("stdin closed" in line for line in host.log)


def test_config_file_makes_a_read_only_session(tmp_path: Path) -> None:
    config = tmp_path / "read-only.json"
    config.write_text(json.dumps({"allowActions": False}))
    with StdioHost(["--config", str(config)]) as host:
        host.initialize()
        tools = host.request(2, "tools/list")["result"]["tools"]
        methods = next(t for t in tools if t["name"] == "kelpie_browser_control")["inputSchema"][
            "properties"
        ]["method"]["enum"]
        assert "tab.snapshot" in methods and "tab.click" not in methods and "tab.navigate" not in methods
        tab = host.control(3, "tabs.list", {})["result"]["tabs"][0]["tabId"]
        refused = host.control(4, "tab.navigate", {"tabId": tab, "url": "about:blank"})
        assert refused["success"] is False and refused["mayHaveCompleted"] is False
        assert refused["error"]["code"] in ("ACTIONS_DISABLED", "UNSUPPORTED_METHOD"), refused
        host.close_stdin()
        assert host.wait(60) == 0


def test_a_cdp_endpoint_the_host_cannot_speak_is_refused_at_start() -> None:
    """A non-loopback ``--cdp-endpoint`` given explicitly is allowed since issue 31 (docs/host.md "Remote
    browsers"); one whose scheme is not http(s)/ws(s) is still a usage error, its credentials not echoed."""
    done = subprocess.run(
        [str(KELPIE), "mcp", "--cdp-endpoint", "ftp://kelpie:hunter2-secret@192.0.2.7:9222"],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == b""
    stderr = done.stderr.decode()
    assert "http://, https://, ws://, wss://" in stderr and "hunter2-secret" not in stderr, stderr


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"realm": "page"}, "/realm is decided by the host"),
        ({"nativeMethods": ["teleport"]}, "does not implement: teleport"),
        ({"allowActions": "no"}, "/allowActions"),
    ],
)
def test_a_config_file_the_host_cannot_honour_is_refused_at_start(
    tmp_path: Path, config: dict[str, object], says: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [str(KELPIE), "mcp", "--config", str(path), "--browser", "none"],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert says in done.stderr.decode(), done.stderr


def test_mcp_is_answered_while_the_browser_is_still_starting(tmp_path: Path) -> None:
    """An MCP client that launches ``kelpie-gateway mcp`` gets its handshake (or ``server/discover``)
    answered at once, not after Chromium is up: the SDK's discover probe gives up after 10 s and a slow
    browser start would otherwise push it back to the old handshake. Browser calls wait for the browser."""
    launched = tmp_path / "launched"
    slow = tmp_path / "slow-chromium"
    slow.write_text(f'#!/bin/sh\nsleep 8\ntouch "{launched}"\nexec /usr/bin/chromium "$@"\n')
    slow.chmod(0o755)
    with StdioHost(["--browser-executable", str(slow)]) as host:
        init = host.initialize()
        assert init["result"]["serverInfo"]["name"] == "kelpie-browser-gateway"
        assert not launched.exists()  # answered before the browser was even executed
        tools = host.request(2, "tools/list")["result"]["tools"]
        assert any(t["name"] == "kelpie_browser_control" for t in tools)
        assert not launched.exists()
        envelope = host.control(3, "tabs.list", {})  # waits for the browser instead of failing
        assert launched.exists()
        assert envelope["success"] and envelope["result"]["tabs"][0]["title"] == "Kelpie fixture site"
        host.close_stdin()
        assert host.wait(60) == 0
    assert any("browser starting" in line for line in host.log)
    assert any(line.startswith("browser chromium") for line in host.log)


def test_a_browser_that_cannot_start_ends_the_stdio_session_with_a_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken-chromium"
    broken.write_text("#!/bin/sh\necho 'this is not a browser' >&2\nexit 3\n")
    broken.chmod(0o755)
    with StdioHost(["--browser-executable", str(broken)]) as host:
        init = host.initialize()
        assert init["result"]["serverInfo"]["name"] == "kelpie-browser-gateway"
        assert host.wait(120) == 1  # the session ends by itself: stdin is still open
        assert host.garbage == []
    assert any("could not start the browser" in line for line in host.log), host.log


BUSY_AFTER_LOAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>busy</title></head>
<body><p>The page keeps its renderer busy for 2.5 s right after it loads, then retitles itself.</p>
<script>
addEventListener("load", () => setTimeout(() => {
  const end = Date.now() + 2500;
  while (Date.now() < end) { /* the renderer is busy: a read times out, its reply comes late */ }
  document.title = "done";
}, 0));
</script></body></html>
"""


def test_a_read_that_waited_for_the_first_start_keeps_its_retirement_grace(tmp_path: Path) -> None:
    """Stop 22's note, provoked for real: the first call of ``kelpie-gateway mcp`` waits for a slow browser
    start (4 s), then times out (1.5 s) on a page that is busy right after loading; its reply comes late
    but within the 2 s retirement grace. It used to be overdue for the engine at once (its deadline ran
    during the start), so the host stopped the page's script (Runtime.terminateExecution): the page's own
    work was cut off and never retitled it. Now the late reply retires the read and the page finishes."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(BUSY_AFTER_LOAD)
    slow = tmp_path / "slow-chromium"
    slow.write_text('#!/bin/sh\nsleep 4\nexec /usr/bin/chromium "$@"\n')
    slow.chmod(0o755)
    with StdioHost(["--browser-executable", str(slow), "--site", str(site)]) as host:
        host.initialize()
        arguments = {"method": "tab.snapshot", "params": {"tabId": "t1", "timeoutMs": 1500}}
        answer = host.request(2, "tools/call", {"name": "kelpie_browser_control", "arguments": arguments})
        envelope = answer["result"]["structuredContent"]
        assert envelope["error"]["code"] == "TIMEOUT" and envelope["mayHaveCompleted"] is False, envelope
        deadline = time.monotonic() + 20
        while True:  # BUSY until the late reply retires the read
            snap = host.control(3, "tab.snapshot", {"tabId": "t1"})
            if snap["success"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert snap["success"], snap
        assert snap["result"]["title"] == "done", "the page's own script was stopped"
        host.close_stdin()
        assert host.wait(60) == 0
    assert not any("overdue" in line for line in host.log), host.log
    assert any("late browser-control-evaluate reply" in line and "retired" in line for line in host.log), host.log
