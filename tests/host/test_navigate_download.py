"""A navigation that ends in a download (issue 27; docs/host.md "Downloads"): a page that starts a download
while it loads, and a URL that is itself a download, answer ``tab.navigate`` as soon as the download starts
instead of waiting out the deadline, with the downloads part's object in ``download`` (issue 32: ``{id,
name, state, bytes, sha256, mimeType, resource, url, tabId}``, the file kept in the downloads folder) — the
same object a click on a download link answers. Provoked for real in headless Chromium against a small
loopback site whose ``/file.bin`` is an attachment."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from faults_testlib import fault_host, open_page
from host_testlib import Host, ext_ok

pytestmark = pytest.mark.timeout(180)
FIXTURES = (fault_host,)  # this module's "host"

FILE = b"\x00kelpie download\n" * 64
PAGES = {
    "/starts.html": b"<!doctype html><title>Starts a download</title><script>location.href = '/file.bin';</script>"
    b"<h1>This page starts a download while it loads</h1>",
    "/link.html": b"<!doctype html><title>Download link</title><a href='/file.bin'>Get the file</a>",
}


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/file.bin":
            body = FILE
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", 'attachment; filename="file.bin"')
        elif path in PAGES:
            body = PAGES[path]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
        else:
            body = b"not here"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/file.bin", "/starts.html"], ids=["a-download-url", "a-page-that-starts-one"])
def test_a_navigation_that_ends_in_a_download_answers_at_once(host: Host, site: str, path: str) -> None:
    tab, _ = open_page(host, "index.html")
    before = host.call("tab.snapshot", {"tabId": tab})["result"]["title"]
    started = time.monotonic()
    env = host.call("tab.navigate", {"tabId": tab, "url": site + path, "timeoutMs": 8000})
    took = time.monotonic() - started
    assert env["success"], env
    assert env["result"]["tabId"] == tab, env
    download = env["result"]["download"]
    assert_the_file(download, tab)
    assert took < 6, f"navigate waited {took:.1f} s for a download"  # not its 8 s deadline
    # The tab is still usable and shows what it showed (a download URL) or the page that started it.
    snap = host.call("tab.snapshot", {"tabId": tab})
    assert snap["success"], snap
    expect = before if path == "/file.bin" else "Starts a download"
    assert snap["result"]["title"] == expect, (snap["result"]["title"], expect)
    host.call("tabs.close", {"tabId": tab})


def assert_the_file(download: dict[str, Any], tab: str) -> None:
    """``download`` is the downloads part's object of ``/file.bin``, complete (it is small: it finishes
    well within the call's deadline), begun in ``tab``."""
    assert download["state"] == "complete", download
    assert re.fullmatch(r"file( \([0-9]+\))?\.bin", download["name"]), download  # kept under its own name
    assert download["bytes"] == len(FILE), download
    assert download["sha256"] == hashlib.sha256(FILE).hexdigest(), download
    assert download["resource"] == f"kelpie://downloads/{download['id']}" and download["tabId"] == tab, download
    assert "started" not in download, download  # s32's shape: the state says whether it is done


def test_navigate_and_click_report_a_download_in_one_shape(host: Host, site: str) -> None:
    """The same file downloaded by a navigation and by a click on its link: the same members, each
    download its own id, both listed by ``downloads_list``."""
    tab, _ = open_page(host, "index.html")
    went = host.call("tab.navigate", {"tabId": tab, "url": site + "/file.bin"})
    assert went["success"], went
    assert host.call("tab.navigate", {"tabId": tab, "url": site + "/link.html"})["success"]
    snap = host.call("tab.snapshot", {"tabId": tab})["result"]
    link = next(e["ref"] for e in snap["elements"] if e["label"] == "Get the file")
    clicked = host.call("tab.click", {"tabId": tab, "ref": link})
    assert clicked["success"], clicked
    by_navigate, by_click = went["result"]["download"], clicked["result"]["download"]
    assert_the_file(by_navigate, tab)
    assert_the_file(by_click, tab)
    assert set(by_navigate) == set(by_click) and by_navigate["id"] != by_click["id"], (by_navigate, by_click)
    ids = {d["id"] for d in ext_ok(host, "downloads_list")["downloads"]}
    assert {by_navigate["id"], by_click["id"]} <= ids, ids
    host.call("tabs.close", {"tabId": tab})


def test_a_new_tab_on_a_download_url_opens_at_once(host: Host, site: str) -> None:
    """``tabs.open`` with a URL that is a download: the tab opens (blank) instead of a RENDERER_FAILED."""
    started = time.monotonic()
    env = host.call("tabs.open", {"url": site + "/file.bin"})
    assert env["success"], env
    assert time.monotonic() - started < 6
    assert_the_file(env["result"]["download"], env["result"]["tabId"])
    snap = host.call("tab.snapshot", {"tabId": env["result"]["tabId"]})
    assert snap["success"] and snap["result"]["url"] == "about:blank", snap
    host.call("tabs.close", {"tabId": env["result"]["tabId"]})


def test_an_ordinary_navigation_has_no_download_field(host: Host, site: str) -> None:
    tab, _ = open_page(host, "index.html")
    env = host.call("tab.navigate", {"tabId": tab, "url": site + "/link.html"})
    assert env["success"] and "download" not in env["result"], env
    host.call("tabs.close", {"tabId": tab})
