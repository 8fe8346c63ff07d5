#!/usr/bin/env python3
"""The reader's warm-up (docs/reader.md "Warm-up") measured inside the renderer, side by side (issue 16).

Usage::

    .venv/bin/python tools/bench_warmup.py [--rounds 24] [--skip 2]

One headless Chromium, one tab per variant, each with its own new-document script registered as the
reference host registers it: ``no warm-up`` (the bundles installed, nothing run) and ``warm-up``
(``reader.new_document_script()``). Each round, in rotating order, each tab loads a fresh document of
``tools/bench_latency.py``'s 11-control page (``load``), makes its ``KelpieBrowserControl`` world and runs
the snapshot's short form twice; the page's own clock times each run (``performance.now()`` around the
call). Prints, per variant, the median (minimum) milliseconds of the navigation as Playwright sees it,
of the first and of the repeated run. The round trips between ``load`` and the first run here (frame tree,
world) leave the warm-up more time than a host's next call does: this is what the warm-up can save, not
what an agent sees (``tools/bench_latency.py`` measures that). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

from playwright.async_api import Route, async_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "engine"))

from bench_latency import PAGE  # noqa: E402
from kelpie_gateway import reader  # noqa: E402
from kelpie_gateway.host.browser import CHROMIUM_FLAGS, PRELOADED, VIEWPORT, WORLD_NAME  # noqa: E402

VARIANTS = {
    "no warm-up": f"(globalThis.top === globalThis ? {reader.preload_script(PRELOADED)} : 0)",
    "warm-up": reader.new_document_script(PRELOADED),
}


def timed(expression: str) -> str:
    return (
        "(async () => { const t0 = performance.now(); const v = await ("
        + expression
        + "); return [performance.now() - t0, Array.isArray(v.elements) ? v.elements.length : -1]; })()"
    )


async def bench(rounds: int, skip: int) -> dict[str, dict[str, list[float]]]:
    made = reader.kept_script(reader.snapshot_script("0" * 32, max_chars=12000, max_elements=200))
    assert made is not None
    call = timed(made[1])
    times: dict[str, dict[str, list[float]]] = {
        v: {"navigate": [], "first": [], "repeated": []} for v in VARIANTS
    }
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=list(CHROMIUM_FLAGS))
        context = await browser.new_context(viewport=VIEWPORT)

        async def serve(route: Route) -> None:
            await route.fulfill(body=PAGE, content_type="text/html")

        await context.route("http://bench*.test/**", serve)
        tabs: list[tuple[str, Any, Any, int]] = []
        for i, (name, source) in enumerate(VARIANTS.items()):
            page = await context.new_page()
            cdp = await context.new_cdp_session(page)
            await cdp.send("Page.enable")
            await cdp.send(
                "Page.addScriptToEvaluateOnNewDocument", {"source": source, "worldName": WORLD_NAME}
            )
            tabs.append((name, page, cdp, i))
        loop = asyncio.get_running_loop()
        for n in range(rounds):
            for name, page, cdp, i in tabs[n % len(tabs) :] + tabs[: n % len(tabs)]:
                started = loop.time()
                await page.goto(f"http://bench{i}.test/small.html?{n}", wait_until="load")
                navigate = (loop.time() - started) * 1000
                tree = await cdp.send("Page.getFrameTree")
                world = await cdp.send(
                    "Page.createIsolatedWorld",
                    {"frameId": tree["frameTree"]["frame"]["id"], "worldName": WORLD_NAME},
                )
                runs = []
                for _ in range(2):
                    reply = await cdp.send(
                        "Runtime.evaluate",
                        {
                            "expression": call,
                            "contextId": world["executionContextId"],
                            "returnByValue": True,
                            "awaitPromise": True,
                        },
                    )
                    ms, elements = reply["result"]["value"]
                    if elements < 1:
                        raise SystemExit(f"{name}: the snapshot failed: {reply}")
                    runs.append(float(ms))
                if n >= skip:
                    times[name]["navigate"].append(navigate)
                    times[name]["first"].append(runs[0])
                    times[name]["repeated"].append(runs[1])
        await browser.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--skip", type=int, default=2, help="first rounds left out (warm-up of the browser)")
    args = parser.parse_args()
    times = asyncio.run(bench(args.rounds, args.skip))
    print(f"{args.rounds - args.skip} rounds; median (min) ms; page script timed in the page")
    print(f"{'variant':<14}{'navigate':>18}{'first run':>16}{'repeated run':>16}")
    for name, steps in times.items():
        cells = "".join(
            f"{statistics.median(steps[s]):>10.2f} ({min(steps[s]):>5.2f})"
            for s in ("navigate", "first", "repeated")
        )
        print(f"{name:<14}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
