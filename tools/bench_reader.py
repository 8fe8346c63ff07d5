#!/usr/bin/env python3
"""The v1.1 reader against a previous reader, side by side in one browser (issue 12's figures).

Usage::

    .venv/bin/python tools/bench_reader.py speed    [--base REV] [--items 10000] [--rounds 15]
    .venv/bin/python tools/bench_reader.py coverage [--base REV] [--corpus DIR]

``--base`` names the commit whose ``engine/kelpie_gateway/js`` sources are the previous reader (default:
the merge base of HEAD and ``main``; pass the commit before the v1.1 reader once it is merged).
Both readers are assembled exactly as :func:`kelpie_gateway.reader.assemble_bundle` does and run in the
same isolated world of the same tab, alternating, so machine load hits both alike.

* ``speed``: one ``tab.snapshot`` (12,000 chars, 200 elements) of a page with ``--items`` list items
  (every 50th a heading, every 10th a link, a button at the end), timed inside the page; prints the
  median and minimum of each reader and the ratios new/old (the v1.1 target: at most 1.10).
* ``coverage``: for every corpus entry page (``pages.txt``): the controls (listed elements that are not
  headings or images) of the previous reader's one snapshot, of the new reader's first page, and of
  the new reader's first page plus every continuation page; prints per page and in total how many of
  the previous reader's controls the new reader lost (must be 0) and how many pages reach all their
  controls only through continuation.
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
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from hostworld import HostWorld  # noqa: E402
from kelpie_gateway import reader  # noqa: E402
from kelpie_gateway.host.browser import CHROMIUM_FLAGS  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

NOT_CONTROLS = {"heading", "img"}


def old_bundle(rev: str, name: str) -> str:
    """Bundle `name` assembled from the JS sources at git `rev` (same assembly as the engine's)."""

    def source(file: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:engine/kelpie_gateway/js/{file}"],
            check=True, capture_output=True, text=True,
        ).stdout

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


def speed(args: argparse.Namespace, browser: Any) -> None:
    old, new = old_bundle(args.base, "snapshot"), reader.assemble_bundle("snapshot")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "big.html").write_text(big_page(args.items), encoding="utf-8")
        server, port = serve(Path(tmp))
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/big.html", wait_until="load")
        world = HostWorld(page)
        key = secrets.token_hex(16)
        params = reader.js_literal({"key": key, "maxChars": 12000, "maxElements": 200})
        # Timed inside the page (performance.now around the script), so CDP transfer noise stays out.
        timed = "(async () => {{ const t = performance.now(); const v = await {}({}); " \
                "return {{ ms: performance.now() - t, n: v.elements ? v.elements.length : -1 }}; }})()"
        scripts = {"previous": timed.format(old, params), "v1.1": timed.format(new, params)}
        times: dict[str, list[float]] = {name: [] for name in scripts}
        for s in scripts.values():  # warm-up, and a sanity check of each answer
            assert world.evaluate(s, timeout_ms=60000)["n"] == 200
        for _ in range(args.rounds):
            for name, s in scripts.items():
                times[name].append(world.evaluate(s, timeout_ms=60000)["ms"])
        server.shutdown()
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"snapshot of a {args.items}-item page, median of {args.rounds} alternating runs (base {args.base}):")
    for name, ms in med.items():
        print(f"  {name:9} {ms:8.1f} ms   (min {min(times[name]):.1f}, max {max(times[name]):.1f})")
    ratio = med["v1.1"] / med["previous"]
    best = min(times["v1.1"]) / min(times["previous"])
    print(f"  ratio v1.1/previous: median {ratio:.3f}, minimum {best:.3f} "
          f"({'within' if ratio <= 1.10 else 'OVER'} the 1.10 target)")


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
        lambda route: route.continue_()
        if route.request.url.split("/")[2].split(":")[0] in ("127.0.0.1", "localhost")
        else route.abort(),
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
                world.evaluate(script(new, key=k_new, maxChars=12000, maxElements=200, cursor=pages[-1]["rest"]))
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
        print(f"{entry[:62]:62} {counts['old']:5} {counts['first']:5} {counts['all']:5} {counts['lost']:4} {len(pages):5}")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["speed", "coverage"])
    ap.add_argument("--base", default=None)
    ap.add_argument("--items", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = ap.parse_args()
    if args.base is None:
        args.base = subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True, capture_output=True, text=True
        ).stdout.strip()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=list(CHROMIUM_FLAGS))
        try:
            speed(args, browser) if args.what == "speed" else coverage(args, browser)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
