"""The reference host's site policy (``serve --allowed-origins/--blocked-origins``) in real headless Chromium,
through the Python API and the C library. Other loopback origins play the foreign sites: the host's own site
is ``127.0.0.1:SITE``; ``localhost`` is allowed, ``127.0.0.2`` blocked, ``127.0.0.3`` simply not allowed.
Every "foreign" server records its hits, so "stopped" means the server never saw the request.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from host_testlib import Host, RecordingSite, call, ok, start_host
from kelpie_gateway.host.policy import PolicyError, SitePolicy, parse_pattern

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def sites() -> Iterator[dict[str, RecordingSite]]:
    made = {"allowed": RecordingSite("127.0.0.1"), "blocked": RecordingSite("127.0.0.2"), "other": RecordingSite("127.0.0.3")}
    yield made
    for site in made.values():
        site.stop()


@pytest.fixture(scope="module", params=["python", "abi"])
def policy_host(request: pytest.FixtureRequest, sites: dict[str, RecordingSite]) -> Iterator[Host]:
    args = [
        "--approve-pairing", "auto",
        "--allowed-origins", "http://127.0.0.1:*, http://localhost:*",
        "--blocked-origins", "http://127.0.0.2:*",
    ]
    process = start_host(args, request.param)
    try:
        yield Host(process, process.pair("kelpie-tests"), request.param)
    finally:
        process.stop()


def log_lines(host: Host, needle: str, timeout_s: float = 10.0) -> list[str]:
    host.process.wait_for_line(needle, timeout_s)
    return [line for line in host.process.lines if needle in line]


def test_a_blocked_navigation_is_refused_before_dispatch_and_needs_no_reconcile(
    policy_host: Host, sites: dict[str, RecordingSite]
) -> None:
    host, blocked = policy_host, sites["blocked"]
    tab = ok(host, "tabs.open", {"url": host.site("index.html")})["tabId"]
    before = len(blocked.hits)
    refusal = call(host, "tab.navigate", {"tabId": tab, "url": blocked.url + "/secret"})
    assert refusal["success"] is False and refusal["mayHaveCompleted"] is False, refusal
    assert refusal["error"]["code"] == "NOT_AUTHORIZED" and refusal["error"]["retryable"] is False
    assert "127.0.0.2" in refusal["error"]["message"] and "/secret" not in refusal["error"]["message"]
    refused_open = call(host, "tabs.open", {"url": blocked.url + "/popup"})
    assert refused_open["error"]["code"] == "NOT_AUTHORIZED" and refused_open["mayHaveCompleted"] is False
    assert len(blocked.hits) == before
    # No reconcile mark: the next mutation on that tab goes through without a snapshot first.
    went = ok(host, "tab.navigate", {"tabId": tab, "url": host.site("second.html")})
    assert went["url"] == host.site("second.html")


def test_allow_list_admits_listed_origins_only(policy_host: Host, sites: dict[str, RecordingSite]) -> None:
    host = policy_host
    tab = ok(host, "tabs.open", {"url": host.site("index.html")})["tabId"]
    foreign = host.site("second.html").replace("127.0.0.1", "localhost")
    assert ok(host, "tab.navigate", {"tabId": tab, "url": foreign})["url"] == foreign
    other = sites["other"]
    refusal = call(host, "tab.navigate", {"tabId": tab, "url": other.url + "/x"})
    assert refusal["error"]["code"] == "NOT_AUTHORIZED" and refusal["mayHaveCompleted"] is False, refusal
    assert "not in the site policy's allowed origins" in refusal["error"]["message"]
    assert other.hits == []
    allowed = sites["allowed"]
    assert ok(host, "tab.navigate", {"tabId": tab, "url": allowed.url + "/fine"})["url"] == allowed.url + "/fine"
    assert "/fine" in allowed.hits


def test_a_redirect_to_a_blocked_origin_is_stopped_and_logged(policy_host: Host, sites: dict[str, RecordingSite]) -> None:
    host, allowed, blocked = policy_host, sites["allowed"], sites["blocked"]
    tab = ok(host, "tabs.open", {"url": host.site("index.html")})["tabId"]
    before = len(blocked.hits)
    start = f"{allowed.url}/redirect?to={blocked.url}/landed"
    outcome = call(host, "tab.navigate", {"tabId": tab, "url": start})
    assert outcome["success"] is False and outcome["error"]["code"] == "NOT_AUTHORIZED", outcome
    # The allowed first hop was requested and the tab now shows an error page: an unknown outcome.
    assert outcome["mayHaveCompleted"] is True and outcome["error"]["retryable"] is False
    assert blocked.url in outcome["error"]["message"]
    assert len(blocked.hits) == before and any(h.startswith("/redirect") for h in allowed.hits)
    lines = log_lines(host, "site policy: blocked document (main frame) redirect")
    assert any(blocked.url in line and "/landed" not in line for line in lines), host.process.lines[-20:]


def test_window_open_and_subframes_to_a_blocked_origin_are_stopped(
    policy_host: Host, sites: dict[str, RecordingSite]
) -> None:
    host, blocked = policy_host, sites["blocked"]
    before = len(blocked.hits)
    page = host.site(f"popup.html?to={blocked.url}/popup&frame={blocked.url}/framed")
    tab = ok(host, "tabs.open", {"url": page})["tabId"]
    assert log_lines(host, "site policy: blocked document (subframe)"), "\n".join(host.process.lines[-20:])
    snap = ok(host, "tab.snapshot", {"tabId": tab})
    assert "A foreign site" not in snap["text"]
    button = next(e["ref"] for e in snap["elements"] if e["tag"] == "button")
    ok(host, "tab.click", {"tabId": tab, "ref": button})
    lines = log_lines(host, "site policy: blocked document (main frame)")
    assert any(blocked.url in line for line in lines), host.process.lines[-20:]
    assert len(blocked.hits) == before
    tabs = ok(host, "tabs.list", {})["tabs"]
    assert all(not t["url"].startswith(blocked.url) or t["title"] != "Foreign" for t in tabs)


# ---------------------------------------------------------------- pattern parsing (no browser)
@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("https://example.com", "https://example.com/a", True),
        ("https://example.com", "https://example.com:8443/a", False),
        ("https://example.com", "http://example.com/a", False),
        ("http://localhost:*", "http://localhost:9/a", True),
        ("https://*.example.com", "https://a.b.example.com/", True),
        ("https://*.example.com", "https://example.com/", False),
        ("example.com", "http://example.com:81/", True),
        ("*", "https://anything.test/", True),
        ("http://[::1]:8080", "http://[::1]:8080/x", True),
    ],
)
def test_origin_patterns(pattern: str, url: str, matches: bool) -> None:
    policy = SitePolicy.from_flags(None, pattern)
    assert (policy.refusal(url) is not None) is matches


@pytest.mark.parametrize("bad", ["ftp://example.com", "https://example.com/path", "http://host:99999", "exa mple.com"])
def test_bad_patterns_are_refused(bad: str) -> None:
    with pytest.raises(PolicyError):
        parse_pattern(bad)


def test_an_explicitly_empty_allow_list_allows_only_the_site() -> None:
    policy = SitePolicy.from_flags("", None)
    policy.allow_origin_of("http://127.0.0.1:5000/index.html")
    assert policy.refusal("http://127.0.0.1:5000/second.html") is None
    assert policy.refusal("http://127.0.0.1:5001/") is not None
    assert SitePolicy.from_flags(None, None).refusal("https://anything.test/") is None


def test_blocked_wins_and_schemes_without_origin_pass() -> None:
    policy = SitePolicy.from_flags("*.test", "bad.test")
    assert policy.refusal("https://good.test/") is None
    assert policy.refusal("https://bad.test/") is not None
    assert policy.refusal("https://elsewhere.org/") is not None
    assert policy.refusal("about:blank") is None and policy.refusal("data:text/html,x") is None
    assert policy.refusal("file:///etc/passwd") is not None
