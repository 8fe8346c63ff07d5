#!/usr/bin/env python3
"""The working reader against a previous one, side by side in one browser; corpus identity; host timing.

Usage::

    .venv/bin/python tools/bench_reader.py speed    [--base REV] [--items 10000 100000] [--rounds 5] [--firsts 3]
    .venv/bin/python tools/bench_reader.py calls    [--base REV] [--items 10000]
    .venv/bin/python tools/bench_reader.py host     [--items 10000 100000] [--rounds 5] [--via-abi]
    .venv/bin/python tools/bench_reader.py frames   [--rounds 15] [--via-abi]
    .venv/bin/python tools/bench_reader.py coverage [--base REV] [--corpus DIR]
    .venv/bin/python tools/bench_reader.py golden   [--write | --base REV] [--only ENTRY …] [--corpus DIR]

``--base`` names the commit whose ``engine/kelpie_gateway/js`` sources are the previous reader (default:
the merge base of HEAD and ``main``). Both readers are assembled exactly as
:func:`kelpie_gateway.reader.assemble_bundle` does and run alternating (``speed``: each in its own tab of
the same browser), so machine load hits both alike (2 shared cores: the ratios count, not the milliseconds).

* ``speed``: per ``--items`` size, one ``tab.snapshot`` (12,000 chars, 200 elements) of a page with that
  many list items (every 50th a heading, every 10th a link, "The one button at the end" after the
  list), timed inside the page, each reader in its own tab and renderer (wrappers are per world and GC per
  heap: sharing them would share their cost); prints each reader's first read of its fresh world, the median/min/max of the
  repeated reads, the answer's size, whether the end button is among the elements, and the ratios
  working/previous (issue 16: 10k ≤ 0.1× Playwright MCP, 100k ≤ 1 s end to end). Also the median
  renderer CPU time per repeated read (``cpu ms``: CDP ``SystemInfo.getProcessInfo`` before and after
  each read, summed over the renderer processes, of which only the measured tab's is busy): on a
  shared machine wall time includes the time the renderer waited for a core, CPU time does not, so
  its ratio is the steadier one (the clock behind it ticks in 10 ms, hence the mean over the rounds).
* ``calls``: a deterministic measure for a noisy machine: per ``--items`` size, the DOM and CSSOM calls
  (every getter, setter and method of the DOM, CSSOM and window interfaces, counted by name) one
  snapshot of each reader makes in its own fresh tab, first read and a repeated read; prints the totals
  and the names whose counts differ. Counting wraps every interface member in the isolated world, so
  times are meaningless here; the counts are exact and repeatable (one read of the same page and the
  same reader makes the same calls).
* ``host``: the same pages through a real ``kelpie-gateway serve`` (HTTP, Python API or ``--via-abi``):
  the wall time of whole ``tab.snapshot`` calls, first and repeated, and whether the end button is listed.
* ``frames``: issue 30's figure, through a real ``kelpie-gateway serve`` (HTTP): ``tab.snapshot`` of a
  page holding 5 cross-origin frames (each from an origin of its own, 127.0.0.2–.6: 5 out-of-process
  frames, each read in its own world and composed), of the same page with 5 same-origin frames (read in
  their own worlds, in the page's process), and of the same content inlined in one document; the three
  tabs are read in turn, round after round, so load hits them alike. Prints the first snapshot of each and
  the median/min/max of the repeated ones, and the ratios against the inlined page.
* ``coverage``: for every corpus entry page (``pages.txt``): the controls (listed elements that are not
  headings or images) of the previous reader's one snapshot, of the new reader's first page, and of
  the new reader's first page plus every continuation page; prints per page and in total how many of
  the previous reader's controls the new reader lost (must be 0) and how many pages reach all their
  controls only through continuation.
* ``golden``: corpus identity (``tests/browser/corpusgolden.py``). Without options: each page's digest
  of the working reader against ``tests/browser/corpus_golden.json``. ``--write``: record the working
  reader's digests (only for an intended, reviewed change: docs/reader.md, "Corpus identity").
  ``--base REV``: also run REV's reader on a fresh load of each page and print the actual difference.
"""

from __future__ import annotations

import argparse
import functools
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Final

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from hostworld import HostWorld  # noqa: E402
from kelpie_gateway import reader  # noqa: E402
from kelpie_gateway.host.browser import CHROMIUM_FLAGS  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

NOT_CONTROLS = {"heading", "img"}


def old_bundle(rev: str, name: str) -> str:
    """Bundle `name` assembled from the JS sources at git `rev` (same assembly as the engine's): a
    common source is the file of that name at `rev`, or, where the reader is split (js/core/, …), the
    concatenation of that folder's parts at `rev` in file-name order, as reader.source_parts reads them."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
        ).stdout

    def source(file: str) -> str:
        js = f"{rev}:engine/kelpie_gateway/js"
        folder = file.removesuffix(".js")
        listed = git("ls-tree", "--name-only", f"{js}/")
        if file in reader.COMMON_SOURCES and file not in listed.split() and folder in listed.split():
            parts = sorted(
                n for n in git("ls-tree", "--name-only", f"{js}/{folder}/").split() if n.endswith(".js")
            )
            return "".join(git("show", f"{js}/{folder}/{part}") for part in parts)
        return git("show", f"{js}/{file}")

    original = reader._source_text
    reader._source_text = source  # type: ignore[assignment]
    try:
        return reader.assemble_bundle(name)
    finally:
        reader._source_text = original  # type: ignore[assignment]


def script(bundle: str, **params: Any) -> str:
    return f"{bundle}({reader.js_literal(params)})"


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(directory: Path) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def big_page(items: int) -> str:
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{items} items</title></head><body>
<ul id="list"></ul><button onclick="window.clicked = true">The one button at the end</button>
<script>
  const list = document.getElementById('list');
  for (let i = 0; i < {items}; i++) {{
    const li = document.createElement('li');
    const e = document.createElement(i % 50 === 0 ? 'h3' : i % 10 === 0 ? 'a' : 'span');
    if (e.localName === 'a') e.href = '/item/' + i;
    e.textContent = 'Item ' + i;
    li.appendChild(e);
    list.appendChild(li);
  }}
</script></body></html>"""


END_BUTTON = "The one button at the end"


def speed(args: argparse.Namespace, browser: Any) -> None:
    """Per page size: the previous and the working reader alternating, each in its own tab, timed in the page.

    Each reader gets its own tab in its own browser context (its own document, isolated world and
    renderer process): a node's wrapper in a world is made by the first script that touches it and lives
    until GC, and a renderer's GC may run during whichever script comes next, so two readers sharing a
    world or a heap would share those costs. First reads (a fresh world makes every wrapper, as after a
    navigation) are reported apart: `--firsts` loads of the page per reader, each laid out (as the host's
    navigation does) and then read once in its new document's fresh world, the two readers' loads
    alternating and the order flipped every time — whichever tab reads first right after the pages are
    loaded is slower (two identical readers measured 0.67× for the second), so a single first read per
    reader compares order, not readers. Then `--rounds` repeated reads, alternating the same way.
    """
    old, new = old_bundle(args.base, "snapshot"), reader.assemble_bundle("snapshot")
    print(
        f"tab.snapshot (12,000 chars, 200 elements), previous = {args.base[:12]}, working = this tree; "
        f"times inside the page; each reader in its own tab: the median of {args.firsts} first reads of a "
        f"freshly loaded page, then the median of {args.rounds} alternating repeated reads; cpu ms = renderer "
        f"CPU time per read, mean (first / repeated)"
    )
    print(
        f"{'items':>7} {'reader':9} {'first ms':>9} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'cpu ms':>15} "
        f"{'chars':>6} {'elements':>8}  end button"
    )
    system = browser.new_browser_cdp_session()

    def renderer_cpu_ms() -> float:
        info = system.send("SystemInfo.getProcessInfo")["processInfo"]
        return 1000 * sum(p["cpuTime"] for p in info if p["type"] == "renderer")

    with tempfile.TemporaryDirectory() as tmp:
        server, port = serve(Path(tmp))
        for items in args.items:
            (Path(tmp) / f"big{items}.html").write_text(big_page(items), encoding="utf-8")
            params = reader.js_literal({"key": secrets.token_hex(16), "maxChars": 12000, "maxElements": 200})
            # Timed inside the page (performance.now around the script), so CDP transfer noise stays out.
            timed = (
                (
                    "(async () => { const t = performance.now(); const v = await BUNDLE(PARAMS); "
                    "return { ms: performance.now() - t, n: v.elements ? v.elements.length : -1, "
                    "chars: typeof v.text === 'string' ? v.text.length : -1, "
                    "end: !!v.elements && v.elements.some((e) => e.label === END) }; })()"
                )
                .replace("END", json.dumps(END_BUTTON))
                .replace("PARAMS", params)
            )
            scripts = {"previous": timed.replace("BUNDLE", old), "working": timed.replace("BUNDLE", new)}
            url = f"http://127.0.0.1:{port}/big{items}.html"
            contexts, pages, worlds = {}, {}, {}
            for (
                name
            ) in scripts:  # a browser context each: its own renderer process, so its own V8 heap and GC
                contexts[name] = browser.new_context()
                pages[name] = contexts[name].new_page()
                worlds[name] = HostWorld(pages[name])

            def timed_read(world: HostWorld, script: str) -> tuple[dict[str, Any], float]:
                before = renderer_cpu_ms()
                value = world.evaluate(script, timeout_ms=600000)
                return value, renderer_cpu_ms() - before

            def orders(names: list[str], n: int) -> list[list[str]]:
                return [names if i % 2 == 0 else names[::-1] for i in range(n)]

            for name in scripts:
                pages[name].goto(url, wait_until="load", timeout=600000)
            shape: dict[str, dict[str, Any]] = {}
            first: dict[str, list[float]] = {name: [] for name in scripts}
            first_cpu: dict[str, list[float]] = {name: [] for name in scripts}
            for i, order in enumerate(orders(list(scripts), args.firsts)):
                for name in order:
                    if i > 0:
                        pages[name].goto(url, wait_until="load", timeout=600000)
                    # the first layout, as the host's navigation waits for it (docs/host.md), in the page's world
                    pages[name].evaluate("document.documentElement.getBoundingClientRect().height")
                    value, used = timed_read(
                        worlds[name], scripts[name]
                    )  # a new document: HostWorld makes its world afresh
                    shape.setdefault(name, value)
                    first[name].append(value["ms"])
                    first_cpu[name].append(used)
            times: dict[str, list[float]] = {name: [] for name in scripts}
            cpu: dict[str, list[float]] = {name: [] for name in scripts}
            for order in orders(list(scripts), args.rounds):
                for name in order:
                    value, used = timed_read(worlds[name], scripts[name])
                    times[name].append(value["ms"])
                    cpu[name].append(used)
            for c in contexts.values():
                c.close()
            med = {name: statistics.median(v) for name, v in times.items()}
            mfirst = {name: statistics.median(v) for name, v in first.items()}
            mcpu = {name: statistics.fmean(v) for name, v in cpu.items()}
            mfirst_cpu = {name: statistics.fmean(v) for name, v in first_cpu.items()}
            for name in scripts:
                v = shape[name]
                cpus = f"{mfirst_cpu[name]:.0f} / {mcpu[name]:.0f}"
                print(
                    f"{items:7} {name:9} {mfirst[name]:9.1f} {med[name]:10.1f} {min(times[name]):8.1f} "
                    f"{max(times[name]):8.1f} {cpus:>15} {v['chars']:6} {v['n']:8}  "
                    f"{'listed' if v['end'] else 'NOT listed'}"
                )
            print(
                f"{items:7} ratio working/previous: first (median) {mfirst['working'] / mfirst['previous']:.3f}, "
                f"repeated median {med['working'] / med['previous']:.3f}, "
                f"minimum {min(times['working']) / min(times['previous']):.3f}, renderer CPU first "
                f"{mfirst_cpu['working'] / mfirst_cpu['previous']:.3f}, repeated "
                f"{mcpu['working'] / mcpu['previous']:.3f}",
                flush=True,
            )
        server.shutdown()


# Installed in the reader's world before the reader runs (``calls``): wraps every accessor and method of the
# interfaces a read can touch, counting calls by "Interface.member", in that world only (its prototypes
# are its own; the page's are untouched).
COUNT_CALLS = r"""(() => {
  if (globalThis.__kelpieCalls) return true;
  const counts = new Map();
  Object.defineProperty(globalThis, "__kelpieCalls", { value: counts });
  const bump = (k) => counts.set(k, (counts.get(k) || 0) + 1);
  const names = Object.getOwnPropertyNames(globalThis).filter((n) => /^(Node|Element|HTML\w*Element|SVG\w*Element|Document|ShadowRoot|DocumentFragment|CharacterData|Text|CSSStyleDeclaration|CSSStyleProperties|Range|AbstractRange|Window|EventTarget|NodeList|HTMLCollection|DOMRect\w*|MutationObserver)$/.test(n));
  for (const n of names) {
    const proto = globalThis[n] && globalThis[n].prototype;
    if (!proto) continue;
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (key === "constructor") continue;
      const d = Object.getOwnPropertyDescriptor(proto, key);
      if (!d || !d.configurable) continue;
      const label = n + "." + key;
      if (d.get) {
        const get = d.get;
        d.get = function () { bump(label); return get.call(this); };
      }
      if (typeof d.value === "function") {
        const f = d.value;
        d.value = function (...a) { bump(label); return f.apply(this, a); };
      }
      if (d.get || typeof d.value === "function") Object.defineProperty(proto, key, d);
    }
  }
  const gcs = globalThis.getComputedStyle;
  // computed-style properties are named properties of each declaration, not prototype members: a proxy counts them
  const style = { get: (t, k) => { if (typeof k === "string") bump("computed style." + k); return t[k]; } };
  globalThis.getComputedStyle = function (...a) {
    bump("window.getComputedStyle");
    return new Proxy(gcs.apply(this, a), style);
  };
  return true;
})()"""
TAKE_CALLS = (
    "(() => { const c = globalThis.__kelpieCalls; const o = Object.fromEntries(c); c.clear(); return o; })()"
)


def calls(args: argparse.Namespace, browser: Any) -> None:
    """Per page size: the DOM/CSSOM calls of one snapshot per reader, first and repeated read (see COUNT_CALLS)."""
    old, new = old_bundle(args.base, "snapshot"), reader.assemble_bundle("snapshot")
    bundles = {"previous": old, "working": new}
    with tempfile.TemporaryDirectory() as tmp:
        server, port = serve(Path(tmp))
        for items in args.items:
            (Path(tmp) / f"big{items}.html").write_text(big_page(items), encoding="utf-8")
            params = reader.js_literal({"key": secrets.token_hex(16), "maxChars": 12000, "maxElements": 200})
            counted: dict[str, list[dict[str, int]]] = {}
            for name, bundle in bundles.items():
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/big{items}.html", wait_until="load", timeout=600000)
                world = HostWorld(page)
                world.evaluate(COUNT_CALLS)
                counted[name] = []
                for _ in range(2):
                    world.evaluate(f"{bundle}({params})", timeout_ms=600000)
                    counted[name].append(world.evaluate(TAKE_CALLS))
                context.close()
            for i, which in enumerate(("first read", "repeated read")):
                before, after = counted["previous"][i], counted["working"][i]
                total_b, total_a = sum(before.values()), sum(after.values())
                print(
                    f"{items:7} items, {which}: DOM/CSSOM calls previous {total_b:,}, working {total_a:,} "
                    f"({total_a / total_b:.3f})"
                )
                for key in sorted(
                    set(before) | set(after), key=lambda k: -abs(after.get(k, 0) - before.get(k, 0))
                ):
                    b, a = before.get(key, 0), after.get(key, 0)
                    if a != b:
                        print(f"          {key:48} {b:9,} -> {a:9,}")
        server.shutdown()


def host_caller(process: Any, token: str, timeout: float) -> Any:
    """``call(method, params) -> (wall ms, envelope)``: one request to the host's HTTP API."""
    import urllib.request

    def call(method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        body = json.dumps({"version": 1, "id": 1, "method": method, "params": params}).encode()
        request = urllib.request.Request(
            process.url + "/v1/browser-control",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        )
        t = time.perf_counter()
        with urllib.request.urlopen(request, timeout=timeout) as response:
            envelope = json.loads(response.read())
        return (time.perf_counter() - t) * 1000, envelope

    return call


def host(args: argparse.Namespace) -> None:
    """One full tab.snapshot through the reference host's HTTP API (Python engine, real Chromium)."""

    from kelpie_gateway.host.launch import HostProcess

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        (site / "index.html").write_text("<!doctype html><title>bench</title><p>bench</p>", encoding="utf-8")
        for items in args.items:
            (site / f"big{items}.html").write_text(big_page(items), encoding="utf-8")
        extra = ["--site", str(site), "--approve-pairing", "auto"] + (["--via-abi"] if args.via_abi else [])
        with HostProcess(extra) as process:
            token = process.pair("bench-reader")
            site_url = (process.wait_for_line("site ") or "").rsplit(" at ", 1)[1].rstrip("/")
            call = host_caller(process, token, 600)

            print(
                f"tab.snapshot through the host (HTTP, {'C library' if args.via_abi else 'Python API'}), "
                f"reader of this tree; wall time of the HTTP call"
            )
            for items in args.items:
                _, opened = call("tabs.open", {})
                assert opened["success"], opened
                tab = opened["result"]["tabId"]
                url = f"{site_url}/big{items}.html"
                _, went = call("tab.navigate", {"tabId": tab, "url": url, "timeoutMs": 30000})
                if not went["success"]:  # a slow load of a huge page on a loaded machine: it still commits
                    assert went["error"]["code"] == "TIMEOUT", went
                    time.sleep(30)
                runs = []
                for i in range(args.rounds):
                    ms, env = call("tab.snapshot", {"tabId": tab, "timeoutMs": 30000})
                    for _ in range(
                        60
                    ):  # a timed-out read still runs in the page: the lane is busy until it ends
                        if env["success"] or env["error"]["code"] != "BUSY":
                            break
                        time.sleep(5)
                        ms, env = call("tab.snapshot", {"tabId": tab, "timeoutMs": 30000})
                    if not env["success"]:
                        print(f"{items:7} items: tab.snapshot failed after {ms:.0f} ms: {env['error']}")
                        continue
                    result = env["result"]
                    end = any(e["label"] == END_BUTTON for e in result["elements"])
                    runs.append(ms)
                    if i == 0:
                        first = ms
                        print(
                            f"{items:7} items: {len(result['text'])} chars, {len(result['elements'])} elements, "
                            f"end button {'listed' if end else 'NOT listed'}, next {'yes' if result.get('next') else 'no'}"
                        )
                if not runs:
                    continue
                print(
                    f"{items:7} items: first snapshot {first:.1f} ms; median of {len(runs)} "
                    f"{statistics.median(runs):.1f} ms (min {min(runs):.1f}, max {max(runs):.1f})",
                    flush=True,
                )
                call("tabs.close", {"tabId": tab})


FRAME_BODY = (
    "<h2>Section {n}</h2><p>"
    + "Some words of section {n}. " * 20
    + "</p>"
    + "".join(f'<a href="#s{{n}}l{i}">Link {{n}}.{i}</a> ' for i in range(8))
    + '<form><label>Name {n} <input></label><label><input type="checkbox"> Option {n}</label>'
    + "<select><option>One</option><option>Two</option></select><button>Send {n}</button></form>"
)


def frames(args: argparse.Namespace) -> None:
    """Snapshots of one page's content in 5 cross-origin frames, in 5 same-origin frames, and inlined."""
    import http.server

    from kelpie_gateway.host.launch import HostProcess

    class Pages(http.server.BaseHTTPRequestHandler):
        origins: ClassVar[list[str]] = []

        def log_message(self, *a: Any) -> None:
            return None

        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            n = int(query.split("=")[1]) if query.startswith("n=") else 0
            head = "<!doctype html><title>bench</title><h1>Frames bench</h1><p>" + "Top words. " * 30 + "</p>"
            if path == "/part.html":
                body = "<!doctype html>" + FRAME_BODY.format(n=n)
            elif path == "/inlined.html":
                body = head + "".join(f"<div>{FRAME_BODY.format(n=i)}</div>" for i in range(5))
            elif path in ("/cross.html", "/same.html"):
                where = (lambda i: self.origins[i + 1]) if path == "/cross.html" else (lambda i: "")
                body = head + "".join(
                    f'<iframe title="Part {i}" style="width:600px;height:400px" src="{where(i)}/part.html?n={i}"></iframe>'
                    for i in range(5)
                )
            else:
                body = "<!doctype html><p>none</p>"
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    servers = [ThreadingHTTPServer((f"127.0.0.{i}", 0), Pages) for i in range(1, 7)]
    Pages.origins = [f"http://127.0.0.{i + 1}:{srv.server_address[1]}" for i, srv in enumerate(servers)]
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    extra = ["--approve-pairing", "auto"] + (["--via-abi"] if args.via_abi else [])
    try:
        with HostProcess(extra) as process:
            token = process.pair("bench-frames")
            call = host_caller(process, token, 120)

            kinds = {
                "inlined": "/inlined.html",
                "5 same-origin frames": "/same.html",
                "5 cross-origin frames": "/cross.html",
            }
            tabs, firsts, times = {}, {}, {kind: [] for kind in kinds}
            for kind, path in kinds.items():
                _, opened = call("tabs.open", {"url": Pages.origins[0] + path})
                assert opened["success"], opened
                tabs[kind] = opened["result"]["tabId"]
                time.sleep(1.0)  # the frames load after the page's own load
                ms, env = call("tab.snapshot", {"tabId": tabs[kind]})
                assert env["success"], env
                firsts[kind] = ms
                result = env["result"]
                framed = sum(1 for e in result["elements"] if e.get("frame"))
                print(
                    f"{kind:22}: {len(result['text'])} chars, {len(result['elements'])} elements "
                    f"({framed} in frames), first snapshot {ms:.1f} ms",
                    flush=True,
                )
            for _ in range(args.rounds):
                for kind in kinds:
                    ms, env = call("tab.snapshot", {"tabId": tabs[kind]})
                    assert env["success"], env
                    times[kind].append(ms)
            base = statistics.median(times["inlined"])
            print(
                f"tab.snapshot through the host (HTTP, {'C library' if args.via_abi else 'Python API'}), "
                f"{args.rounds} rounds, the three tabs in turn:"
            )
            for kind, runs in times.items():
                med = statistics.median(runs)
                print(
                    f"  {kind:22} median {med:7.1f} ms (min {min(runs):.1f}, max {max(runs):.1f})  "
                    f"÷ inlined {med / base:5.2f}   first {firsts[kind]:.1f} ms "
                    f"(÷ inlined first {firsts[kind] / firsts['inlined']:.2f})"
                )
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()


REACH = """(keys) => {
  const nodes = (key, handles) => handles.map((h) => globalThis['__kelpieReader_' + key].nodes.get(h));
  const old = new Set(nodes(keys.old, keys.oldControls));
  const first = new Set(nodes(keys.new, keys.firstControls));
  const all = new Set(nodes(keys.new, keys.allControls));
  let lost = 0, onFirst = 0;
  for (const n of old) { if (!all.has(n)) lost++; if (first.has(n)) onFirst++; }
  return { old: old.size, first: first.size, all: all.size, lost, onFirst };
}"""


def coverage(args: argparse.Namespace, browser: Any) -> None:
    old, new = old_bundle(args.base, "snapshot"), reader.assemble_bundle("snapshot")
    corpus = Path(args.corpus)
    entries = [e.strip() for e in (corpus / "pages.txt").read_text().splitlines() if e.strip()]
    servers = {g: serve(corpus / g) for g in {e.partition("/")[0] for e in entries}}
    context = browser.new_context()
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.split("/")[2].split(":")[0] in ("127.0.0.1", "localhost")
            else route.abort()
        ),
    )
    totals = {"old": 0, "first": 0, "all": 0, "lost": 0, "onFirst": 0}
    more_pages = 0
    continuation_needed = 0
    print(f"{'page':62} {'prev':>5} {'p1':>5} {'all':>5} {'lost':>4} {'pages':>5}")
    for entry in entries:
        group, _, path = entry.partition("/")
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{servers[group][1]}/{path}", wait_until="load", timeout=30000)
        world = HostWorld(page)
        k_old, k_new = secrets.token_hex(16), secrets.token_hex(16)
        before = world.evaluate(script(old, key=k_old, maxChars=12000, maxElements=200))
        pages = [world.evaluate(script(new, key=k_new, maxChars=12000, maxElements=200))]
        while "rest" in pages[-1]:
            pages.append(
                world.evaluate(
                    script(new, key=k_new, maxChars=12000, maxElements=200, cursor=pages[-1]["rest"])
                )
            )

        def controls(elements: list[dict[str, Any]]) -> list[str]:
            return [e["handle"] for e in elements if e["role"] not in NOT_CONTROLS]

        counts = world.evaluate(
            f"({REACH})({json.dumps({'old': k_old, 'new': k_new, 'oldControls': controls(before['elements']), 'firstControls': controls(pages[0]['elements']), 'allControls': controls([e for p in pages for e in p['elements']])})})"
        )
        for k in totals:
            totals[k] += counts[k]
        if len(pages) > 1:
            more_pages += 1
            if counts["all"] > counts["first"]:
                continuation_needed += 1
        print(
            f"{entry[:62]:62} {counts['old']:5} {counts['first']:5} {counts['all']:5} {counts['lost']:4} {len(pages):5}"
        )
        page.close()
    for server, _ in servers.values():
        server.shutdown()
    print(
        f"\n{len(entries)} pages: previous reader {totals['old']} controls; v1.1 first page {totals['first']}, "
        f"first page + continuation {totals['all']}; previous controls lost: {totals['lost']}; "
        f"previous controls already on the v1.1 first page: {totals['onFirst']}/{totals['old']}"
    )
    print(
        f"pages with more than one page: {more_pages}; pages whose controls are all reached only through "
        f"continuation: {continuation_needed}"
    )


def golden(args: argparse.Namespace, browser: Any) -> None:
    """Record (`--write`) or check the working reader's corpus digests; with `--base`, show differences."""
    from conftest import Site, _only_loopback
    from corpusgolden import load_golden, load_steady, normalise, read_outputs, summary, write_golden

    corpus = Path(args.corpus)
    entries = [e.strip() for e in (corpus / "pages.txt").read_text().splitlines() if e.strip()]
    if args.only:
        entries = [e for e in entries if e in args.only]
    sites = {g: Site(corpus / g) for g in {e.partition("/")[0] for e in entries}}
    context = browser.new_context()
    context.route("**/*", _only_loopback)
    readers = {"working": reader.assemble_bundle("snapshot")}
    if args.compare:
        readers = {"base": old_bundle(args.base, "snapshot"), **readers}
    selectors = {"working": reader.assemble_bundle("selector-snapshot")}
    if args.compare:
        selectors = {"base": old_bundle(args.base, "selector-snapshot"), **selectors}
    recorded = {} if args.write else load_golden()["pages"]
    totals: dict[str, int] = {}
    found: dict[str, dict[str, Any]] = {}
    differ = 0
    for entry in entries:
        group, _, path = entry.partition("/")
        texts: dict[str, str] = {}
        raw: dict[str, Any] = {}
        for name, bundle in readers.items():
            page = context.new_page()  # a fresh load per reader: the test reads a freshly loaded page too
            load_steady(page, sites[group].url(path))
            world = HostWorld(page)

            def snap(key: str, max_chars: int, max_elements: int, cursor: Any, bundle: str = bundle) -> str:
                params: dict[str, Any] = {"key": key, "maxChars": max_chars, "maxElements": max_elements}
                if cursor is not None:
                    params["cursor"] = cursor
                return script(bundle, **params)

            outputs = read_outputs(
                lambda s, world=world: world.evaluate(s, timeout_ms=60000),
                snap,
                script(selectors[name], maxChars=12000, maxElements=200),
            )
            page.close()
            texts[name] = normalise(outputs)
            raw[name] = outputs
            if name == "working":
                found[entry] = summary(outputs)
        state = "new" if entry not in recorded else "same" if recorded[entry] == found[entry] else "DIFFERS"
        if args.compare:
            added = additions(raw["base"], raw["working"])
            compared = normalise(without(raw["working"], added)) if added else texts["working"]
            same = texts["base"] == compared
            if not same and normalise(positionless(raw["base"])) == normalise(
                positionless(without(raw["working"], added))
            ):
                same = True  # only the engine's private continuation positions moved: nothing a client sees
                state += ", base same but for the private continuation positions (rest)"
            else:
                state += ", base " + ("same" if same else "DIFFERS")
            if added:
                state += (
                    " (added: " + ", ".join(f"{k} on {v} answers" for k, v in sorted(added.items())) + ")"
                )
                for k, v in added.items():
                    totals[f"added {k}"] = totals.get(f"added {k}", 0) + v
            if not same:
                differ += 1
                if args.classify:
                    print_classified(raw["base"], raw["working"], totals)
                else:
                    print_difference(texts["base"], compared)
        elif state == "DIFFERS":
            differ += 1
        print(f"{entry:70} {state}", flush=True)
    for site in sites.values():
        site.close()
    if args.write:
        write_golden({**({} if not args.only else load_golden()["pages"]), **found})
        print(f"wrote {len(found)} digests")
    print(
        f"{len(entries)} pages, {differ} with a difference"
        + (" from the base reader" if args.compare else "")
    )
    if totals:
        print("in all: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))


INTENDED_ADDITIONS: Final = {
    "token": "the read's name, which a later `since` read compares with (§9 v1.2, on every snapshot answer)",
    "removed": "elements of the captured order gone before their page (§9 v1.2, continuation pages only)",
}
"""Answer members the working reader adds on purpose (docs/reader.md "Corpus identity"): `golden --base`
reports them as additions and compares the rest, so an older reader's answers that differ only by them
are the same (answers of a reader that has them already compare them like any other member)."""


def additions(base: dict[str, Any], working: dict[str, Any]) -> dict[str, int]:
    """The :data:`INTENDED_ADDITIONS` the working outputs have and the base outputs never do, each with
    the number of working answers (snapshot pages) that carry it."""

    def answers(outputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            p for k, pages in outputs.items() if k.startswith("pages@") for p in pages if isinstance(p, dict)
        ]

    old = answers(base)
    found: dict[str, int] = {}
    for name in INTENDED_ADDITIONS:
        if any(name in p for p in old):
            continue
        n = sum(1 for p in answers(working) if name in p)
        if n:
            found[name] = n
    return found


def without(outputs: dict[str, Any], names: dict[str, int]) -> dict[str, Any]:
    """`outputs` with the answer members `names` left out of every snapshot page."""
    return {
        k: [{f: v for f, v in p.items() if f not in names} if isinstance(p, dict) else p for p in pages]
        if k.startswith("pages@")
        else pages
        for k, pages in outputs.items()
    }


def positionless(outputs: dict[str, Any]) -> dict[str, Any]:
    """`outputs` with every snapshot page's private continuation position (`rest`: the engine keeps it and
    gives the client an opaque cursor) reduced to whether it is there."""
    return {
        k: [{**p, "rest": True} if isinstance(p, dict) and "rest" in p else p for p in pages]
        if k.startswith("pages@")
        else pages
        for k, pages in outputs.items()
    }


def print_classified(base: dict[str, Any], working: dict[str, Any], totals: dict[str, int]) -> None:
    """What differs between two readers' outputs of one page, by kind (`golden --base REV --classify`):
    per bound, elements only one reader lists (by tag and role), elements both list whose role, label,
    states or value differ (matched by tag and label, or by url), and whether the pages' joined text is
    the same; counts also go into `totals`."""
    from collections import Counter

    for name in sorted(k for k in working if k.startswith("pages@")):
        if not all(isinstance(p, dict) and "elements" in p for p in base.get(name, []) + working[name]):
            print(f"    {name}: an error answer")
            continue

        def flat(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [e for p in pages for e in p["elements"]]

        def key(e: dict[str, Any]) -> tuple[str, str]:
            return (e["tag"], e.get("url") or e["label"] or e.get("text", ""))

        old = Counter(key(e) for e in flat(base[name]))
        new = Counter(key(e) for e in flat(working[name]))
        by_old = {key(e): e for e in flat(base[name])}
        by_new = {key(e): e for e in flat(working[name])}
        lost = Counter()
        found = Counter()
        changed = Counter()
        for k in old - new:
            e = by_old[k]
            lost[f"{e['tag']}/{e['role'] or '-'}"] += (old - new)[k]
        for k in new - old:
            e = by_new[k]
            found[f"{e['tag']}/{e['role'] or '-'}"] += (new - old)[k]
        for k in old & new:
            a, b = by_old[k], by_new[k]
            for f in ("role", "label", "states", "value", "unreadable"):
                if a.get(f) != b.get(f):
                    changed[f"{f} {a.get(f)!r}->{b.get(f)!r}" if f == "role" else f] += 1
        text_same = "".join(p["text"] for p in base[name]) == "".join(p["text"] for p in working[name])
        print(
            f"    {name}: lost {dict(lost)} found {dict(found)} changed {dict(changed)} "
            f"pages {len(base[name])}->{len(working[name])} text {'same' if text_same else 'DIFFERS'}"
        )
        if name == "pages@12000/200":
            for kind, counter in (("lost", lost), ("found", found), ("changed", changed)):
                for k, v in counter.items():
                    totals[f"{kind} {k}"] = totals.get(f"{kind} {k}", 0) + v
            if not text_same:
                totals["text differs"] = totals.get("text differs", 0) + 1


def print_difference(base: str, working: str) -> None:
    """A readable diff of two normalised outputs: one JSON value per line."""
    import difflib

    def lines(text: str) -> list[str]:
        return json.dumps(json.loads(text), ensure_ascii=False, indent=1, sort_keys=True).splitlines()

    diff = list(difflib.unified_diff(lines(base), lines(working), "base", "working", n=2, lineterm=""))
    for line in diff[:200]:
        print("    " + line)
    if len(diff) > 200:
        print(f"    … {len(diff) - 200} more diff lines")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["speed", "calls", "coverage", "golden", "host", "frames"])
    ap.add_argument(
        "--via-abi", action="store_true", help="host: the host drives the engine through the C library"
    )
    ap.add_argument("--write", action="store_true", help="golden: record the working reader's digests")
    ap.add_argument("--only", nargs="*", default=None, help="golden: only these corpus entries")
    ap.add_argument(
        "--classify", action="store_true", help="golden --base: differences by kind instead of a diff"
    )
    ap.add_argument("--base", default=None)
    ap.add_argument("--items", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--firsts", type=int, default=3, help="speed: fresh loads per reader for the first read")
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = ap.parse_args()
    args.compare = args.base is not None
    if args.base is None:
        args.base = subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True, capture_output=True, text=True
        ).stdout.strip()
    if args.what == "host":
        host(args)
        return
    if args.what == "frames":
        frames(args)
        return
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            {"speed": speed, "calls": calls, "coverage": coverage, "golden": golden}[args.what](args, browser)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
