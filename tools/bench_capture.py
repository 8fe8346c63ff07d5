#!/usr/bin/env python3
"""What the read-only lane's capture costs the hot path (issue 33): navigate + snapshot with the capture on
and off, side by side in one run.

Usage::

    .venv/bin/python tools/bench_capture.py [--rounds 40] [--requests 20] [--logs 20]

Two renderers of this build in one process, each with its own headless Chromium: one with every part of
``kelpie_gateway.host.parts.PARTS``, one without the capturing parts (``Console``, ``Network``), each driven
by its own gateway and driver exactly as ``serve`` drives them. A page served on loopback loads
``--requests`` images and a fetch and writes ``--logs`` console messages; each round, in alternating order,
each renderer navigates to a fresh copy of it and takes a snapshot. Prints, per step and renderer, the median
(and minimum) wall time and the mean CPU time of the whole process tree of that renderer's browser plus this
process (Python and the Playwright driver are shared, so their CPU is measured per step around the step), and
the ratio capture/no-capture. A benchmark, not a test: only ratios of one run mean anything.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT))

from kelpie_gateway import Gateway  # noqa: E402
from kelpie_gateway.host.browser import ChromiumRenderer, find_chromium  # noqa: E402
from kelpie_gateway.host.driver import Driver  # noqa: E402
from kelpie_gateway.host.extensions.console import Console  # noqa: E402
from kelpie_gateway.host.extensions.network import Network  # noqa: E402
from kelpie_gateway.host.parts import PARTS, gateway_config  # noqa: E402

from tools.bench_latency import PIXEL  # noqa: E402
from tools.bench_latency import _tree_cpu_ms as _cpu_ms  # noqa: E402


class Side:
    def __init__(self, name: str, parts: tuple[Any, ...]) -> None:
        self.name = name
        self.renderer = ChromiumRenderer(executable=find_chromium(None), log=lambda _l: None, parts=parts)
        config = {**gateway_config(browser=True), "requireAuthorization": False}
        config["extensions"] = [d for p in parts for d in p.descriptors]
        config["nativeMethods"] = self.renderer.methods
        self.driver = Driver(Gateway(config), self.renderer, lambda _l: None)
        self.samples: dict[str, list[tuple[float, float]]] = {"navigate": [], "snapshot": []}
        self.tab = ""

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        step = await self.driver.canonical({"version": 1, "id": 1, "method": method, "params": params})
        envelope: dict[str, Any] = step["response"]
        if not envelope["success"]:
            raise SystemExit(f"{self.name}: {method}: {envelope}")
        return envelope

    async def round(self, url: str, keep: bool) -> None:
        for step, method, params in (
            ("navigate", "tab.navigate", {"tabId": self.tab, "url": url, "timeoutMs": 30000}),
            ("snapshot", "tab.snapshot", {"tabId": self.tab}),
        ):
            cpu = _cpu_ms(os.getpid())
            started = time.perf_counter()
            await self.call(method, params)
            wall = (time.perf_counter() - started) * 1000
            if keep:
                self.samples[step].append((wall, _cpu_ms(os.getpid()) - cpu))


async def run(args: argparse.Namespace, base: str) -> list[Side]:
    off = {"both": (Console, Network), "console": (Console,), "network": (Network,)}[args.off]
    sides = [Side("capture", PARTS), Side("no capture", tuple(p for p in PARTS if p not in off))]
    try:
        for side in sides:
            await side.renderer.start(None)
            listed = await side.call("tabs.list", {})
            side.tab = listed["result"]["tabs"][0]["tabId"]
        for n in range(args.warmup + args.rounds):
            order = sides if n % 2 == 0 else list(reversed(sides))
            for side in order:
                await side.round(f"{base}/page.html?round={n}", n >= args.warmup)
    finally:
        for side in sides:
            await side.renderer.close()
    return sides


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--logs", type=int, default=20)
    parser.add_argument(
        "--off",
        choices=["both", "console", "network"],
        default="both",
        help="which capture the other side lacks",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder)
        images = "".join(
            f'<img src="pixel.png?i={i}" width="1" height="1" alt="">' for i in range(args.requests)
        )
        script = f"<script>for (let i = 0; i < {args.logs}; i++) console.log('line', i); fetch('pixel.png?f');</script>"
        page = f"<!doctype html><title>Capture</title><h1>Capture</h1><p>Text.</p><button>Go</button>{images}{script}"
        (site / "page.html").write_text(page, encoding="utf-8")
        (site / "pixel.png").write_bytes(PIXEL)

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *_a: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            sides = asyncio.run(run(args, f"http://127.0.0.1:{server.server_address[1]}"))
        finally:
            server.shutdown()
    print(f"{args.rounds} rounds, a page of {args.requests + 2} requests and {args.logs} console messages;")
    print(
        "wall: median (min) ms; cpu: mean ms of this process tree (Python, Playwright driver, both browsers)"
    )
    print(f"{'step':<10}{'no capture':>18}{'capture':>18}{'ratio':>7}{'cpu off':>9}{'cpu on':>8}{'ratio':>7}")
    on, off = sides
    for step in ("navigate", "snapshot"):
        w_on = statistics.median(w for w, _ in on.samples[step])
        w_off = statistics.median(w for w, _ in off.samples[step])
        c_on = statistics.mean(c for _, c in on.samples[step])
        c_off = statistics.mean(c for _, c in off.samples[step])
        m_on = min(w for w, _ in on.samples[step])
        m_off = min(w for w, _ in off.samples[step])
        print(
            f"{step:<10}{w_off:>10.1f} ({m_off:>5.0f}){w_on:>10.1f} ({m_on:>5.0f}){w_on / w_off:>7.2f}"
            f"{c_off:>9.1f}{c_on:>8.1f}{c_on / c_off:>7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
