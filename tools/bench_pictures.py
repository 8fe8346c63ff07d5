#!/usr/bin/env python3
"""What a picture of a real page costs a model (issue 32): ``tab.screenshot`` (the contract's viewport PNG)
beside the ``screenshot`` extension's JPEG of the viewport and its full-page pictures, on real saved pages.

Usage::

    .venv/bin/python tools/bench_pictures.py [--corpus DIR] [--pages N] [--reps 3]

``DIR`` is the corpus of saved pages (default ``$KELPIE_CORPUS`` or ``../shared/corpus``); its
``realworld/`` folder is served on loopback and the first ``N`` (default 6) of its pages are pictured by
one ``kelpie-gateway serve`` (real headless Chromium, 1280×800) over MCP (stateless revision), each way
``--reps`` times. Prints per page the image bytes (base64 is 4/3 of that) and the median milliseconds as
the MCP client sees them, and the medians over pages of each way's bytes and time as ratios to
``tab.screenshot``'s. A benchmark, not a test: times are only comparable within one run; byte counts
depend on the pages, not on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import ROOT, Serve, call, connect

WAYS: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
    ("tab.screenshot (viewport PNG)", None, {}),
    ("screenshot viewport JPEG q80", "screenshot", {"format": "jpeg"}),
    ("screenshot full page JPEG q80", "screenshot", {"format": "jpeg", "fullPage": True}),
    ("screenshot full page PNG", "screenshot", {"fullPage": True}),
)
"""(label, extension or None for the canonical method, arguments besides tabId); pictures scale under the
extension's default maxDimension (1568 px)."""


def serve_folder(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


async def picture(client: Any, tab: str, extension: str | None, arguments: dict[str, Any]) -> tuple[float, int]:
    """(milliseconds, image bytes) of one picture."""
    started = time.perf_counter()
    if extension is None:
        result = await client.call_tool(
            "kelpie_browser_control", {"method": "tab.screenshot", "params": {"tabId": tab}}
        )
    else:
        result = await client.call_tool(extension, {"tabId": tab, **arguments})
    ms = (time.perf_counter() - started) * 1000
    envelope = result.structured_content
    if not isinstance(envelope, dict) or not envelope.get("success"):
        raise SystemExit(f"{extension or 'tab.screenshot'} failed: {envelope}")
    return ms, int(envelope["result"]["imageBytes"])


async def bench(serve: Serve, site: str, pages: list[str], reps: int) -> dict[str, dict[str, list[tuple[float, int]]]]:
    seen: dict[str, dict[str, list[tuple[float, int]]]] = {p: {w[0]: [] for w in WAYS} for p in pages}
    async with connect(serve) as client:
        _, listed = await call(client, "tabs.list", {})
        tab = next(t["tabId"] for t in listed["tabs"] if t["active"])
        for page in pages:
            went = await client.call_tool(
                "kelpie_browser_control",
                {"method": "tab.navigate", "params": {"tabId": tab, "url": f"{site}/{page}", "timeoutMs": 30000}},
            )
            if not (went.structured_content or {}).get("success"):  # a page that never reaches load
                await call(client, "tab.snapshot", {"tabId": tab})  # is pictured as it stands
            await picture(client, tab, None, {})  # warm the tab's session
            for n in range(reps):
                order = list(WAYS) if n % 2 == 0 else list(reversed(WAYS))
                for label, extension, arguments in order:
                    seen[page][label].append(await picture(client, tab, extension, arguments))
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(os.environ.get("KELPIE_CORPUS", ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--corpus", type=Path, default=default)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    realworld = args.corpus.resolve() / "realworld"
    names = [
        line.split("/", 1)[1]
        for line in (args.corpus / "pages.txt").read_text().splitlines()
        if line.startswith("realworld/")
    ][: args.pages]
    server, site = serve_folder(realworld)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "index.html").write_text("<!doctype html><title>bench</title><p>bench</p>")
        serve = Serve("pictures", ROOT / "engine", Path(folder), ["--viewport", "1280x800"])
        try:
            seen = asyncio.run(bench(serve, site, names, args.reps))
        finally:
            serve.stop()
            server.shutdown()
    base = WAYS[0][0]
    print(f"{len(names)} pages of the corpus's realworld/, {args.reps} repetitions; bytes of the image (base64: x4/3)")
    print(f"{'page':<44}" + "".join(f"{w[0][:30]:>32}" for w in WAYS))
    ratios: dict[str, tuple[list[float], list[float]]] = {w[0]: ([], []) for w in WAYS}
    for page in names:
        cells = []
        for label, _, _ in WAYS:
            ms = statistics.median(x[0] for x in seen[page][label])
            size = seen[page][label][0][1]
            cells.append(f"{size / 1024:>10.0f} KiB {ms:>8.0f} ms")
            base_ms = statistics.median(x[0] for x in seen[page][base])
            ratios[label][0].append(size / seen[page][base][0][1])
            ratios[label][1].append(ms / base_ms)
        print(f"{page[:43]:<44}" + "".join(f"{c:>32}" for c in cells))
    print("median over pages, ratio to tab.screenshot: bytes, ms")
    for label, (size_r, ms_r) in ratios.items():
        print(f"  {label:<34}{statistics.median(size_r):>7.2f}{statistics.median(ms_r):>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
