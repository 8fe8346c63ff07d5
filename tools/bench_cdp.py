#!/usr/bin/env python3
"""Is a direct CDP connection faster than Playwright's CDP session for the host's hot path? (issue 35)

Usage::

    .venv/bin/python tools/bench_cdp.py [--rounds 40] [--items 0|10000] [--executable /usr/bin/chromium]

One headless Chromium launched by Playwright (the project's flags, 1280x800) with a loopback DevTools port
(``--remote-debugging-port``, a free port) as well, one tab on ``tools/bench_peers``'s 11-control page (or,
with ``--items N``, ``tools/bench_reader``'s page of N list items), and the isolated world
``KelpieBrowserControl`` with the snapshot bundle installed, exactly as the host runs it. Then, interleaved
round by round in one process, the same ``Runtime.evaluate`` (``contextId`` of that world,
``returnByValue``, ``awaitPromise``) over:

* ``playwright``: ``context.new_cdp_session(page)`` — what the host does today: Python → Playwright's Node
  driver → browser → renderer, and back;
* ``direct``: a WebSocket of this process (aiohttp) to the browser's own endpoint, a flat session attached to
  the same target (``Target.attachToTarget`` with ``flatten``) — Python → browser → renderer;

and, for reference, ``page.evaluate`` of a trivial expression in the page's own world (the driver's
ordinary evaluation path, which the host cannot use for its fixed scripts: they run in the isolated world).
Expressions: ``1`` (a bare round trip) and the snapshot's short form (the kept bundle called with its
parameters: the reader's real work and answer). Prints medians, p10 and p90 per path in milliseconds and the
ratio direct ÷ playwright. A benchmark, not a test: compare the ratio, measured side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tools"))

import aiohttp  # noqa: E402
from bench_peers import serve_pages  # noqa: E402
from bench_reader import big_page  # noqa: E402
from kelpie_gateway.host.browser import CHROMIUM_FLAGS, DEFAULT_CHROMIUM  # noqa: E402
from kelpie_gateway.reader import WORLD_NAME, kept_script, snapshot_script  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Direct:
    """A minimal CDP client over the browser's WebSocket: ``send`` with an optional flat ``sessionId``."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            answer = self.waiting.pop(data.get("id", -1), None)
            if answer is not None and not answer.done():
                answer.set_result(data)

    async def send(self, method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
        ident = next(self.ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[ident] = answer
        await self.ws.send_str(json.dumps(message))
        data = await answer
        if "error" in data:
            raise RuntimeError(f"{method}: {data['error']}")
        return dict(data["result"])


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p10, p90 = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10]
    return f"{statistics.median(ordered):.2f} ({p10:.2f}–{p90:.2f})"


async def run(args: argparse.Namespace) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-cdp-") as tmp:
        pages = Path(tmp)
        server = serve_pages(pages, [])
        name = "small.html"
        if args.items:
            (pages / "big.html").write_text(big_page(args.items), encoding="utf-8")
            name = "big.html"
        url = f"http://127.0.0.1:{server.server_address[1]}/{name}"
        playwright = await async_playwright().start()
        browser = await playwright.chromium.launch(
            executable_path=args.executable,
            headless=True,
            args=[*CHROMIUM_FLAGS, f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1"],
        )
        http = aiohttp.ClientSession()
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await context.new_page()
            await page.goto(url, wait_until="load")
            cdp = await context.new_cdp_session(page)
            target = (await cdp.send("Target.getTargetInfo"))["targetInfo"]["targetId"]
            frame = (await cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
            world = await cdp.send(
                "Page.createIsolatedWorld",
                {"frameId": frame, "worldName": WORLD_NAME, "grantUniveralAccess": False},
            )
            context_id = int(world["executionContextId"])
            script = snapshot_script("0" * 32, max_chars=12000, max_elements=200)
            base = {"contextId": context_id, "returnByValue": True, "awaitPromise": True}
            installed = await cdp.send("Runtime.evaluate", {"expression": script, **base})
            assert not installed.get("exceptionDetails"), installed
            short_form = kept_script(script)
            assert short_form is not None
            version = await (await http.get(f"http://127.0.0.1:{port}/json/version")).json()
            ws = await http.ws_connect(version["webSocketDebuggerUrl"], max_msg_size=0)
            direct = Direct(ws)
            session = (await direct.send("Target.attachToTarget", {"targetId": target, "flatten": True}))[
                "sessionId"
            ]
            expressions = {"bare round trip (1)": "1", "snapshot (short form)": short_form[1]}
            times: dict[tuple[str, str], list[float]] = {}
            sizes: dict[str, int] = {}
            for rnd in range(args.rounds + 3):
                order = ("playwright", "direct") if rnd % 2 == 0 else ("direct", "playwright")
                for label, expression in expressions.items():
                    params = {"expression": expression, **base}
                    for way in order:
                        started = time.perf_counter()
                        if way == "playwright":
                            reply = await cdp.send("Runtime.evaluate", params)
                        else:
                            reply = await direct.send("Runtime.evaluate", params, session)
                        took = (time.perf_counter() - started) * 1000
                        assert not reply.get("exceptionDetails"), reply
                        sizes[label] = len(json.dumps(reply["result"].get("value")))
                        if rnd >= 3:  # warm-up rounds left out
                            times.setdefault((label, way), []).append(took)
                started = time.perf_counter()
                await page.evaluate("1")
                if rnd >= 3:
                    times.setdefault(("bare round trip (1)", "page.evaluate"), []).append(
                        (time.perf_counter() - started) * 1000
                    )
            await ws.close()
            direct.reader.cancel()
        finally:
            await http.close()
            await browser.close()
            await playwright.stop()
            server.shutdown()
            server.server_close()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"bench_cdp: {args.rounds} interleaved rounds, {name}{f' ({args.items} items)' if args.items else ''}; "
        f"load average after {load}; ms: median (p10–p90)\n"
    )
    print(
        "| expression | answer (JSON chars) | Playwright CDP session | direct CDP | page.evaluate | direct ÷ Playwright |"
    )
    print("|---|---|---|---|---|---|")
    for label in expressions:
        ours, theirs = times[(label, "direct")], times[(label, "playwright")]
        reference = times.get((label, "page.evaluate"))
        print(
            f"| {label} | {sizes[label]} | {stats(theirs)} | {stats(ours)} | "
            f"{stats(reference) if reference else '—'} | "
            f"{statistics.median(ours) / statistics.median(theirs):.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="measured rounds (after 3 of warm-up)")
    parser.add_argument("--items", type=int, default=0, help="read a page of N list items instead")
    parser.add_argument("--executable", default=DEFAULT_CHROMIUM)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
