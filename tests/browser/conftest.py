"""Browser conformance fixtures: local static servers and one headless Chromium per session.

Every document root is served by its own stdlib ThreadingHTTPServer on 127.0.0.1 (Chromium resolves
`localhost` to the same loopback address, so `localhost` is a second, cross-origin name for each root):
- `fixtures`  -> fixtures/pages (this project's conformance pages, fixtures/pages/reader/…)
- `playwright`, `realworld`, `accname` -> the groups of the shared third-party corpus (MANIFEST.md says
  each group is its own document root). The corpus lives outside the repo (../shared/corpus, or
  $KELPIE_CORPUS); its tests are skipped with that reason when it is absent.
Every request to anything but 127.0.0.1/localhost is aborted (HELPERS.md: no internet from tests).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kelpie_gateway.host.browser import CHROMIUM_FLAGS  # noqa: E402

CORPUS = Path(os.environ.get("KELPIE_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()
CHROMIUM = os.environ.get("KELPIE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = list(CHROMIUM_FLAGS)  # the reference host's launch flags
LOOPBACK = {"127.0.0.1", "localhost"}


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {  # noqa: RUF012 - the stdlib's own class attribute
        **SimpleHTTPRequestHandler.extensions_map,
        ".html": "text/html; charset=utf-8",
        ".htm": "text/html; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
    }

    def log_message(self, format: str, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a page closed mid-download is normal
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class Site:
    """One document root served on 127.0.0.1:port; `url(path, host=...)` builds page addresses."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        handler = functools.partial(_Handler, directory=str(directory))
        self.server = _Server(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def sites() -> Iterator[dict[str, Site]]:
    roots = {"fixtures": ROOT / "fixtures" / "pages"}
    for group in ("playwright", "realworld", "accname"):
        if (CORPUS / group).is_dir():
            roots[group] = CORPUS / group
    served = {name: Site(path) for name, path in roots.items()}
    yield served
    for site in served.values():
        site.close()


@pytest.fixture(scope="session")
def fixtures_site(sites: dict[str, Site]) -> Site:
    return sites["fixtures"]


@pytest.fixture(scope="session")
def corpus_sites(sites: dict[str, Site]) -> dict[str, Site]:
    if not all(group in sites for group in ("playwright", "realworld", "accname")):
        message = f"third-party corpus not found at {CORPUS} (set KELPIE_CORPUS)"
        if os.environ.get("CI"):  # CI always has shared/ beside the clone: a missing corpus is a failure
            pytest.fail(message)
        pytest.skip(message)
    return sites


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_instance: Playwright) -> Iterator[Browser]:
    b = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield b
    b.close()


def _only_loopback(route: Route) -> None:
    host = urlsplit(route.request.url).hostname or ""
    if host in LOOPBACK:
        route.continue_()
    else:
        route.abort()


@pytest.fixture(scope="session")
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context()
    ctx.route("**/*", _only_loopback)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    p = context.new_page()
    yield p
    for other in context.pages:  # popups opened by the page under test
        other.close()
