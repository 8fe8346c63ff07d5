"""Continued and scoped snapshots (contract §3 `cursor`/`next`/`scope`, §9 v1.1 "prioritised and continued
pages") in real headless Chromium, through a real Gateway (gatewayhelp.GatewayTab): the pages of one
snapshot repeat and skip nothing while the document is unchanged, their refs stay valid, and a cursor
that no longer names the kept read is refused.
"""

from __future__ import annotations

import re

from conftest import Site
from gatewayhelp import GatewayTab, labelled, open_tab
from playwright.sync_api import Page


def test_continuation_reads_the_same_snapshot_exactly_and_old_refs_stay_valid(
    page: Page, fixtures_site: Site
) -> None:
    """Guards exact continuation: the pages of one snapshot share its id, their text starts with the whole
    first read's and runs past it, and they list each of 2,007 elements exactly once; a first-page ref still
    acts after the third page; that action makes the snapshot's cursor STALE_SNAPSHOT before anything is
    dispatched."""
    g = open_tab(page, fixtures_site, "links2000.html")
    whole = g.snapshot(maxChars=12000, maxElements=200)
    pages = g.all_pages(maxChars=9000, maxElements=90)
    assert len(pages) == -(-2007 // 90)  # elements outlast the text here
    assert {p["snapshot"] for p in pages} == {pages[0]["snapshot"]}
    assert [p["truncated"] for p in pages] == [True] * (len(pages) - 1) + [False]
    text = "".join(p["text"] for p in pages)
    assert text.startswith(whole["text"]) and text.endswith("Link number 1999\nSearch")
    assert len(text) > 12000
    elements = [e for p in pages for e in p["elements"]]
    refs = [e["ref"] for e in elements]
    assert len(set(refs)) == len(refs) == 2007  # 2003 links, 2 buttons, the search box, the heading
    labels = sorted((e["role"], e["label"]) for e in elements)
    expected = sorted(
        [("link", f"Link number {i}") for i in range(2000)]
        + [("link", "Home"), ("link", "News"), ("link", "Sport"), ("button", "Menu"),
           ("searchbox", "Search the site"), ("button", "Search"), ("heading", "Index")]
    )
    assert labels == expected
    # after the third page, refs of the first page still act
    assert pages[2]["elements"]
    assert g.ok("tab.type", ref=labelled(pages[0], "Search the site")["ref"], text="x") == {"typed": 1}
    # the action changed the tab: the cursor of that snapshot is now refused, before anything runs
    sent = g.dispatches
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=pages[3]["next"])
    assert g.dispatches == sent


def test_three_pages_then_clicks_on_first_page_refs(page: Page, fixtures_site: Site) -> None:
    """Guards refs across pages: three pages of three elements walk the priority order, refs count on across
    the pages (e1…e9), and a first-page ref still clicks."""
    g = open_tab(page, fixtures_site, "links2000.html")
    one = g.snapshot(maxElements=3)
    two = g.snapshot(cursor=one["next"], maxElements=3)
    three = g.snapshot(cursor=two["next"], maxElements=3)
    assert [e["label"] for e in one["elements"]] == ["Menu", "Search the site", "Search"]
    assert [e["label"] for e in two["elements"]] == ["Home", "News", "Sport"]
    assert [e["label"] for e in three["elements"]] == ["Link number 0", "Link number 1", "Link number 2"]
    assert one["elements"][0]["ref"] == f"{one['snapshot']}e1" and three["elements"][2]["ref"] == f"{one['snapshot']}e9"
    assert g.ok("tab.click", ref=labelled(one, "Menu")["ref"]) == {"clicked": True}
    assert page.evaluate("window.menu") is True


def test_stale_cursors_are_refused(page: Page, fixtures_site: Site) -> None:
    """Guards cursor refusals: STALE_SNAPSHOT for a cursor already continued, after a newer snapshot and
    after the host invalidated the tab's refs; INVALID_PARAMS for a cursor never issued and for a cursor
    with a scope, include, find or since. A changed document alone no longer stops a cursor (§9 v1.2)."""
    g = open_tab(page, fixtures_site, "links2000.html")
    first = g.snapshot(maxElements=50)
    second = g.snapshot(cursor=first["next"], maxElements=50)
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=first["next"])  # already continued
    g.refused("INVALID_PARAMS", "tab.snapshot", cursor="s999p2")  # never issued
    g.refused("INVALID_PARAMS", "tab.snapshot", cursor=second["next"], scope=first["elements"][0]["ref"])
    for extra in ({"include": "controls"}, {"include": "all"}, {"find": {"role": "link"}}, {"since": "s1"}):
        g.refused("INVALID_PARAMS", "tab.snapshot", cursor=second["next"], **extra)
    # a changed document (same generation, no invalidation reached the engine) is read on (§9 v1.2)
    page.evaluate("document.querySelector('h1').textContent = 'Changed'")
    third_page = g.snapshot(cursor=second["next"], maxElements=50)
    assert third_page["snapshot"] == first["snapshot"] and len(third_page["elements"]) == 50
    # a newer snapshot makes the older one's cursor stale
    again = g.snapshot(maxElements=50)
    g.snapshot(maxElements=50)
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=again["next"])
    # navigation (the host invalidates the tab's refs)
    third = g.snapshot(maxElements=50)
    g.gw.invalidate_refs("t1")
    g.refused("STALE_SNAPSHOT", "tab.snapshot", cursor=third["next"])


def test_text_pages_never_split_a_pair_and_join_to_the_whole_text(page: Page, fixtures_site: Site) -> None:
    """Guards text continuation (a first read collects only its first page's text, a continuation reads on):
    pages of at most maxChars units never split a surrogate pair and join to exactly the whole text."""
    g = open_tab(page, fixtures_site, "emoji.html")
    whole = g.snapshot()["text"]
    assert len(whole.encode("utf-16-le")) // 2 > 10000  # 5,000 astral characters: 10,000 UTF-16 units
    pages = g.all_pages(maxChars=1001)
    assert len(pages) > 9
    for p in pages:
        assert len(p["text"].encode("utf-16-le")) // 2 <= 1001
    assert "".join(p["text"] for p in pages) == whole


def test_scope_snapshots_a_nav_subtree(page: Page, fixtures_site: Site) -> None:
    """Guards `scope`: a snapshot of one subtree (a `<nav>` made focusable) is a new snapshot with only that
    subtree's text and elements, the scope element first; its refs act, and the scope ref is an ordinary ref
    (stale after the action)."""
    g = open_tab(page, fixtures_site, "states.html")
    page.evaluate(
        """() => { const n = document.createElement('nav'); n.setAttribute('aria-label', 'Main');
                   n.innerHTML = '<a href="/a">Alpha</a> <a href="/b">Beta</a> <button>More</button>';
                   document.body.appendChild(n);
                   const h = document.createElement('h2'); h.textContent = 'After nav';
                   document.body.appendChild(h); }"""
    )
    g = GatewayTab(page)
    snap = g.snapshot()
    # a <nav> is not listed itself; scope on its first link's ancestor by snapshotting a smaller subtree
    alpha = labelled(snap, "Alpha")
    env = g.call("tab.snapshot", scope=alpha["ref"])
    assert env["success"] is True and [e["label"] for e in env["result"]["elements"]] == ["Alpha"]
    page.evaluate("document.querySelector('nav').tabIndex = 0")  # make the nav itself listed
    nav = labelled(g.snapshot(), "Main")
    scoped = g.snapshot(scope=nav["ref"])
    assert scoped["snapshot"] != snap["snapshot"]
    assert scoped["text"] == "Alpha Beta More"
    assert [(e["role"], e["label"]) for e in scoped["elements"]] == [
        ("navigation", "Main"), ("link", "Alpha"), ("link", "Beta"), ("button", "More")]
    assert g.ok("tab.click", ref=labelled(scoped, "More")["ref"]) == {"clicked": True}
    g.refused("STALE_SNAPSHOT", "tab.snapshot", scope=nav["ref"])  # a scope ref is an ordinary ref


def test_a_live_page_is_read_over_many_pages_from_its_captured_order(page: Page, fixtures_site: Site) -> None:
    """Guards continuation over a captured order (§9 v1.2; issue 29: a ticking clock, a rotating carousel, a
    feed and a banner made every cursor STALE_SNAPSHOT): a 100 ms clock, a carousel moving its slides every
    150 ms, a feed replacing an item every 120 ms and a banner inserted after the first page, read over at
    least five continuation pages. Every page continues the same snapshot; no element is listed twice;
    every element present throughout is listed (moved slides included); nothing added after the first read
    is listed or read; the feed items removed before their page are counted in `removed`; the static text
    is read exactly once and in order; a first-page ref still acts after the last page."""
    g = open_tab(page, fixtures_site, "live.html")
    page.evaluate("document.querySelectorAll('a, button').forEach((e) => e.setAttribute('data-present', ''))")
    page.evaluate("window.startLive()")
    pages = [g.snapshot(maxChars=800, maxElements=25)]
    page.evaluate("window.addBanner()")  # after the first read: not part of its snapshot
    while "next" in pages[-1]:
        page.wait_for_timeout(200)  # the clock ticks twice, the carousel turns, the feed moves on
        pages.append(g.snapshot(cursor=pages[-1]["next"], maxChars=800, maxElements=25))
        assert len(pages) < 50
    assert len(pages) >= 6, len(pages)  # a first page and at least five continuations
    assert {p["snapshot"] for p in pages} == {pages[0]["snapshot"]}
    labels = [e["label"] for p in pages for e in p["elements"]]
    assert len(labels) == len(set(labels)), "an element was listed twice"
    throughout = page.evaluate(
        "Array.from(document.querySelectorAll('[data-present]'), (e) => e.textContent.trim())"
    )
    assert set(throughout) - {f"Feed item {i}" for i in range(8)} <= set(labels)
    assert {"Slide one", "Slide two", "Slide three"} <= set(labels)
    assert all(label.startswith(("Static button", "Slide", "Feed item")) for label in labels), labels
    assert sum(p.get("removed", 0) for p in pages) >= 1  # the first feed items were gone by their page
    assert "Accept cookies" not in labels
    text = "".join(p["text"] for p in pages)
    assert "Accept cookies" not in text
    at = [text.find(f"Static paragraph {i} stays where it is.") for i in range(120)]
    assert all(a >= 0 for a in at) and at == sorted(at), "static text skipped or out of order"
    assert all(text.count(f"Static paragraph {i} stays") == 1 for i in range(120)), "static text repeated"
    assert text.count("12:00:") == 1  # the clock, read once, as it was when its page was read
    first = pages[0]["elements"][0]
    assert g.ok("tab.click", ref=first["ref"]) == {"clicked": True}


def test_the_live_cursor_bug_case_pages_through_without_a_stale_cursor(page: Page, fixtures_site: Site) -> None:
    """Regression (bugcase live-cursor.html, from a public bug report): a long page that appends a paragraph
    every 300 ms while an agent pages through its snapshot. Every page continues (no STALE_SNAPSHOT), the 400
    buttons are each listed once, and the ticks added after the first read are neither listed nor read."""
    g = open_tab(page, fixtures_site, "bugcase-live-cursor.html")
    pages = [g.snapshot(maxChars=500, maxElements=60)]
    ticks_then = page.evaluate("document.querySelectorAll('p').length - 1")  # at most those were captured
    while "next" in pages[-1]:
        page.wait_for_timeout(320)
        pages.append(g.snapshot(cursor=pages[-1]["next"], maxChars=500, maxElements=60))
        assert len(pages) < 50
    labels = [e["label"] for p in pages for e in p["elements"]]
    assert sorted(labels) == sorted(f"Button {i}" for i in range(400))
    text = "".join(p["text"] for p in pages)
    buttons = "filler\n" + " ".join(f"Button {i}" for i in range(400))
    assert text.startswith(buttons)
    ticks = text[len(buttons) :].split("\n")[1:]  # those appended before the first read, if any
    assert all(re.fullmatch(r"tick \d+", t) for t in ticks) and len(ticks) <= ticks_then, ticks
    assert page.evaluate("document.querySelectorAll('p').length - 1") > ticks_then + 3  # appended meanwhile


def test_elements_removed_before_their_page_are_counted_and_the_rest_still_read(
    page: Page, fixtures_site: Site
) -> None:
    """Guards `removed: n`: links removed between pages are skipped and counted on the page that would have
    listed them; the links still there come in order; the text read on resumes after what the first page had
    even though the node it stopped in was removed (its ancestor's position is used)."""
    g = open_tab(page, fixtures_site, "links2000.html")
    first = g.snapshot(maxChars=3000, maxElements=10)
    assert [e["label"] for e in first["elements"] if e["label"].startswith("Link")][-1] == "Link number 3"
    assert not first["text"].endswith("\n")
    cut = int(re.findall(r"Link number (\d+)\n", first["text"])[-1]) + 1  # the link the page stopped in
    page.evaluate(
        """(cut) => { const links = Array.from(document.querySelectorAll('a[href^="/item/"]'));
                      for (const a of [...links.slice(4, 9), ...links.slice(cut, cut + 2)]) a.remove(); }""",
        cut,
    )
    second = g.snapshot(cursor=first["next"], maxChars=3000, maxElements=10)
    assert second["removed"] == 5
    assert [e["label"] for e in second["elements"]] == [f"Link number {i}" for i in range(9, 19)]
    text = first["text"] + second["text"]
    numbers = [int(n) for n in re.findall(r"Link number (\d+)\n", text)]
    assert len(numbers) == len(set(numbers)), "text repeated across the pages"
    assert numbers[:cut] == list(range(cut))  # the first page's complete lines
    assert numbers[cut:][:5] == list(range(cut + 2, cut + 7))  # read on after the two removed ones
