"""Characters and calls for "find the Submit button and click it" (issue 29's closing figures).

Usage::

    .venv/bin/python tools/bench_find.py [--corpus DIR] [--pages 10]

On the `--pages` largest corpus entry pages (by file size), an agent that wants one button — the page's
last listed button, standing in for "Submit" (most corpus pages have none by that name) — takes one of
three paths through a real Gateway on headless Chromium, the way a host drives it:

* ``plain``: `tab.snapshot`, then each `next` page until the button is among the elements;
* ``controls``: the same with `include: "controls"`;
* ``find``: one `tab.snapshot {find: {role: "button", name: <its label>}}`.

Each path then clicks the button (`tab.click`). Printed per page and in total: the calls and the
characters of the JSON results the agent read (what fills a model's context). No timings.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "engine"))

from corpusgolden import load_steady  # noqa: E402
from gatewayhelp import GatewayTab  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(root: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def walk(g: GatewayTab, label: str, **params: Any) -> tuple[int, int, str | None]:
    """(calls, characters, ref) of snapshot pages until a button labelled `label` is listed."""
    calls, chars = 0, 0
    result = g.snapshot(**params)
    while True:
        calls += 1
        chars += len(json.dumps(result, ensure_ascii=False))
        for e in result["elements"]:
            if e["role"] == "button" and e["label"] == label:
                return calls, chars, str(e["ref"])
        if "next" not in result:
            return calls, chars, None
        result = g.snapshot(cursor=result["next"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--pages", type=int, default=10)
    args = ap.parse_args()
    corpus = Path(args.corpus)
    entries = [e for e in (corpus / "pages.txt").read_text().split() if e]
    entries.sort(key=lambda e: -(corpus / e).stat().st_size)
    server = serve(corpus)
    totals = {k: [0, 0] for k in ("plain", "controls", "find")}
    print(f"{'page':52} {'button':24} {'plain':>14} {'controls':>14} {'find':>14}   (calls/chars)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        done = 0
        for entry in entries:
            if done == args.pages:
                break
            url = f"http://127.0.0.1:{server.server_port}/{entry}"
            opened: list[Any] = []

            def fresh(url: str = url, opened: list[Any] = opened) -> GatewayTab:
                context = browser.new_context()
                context.route(
                    "**/*",
                    lambda r: (
                        r.continue_() if r.request.url.split("/")[2].startswith("127.0.0.1") else r.abort()
                    ),
                )
                opened.append(context)
                page = context.new_page()
                load_steady(page, url)
                return GatewayTab(page)

            g = fresh()
            pages = g.all_pages()
            buttons = [
                e["label"] for p in pages for e in p["elements"] if e["role"] == "button" and e["label"]
            ]
            if not buttons:
                for c in opened:
                    c.close()
                continue
            label = buttons[-1]
            row = {}
            for path, params in (("plain", {}), ("controls", {"include": "controls"})):
                g = fresh()
                calls, chars, ref = walk(g, label, **params)
                assert ref is not None, (entry, path, label)
                click = g.call("tab.click", ref=ref)
                row[path] = (calls + 1, chars + len(json.dumps(click)))
            g = fresh()
            found = g.snapshot(find={"role": "button", "name": label})
            ref = next(e["ref"] for e in found["elements"] if e["label"] == label)
            click = g.call("tab.click", ref=ref)
            row["find"] = (2, len(json.dumps(found, ensure_ascii=False)) + len(json.dumps(click)))
            for k, (c, n) in row.items():
                totals[k][0] += c
                totals[k][1] += n
            cells = " ".join(f"{row[k][0]:>3}/{row[k][1]:>10,}" for k in ("plain", "controls", "find"))
            print(f"{entry[:52]:52} {label[:24]:24} {cells}", flush=True)
            for c in opened:
                c.close()
            done += 1
        browser.close()
    server.shutdown()
    cells = " ".join(f"{totals[k][0]:>3}/{totals[k][1]:>10,}" for k in ("plain", "controls", "find"))
    print(f"{'total':52} {'':24} {cells}")
    print(
        f"characters: controls/plain {totals['controls'][1] / totals['plain'][1]:.3f}, "
        f"find/plain {totals['find'][1] / totals['plain'][1]:.3f}"
    )


if __name__ == "__main__":
    main()
