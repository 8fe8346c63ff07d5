"""The ``--site`` static server answers a missing file with a real 404 page (ARCHITECTURE.md v1.1, issue 11),
checked in real headless Chromium through the host: navigating to a missing page shows that page instead of
failing with RENDERER_FAILED ("Download is starting", what an empty application/octet-stream 404 caused)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from host_testlib import Host, start_host

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    process = start_host(["--approve-pairing", "auto"], "python")  # the site server is the same in both modes
    try:
        yield Host(process, process.pair("site-404"), "python")
    finally:
        process.stop()


def test_a_missing_file_is_a_text_html_404(host: Host) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(host.site("no-such-page.html"), timeout=30)
    assert caught.value.code == 404
    assert caught.value.headers.get_content_type() == "text/html"
    assert caught.value.headers["Cache-Control"] == "no-store"
    page = caught.value.read().decode()
    assert "<title>404 Not Found</title>" in page and "/no-such-page.html" in page


def test_navigating_to_a_missing_page_shows_the_404_page(host: Host) -> None:
    tab = next(t for t in host.call("tabs.list")["result"]["tabs"] if t["active"])["tabId"]
    missing = host.site("missing/<script>.html")
    navigated = host.call("tab.navigate", {"tabId": tab, "url": missing})
    assert navigated["success"] is True, navigated
    snapshot = host.call("tab.snapshot", {"tabId": tab})
    assert snapshot["success"] is True, snapshot
    result = snapshot["result"]
    assert result["title"] == "404 Not Found"
    # the path is shown as text (escaped), never interpreted as markup
    assert "404 Not Found" in result["text"] and "/missing/<script>.html" in result["text"]
    # the tab is still usable: a real page afterwards loads normally
    back = host.call("tab.navigate", {"tabId": tab, "url": host.site("index.html")})
    assert back["success"] is True and host.call("tab.snapshot", {"tabId": tab})["result"]["title"] != "404 Not Found"
