"""Frames read and acted on in their own worlds (CONTRACT.md §9 v1.2 "Frames"; docs/host.md "Frames: every
frame in its own world", docs/reader.md "Frames"), against the reference host's own stack — its site
policy, renderer parts, gateway and driver, in this process — and real headless Chromium.

Pages come from three loopback origins of the test's own (127.0.0.1, 127.0.0.2, 127.0.0.3 on ports of their
own), so a frame of another address is out of process (Chromium isolates sites); 127.0.0.4 is blocked by
the site policy. Every fault is provoked for real: a frame navigated, removed or its renderer crashed
between a snapshot and an action, or removed while the snapshot reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import threading
import time
import urllib.parse
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from host_testlib import Host, ok, start_host
from kelpie_gateway.host.app import BrowserOptions, BrowserStack, start_stack
from kelpie_gateway.host.browser import ChromiumRenderer
from kelpie_gateway.host.browser.frames import MAX_DEPTH, MAX_FRAMES, Frames
from kelpie_gateway.host.browser.world import World

pytestmark = pytest.mark.timeout(300)
T = TypeVar("T")
SECRET = "hunter2-frames-7f3a"

PAGES: dict[str, str] = {
    "login-top.html": """<!doctype html><title>Shop</title><p>Top text before</p>
<iframe id="login" title="Sign-in frame" src="{B}/login.html"></iframe>
<p>Top text after</p><button onclick="window.topClicks = (window.topClicks || 0) + 1">Top button</button>""",
    "login.html": """<!doctype html><title>Login</title><p>Please sign in</p>
<form method="post" action="/signin"><label>User <input name="user"></label>
<label>Password <input type="password" name="pw" value="prefilled-pw-99"></label><button>Sign in</button></form>""",
    "nested-top.html": """<!doctype html><title>Nested</title><p>Level 0</p><button>Button 0</button>
<iframe title="One" src="{B}/level.html?n=1&next={C}&last=3"></iframe><p>After all</p><button>Button end</button>""",
    "sandbox-top.html": """<!doctype html><title>Sandbox</title><p>Top</p>
<iframe sandbox title="Sandboxed" src="/sandboxed.html"></iframe>""",
    "sandboxed.html": """<!doctype html><p>Sandboxed text</p><label><input type="checkbox"> Agree</label>""",
    "clicker-top.html": """<!doctype html><title>Clicker</title><p>Top</p>
<iframe id="f" title="Clicker" src="{B}/clicker.html?v=1"></iframe>
<button onclick="window.topClicks = (window.topClicks || 0) + 1">Top button</button>""",
    "two-top.html": """<!doctype html><title>Two</title><p>Top</p>
<iframe id="goes" title="Goes away" src="{B}/plain.html?name=goes"></iframe>
<iframe id="stays" title="Stays" src="{C}/plain.html?name=stays"></iframe><button>Top button</button>""",
    "blocked-top.html": """<!doctype html><title>Blocked</title><p>Top</p>
<iframe title="Blocked frame" src="{D}/plain.html?name=blocked"></iframe>
<iframe title="Allowed frame" src="{C}/plain.html?name=allowed"></iframe>""",
    "native-top.html": """<!doctype html><title>Native</title><p>Native top</p>
<div style="height:1400px">Top spacer</div>
<iframe title="Native frame" style="width:420px;height:260px;border:6px solid #333;padding:4px;margin-left:30px"
 src="{B}/native.html?n=1&pad=700&inner={C}"></iframe><div style="height:1400px">Bottom spacer</div>""",
    "native-cover-top.html": """<!doctype html><title>Covered</title>
<div role="banner" aria-label="Sticky header"
 style="position:fixed;top:0;left:0;right:0;height:140px;background:#fff;z-index:5">Sticky header</div>
<iframe title="Covered frame" style="width:400px;height:100px;border:0" src="{B}/native.html?n=7"></iframe>
<div style="height:2000px">Below</div>""",
    "drag-top.html": """<!doctype html><title>Drag</title>
<iframe title="Drag frame" style="width:500px;height:300px" src="{B}/drag-in.html"></iframe>""",
    "drag-in.html": """<!doctype html><div id="a" draggable="true" style="width:80px;height:30px;background:#ccc">Drag me</div>
<div id="z" style="margin-top:80px;width:200px;height:80px;background:#eee">Drop here</div>
<script>a.addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'x'));
z.addEventListener('dragover', (e) => e.preventDefault());
z.addEventListener('drop', (e) => {{ e.preventDefault(); fetch('/ev?what=dropped&trusted=' + e.isTrusted); }});</script>""",
    "scope-top.html": """<!doctype html><title>Scope</title>
<iframe title="Scoped" src="{B}/scoped.html"></iframe><button>Top button</button>""",
    "scoped.html": """<!doctype html><div role="group" tabindex="0" aria-label="Box"><p>In the box</p><button>In box</button>
<iframe src="{C}/plain.html?name=boxed"></iframe></div><button>Outside box</button>""",
}


def dynamic(path: str, query: dict[str, str], origins: dict[str, str]) -> str | None:
    """Pages made from their query: a frame chain, a plain frame, a long page, a page of many frames."""
    if path == "/level.html":  # Level n, its button, and the next level's frame from the other origin
        n, last = int(query["n"]), int(query["last"])
        here, other = query["next"], origins["B"] if query["next"] == origins["C"] else origins["C"]
        inner = (
            f'<iframe src="{here}/level.html?n={n + 1}&next={other}&last={last}"></iframe>'
            if n < last
            else ""
        )
        return f"<!doctype html><p>Level {n}</p><button>Button {n}</button>{inner}"
    if path == "/chain.html":  # depth d of a chain as deep as `to`
        d, to = int(query["d"]), int(query["to"])
        nxt = origins["B"] if d % 2 else origins["C"]
        inner = (
            f'<iframe title="Chain {d + 1}" src="{nxt}/chain.html?d={d + 1}&to={to}"></iframe>'
            if d < to
            else ""
        )
        return f"<!doctype html><p>Depth {d}</p><button>Chain button {d}</button>{inner}"
    if path == "/native.html":  # native input's targets, each reporting trusted events to its own server
        n, pad, inner = query["n"], int(query.get("pad", "0")), query.get("inner")
        nested = (
            f'<iframe title="Inner native" style="width:360px;height:200px;border:3px solid #555" '
            f'src="{inner}/native.html?n={int(n) + 1}&pad=400"></iframe>'
            if inner
            else ""
        )
        return f"""<!doctype html><title>Native {n}</title><div style="height:{pad}px">Spacer {n}</div>
<button onpointerdown="hit('press{n}', event)">Press {n}</button>
<label>Search {n} <input onkeyup="hit('keyup{n}-' + this.value.length, event)"></label>
<div role="button" tabindex="0" aria-label="Hover {n}" onpointerover="hit('hover{n}', event)"
 style="width:80px;height:30px;background:#ccc"></div>
<div id="s" role="slider" tabindex="0" aria-label="Slider {n}" aria-valuenow="0"
 style="width:60px;height:30px;background:#999;touch-action:none"></div>{nested}
<script>
function hit(what, e) {{ fetch('/ev?what=' + what + '&trusted=' + e.isTrusted); }}
let sx = null;
s.addEventListener('pointerdown', (e) => {{ sx = e.clientX; s.setPointerCapture(e.pointerId); }});
s.addEventListener('pointerup', (e) => {{ if (sx !== null) hit('slid{n}-' + Math.round(e.clientX - sx), e); sx = null; }});
</script>"""
    if path == "/plain.html":
        name = query.get("name", "plain")
        return f"<!doctype html><title>{name}</title><p>Plain {name}</p><button>Button {name}</button>"
    if path == "/clicker.html":
        v = query["v"]
        return (
            f"""<!doctype html><p>Clicker {v}</p><button onclick="fetch('/clicked?v={v}')">Press</button>"""
        )
    if path == "/many-top.html":
        frames = "".join(
            f'<iframe title="F{i}" srcdoc="<button>F{i} button</button>"></iframe>' for i in range(70)
        )
        return f"<!doctype html><title>Many</title>{frames}"
    if path == "/long-top.html":
        before = "".join(
            f"<p>Top para {i} " + "words " * 12 + f'<a href="#a{i}">Top link {i}</a></p>' for i in range(120)
        )
        after = "".join(f'<p>After para {i} <a href="#b{i}">After link {i}</a></p>' for i in range(60))
        return f'<!doctype html><title>Long</title>{before}<iframe title="Long frame" src="{origins["C"]}/long-frame.html"></iframe>{after}'
    if path == "/long-frame.html":
        body = "".join(
            f"<p>Frame para {i} " + "text " * 15 + f"<button>Frame button {i}</button></p>" for i in range(80)
        )
        return f"<!doctype html>{body}"
    return None


class Origin:
    """A loopback web server: the pages above with every origin's address filled in; it records the paths
    it was asked for and the bodies posted to it."""

    def __init__(self, address: str) -> None:
        self.hits: list[str] = []
        self.posts: list[str] = []
        self.origins: dict[str, str] = {}
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, body: str, status: int = 200) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                origin.hits.append(self.path)
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query))
                page = dynamic(parts.path, query, origin.origins)
                if page is None and parts.path.lstrip("/") in PAGES:
                    page = PAGES[parts.path.lstrip("/")].format(**origin.origins)
                if page is None:
                    self._send("<!doctype html><p>not here</p>", 404)
                else:
                    self._send(page)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                origin.posts.append(self.rfile.read(length).decode())
                self._send("<!doctype html><p>Signed in</p>")

        self.server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.url = f"http://{address}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Stack:
    """The reference host's stack (site policy: 127.0.0.4 blocked) on a loop of its own thread, and the
    three origins."""

    def __init__(self) -> None:
        self.a, self.b, self.c = Origin("127.0.0.1"), Origin("127.0.0.2"), Origin("127.0.0.3")
        origins = {
            "A": self.a.url,
            "B": self.b.url,
            "C": self.c.url,
            "D": f"http://127.0.0.4:{self.a.server.server_address[1]}",
        }
        for site in (self.a, self.b, self.c):
            site.origins = origins
        self.lines: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        opts = BrowserOptions(blocked_origins="http://127.0.0.4:*")
        self.stack: BrowserStack = self.run(start_stack(opts, self.lines.append))
        self.ids = 0
        inner = getattr(self.stack.renderer, "inner", self.stack.renderer)
        assert isinstance(inner, ChromiumRenderer)
        self.chromium = inner
        world = inner.part(World)
        assert world is not None
        self.frames: Frames = world.frames

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        step = self.run(
            self.stack.driver.canonical({"version": 1, "id": self.ids, "method": method, "params": params})
        )
        envelope: dict[str, Any] = step["response"]
        return envelope

    def ok(self, method: str, **params: Any) -> dict[str, Any]:
        envelope = self.call(method, **params)
        assert envelope["success"] is True, envelope
        result: dict[str, Any] = envelope["result"]
        return result

    def open(self, url: str) -> str:
        return str(self.ok("tabs.open", url=url)["tabId"])

    def page(self, tab: str) -> Any:
        return self.chromium.page_of(tab)

    def close(self) -> None:
        self.run(self.stack.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        for site in (self.a, self.b, self.c):
            site.close()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    made = Stack()
    try:
        yield made
    finally:
        made.close()


def labels(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["label"]: e for e in snapshot["elements"]}


def settled(stack: Stack, tab: str, frames: int) -> None:
    """Wait until the tab's page has `frames` frames beside its main frame, all loaded."""
    page = stack.page(tab)

    async def loaded() -> None:
        for _ in range(200):
            children = [f for f in page.frames if f != page.main_frame]
            if len(children) >= frames and all(f.url not in ("", "about:blank") for f in children):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{len(page.frames) - 1} frames of {frames} loaded")

    stack.run(loaded())
    stack.run(asyncio.sleep(0.3))


async def navigated_to(page: Any, mark: str) -> None:
    for _ in range(200):
        if any(mark in f.url for f in page.frames):
            await asyncio.sleep(0.3)
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no frame navigated to {mark}")


def refused_untouched(envelope: dict[str, Any], *codes: str) -> None:
    assert envelope["success"] is False, envelope
    assert envelope["error"]["code"] in codes, envelope
    assert envelope["mayHaveCompleted"] is False, envelope


# ====================================================================== reading and acting
def test_a_login_form_in_a_cross_origin_frame_signs_in_without_the_typed_value_ever_shown(
    stack: Stack,
) -> None:
    """The issue's first journey: a login form served from another origin is read in its own world, typed
    into and submitted; its server gets the post; the typed text (and the prefilled password) appears in
    no snapshot and no log line."""
    tab = stack.open(f"{stack.a.url}/login-top.html")
    settled(stack, tab, 1)
    snap = stack.ok("tab.snapshot", tabId=tab)
    found = labels(snap)
    origin = stack.b.url
    assert found["User"]["frame"] == {"origin": origin, "depth": 1}, found["User"]
    assert found["Password"]["frame"] == {"origin": origin, "depth": 1}
    assert found["Sign in"]["frame"] == {"origin": origin, "depth": 1}
    assert "frame" not in found["Top button"]
    assert "Sign-in frame" not in found  # a frame that was read needs no placeholder
    assert (
        snap["text"] == "Top text before\nPlease sign in\nUser Password Sign in\nTop text after\nTop button"
    )
    order = [e["label"] for e in snap["elements"]]
    assert order == ["User", "Password", "Sign in", "Top button"]  # page order: the frame's, then the top's
    assert stack.ok("tab.type", tabId=tab, ref=found["User"]["ref"], text=SECRET) == {"typed": len(SECRET)}
    again = stack.ok("tab.snapshot", tabId=tab)
    assert (
        SECRET not in repr(again)
        and "prefilled-pw-99" not in repr(again)
        and "prefilled-pw-99" not in repr(snap)
    )
    assert stack.ok("tab.click", tabId=tab, ref=labels(again)["Sign in"]["ref"]) == {"clicked": True}

    async def posted() -> None:
        for _ in range(100):
            if stack.b.posts:
                return
            await asyncio.sleep(0.05)

    stack.run(posted())
    assert stack.b.posts and f"user={SECRET}" in stack.b.posts[0], stack.b.posts
    # The server has the post; the frame's answer page may still be loading (a read while a frame is
    # between documents lists none of its text), so read until it shows, as an agent would, bounded.
    deadline = time.monotonic() + 15
    text = stack.ok("tab.snapshot", tabId=tab)["text"]
    while "Signed in" not in text and time.monotonic() < deadline:
        stack.run(asyncio.sleep(0.2))
        text = stack.ok("tab.snapshot", tabId=tab)["text"]
    assert "Signed in" in text, text
    assert not [line for line in stack.lines if SECRET in line or "prefilled-pw-99" in line]
    stack.ok("tabs.close", tabId=tab)


def test_a_frame_three_deep_is_read_in_page_order_and_acted_on(stack: Stack) -> None:
    """Frames of three origins nested three deep: each level's elements follow its frame element at its
    depth, the text is in page order, and a button at depth 3 clicks."""
    tab = stack.open(f"{stack.a.url}/nested-top.html")
    settled(stack, tab, 3)
    snap = stack.ok("tab.snapshot", tabId=tab)
    buttons = [(e["label"], e.get("frame")) for e in snap["elements"]]
    assert buttons == [
        ("Button 0", None),
        ("Button 1", {"origin": stack.b.url, "depth": 1}),
        ("Button 2", {"origin": stack.c.url, "depth": 2}),
        ("Button 3", {"origin": stack.b.url, "depth": 3}),
        ("Button end", None),
    ]
    assert (
        snap["text"]
        == "Level 0\nButton 0\nLevel 1\nButton 1\nLevel 2\nButton 2\nLevel 3\nButton 3\nAfter all\nButton end"
    )
    deepest = labels(snap)["Button 3"]["ref"]
    assert stack.ok("tab.click", tabId=tab, ref=deepest) == {"clicked": True}
    stack.ok("tabs.close", tabId=tab)


def test_a_sandboxed_frame_reads_with_an_opaque_origin_and_acts(stack: Stack) -> None:
    """A sandboxed frame (no allow-same-origin: an opaque origin, rendered in a process of its own) is
    read in its own world; its origin is "null" as `self.origin` says; a checkbox in it toggles."""
    tab = stack.open(f"{stack.a.url}/sandbox-top.html")
    settled(stack, tab, 1)
    snap = stack.ok("tab.snapshot", tabId=tab)
    agree = labels(snap)["Agree"]
    assert agree["frame"] == {"origin": "null", "depth": 1}
    assert "Sandboxed text" in snap["text"]
    assert stack.ok("tab.click", tabId=tab, ref=agree["ref"]) == {"clicked": True}
    assert labels(stack.ok("tab.snapshot", tabId=tab))["Agree"]["states"] == ["checked"]
    stack.ok("tabs.close", tabId=tab)


def test_scope_on_an_element_inside_a_frame_reads_its_subtree_and_the_frame_within(stack: Stack) -> None:
    """`scope` on a ref in a frame is read in that frame's world; a frame inside the scope is read too."""
    tab = stack.open(f"{stack.a.url}/scope-top.html")
    settled(stack, tab, 2)
    box = labels(stack.ok("tab.snapshot", tabId=tab))["Box"]
    scoped = stack.ok("tab.snapshot", tabId=tab, scope=box["ref"])
    assert [e["label"] for e in scoped["elements"]] == ["Box", "In box", "Button boxed"]
    assert labels(scoped)["Button boxed"]["frame"] == {"origin": stack.c.url, "depth": 2}
    assert "Plain boxed" in scoped["text"] and "Outside box" not in scoped["text"]
    stack.ok("tabs.close", tabId=tab)


def test_continuation_across_a_frame_boundary_lists_each_element_once_in_the_priority_order(
    stack: Stack,
) -> None:
    """A long page with a cross-origin frame in its middle, read in small pages: every element exactly
    once, the frame's buttons before the page's links (priority order across frames), and the text pages
    joined give the text of one big read (the frame's text in its place)."""
    tab = stack.open(f"{stack.a.url}/long-top.html")
    settled(stack, tab, 1)
    whole = stack.ok("tab.snapshot", tabId=tab, maxChars=12000, maxElements=200)
    pages = [stack.ok("tab.snapshot", tabId=tab, maxChars=700, maxElements=23)]
    while "next" in pages[-1]:
        assert pages[-1]["truncated"] is True
        assert pages[-1]["snapshot"] == pages[0]["snapshot"]
        pages.append(
            stack.ok("tab.snapshot", tabId=tab, cursor=pages[-1]["next"], maxChars=700, maxElements=23)
        )
        assert len(pages) < 200
    listed = [e["label"] for p in pages for e in p["elements"]]
    expected = (
        [f"Frame button {i}" for i in range(80)]
        + [f"Top link {i}" for i in range(120)]
        + [f"After link {i}" for i in range(60)]
    )
    assert sorted(listed) == sorted(expected) and len(listed) == len(set(listed))
    # Buttons (class 2) come before links (class 4) across the frame boundary: the first 80 elements of
    # the priority order are the frame's buttons (a page lists its elements in page order).
    first = [e["label"] for p in pages[:3] for e in p["elements"]]
    assert first == [f"Frame button {i}" for i in range(69)]
    assert {e["label"] for e in pages[3]["elements"]} == {f"Frame button {i}" for i in range(69, 80)} | {
        f"Top link {i}" for i in range(12)
    }
    text = "".join(p["text"] for p in pages)
    assert len(whole["text"]) == 12000 and text.startswith(whole["text"])
    assert "Top para 119" in text and text.index("Top para 119") < text.index("Frame para 0") < text.index(
        "After para 0"
    )
    assert text.endswith("After para 59 After link 59")
    frame_button = next(e for p in pages for e in p["elements"] if e["label"] == "Frame button 40")
    assert frame_button["frame"] == {"origin": stack.c.url, "depth": 1}
    # A ref of an earlier page stays valid (the same snapshot): it acts in the frame.
    assert stack.ok("tab.click", tabId=tab, ref=frame_button["ref"]) == {"clicked": True}
    stack.ok("tabs.close", tabId=tab)


# ====================================================================== placeholders and limits
def test_a_frame_from_a_blocked_origin_stays_a_blocked_placeholder(stack: Stack) -> None:
    """The site policy's proxy refuses the frame's request (the proxy's refusal is all the frame shows) and
    the snapshot says so without reading it; the allowed frame beside it is read."""
    tab = stack.open(f"{stack.a.url}/blocked-top.html")
    settled(stack, tab, 2)
    snap = stack.ok("tab.snapshot", tabId=tab)
    found = labels(snap)
    assert found["Blocked frame"]["unreadable"] == "blocked-by-policy"
    assert found["Blocked frame"]["tag"] == "iframe"
    assert found["Button allowed"]["frame"]["depth"] == 1
    assert (
        "Plain blocked" not in snap["text"] and "has been blocked" not in snap["text"]
    )  # no error page read
    assert "Plain allowed" in snap["text"]
    assert "Forbidden" not in snap["text"] and "127.0.0.4" not in snap["text"]  # nor the proxy's answer
    assert any(line.startswith("site policy: blocked") and "127.0.0.4" in line for line in stack.lines)
    stack.ok("tabs.close", tabId=tab)


def test_v12_params_with_a_frame(stack: Stack) -> None:
    """Issue 29's params on a page with a cross-origin frame (docs/reader.md "Frames and v1.2 reads"):
    `find` and `include: "controls"` read the top document only — the frame is its placeholder
    (`unavailable`) and nothing from inside it is listed or searched; a plain snapshot composes the frame;
    `since` after it reports what changed in the top document, not what changed inside the frame; a
    composite's cursor is refused STALE_SNAPSHOT once its document changed."""
    tab = stack.open(f"{stack.a.url}/login-top.html")
    settled(stack, tab, 1)
    found = stack.ok("tab.snapshot", tabId=tab, find={"role": "button"})
    assert [(e["label"], e.get("frame")) for e in found["elements"]] == [("Top button", None)]
    assert stack.ok("tab.snapshot", tabId=tab, find={"name": "Sign in"})["elements"] == []
    assert "Please sign in" not in stack.ok("tab.snapshot", tabId=tab, find={"text": "sign in"})["text"]
    controls = stack.ok("tab.snapshot", tabId=tab, include="controls")
    assert [(e["tag"], e.get("unreadable")) for e in controls["elements"]] == [
        ("iframe", "unavailable"),
        ("button", None),
    ]
    plain = stack.ok("tab.snapshot", tabId=tab)
    assert labels(plain)["Sign in"]["frame"] == {"origin": stack.b.url, "depth": 1}
    page = stack.page(tab)
    inner = next(f for f in page.frames if f != page.main_frame)

    async def change() -> None:
        await page.evaluate(
            "() => document.body.insertAdjacentHTML('beforeend', '<p>Top news</p><button>Top new</button>')"
        )
        await inner.evaluate(
            "() => document.body.insertAdjacentHTML('beforeend', '<p>Frame news</p><button>Frame new</button>')"
        )

    stack.run(change())
    after = stack.ok("tab.snapshot", tabId=tab, since=plain["snapshot"])
    diff = after["changes"]
    assert [e["label"] for e in diff["added"]] == ["Top new"], diff
    assert diff["removed"] == [] and diff["changed"] == [], diff
    assert "Top news" in diff["textAdded"] and not [t for t in diff["textAdded"] if "Frame" in t], diff
    assert diff["textRemoved"] == [], diff
    first = stack.ok("tab.snapshot", tabId=tab, maxElements=1)
    assert "next" in first, first
    stack.run(page.evaluate("() => document.body.insertAdjacentHTML('beforeend', '<p>Later</p>')"))
    refused_untouched(stack.call("tab.snapshot", tabId=tab, cursor=first["next"]), "STALE_SNAPSHOT")
    stack.ok("tabs.close", tabId=tab)


def test_past_64_frames_and_past_depth_8_frames_are_limit_placeholders(stack: Stack) -> None:
    """At most 64 frame documents are read for one snapshot (in page order) and none deeper than 8: the
    rest stay placeholders `unreadable: "limit"`."""
    tab = stack.open(f"{stack.a.url}/many-top.html")
    settled(stack, tab, 70)
    snap = stack.ok("tab.snapshot", tabId=tab)
    read = [e["label"] for e in snap["elements"] if e.get("frame")]
    assert read == [f"F{i} button" for i in range(MAX_FRAMES)]
    limited = [e["label"] for e in snap["elements"] if e.get("unreadable") == "limit"]
    assert limited == [f"F{i}" for i in range(MAX_FRAMES, 70)]
    stack.ok("tab.navigate", tabId=tab, url=f"{stack.a.url}/chain.html?d=0&to=10")
    settled(stack, tab, 10)
    chain = stack.ok("tab.snapshot", tabId=tab)
    depths = [e["frame"]["depth"] for e in chain["elements"] if e.get("frame") and e["role"] == "button"]
    assert depths == list(range(1, MAX_DEPTH + 1))
    placeholder = [e for e in chain["elements"] if e.get("unreadable")]
    assert [(e["label"], e["unreadable"], e["frame"]["depth"]) for e in placeholder] == [
        (f"Chain {MAX_DEPTH + 1}", "limit", MAX_DEPTH)
    ]
    stack.ok("tabs.close", tabId=tab)


# ====================================================================== native input inside frames
def ext(stack: Stack, name: str, **arguments: Any) -> dict[str, Any]:
    return stack.call("extension.call", name=name, arguments=arguments)


def events(origin: Origin, prefix: str, expect: int = 0) -> list[str]:
    """The events `origin`'s native page reported whose name starts with `prefix`: once `expect` of them
    came (at most 10 s: a page's report is a fetch, late on a loaded machine), and 0.5 s more for any
    other."""
    for _ in range(200):
        if len([hit for hit in origin.hits if hit.startswith("/ev?what=" + prefix)]) >= expect:
            break
        time.sleep(0.05)
    time.sleep(0.5)
    return [
        urllib.parse.parse_qs(urllib.parse.urlsplit(hit).query)["what"][0]
        + ("" if "trusted=true" in hit else " untrusted")
        for hit in origin.hits
        if hit.startswith("/ev?what=" + prefix)
    ]


def test_native_input_lands_inside_scrolled_cross_origin_frames_two_deep(stack: Stack) -> None:
    """Issue 30 with issue 28's extensions: a button below the fold of a cross-origin frame that is itself
    below the top page's fold, and one in a frame of a third origin inside it, are pressed by trusted
    pointer events at the right point (each page's own server hears its button's pointerdown, which
    tab.click never sends); type_keys types into a field of the frame, hover reaches an element there, and a
    pointer drag of a slider in the inner frame moves by exactly the distance asked."""
    tab = stack.open(f"{stack.a.url}/native-top.html")
    settled(stack, tab, 2)
    found = labels(stack.ok("tab.snapshot", tabId=tab))
    assert found["Press 1"]["frame"] == {"origin": stack.b.url, "depth": 1}
    assert found["Press 2"]["frame"] == {"origin": stack.c.url, "depth": 2}
    page = stack.page(tab)
    assert stack.run(page.evaluate("scrollY")) == 0  # the frame starts below the fold
    clicked = ext(stack, "click", tabId=tab, ref=found["Press 1"]["ref"])
    assert clicked["success"] is True and clicked["result"]["clicked"] is True, clicked
    assert events(stack.b, "press", 1) == ["press1"]
    assert stack.run(page.evaluate("scrollY")) > 0  # scrolled to the frame, as a person would

    found = labels(stack.ok("tab.snapshot", tabId=tab))
    clicked = ext(stack, "click", tabId=tab, ref=found["Press 2"]["ref"])
    assert clicked["success"] is True, clicked
    assert events(stack.c, "press", 1) == ["press2"]
    assert events(stack.b, "press", 1) == ["press1"]  # nothing landed in the frame around it

    found = labels(stack.ok("tab.snapshot", tabId=tab))
    typed = ext(stack, "type_keys", tabId=tab, ref=found["Search 1"]["ref"], text="kelp")
    assert typed["success"] is True and typed["result"] == {"typed": 4}, typed
    assert events(stack.b, "keyup", 4) == ["keyup1-1", "keyup1-2", "keyup1-3", "keyup1-4"]
    hovered = ext(
        stack, "hover", tabId=tab, ref=labels(stack.ok("tab.snapshot", tabId=tab))["Hover 2"]["ref"]
    )
    assert hovered["success"] is True, hovered
    assert events(stack.c, "hover", 1) == ["hover2"]
    slider = labels(stack.ok("tab.snapshot", tabId=tab))["Slider 2"]["ref"]
    dragged = ext(stack, "drag", tabId=tab, ref=slider, by={"x": 40, "y": 0})
    assert dragged["success"] is True and dragged["result"]["via"] == "pointer", dragged
    assert events(stack.c, "slid", 1) == ["slid2-40"]
    stack.ok("tabs.close", tabId=tab)


def test_an_html5_drag_inside_a_cross_origin_frame_drops_on_its_zone(stack: Stack) -> None:
    """A draggable element of an out-of-process frame dragged 110 px down onto the frame's drop zone: the
    browser hands over the drag data from the frame's renderer, and the zone's trusted drop fires."""
    tab = stack.open(f"{stack.a.url}/drag-top.html")
    settled(stack, tab, 1)
    (source,) = [e for e in stack.ok("tab.snapshot", tabId=tab)["elements"] if e.get("text") == "Drag me"]
    assert source["frame"]["origin"] == stack.b.url
    dragged = ext(stack, "drag", tabId=tab, ref=source["ref"], by={"x": 10, "y": 110})
    assert dragged["success"] is True and dragged["result"]["via"] == "html5", dragged
    assert events(stack.b, "dropped", 1) == ["dropped"]
    stack.ok("tabs.close", tabId=tab)


def test_native_click_in_a_cross_origin_frame_covered_in_the_top_page_is_refused(stack: Stack) -> None:
    """The frame's button is clear in its own document, but the top page's fixed banner lies over the frame:
    the hit test in the parent's world names the banner and nothing is dispatched."""
    tab = stack.open(f"{stack.a.url}/native-cover-top.html")
    settled(stack, tab, 1)
    press = labels(stack.ok("tab.snapshot", tabId=tab))["Press 7"]
    refused = ext(stack, "click", tabId=tab, ref=press["ref"])
    refused_untouched(refused, "NOT_ACTIONABLE")
    assert "covered by banner 'Sticky header'" in refused["error"]["message"], refused
    assert events(stack.b, "press7") == []
    stack.run(stack.page(tab).evaluate("document.querySelector('[role=banner]').remove()"))
    press = labels(stack.ok("tab.snapshot", tabId=tab))["Press 7"]
    assert ext(stack, "click", tabId=tab, ref=press["ref"])["success"] is True
    assert events(stack.b, "press7", 1) == ["press7"]
    stack.ok("tabs.close", tabId=tab)


def test_native_click_on_a_frame_that_navigated_is_refused_before_any_event(stack: Stack) -> None:
    """The ref's frame got a new document after the snapshot: the native click is refused by the host
    (NODE_REPLACED, mayHaveCompleted false) and the new document hears nothing."""
    tab = stack.open(f"{stack.a.url}/native-cover-top.html")
    settled(stack, tab, 1)
    page = stack.page(tab)
    stack.run(page.evaluate("document.querySelector('[role=banner]').remove()"))
    press = labels(stack.ok("tab.snapshot", tabId=tab))["Press 7"]
    stack.run(page.evaluate(f"document.querySelector('iframe').src = '{stack.b.url}/native.html?n=8'"))
    stack.run(navigated_to(page, "n=8"))
    refused_untouched(ext(stack, "click", tabId=tab, ref=press["ref"]), "NODE_REPLACED")
    assert events(stack.b, "press8") == []
    stack.ok("tabs.close", tabId=tab)


# ====================================================================== a frame's document ends
def test_a_frame_that_navigates_between_snapshot_and_click_refuses_and_nothing_is_clicked(
    stack: Stack,
) -> None:
    """The frame gets a new document after the snapshot: its ref is refused before anything reaches a page
    (no click in either document), while the tab's other refs of the same snapshot still act."""
    tab = stack.open(f"{stack.a.url}/clicker-top.html")
    settled(stack, tab, 1)
    snap = stack.ok("tab.snapshot", tabId=tab)
    press, top = labels(snap)["Press"], labels(snap)["Top button"]
    page = stack.page(tab)
    stack.run(page.evaluate(f"document.getElementById('f').src = '{stack.b.url}/clicker.html?v=2'"))

    stack.run(navigated_to(page, "v=2"))
    stack.run(asyncio.sleep(0.3))
    # A frame's navigation is not the tab's: the top document's ref of that snapshot still acts.
    assert stack.ok("tab.click", tabId=tab, ref=top["ref"]) == {"clicked": True}
    assert stack.run(page.evaluate("window.topClicks")) == 1
    # Again, from a fresh snapshot: the frame navigates, and its ref is refused by the host.
    press = labels(stack.ok("tab.snapshot", tabId=tab))["Press"]
    stack.run(page.evaluate(f"document.getElementById('f').src = '{stack.b.url}/clicker.html?v=3'"))
    stack.run(navigated_to(page, "v=3"))
    refused_untouched(stack.call("tab.click", tabId=tab, ref=press["ref"]), "NODE_REPLACED", "STALE_SNAPSHOT")
    stack.run(asyncio.sleep(0.3))
    assert not [hit for hit in stack.b.hits if hit.startswith("/clicked")], stack.b.hits
    fresh = labels(stack.ok("tab.snapshot", tabId=tab))
    assert stack.ok("tab.click", tabId=tab, ref=fresh["Press"]["ref"]) == {"clicked": True}

    async def clicked() -> None:
        for _ in range(100):
            if "/clicked?v=3" in stack.b.hits:
                return
            await asyncio.sleep(0.05)

    stack.run(clicked())
    assert [hit for hit in stack.b.hits if hit.startswith("/clicked")] == ["/clicked?v=3"]
    stack.ok("tabs.close", tabId=tab)


def test_a_removed_frames_ref_is_refused_and_the_others_keep_working(stack: Stack) -> None:
    """A frame removed after the snapshot: its ref is refused with nothing done; the other frame's ref
    and the top document's still act."""
    tab = stack.open(f"{stack.a.url}/two-top.html")
    settled(stack, tab, 2)
    found = labels(stack.ok("tab.snapshot", tabId=tab))
    page = stack.page(tab)
    stack.run(page.evaluate("document.getElementById('goes').remove()"))
    stack.run(asyncio.sleep(0.3))
    # The removal is not the tab's navigation: the other frame's ref of that snapshot still acts ...
    assert stack.ok("tab.click", tabId=tab, ref=found["Button stays"]["ref"]) == {"clicked": True}
    # ... and, from a fresh snapshot, a removed frame's ref is refused with nothing done.
    found = labels(stack.ok("tab.snapshot", tabId=tab))
    stack.run(page.evaluate("document.getElementById('stays').remove()"))
    stack.run(asyncio.sleep(0.3))
    refused_untouched(stack.call("tab.click", tabId=tab, ref=found["Button stays"]["ref"]), "NODE_REPLACED")
    top = labels(stack.ok("tab.snapshot", tabId=tab))["Top button"]
    assert stack.ok("tab.click", tabId=tab, ref=top["ref"]) == {"clicked": True}
    stack.ok("tabs.close", tabId=tab)


def test_a_frame_removed_while_the_snapshot_reads_is_unavailable(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page removes a frame after the top document was read and before that frame's part is: the
    snapshot still answers, the removed frame is an `unavailable` placeholder, the other frame is read."""
    tab = stack.open(f"{stack.a.url}/two-top.html")
    settled(stack, tab, 2)
    page = stack.page(tab)
    first = Frames._first

    async def removing_first(self: Frames, tab_: Any, node: Any, infos: Any, deadline: float) -> None:
        if not getattr(removing_first, "done", False):
            removing_first.done = True  # type: ignore[attr-defined]
            await page.evaluate("document.getElementById('goes').remove()")
            await asyncio.sleep(0.3)
        await first(self, tab_, node, infos, deadline)

    monkeypatch.setattr(Frames, "_first", removing_first)
    snap = stack.ok("tab.snapshot", tabId=tab)
    found = labels(snap)
    # The frame element is gone from the page by the time its placeholder is described: no name is left.
    assert [(e["tag"], e["unreadable"]) for e in snap["elements"] if e.get("unreadable")] == [
        ("iframe", "unavailable")
    ]
    assert "Button goes" not in found and "Plain goes" not in snap["text"]
    assert found["Button stays"]["frame"] == {"origin": stack.c.url, "depth": 1}
    monkeypatch.undo()
    after = stack.ok("tab.snapshot", tabId=tab)
    assert not [
        e for e in after["elements"] if e.get("unreadable")
    ]  # gone from the page: gone from the snapshot
    assert "Button stays" in labels(after)
    stack.ok("tabs.close", tabId=tab)


def test_a_frame_whose_renderer_crashes_refuses_its_refs_and_the_tab_goes_on(stack: Stack) -> None:
    """The out-of-process frame's renderer crashes (for real: CDP `Page.crash` on its target). Playwright
    then believes the whole page crashed; the host does not: the frame's ref is refused with nothing done,
    the top document's refs of the same snapshot act, a new snapshot shows the frame `unavailable`, and
    `tab.navigate` gives the tab a fresh page that works."""
    seen = len(stack.b.hits)
    tab = stack.open(f"{stack.a.url}/clicker-top.html")
    settled(stack, tab, 1)
    snap = stack.ok("tab.snapshot", tabId=tab)
    press = labels(snap)["Press"]
    page = stack.page(tab)
    frame = next(f for f in page.frames if f != page.main_frame)
    crashed: list[bool] = []

    async def crash_the_frame() -> None:
        page.once("crash", lambda _page: crashed.append(True))
        session = await stack.chromium.context.new_cdp_session(frame)  # type: ignore[union-attr]
        with contextlib.suppress(Exception):  # the target crashes before it answers
            await asyncio.wait_for(session.send("Page.crash"), 2)
        for _ in range(100):
            if crashed:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(2.5)  # past the host's judgement of that crash (pages.CRASH_JUDGE_S)

    stack.run(crash_the_frame())
    assert crashed, "Playwright did not report the crash"
    assert any("a frame's renderer crashed in tab" in line for line in stack.lines), stack.lines[-5:]
    refused_untouched(stack.call("tab.click", tabId=tab, ref=press["ref"]), "NODE_REPLACED")
    assert not [hit for hit in stack.b.hits[seen:] if hit.startswith("/clicked")]
    listed = stack.ok("tabs.list")["tabs"]
    assert [t.get("crashed") for t in listed if t["tabId"] == tab] == [None]  # the tab did not crash
    after = labels(stack.ok("tab.snapshot", tabId=tab))
    assert after["Clicker"]["unreadable"] == "unavailable" and "Press" not in after
    assert stack.ok("tab.click", tabId=tab, ref=after["Top button"]["ref"]) == {"clicked": True}
    session = stack.chromium.pages.get(tab).cdp  # Playwright refuses page.evaluate now; CDP does not
    assert session is not None
    clicks = stack.run(
        session.send("Runtime.evaluate", {"expression": "window.topClicks", "returnByValue": True})
    )
    assert clicks["result"]["value"] == 1
    stack.ok("tab.navigate", tabId=tab, url=f"{stack.a.url}/clicker-top.html")
    settled(stack, tab, 1)
    fresh = labels(stack.ok("tab.snapshot", tabId=tab))
    assert stack.ok("tab.click", tabId=tab, ref=fresh["Press"]["ref"]) == {"clicked": True}
    stack.ok("tabs.close", tabId=tab)


def test_scripts_without_a_frames_handle_still_run_in_the_main_world(stack: Stack) -> None:
    """`routes` nothing for a handle the host never learned: a page without frames is read by the main
    world exactly as before (no frame tree asked for, one evaluation)."""
    tab = stack.open(f"{stack.a.url}/sandboxed.html")
    calls: list[str] = []
    evaluate = stack.frames.evaluate

    async def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append("frames")
        return await evaluate(*args, **kwargs)

    stack.frames.evaluate = spy  # type: ignore[method-assign]
    try:
        snap = stack.ok("tab.snapshot", tabId=tab)
        assert stack.ok("tab.click", tabId=tab, ref=labels(snap)["Agree"]["ref"]) == {"clicked": True}
    finally:
        del stack.frames.evaluate
    assert calls == [] and "frame" not in labels(snap)["Agree"]
    stack.ok("tabs.close", tabId=tab)


def test_the_login_journey_through_serve_over_http_and_the_c_library(stack: Stack) -> None:
    """The same sign-in through `kelpie-gateway serve --via-abi` over HTTP: element fields of frames cross
    the C library unchanged, and the host's log never holds the typed text."""
    process = start_host(["--approve-pairing", "auto"], "abi")
    try:
        host = Host(process, process.pair("frames"), "abi")
        seen = len(stack.b.posts)
        tab = str(ok(host, "tabs.open", {"url": f"{stack.a.url}/login-top.html"})["tabId"])
        for _ in range(50):
            snap = ok(host, "tab.snapshot", {"tabId": tab})
            if "User" in labels(snap):
                break
            time.sleep(0.1)
        user = labels(snap)["User"]
        assert user["frame"] == {"origin": stack.b.url, "depth": 1}
        assert ok(host, "tab.type", {"tabId": tab, "ref": user["ref"], "text": SECRET}) == {
            "typed": len(SECRET)
        }
        sign_in = labels(ok(host, "tab.snapshot", {"tabId": tab}))["Sign in"]
        assert ok(host, "tab.click", {"tabId": tab, "ref": sign_in["ref"]}) == {"clicked": True}
        for _ in range(100):
            if len(stack.b.posts) > seen:
                break
            time.sleep(0.05)
        assert f"user={SECRET}" in stack.b.posts[seen]
        assert SECRET not in repr(ok(host, "tab.snapshot", {"tabId": tab}))
    finally:
        process.stop()
    assert process.lines and not [line for line in process.lines if SECRET in line]
