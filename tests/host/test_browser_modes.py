"""How the host gets its browser (issue 14): ``--cdp-endpoint`` attaches to a Chromium the test started
(and never closes it), ``--user-data-dir`` keeps a profile across runs (the default profile is temporary),
``--headed`` shows a real window (under Xvfb from Debian) and still takes screenshots.

Every test drives ``kelpie-gateway mcp`` over stdio with real Chromium.
"""

from __future__ import annotations

import base64
import http.server
import os
import shutil
import struct
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kelpie_gateway.host.browser import CHROMIUM_FLAGS
from kelpie_gateway.host.launch import terminate
from stdio_testlib import KELPIE, StdioHost

pytestmark = pytest.mark.timeout(240)

CHROMIUM = "/usr/bin/chromium"


def _text(host: StdioHost, rid: int, tab: str) -> str:
    snapshot = host.control(rid, "tab.snapshot", {"tabId": tab})
    assert snapshot["success"], snapshot
    return str(snapshot["result"]["text"])


def _active_tab(host: StdioHost, rid: int) -> dict[str, object]:
    tabs = host.control(rid, "tabs.list", {})["result"]["tabs"]
    return dict(next(t for t in tabs if t["active"]))


# ---------------------------------------------------------------------- --cdp-endpoint
@pytest.fixture
def running_chromium(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Chromium started by the test with --remote-debugging-port (port 0: it writes DevToolsActivePort)."""
    profile = tmp_path / "attached-profile"
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless=new",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            *CHROMIUM_FLAGS,
            "data:text/html,<title>Already open</title><p>opened before the host attached</p>",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while not (port_file.exists() and port_file.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, "chromium did not start"
        time.sleep(0.1)
    port = int(port_file.read_text().split()[0])
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        terminate(proc)


def test_cdp_endpoint_attaches_to_a_running_chromium_and_never_closes_it(
    running_chromium: tuple[str, subprocess.Popen[bytes]],
) -> None:
    endpoint, chromium = running_chromium
    with StdioHost(["--cdp-endpoint", endpoint]) as host:
        host.initialize()
        tabs = host.control(2, "tabs.list", {})["result"]["tabs"]
        titles = {t["title"] for t in tabs}
        assert {"Already open", "Kelpie fixture site"} <= titles, tabs  # its tab, and the host's site tab
        site = next(t for t in tabs if t["title"] == "Kelpie fixture site")
        assert site["active"]
        snapshot = host.control(3, "tab.snapshot", {"tabId": site["tabId"]})["result"]
        button = next(e for e in snapshot["elements"] if e["tag"] == "button" and "Increment" in e["label"])
        assert host.control(4, "tab.click", {"tabId": site["tabId"], "ref": button["ref"]})["success"]
        assert "Clicked 1 times" in _text(host, 5, str(site["tabId"]))
        assert any("attached over CDP" in line for line in host.log)
        host.close_stdin()
        assert host.wait(60) == 0
    # The host detached: the browser still runs, with its own tab (and the host's) still open.
    time.sleep(1)
    assert chromium.poll() is None
    with urllib.request.urlopen(f"{endpoint}/json/list", timeout=10) as response:
        pages = response.read().decode()
    assert "Already open" in pages and "Kelpie fixture site" in pages


# ---------------------------------------------------------------------- --user-data-dir
VISITS = b"""<!doctype html><title>Visits</title><p id="out"></p><script>
const n = Number(localStorage.getItem("visits") || 0) + 1;
localStorage.setItem("visits", String(n));
document.getElementById("out").textContent = "Visit number " + n;
</script>"""


@pytest.fixture
def visits_server() -> Iterator[str]:
    """A page on a fixed loopback origin for the whole test: it counts its visits in localStorage."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(VISITS)))
            self.end_headers()
            self.wfile.write(VISITS)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/visits.html"
    finally:
        server.shutdown()
        server.server_close()


def _visit(url: str, args: list[str]) -> str:
    with StdioHost(args) as host:
        host.initialize()
        tab = str(_active_tab(host, 2)["tabId"])
        assert host.control(3, "tab.navigate", {"tabId": tab, "url": url})["success"]
        text = _text(host, 4, tab)
        host.close_stdin()
        assert host.wait(60) == 0
    return text


def test_user_data_dir_keeps_the_profile_across_runs(tmp_path: Path, visits_server: str) -> None:
    profile = tmp_path / "profile"
    assert "Visit number 1" in _visit(visits_server, ["--user-data-dir", str(profile)])
    assert "Visit number 2" in _visit(visits_server, ["--user-data-dir", str(profile)])
    # Without it, every run starts from an isolated temporary profile.
    assert "Visit number 1" in _visit(visits_server, [])


# ---------------------------------------------------------------------- --headed
UA_SITE = (
    "<!doctype html><title>Agent</title><p id=ua></p>"
    "<script>document.getElementById('ua').textContent = 'UA ' + navigator.userAgent</script>"
)


def test_headed_under_xvfb_takes_a_screenshot(tmp_path: Path) -> None:
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, "xvfb-run is required (tools/dev setup installs the Debian package xvfb)"
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(UA_SITE)

    def run(prefix: list[str], extra: list[str]) -> tuple[str, dict[str, object], list[str]]:
        with StdioHost(["--site", str(site), *extra], prefix=prefix) as host:
            host.initialize()
            tab = str(_active_tab(host, 2)["tabId"])
            text = _text(host, 3, tab)
            call = {
                "name": "kelpie_browser_control",
                "arguments": {"method": "tab.screenshot", "params": {"tabId": tab}},
            }
            shot = host.request(4, "tools/call", call)["result"]
            host.close_stdin()
            assert host.wait(60) == 0
            return text, shot, host.log

    text, shot, log = run([xvfb_run, "-a", "-s", "-screen 0 1600x1200x24"], ["--headed"])
    assert "UA Mozilla/5.0" in text and "HeadlessChrome" not in text  # a real, headed browser
    assert any(line.startswith("browser chromium") and " headed " in line for line in log), log
    envelope = shot["structuredContent"]
    assert envelope["success"], envelope  # type: ignore[index]
    images = [block for block in shot["content"] if block["type"] == "image"]  # type: ignore[attr-defined]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    png = base64.b64decode(images[0]["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1280, 800)  # the host's viewport, in a real window
    assert envelope["result"]["imageBytes"] == len(png)  # type: ignore[index]

    # The same page headless says so: the check above can tell the two apart.
    headless_text, _, _ = run([], [])
    assert "HeadlessChrome" in headless_text


def test_headed_without_a_display_says_how_to_get_one() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(
        [str(KELPIE), "mcp", "--headed"], input=b"", capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 2 and done.stdout == b""
    assert "xvfb-run" in done.stderr.decode()
