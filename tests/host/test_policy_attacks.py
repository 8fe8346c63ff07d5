"""The site policy under attack (issue 27): every vector of the issue, and the ones that already held, run
through each transport — ``serve`` (Python API), ``serve --via-abi`` (the C library) and ``mcp`` (stdio) —
against real headless Chromium. One host per transport; every vector gets recorders of its own (fresh
ports on ``127.0.0.2`` and ``127.0.0.3``; TCP recorders count a bare connection, UDP recorders every
datagram) and asserts that none of them saw anything and that the host logged the stopped request (origin
only) — except WebRTC's STUN and WebTransport (Chromium sends nothing for them under the policy: no line to
log; ``test_the_silent_vectors_are_live_without_a_policy`` shows the same recorders hear them without it),
preconnect (a connection to the proxy, no request) and speculation rules (Chromium does not prefetch
cross-site through a proxy), where the recorders alone speak.

Topology: the attacks start from allowed sites (``127.0.0.1`` and, cross-site, ``127.0.0.4``: the attack
site of ``policy_testlib``). Blocked: ``127.0.0.2`` (any port); ``localhost:M`` (by name: ``sub.localhost``,
``localhost.`` are it); ``127.0.0.1:L`` (by address: ``localhost:L`` resolves to it). ``127.0.0.3`` is simply
not allowed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from policy_testlib import AttackSite, Client, EchoWebSocket, Recorders, base, make_client
from stdio_testlib import run_async

pytestmark = pytest.mark.timeout(600)

BLOCKED, OTHER = "127.0.0.2", "127.0.0.3"


@dataclass(frozen=True)
class Vector:
    """One attack. ``kind``: ``refuse`` (an agent call refused before dispatch), ``stop`` (an agent
    navigation stopped in the browser: a redirect), ``page`` (a page's own request). ``url``/``page`` are
    templates (``@@name@@``: a recorder's ``http://address:port``, ``@@name_host@@`` its ``address:port``,
    ``@@name_port@@`` its port; ``@@A@@``/``@@S@@`` the allowed sites, ``@@L@@``/``@@M@@`` the fixed ports,
    ``@@id@@`` unique). ``logs``: needles (templates) a ``site policy`` line must contain, one line each."""

    name: str
    kind: str
    url: str = ""
    page: str = ""
    method: str = "tab.navigate"
    tcp: dict[str, str] = field(default_factory=lambda: {"b": BLOCKED})
    udp: tuple[str, ...] = ()
    logs: tuple[str, ...] = ("@@b_host@@",)
    message: str = "blocked by the site policy"
    named: str = "@@b_host@@"
    click: str = ""
    """A ``page`` vector whose attack starts when the agent clicks the element of that label (``tab.click``)."""
    lands: bool = False
    """A ``page`` vector whose page then navigates its own tab to the refused origin: the tab ends on the
    proxy's refusal page."""
    """What a ``stop`` vector's refusal names (its origin's host and port)."""


HELPERS = """<script>
const done = (note) => { document.title = "done" + (note ? " " + note : ""); };
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const quietly = (p) => Promise.resolve(p).then(() => "ok", () => "failed");
const enc = encodeURIComponent;
</script>"""

REFUSE = [
    Vector("blocked origin", "refuse", "@@b@@/secret?token=t"),
    Vector("tabs.open of a blocked origin", "refuse", "@@b@@/popup", method="tabs.open"),
    Vector("https to a blocked address", "refuse", "https://@@b_host@@/"),
    Vector("an origin not allowed", "refuse", "http://@@o_host@@/x", tcp={"o": OTHER}, logs=("@@o_host@@",),
           message="not in the site policy's allowed origins"),
    Vector("IPv4-mapped IPv6, dotted", "refuse", "http://[::ffff:127.0.0.2]:@@b_port@@/"),
    Vector("IPv4-mapped IPv6, hex", "refuse", "http://[::ffff:7f00:2]:@@b_port@@/"),
    Vector("IPv4-mapped IPv6 of an address not allowed", "refuse", "http://[::ffff:127.0.0.3]:@@o_port@@/",
           tcp={"o": OTHER}, logs=("@@o_host@@",), message="not in the site policy's allowed origins"),
    Vector("localhost with a trailing dot", "refuse", "http://localhost.:@@M@@/", tcp={}, logs=("localhost:@@M@@",)),
    Vector("a subdomain of localhost", "refuse", "http://sub.localhost:@@M@@/", tcp={}, logs=("localhost:@@M@@",)),
    Vector("case and dots", "refuse", "HTTP://Sub.LocalHost.:@@M@@/", tcp={}, logs=("localhost:@@M@@",)),
    Vector("backslash before @ (read as Chromium reads it)", "refuse", "http://@@b_host@@\\@127.0.0.1:@@A_port@@/"),
    Vector("userinfo", "refuse", "http://user:pw@@@b_host@@/"),
    Vector("a decimal IPv4 address", "refuse", "http://2130706434:@@b_port@@/"),
    Vector("a hex IPv4 address", "refuse", "http://0x7f.0.0.2:@@b_port@@/"),
    Vector("an octal IPv4 address", "refuse", "http://0177.0.0.02:@@b_port@@/"),
    Vector("a short IPv4 address", "refuse", "http://127.2:@@b_port@@/"),
    Vector("an IPv4 address with a trailing dot", "refuse", "http://127.0.0.2.:@@b_port@@/"),
    Vector("a fragment hiding the host", "refuse", "http://@@b_host@@#@127.0.0.1:@@A_port@@/"),
    Vector("a name resolving to a blocked address", "refuse", "http://localhost:@@L@@/", tcp={},
           logs=("127.0.0.1:@@L@@",)),
    Vector("the unspecified address (this machine)", "refuse", "http://0.0.0.0:@@L@@/", tcp={},
           logs=("0.0.0.0:@@L@@",), message="not in the site policy's allowed origins"),
    Vector("a port ending in a dot: the real reason", "refuse", "http://127.0.0.1:@@a_port@@./x",
           tcp={"a": "127.0.0.1"}, logs=("an invalid URL",), message="not a valid URL (its port is not a number)"),
]

STOP = [
    Vector("redirect to a blocked origin", "stop", "@@A@@/redirect?to=@@b@@/landed"),
    Vector("redirect to https on a blocked address", "stop", "@@A@@/redirect?to=https://@@b_host@@/landed"),
    Vector("redirect to an IPv4-mapped form", "stop", "@@A@@/redirect?to=http://[::ffff:7f00:2]:@@b_port@@/"),
    Vector("redirect to a name resolving to a blocked address", "stop", "@@A@@/redirect?to=http://localhost:@@L@@/",
           tcp={}, logs=("127.0.0.1:@@L@@",), named="localhost:@@L@@"),
    Vector("tabs.open of a redirect to a blocked origin", "stop", "@@A@@/redirect?to=@@b@@/x", method="tabs.open"),
]

PAGE = [
    Vector("a SharedWorker's fetch", "page", page="""<script>
const w = new SharedWorker("/w/shared.js?to=" + enc("@@b@@/shared") + "&v=@@id@@");
w.port.onmessage = (e) => done(e.data); w.port.start();</script>"""),
    Vector("a dedicated worker's fetch", "page", page="""<script>
const w = new Worker("/w/dedicated.js?to=" + enc("@@b@@/dedicated")); w.onmessage = (e) => done(e.data);</script>"""),
    Vector("a service worker's fetch", "page", page="""<script>
const settled = (w) => new Promise((r) => { if (!w || ["activated", "redundant"].includes(w.state)) return r();
  w.addEventListener("statechange", () => ["activated", "redundant"].includes(w.state) && r()); });
navigator.serviceWorker.register("/w/sw.js?to=" + enc("@@b@@/sw") + "&v=@@id@@", {scope: "/w/@@id@@/"})
  .then((reg) => settled(reg.installing || reg.waiting || reg.active)).then(() => done("sw"), (e) => done("sw " + e));
</script>"""),
    Vector("window.open of an allowed URL that redirects to a blocked one", "page", page="""<script>
window.open("@@A@@/redirect?to=" + enc("@@b@@/popup")); done();</script>"""),
    Vector("window.open of a blocked URL", "page", page="""<script>window.open("@@b@@/popup"); done();</script>"""),
    Vector("redirects inside a cross-site iframe (an out-of-process frame)", "page",
           page="""<iframe src="@@S@@/p/@@id@@-frame"></iframe><script>done();</script>""",
           tcp={"nav": BLOCKED, "fetch": BLOCKED}, logs=("@@nav_host@@", "@@fetch_host@@")),
    Vector("an iframe of a blocked origin", "page", page="""<iframe src="@@b@@/framed"></iframe><script>done()</script>"""),
    Vector("a WebSocket", "page", page="""<script>
const ws = new WebSocket("ws://@@b_host@@/ws"); ws.onerror = ws.onclose = () => done("closed");</script>"""),
    Vector("a secure WebSocket", "page", page="""<script>
const ws = new WebSocket("wss://@@b_host@@/ws"); ws.onerror = ws.onclose = () => done("closed");</script>"""),
    Vector("WebRTC STUN (UDP)", "page", tcp={}, udp=("u",), logs=(), page="""<script>
const pc = new RTCPeerConnection({iceServers: [{urls: "stun:@@u_host@@"}]});
let found = 0; pc.onicecandidate = (e) => { if (e.candidate && / (srflx|relay|host) /.test(e.candidate.candidate)) found++; };
pc.createDataChannel("x");
pc.createOffer().then((o) => pc.setLocalDescription(o));
Promise.race([new Promise((r) => pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && r()), wait(4000)])
  .then(() => wait(500)).then(() => done("candidates " + found));</script>"""),
    Vector("WebRTC TURN over TCP (through the proxy: a CONNECT)", "page", page="""<script>
const pc = new RTCPeerConnection({iceServers: [{urls: "turn:@@b_host@@?transport=tcp", username: "u", credential: "c"}]});
pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o));
Promise.race([new Promise((r) => pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && r()), wait(4000)])
  .then(() => wait(500)).then(() => done());</script>"""),
    Vector("WebTransport (HTTP/3, UDP)", "page", tcp={}, udp=("u",), logs=(), page="""<script>
let wt; try { wt = new WebTransport("https://@@u_host@@/wt"); } catch (e) { done("threw"); }
if (wt) Promise.race([wt.ready, wait(3000)]).then(() => done("ready?"), () => done("failed"));</script>"""),
    Vector("preconnect and DNS prefetch", "page", tcp={"b": BLOCKED, "s": BLOCKED}, logs=(), page="""
<link rel="preconnect" href="@@b@@"><link rel="preconnect" href="https://@@s_host@@"><link rel="dns-prefetch" href="@@b@@">
<script>wait(1500).then(() => done());</script>"""),
    Vector("link prefetch", "page", page="""<link rel="prefetch" href="@@b@@/prefetch"><script>done();</script>"""),
    Vector("speculation rules (prefetch, prerender)", "page", tcp={"b": BLOCKED, "p": BLOCKED}, logs=(), page="""
<script type="speculationrules">{"prefetch": [{"source": "list", "urls": ["@@b@@/spec"]}],
 "prerender": [{"source": "list", "urls": ["@@p@@/pre"]}]}</script><script>wait(1500).then(() => done());</script>"""),
    Vector("subresources of every kind", "page",
           tcp={k: BLOCKED for k in ("img", "script", "css", "imp", "font", "video", "fetch", "xhr", "beacon", "es", "form", "obj")},
           logs=tuple(f"@@{k}_host@@" for k in ("img", "script", "css", "imp", "font", "video", "fetch", "xhr", "beacon", "es", "form", "obj")),
           page="""<img src="@@img@@/i.png"><script src="@@script@@/s.js"></script>
<link rel="stylesheet" href="@@css@@/c.css"><style>@import url("@@imp@@/i.css");
@font-face { font-family: F; src: url("@@font@@/f.woff"); } body { font-family: F; }</style>
<video src="@@video@@/v.mp4" autoplay muted></video><object data="@@obj@@/o.html"></object>
<iframe name="sink"></iframe><form id="f" method="post" action="@@form@@/post" target="sink"><input name="a" value="1"></form>
<p>text in F</p><script>
document.getElementById("f").submit();
const x = new XMLHttpRequest(); x.open("GET", "@@xhr@@/x"); x.send();
navigator.sendBeacon("@@beacon@@/b", "data");
new EventSource("@@es@@/es");
quietly(fetch("@@fetch@@/f", {mode: "no-cors"})).then(() => done());</script>"""),
    Vector("a redirect hop of a subresource", "page",
           page="""<img src="@@A@@/redirect?to=@@b@@/img.png"><script>done()</script>"""),
    Vector("meta refresh to a blocked origin", "page",
           page="""<meta http-equiv="refresh" content="1;url=@@b@@/refresh"><script>done()</script>""", lands=True),
    Vector("a script setting location", "page", lands=True,
           page="""<script>done(); setTimeout(() => location.href = "@@b@@/assign", 600);</script>"""),
    Vector("a form posted to a blocked origin (top level)", "page",
           page="""<form id="f" method="post" action="@@b@@/post"><input name="a" value="1"></form>
<script>done(); setTimeout(() => document.getElementById("f").submit(), 600);</script>""", lands=True),
    Vector("a data: URL frame", "page", page="""<iframe src="data:text/html,<script>fetch('@@b@@/data',{mode:'no-cors'})</script>"></iframe>
<script>done()</script>"""),
    Vector("a blob: worker", "page", page="""<script>
const src = "fetch('@@b@@/blob', {mode: 'no-cors'}).then(() => postMessage('f'), () => postMessage('x'));";
const w = new Worker(URL.createObjectURL(new Blob([src], {type: "text/javascript"}))); w.onmessage = (e) => done(e.data);</script>"""),
    Vector("the agent clicks a link to a blocked origin (preconnect on pointer down, then the navigation)",
           "page", click="go", lands=True, page="""<a href="@@b@@/clicked">go</a><script>done()</script>"""),
    Vector("a download link (cross-origin, so a navigation)", "page", lands=True,
           page="""<a id="d" href="@@b@@/file.bin" download>file</a>
<script>done(); setTimeout(() => document.getElementById("d").click(), 600);</script>"""),
    Vector("canonical forms fetched by a page", "page",
           tcp={k: BLOCKED for k in ("m1", "m2", "dec", "dot")},
           logs=("@@m1_host@@", "@@m2_host@@", "@@dec_host@@", "@@dot_host@@", "localhost:@@M@@", "127.0.0.1:@@L@@"),
           page="""<script>
const no = {mode: "no-cors"};
Promise.allSettled([fetch("http://[::ffff:127.0.0.2]:@@m1_port@@/", no), fetch("http://[::ffff:7f00:2]:@@m2_port@@/", no),
  fetch("http://2130706434:@@dec_port@@/", no), fetch("http://127.0.0.2.:@@dot_port@@/", no),
  fetch("http://sub.localhost:@@M@@/", no), fetch("http://localhost:@@L@@/", no)]).then(() => done());</script>"""),
]

WORKERS = {
    "/w/dedicated.js": """const to = new URL(location).searchParams.get("to");
fetch(to, {mode: "no-cors"}).then(() => postMessage("fetched"), () => postMessage("failed"));""",
    "/w/shared.js": """const to = new URL(location).searchParams.get("to");
const r = fetch(to, {mode: "no-cors"}).then(() => "fetched", () => "failed");
onconnect = (e) => { const port = e.ports[0]; r.then((x) => port.postMessage(x)); };""",
    "/w/sw.js": """const to = new URL(location).searchParams.get("to");
self.addEventListener("install", (e) => e.waitUntil(fetch(to, {mode: "no-cors"}).then(() => {}, () => {})));""",
}
FRAME = """<!doctype html><script>
fetch("@@S@@/redirect?to=" + encodeURIComponent("@@fetch@@/x"), {mode: "no-cors"})
  .finally(() => { location.href = "@@S@@/redirect?to=" + encodeURIComponent("@@nav@@/y"); });</script>"""


class World:
    """The recorders and allowed sites of the whole module, and the fixed blocked ports ``L`` and ``M``."""

    def __init__(self) -> None:
        self.recorders = Recorders()
        self.site = AttackSite(("127.0.0.1", "127.0.0.4"))
        for path, body in WORKERS.items():
            self.site.page(path, body, "text/javascript")
        self.fixed = {"L": self.recorders.tcp("127.0.0.1"), "M": self.recorders.tcp("127.0.0.1")}
        self.echo = EchoWebSocket("127.0.0.4")
        self.ids = iter(range(1, 10_000))

    @property
    def args(self) -> list[str]:
        L, M = self.fixed["L"][1], self.fixed["M"][1]
        return [
            "--allowed-origins", "http://127.0.0.1:*,http://127.0.0.4:*,http://localhost:*",
            "--blocked-origins", f"http://127.0.0.2:*,http://127.0.0.1:{L},http://localhost:{M}",
        ]

    def bind(self, vector: Vector) -> tuple[dict[str, str], list[tuple[str, int]]]:
        """Fresh recorders for one run of ``vector``: the template values and every recorder made."""
        values = {
            "A": self.site.bases["127.0.0.1"], "S": self.site.bases["127.0.0.4"],
            "A_port": self.site.bases["127.0.0.1"].rsplit(":", 1)[1],
            "L": str(self.fixed["L"][1]), "M": str(self.fixed["M"][1]), "id": f"v{next(self.ids)}",
        }
        made = []
        for name, address in vector.tcp.items():
            where = self.recorders.tcp(address)
            made.append(where)
            values.update({name: base(where), f"{name}_host": f"{where[0]}:{where[1]}", f"{name}_port": str(where[1])})
        for name in vector.udp:
            where = self.recorders.udp(BLOCKED)
            made.append(where)
            values.update({f"{name}_host": f"{where[0]}:{where[1]}", f"{name}_port": str(where[1])})
        return values, made


def fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"@@(\w+)@@", lambda m: values[m.group(1)], template)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    made = World()
    yield made
    made.site.stop()
    made.echo.stop()
    made.recorders.close()


@pytest.fixture(scope="module", params=["serve", "abi", "stdio"])
def client(request: pytest.FixtureRequest, world: World) -> Iterator[Client]:
    made = make_client(request.param, world.args)
    try:
        yield made
    finally:
        made.close()
        # The fixed recorders are shared by every vector and transport: nothing may ever reach them.
        for where in world.fixed.values():
            assert world.recorders.seen(where) == [], (made.name, where, world.recorders.seen(where))


def fresh_tab(client: Client, world: World) -> str:
    """Close every tab but one and return it (popups of earlier vectors do not pile up)."""
    tabs = client.ok("tabs.list", {})["tabs"]
    keep = tabs[0]["tabId"]
    for tab in tabs[1:]:
        client.call("tabs.close", {"tabId": tab["tabId"]})
    client.ok("tab.navigate", {"tabId": keep, "url": world.site.bases["127.0.0.1"] + "/start"})
    return keep


def logged(client: Client, since: int, needles: list[str]) -> None:
    """Every needle appears in a ``site policy`` line logged after line ``since`` (waiting, bounded)."""
    for needle in needles:
        lines = [line for line in client.wait_for_log(needle, since) if line.startswith("site policy: ")]
        assert lines, f"{client.name}: no site-policy line naming {needle!r}:\n" + "\n".join(client.lines()[since:][-30:])
        assert not re.search(r"/(secret|landed|popup|shared|dedicated|sw|framed|x|y|post|assign|blob)\b", lines[0]), lines


def nothing_reached(world: World, made: list[tuple[str, int]], client: Client, vector: Vector) -> None:
    for where in made:
        assert world.recorders.seen(where) == [], (client.name, vector.name, where, world.recorders.seen(where))


@dataclass
class Run:
    """One run of an agent-call vector: its template values, recorders, tab, log position and answer."""

    values: dict[str, str]
    made: list[tuple[str, int]]
    tab: str
    since: int
    outcome: dict[str, object]


def agent_call(client: Client, world: World, vector: Vector) -> Run:
    """Make ``vector``'s call (``tab.navigate`` on a fresh tab, or ``tabs.open``) with fresh recorders."""
    values, made = world.bind(vector)
    tab = fresh_tab(client, world)
    since = len(client.lines())
    url = fill(vector.url, values)
    params = {"url": url} if vector.method == "tabs.open" else {"tabId": tab, "url": url}
    return Run(values, made, tab, since, client.call(vector.method, params))


@pytest.mark.parametrize("vector", REFUSE, ids=lambda v: v.name)
def test_refused_before_dispatch(client: Client, world: World, vector: Vector) -> None:
    run = agent_call(client, world, vector)
    values, made, tab, since, refusal = run.values, run.made, run.tab, run.since, run.outcome
    assert refusal["success"] is False, (client.name, vector.name, refusal)
    assert refusal["error"]["code"] == "NOT_AUTHORIZED" and refusal["mayHaveCompleted"] is False, refusal
    assert vector.message in refusal["error"]["message"], refusal
    for secret in ("/secret", "token=t", "pw", "/popup", "/x"):
        assert secret not in refusal["error"]["message"], refusal
    logged(client, since, [fill(n, values) for n in vector.logs])
    nothing_reached(world, made, client, vector)
    # Nothing was dispatched, so the tab needs no reconcile: the next mutation goes through.
    client.ok("tab.navigate", {"tabId": tab, "url": world.site.bases["127.0.0.1"] + "/after"})


@pytest.mark.parametrize("vector", STOP, ids=lambda v: v.name)
def test_stopped_in_the_browser(client: Client, world: World, vector: Vector) -> None:
    run = agent_call(client, world, vector)
    values, made, since, outcome = run.values, run.made, run.since, run.outcome
    assert outcome["success"] is False and outcome["error"]["code"] == "NOT_AUTHORIZED", (client.name, outcome)
    # The allowed first hop was requested and the tab left its page: an unknown outcome.
    assert outcome["mayHaveCompleted"] is True, outcome
    assert fill(vector.named, values) in outcome["error"]["message"], outcome
    logged(client, since, [fill(n, values) for n in vector.logs])
    nothing_reached(world, made, client, vector)


@pytest.mark.parametrize("vector", PAGE, ids=lambda v: v.name)
def test_a_page_cannot_reach_a_refused_origin(client: Client, world: World, vector: Vector) -> None:
    values, made = world.bind(vector)
    page = f"/p/{values['id']}"
    world.site.page(page, "<!doctype html><title>attack</title>" + HELPERS + fill(vector.page, values))
    world.site.page(f"/p/{values['id']}-frame", fill(FRAME, values) if "nav" in values else "")
    tab = fresh_tab(client, world)
    since = len(client.lines())
    client.ok("tab.navigate", {"tabId": tab, "url": world.site.bases["127.0.0.1"] + page})
    if vector.click:
        client.wait_for_title(tab, "done")
        elements = client.ok("tab.snapshot", {"tabId": tab})["elements"]
        ref = next(e["ref"] for e in elements if e["label"] == vector.click)
        client.ok("tab.click", {"tabId": tab, "ref": ref})
    title = client.wait_for_title(tab, "Blocked by the site policy" if vector.lands else "done")
    if vector.udp:
        assert "candidates 0" in title or "WebTransport" in vector.name, (client.name, title)
    logged(client, since, [fill(n, values) for n in vector.logs])
    nothing_reached(world, made, client, vector)
    tabs = client.ok("tabs.list", {})["tabs"]
    assert all(t["title"] != "Foreign" for t in tabs), tabs


# ---------------------------------------------------------------------- what is allowed still works
ALLOWED = """<script>
const results = {};
const note = (k) => (v) => { results[k] = v; };
const checks = [
  fetch("@@A@@/echo", {method: "POST", body: "x".repeat(300000)}).then((r) => r.text()).then(note("post")),
  fetch("@@A@@/redirect?to=" + enc("@@S@@/echo")).then((r) => r.text()).then(note("redirect")),
  fetch("http://localhost:@@A_port@@/echo", {method: "POST", body: "abc"}).then((r) => r.text()).then(note("localhost")),
  new Promise((r) => { const ws = new WebSocket("@@WS@@"); ws.onopen = () => ws.send("hello");
    ws.onmessage = (e) => { note("ws")(e.data); ws.close(); r(); }; ws.onerror = () => r(note("ws")("error")); }),
  new Promise((r) => { const f = document.createElement("iframe"); f.src = "@@S@@/p/frame-ok"; f.onload = () => r(note("frame")("loaded"));
    document.documentElement.append(f); }),
  new Promise((r) => { const w = new Worker("/w/dedicated.js?to=" + enc("@@S@@/echo")); w.onmessage = (e) => r(note("worker")(e.data)); }),
];
Promise.race([Promise.allSettled(checks), wait(8000)]).then(() => done(JSON.stringify(results)));</script>"""


def test_what_the_policy_allows_still_works_through_its_proxy(client: Client, world: World) -> None:
    """The other half of the policy: allowed origins load normally through the proxy — a POST body of 300 kB,
    a redirect between allowed sites, ``localhost`` by name, a WebSocket (a ``CONNECT`` tunnel) to a
    cross-site allowed server, a cross-site frame and a worker's fetch."""
    values = {"A": world.site.bases["127.0.0.1"], "S": world.site.bases["127.0.0.4"], "WS": world.echo.url,
              "A_port": world.site.bases["127.0.0.1"].rsplit(":", 1)[1]}
    world.site.page("/p/allowed", "<!doctype html><title>allowed</title>" + HELPERS + fill(ALLOWED, values))
    tab = fresh_tab(client, world)
    since = len(client.lines())
    client.ok("tab.navigate", {"tabId": tab, "url": values["A"] + "/p/allowed"})
    title = client.wait_for_title(tab, "done")
    results = json.loads(title.removeprefix("done "))
    expected = {"post": "300000", "redirect": "0", "localhost": "3", "ws": "hello", "frame": "loaded", "worker": "fetched"}
    assert results == expected, (client.name, title)
    assert not [line for line in client.lines()[since:] if line.startswith("site policy: blocked") and "127.0.0." in line]


# ---------------------------------------------------------------------- the silent vectors are real
def test_the_silent_vectors_are_live_without_a_policy(world: World) -> None:
    """WebRTC STUN and WebTransport leave no log line under the policy because Chromium sends nothing;
    without the policy's flags the same pages reach the same kind of recorder — so the recorders' silence in
    the suite is the policy's doing, not a page that never tried."""
    from kelpie_gateway.host.browser import CHROMIUM_FLAGS, find_chromium
    from playwright.async_api import async_playwright

    silent = [v for v in PAGE if v.name in ("WebRTC STUN (UDP)", "WebTransport (HTTP/3, UDP)")]
    runs = []
    for vector in silent:
        values, made = world.bind(vector)
        page = f"/p/{values['id']}"
        world.site.page(page, "<!doctype html><title>attack</title>" + HELPERS + fill(vector.page, values))
        runs.append((vector, world.site.bases["127.0.0.1"] + page, made))

    async def visit() -> None:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=find_chromium(None), args=list(CHROMIUM_FLAGS))
            try:
                for _vector, url, _made in runs:
                    tab = await browser.new_page()
                    await tab.goto(url)
                    await tab.wait_for_function("document.title.startsWith('done')", timeout=15_000)
                    await tab.close()
            finally:
                await browser.close()

    run_async(visit())
    for vector, _url, made in runs:
        assert any(world.recorders.seen(where) for where in made), (vector.name, made)


# ---------------------------------------------------------------------- secrets in URLs, in the browser
def test_urls_are_reported_without_their_secrets(client: Client, world: World) -> None:
    """A tab at an OAuth callback (``?code=…``) and a link carrying userinfo and a client secret: the
    navigation's url, the tab's url in tabs.list, the snapshot's url and the link's url keep where they
    point and lose the credentials (docs/contract-notes.md "URLs the gateway reports")."""
    a = world.site.bases["127.0.0.1"]
    world.site.page("/cb", '<!doctype html><title>callback</title>'
                    '<a href="http://alice:s3cret@127.0.0.4:9/authorize?client_secret=zzz&amp;scope=read">next</a>')
    tab = fresh_tab(client, world)
    navigated = client.ok("tab.navigate", {"tabId": tab, "url": a + "/cb?code=SPLxlOBeZQ&state=xyz"})
    shown = a + "/cb?code=REDACTED&state=xyz"
    assert navigated["url"] == shown
    listed = next(t for t in client.ok("tabs.list", {})["tabs"] if t["tabId"] == tab)
    assert listed["url"] == shown
    snap = client.ok("tab.snapshot", {"tabId": tab})
    assert snap["url"] == shown
    link = next(e for e in snap["elements"] if e["label"] == "next")
    assert link["url"] == "http://127.0.0.4:9/authorize?client_secret=REDACTED&scope=read"
    everything = json.dumps([navigated, listed, snap])
    assert "SPLxlOBeZQ" not in everything and "s3cret" not in everything and "zzz" not in everything
