#!/usr/bin/env python3
"""Small-page latency of two host builds side by side (issue 16), through MCP with the Python SDK client.

Usage::

    .venv/bin/python tools/bench_latency.py --base DIR [--rounds 30] [--page form|busy]
    .venv/bin/python tools/bench_latency.py --policy [--rounds 30]
    .venv/bin/python tools/bench_latency.py --direct [--rounds 30]

``DIR`` holds the previous build's ``engine/`` (e.g. ``git archive main engine | tar -x -C DIR``); this
worktree's ``engine/`` is the new build. Both run as ``kelpie-gateway serve`` (real headless Chromium, the
Python API), each on its own port, serving one page with 11 controls. Each round, in alternating order,
each host gets over MCP (``kelpie_browser_control``, pinned to the stateless revision): ``tab.navigate``
to a fresh document, the first ``tab.snapshot`` of it, a repeated snapshot of the same document, a
``tab.click`` by ref and a ``tab.type`` by ref. Prints the median (and minimum) per step and build in
milliseconds and the ratio new/base. A benchmark, not a test: the CPU may be shared, so only ratios
measured in the same run mean anything.

``--policy`` compares this build with itself instead: ``base`` with the default site policy (no proxy),
``new`` with a restrictive one (:data:`POLICY`: every request of the browser through the policy's proxy).

``--direct`` (issue 35) compares this build with itself too: ``new`` runs ``serve --direct-cdp`` (the fixed
scripts over the host's own CDP connection, docs/host.md "Direct CDP").

``--page busy`` (issue 33) gives the page what the read-only lane captures on every navigation: 20 images,
a fetch and 20 console messages (the form's controls unchanged), so the capture's cost shows in
``navigate`` and the snapshots.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
POLICY = ["--allowed-origins", "http://127.0.0.1:*,http://localhost:*", "--blocked-origins", "http://127.0.0.2:*"]
"""The restrictive policy of ``--policy`` (the page is on ``127.0.0.1``)."""
STEPS = (
    "capabilities (no-op)",
    "navigate",
    "first snapshot",
    "repeated snapshot",
    "click by ref",
    "type by ref",
)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Eleven controls</title></head>
<body>
<h1>Order form</h1>
<p>Fill in the form and press Send. Nothing leaves this page.</p>
<form onsubmit="return false">
  <label>Name <input id="name" type="text"></label>
  <label>E-mail <input type="email"></label>
  <label>Phone <input type="tel"></label>
  <label>Notes <textarea></textarea></label>
  <label>Size <select><option>Small</option><option>Large</option></select></label>
  <label><input type="checkbox"> Gift wrap</label>
  <button type="button" id="send" onclick="this.dataset.n = (+this.dataset.n || 0) + 1">Send</button>
  <button type="reset">Clear</button>
</form>
<p><a href="#help">Help</a> · <a href="#terms">Terms</a></p>
<!--extra-->
</body></html>
"""
BUSY = "".join(f'<img src="pixel.png?i={i}" width="1" height="1" alt="">' for i in range(20)) + (
    "<script>for (let i = 0; i < 20; i++) console.log('line', i); fetch('pixel.png?fetch=1');</script>"
)
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000b49444154789c6360000200000500017a"
    "5eab3f0000000049454e44ae426082"
)


def _tree_cpu_ms(root: int) -> float:
    """CPU time (user + system, ms) used so far by process `root` and its live descendants (Linux /proc)."""
    parents: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2 :].split()
            stats[int(entry)] = fields
            parents.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += parents.get(pid, [])
        if pid in stats:
            total += int(stats[pid][11]) + int(stats[pid][12])
    return total * 1000 / os.sysconf("SC_CLK_TCK")


class Serve:
    """One ``kelpie-gateway serve`` child of the build whose ``engine/`` is `engine_dir`, started by that
    build's own :class:`kelpie_gateway.host.launch.HostProcess` (so it imports that build's engine)."""

    def __init__(self, name: str, engine_dir: Path, site: Path, extra: list[str] | None = None) -> None:
        self.name = name
        path = engine_dir / "kelpie_gateway" / "host" / "launch.py"
        spec = importlib.util.spec_from_file_location(f"bench_launch_{name}", path)
        assert spec is not None and spec.loader is not None, path
        launch = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(launch)
        self.process = launch.HostProcess(["--site", str(site), "--approve-pairing", "auto", *(extra or [])])
        self.url = self.process.start()
        self.token = str(self.process.pair("bench-latency"))
        self.site = ""

    @property
    def pid(self) -> int:
        return int(self.process._proc.pid)

    @property
    def lines(self) -> list[str]:
        return list(self.process.lines)

    def stop(self) -> None:
        self.process.stop()


@asynccontextmanager
async def connect(serve: Serve) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {serve.token}"}, timeout=60.0)
    async with (
        http,
        Client(streamable_http_client(f"{serve.url}/mcp", http_client=http), mode="2026-07-28") as client,
    ):
        yield client


async def call(client: Client, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(milliseconds, result) of one successful ``kelpie_browser_control`` call."""
    for _ in range(10):
        started = time.perf_counter()
        result = await client.call_tool("kelpie_browser_control", {"method": method, "params": params})
        ms = (time.perf_counter() - started) * 1000
        envelope = result.structured_content
        assert isinstance(envelope, dict), result
        if envelope["success"]:
            return ms, dict(envelope["result"])
        if not envelope["error"]["retryable"] or envelope["mayHaveCompleted"]:
            break
        await asyncio.sleep(0.05)  # e.g. a late navigation event: RENDERER_CHANGED, nothing happened
    raise SystemExit(f"{method} failed: {envelope}")


def ref(snapshot: dict[str, Any], tag: str, label: str) -> str:
    for item in snapshot["elements"]:
        if item.get("tag") == tag and label in str(item.get("label", "")):
            return str(item["ref"])
    raise SystemExit(f"no <{tag}> {label!r} in {snapshot['elements']}")


async def round_trip(
    client: Client, pid: int, tab: str, url: str, sink: dict[str, list[tuple[float, float]]]
) -> None:
    """One navigate / snapshot / snapshot / click / type round; each step's (wall ms, host CPU ms)."""
    cpu = _tree_cpu_ms(pid)

    async def step(name: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal cpu
        ms, result = await call(client, method, params)
        now = _tree_cpu_ms(pid)
        sink[name].append((ms, now - cpu))
        cpu = now
        return result

    await step("capabilities (no-op)", "capabilities", {})
    await step("navigate", "tab.navigate", {"tabId": tab, "url": url})
    snap = await step("first snapshot", "tab.snapshot", {"tabId": tab})
    assert len(snap["elements"]) >= 11, snap
    snap = await step("repeated snapshot", "tab.snapshot", {"tabId": tab})
    await step("click by ref", "tab.click", {"tabId": tab, "ref": ref(snap, "button", "Send")})
    _, snap = await call(client, "tab.snapshot", {"tabId": tab})  # an action ends the refs of the snapshot
    cpu = _tree_cpu_ms(pid)
    await step("type by ref", "tab.type", {"tabId": tab, "ref": ref(snap, "input", "Name"), "text": "Ada"})


Samples = dict[str, dict[str, list[tuple[float, float]]]]


async def bench(serves: list[Serve], rounds: int, warmup: int) -> Samples:
    times: Samples = {s.name: {step: [] for step in STEPS} for s in serves}
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(connect(s)) for s in serves]
        tabs = []
        for client in clients:
            _, listed = await call(client, "tabs.list", {})
            tabs.append(next(t["tabId"] for t in listed["tabs"] if t["active"]))
        for n in range(warmup + rounds):
            order = list(range(len(serves)))
            if n % 2:
                order.reverse()
            for i in order:
                sink = times[serves[i].name] if n >= warmup else {step: [] for step in STEPS}
                url = f"{serves[i].site}/small.html?round={n}"
                await round_trip(clients[i], serves[i].pid, tabs[i], url, sink)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--base", type=Path, help="folder holding the previous build's engine/")
    which.add_argument(
        "--policy", action="store_true", help="this build without (base) and with (new) a restrictive site policy"
    )
    which.add_argument(
        "--direct", action="store_true", help="this build without (base) and with (new) --direct-cdp (issue 35)"
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--page", choices=["form", "busy"], default="form")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder)
        page = PAGE.replace("<!--extra-->", BUSY if args.page == "busy" else "")
        for name in ("index.html", "small.html"):
            (site / name).write_text(page, encoding="utf-8")
        (site / "pixel.png").write_bytes(PIXEL)
        serves: list[Serve] = []
        try:
            base = ROOT / "engine" if args.policy or args.direct else args.base / "engine"
            serves.append(Serve("base", base, site))
            flags = POLICY if args.policy else ["--direct-cdp"] if args.direct else None
            serves.append(Serve("new", ROOT / "engine", site, flags))
            for s in serves:  # the site URL: the page the host opened first (its --site index)
                _, listed = asyncio.run(_first_url(s))
                s.site = listed.rsplit("/", 1)[0]
            times = asyncio.run(bench(serves, args.rounds, args.warmup))
        finally:
            for s in serves:
                s.stop()
            if os.environ.get("BENCH_LOG"):
                for s in serves:
                    print(s.name, *s.lines[-60:], sep="\n  ")
    print(f"{args.rounds} rounds; wall: median (min) ms as the MCP client sees it; cpu: mean ms of CPU")
    print("used by the host's process tree (Python, Playwright driver, Chromium) during the step;")
    print("ratios new/base of the medians")
    print(
        f"{'step':<22}{'base wall':>15}{'new wall':>15}{'ratio':>7}{'base cpu':>10}{'new cpu':>9}{'ratio':>7}"
    )
    for step in STEPS:
        (bw, bc), (nw, nc) = ([[x[k] for x in times[who][step]] for k in (0, 1)] for who in ("base", "new"))
        mbw, mnw = statistics.median(bw), statistics.median(nw)
        mbc, mnc = statistics.mean(bc), statistics.mean(nc)
        print(
            f"{step:<22}{mbw:>8.1f} ({min(bw):>4.0f}){mnw:>8.1f} ({min(nw):>4.0f}){mnw / mbw:>7.2f}"
            f"{mbc:>10.1f}{mnc:>9.1f}{mnc / max(mbc, 1e-9):>7.2f}"
        )
    return 0


async def _first_url(serve: Serve) -> tuple[float, str]:
    async with connect(serve) as client:
        ms, listed = await call(client, "tabs.list", {})
        return ms, str(listed["tabs"][0]["url"])


if __name__ == "__main__":
    sys.exit(main())
