"""The registry of captured nodes and the lifetime of handles (contract §9; docs/reader.md "The registry
and handles") in real headless Chromium, with the scripts driven exactly as a host drives them
(readerhelp.Reader): which events clear it, and who can reach a handle.
"""

from __future__ import annotations

from conftest import Site
from playwright.sync_api import Page
from readerhelp import Reader, by_label, open_page, refused


def test_hash_change_clears_the_registry(page: Page, fixtures_site: Site) -> None:
    """Guards handle lifetime across `hashchange`: a handle taken before it is NODE_REPLACED after it (its
    click runs nothing), and a new snapshot's handle works."""
    r = open_page(page, fixtures_site, "nav.html")
    snap = r.snapshot()
    counter = by_label(snap, "Counter")["handle"]
    assert r.click(counter) == {"clicked": True}
    assert r.click(by_label(snap, "Hash link")["handle"]) == {"clicked": True}
    page.wait_for_function("location.hash === '#section'")
    refused(r.click(counter), "NODE_REPLACED", False)
    assert page.evaluate("window.clicks") == 1
    fresh = r.snapshot()
    assert r.click(by_label(fresh, "Counter")["handle"]) == {"clicked": True}
    assert page.evaluate("window.clicks") == 2


def test_popstate_and_pagehide_clear_the_registry(page: Page, fixtures_site: Site) -> None:
    """Guards handle lifetime across history: `pushState` alone keeps the handles (the document is the same),
    `popstate` and `pagehide` (what a back/forward-cache entry sees before it is frozen) clear them."""
    r = open_page(page, fixtures_site, "nav.html")
    counter = by_label(r.snapshot(), "Counter")["handle"]
    page.evaluate("history.pushState({}, '', '?pushed')")
    assert r.click(counter) == {"clicked": True}  # pushState alone fires nothing: the page is the same
    page.evaluate("history.back()")
    page.wait_for_function("!location.search")
    refused(r.click(counter), "NODE_REPLACED", False)
    counter = by_label(r.snapshot(), "Counter")["handle"]
    # pagehide is what a back/forward-cache entry sees before it is frozen.
    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: true}))")
    refused(r.click(counter), "NODE_REPLACED", False)
    assert page.evaluate("window.clicks") == 1


def test_navigation_and_back_forward_never_revive_a_handle(page: Page, fixtures_site: Site) -> None:
    """Guards that no handle survives a navigation and none comes back with back or forward (a
    back/forward-cache restore included)."""
    r = open_page(page, fixtures_site, "nav.html")
    snap = r.snapshot()
    counter = by_label(snap, "Counter")["handle"]
    assert r.click(by_label(snap, "Other page")["handle"]) == {"clicked": True}
    page.wait_for_url("**/other.html")
    refused(r.click(counter), "NODE_REPLACED", False)
    other = by_label(r.snapshot(), "Other button")["handle"]
    page.go_back(wait_until="load")
    refused(r.click(counter), "NODE_REPLACED", False)
    page.go_forward(wait_until="load")
    refused(r.click(other), "NODE_REPLACED", False)
    page.go_back(wait_until="load")
    assert page.evaluate("window.clicks || 0") == 0


def test_a_new_snapshot_or_another_key_does_not_reach_old_handles(page: Page, fixtures_site: Site) -> None:
    """Guards handle ownership: another gateway (another key, another registry) cannot use a handle, and a new
    snapshot retires the previous one's handles."""
    r = open_page(page, fixtures_site, "nav.html")
    old = by_label(r.snapshot(), "Counter")["handle"]
    stranger = Reader(page)  # another gateway: another key, another registry
    refused(stranger.click(old), "NODE_REPLACED", False)
    new = by_label(r.snapshot(), "Counter")["handle"]
    assert new != old
    refused(r.click(old), "NODE_REPLACED", False)
    assert r.click(new) == {"clicked": True}
    assert page.evaluate("window.clicks") == 1
