"""The operator's read-only lane options and an observer host (docs/host.md "The read-only lane",
"Observers"), on one real host started ``--observer --network-urls full --network-bodies``:

* full URLs show query values and fragments, and still never a credential-named parameter's value;
* bodies come only when a call asks, only for text types, at most 64 KiB each, at most 20 per answer;
* an observer host is a read-only session: every lane extension is there, nothing that acts; its
  ``tab.snapshot`` is a one-shot read whose elements carry no ref, and a ref made up from it is refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from host_testlib import Host, call, ok, start_host
from lane_site import BODY_MARK, LaneSite

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def site() -> Iterator[LaneSite]:
    served = LaneSite()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def host(site: LaneSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """An observer host cannot navigate, so its first tab is sent to the lane page by the page it opens:
    a ``--site`` whose index replaces itself with the lane site's page."""
    root = tmp_path_factory.mktemp("observer-site")
    target = site.page("lane.html")
    (root / "index.html").write_text(f'<!doctype html><script>location.replace("{target}")</script>', "utf-8")
    process = start_host(
        ["--approve-pairing", "auto", "--site", str(root), "--observer", "--network-urls", "full",
         "--network-bodies"],
        "python",
    )
    try:
        yield Host(process, process.pair("lane-options"), "python")
    finally:
        process.stop()


def ext(host: Host, name: str, **arguments: Any) -> dict[str, Any]:
    return call(host, "extension.call", {"name": name, "arguments": arguments})


def first_tab(host: Host) -> str:
    """The host's first tab, once the lane page in it has done everything it does."""
    deadline = time.monotonic() + 30
    while True:
        tab = str(ok(host, "tabs.list", {})["tabs"][0]["tabId"])
        text = ok(host, "tab.snapshot", {"tabId": tab})["text"]
        if all(word in text for word in ("fetch", "idb", "xhr", "image", "ws")):
            return tab
        assert time.monotonic() < deadline, text
        time.sleep(0.2)


def test_an_observer_host_acts_on_nothing(host: Host) -> None:
    caps = ok(host, "capabilities", {})
    assert caps["observer"] is True and caps["allowActions"] is False
    assert not {"tab.click", "tab.type", "tab.navigate", "tabs.open"} & set(caps["methods"])
    lane = {"console_messages", "page_errors", "network_requests", "cookies", "storage", "links", "element",
            "accessibility"}
    assert lane <= set(caps["extensions"]) and not {"fill", "press_key", "scroll", "go_back"} & set(caps["extensions"])
    tab = first_tab(host)
    refused = call(host, "tab.navigate", {"tabId": tab, "url": "http://127.0.0.1:1/"})
    assert refused["error"]["code"] == "ACTIONS_DISABLED" and refused["mayHaveCompleted"] is False
    assert ext(host, "fill", tabId=tab, ref="s1e1", text="x")["error"]["code"] == "EXTENSION_NOT_ADMITTED"


def test_an_observer_snapshot_has_no_refs_and_a_made_up_ref_is_refused(host: Host) -> None:
    tab = first_tab(host)
    snap = ok(host, "tab.snapshot", {"tabId": tab})
    assert snap["observer"] is True and "snapshot" not in snap and "next" not in snap
    assert snap["elements"] and all("ref" not in e for e in snap["elements"])
    assert isinstance(snap["generation"], int)
    for i in range(1, len(snap["elements"]) + 1):
        made_up = ext(host, "element", tabId=tab, ref=f"s1e{i}")
        assert made_up["error"]["code"] == "UNKNOWN_REF" and made_up["mayHaveCompleted"] is False
    paged = call(host, "tab.snapshot", {"tabId": tab, "cursor": "s1p1"})
    assert paged["error"]["code"] == "INVALID_PARAMS" and paged["mayHaveCompleted"] is False


def test_full_urls_show_the_query_but_never_a_credential(host: Host) -> None:
    tab = first_tab(host)
    requests = ext(host, "network_requests", tabId=tab)["result"]["requests"]
    urls = [r["url"] for r in requests]
    assert any(u.endswith("/api/data?token=REDACTED&page=2") for u in urls), urls
    assert any(u.endswith("/lane.html") for u in urls) and any(u.endswith("/ws?token=REDACTED") for u in urls)
    assert any(u.endswith("/api/pixel.png?sig=REDACTED") for u in urls), urls
    warn = next(m for m in ext(host, "console_messages", tabId=tab)["result"]["messages"] if m["level"] == "warning")
    assert warn["text"] == "warn level line, see http://127.0.0.1/help?token=REDACTED#s3cr3tCONSOLEFRAG"


def test_bodies_only_when_asked_text_only_and_bounded(host: Host) -> None:
    tab = first_tab(host)
    plain = ext(host, "network_requests", tabId=tab)["result"]["requests"]
    assert all("body" not in r for r in plain) and BODY_MARK not in str(plain)
    answer = ext(host, "network_requests", tabId=tab, bodies=True, limit=100)["result"]
    requests = answer["requests"]
    assert len(requests) <= 20
    by_path = {r["url"].split("/", 3)[-1].split("?")[0]: r for r in requests}
    assert BODY_MARK in by_path["api/data"]["body"] and "bodyTruncated" not in by_path["api/data"]
    big = by_path["api/big.txt"]
    assert len(big["body"].encode()) == 64 * 1024 and big["bodyTruncated"] is True
    assert by_path["api/pixel.png"]["bodyOmitted"] == "not a text type" and "body" not in by_path["api/pixel.png"]
    assert "<h1>Read-only lane</h1>" in by_path["lane.html"]["body"]
    assert by_path["api/echo"]["body"] == "got 10 bytes"  # the response's body, never what was posted
