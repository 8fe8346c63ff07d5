#!/usr/bin/env python3
"""Where one small-page call's time goes, hop by hop (issue 16): a timestamp at every hop of an MCP
``tools/call`` through the reference host, medians over rounds.

Usage::

    .venv/bin/python tools/profile_hops.py [--rounds 8] [--skip 2] [--items N] [-- EXTRA SERVE FLAGS, e.g. --via-abi]

Starts ``kelpie-gateway serve`` (real headless Chromium) in a child process with timers (a ``sitecustomize``
on its PYTHONPATH) wrapped around the
host's own functions (the aiohttp MCP handler, the driver, the gateway's ``begin_mcp``/``advance``, the
renderer's world lookup, every CDP ``send``) and around the fixed script in the page (its first and last
statement, ``performance.timeOrigin + performance.now()``), then drives it over MCP with the Python SDK
client (stateless revision), timing the client and its HTTP hooks. Each round: navigate to a fresh
document of ``tools/bench_latency.py``'s 11-control page, the first snapshot, a repeated snapshot, a click
and a type by ref (with ``--items N``: ``tools/bench_reader.py``'s page of N list items instead, and
only the navigation and the two snapshots). Prints per step the median, minimum and maximum milliseconds of each hop. All clocks are
``CLOCK_MONOTONIC`` except the page's, which is wall time mapped onto it (good to about a millisecond).
A profile, not a benchmark: the wrapping itself costs a little, and the figures are noisy on a shared
machine; compare builds with ``tools/bench_latency.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOPS = (
    ("client SDK out", "call", "H.sent"),
    ("HTTP in -> aiohttp handler", "H.sent", "S.handler"),
    ("handler: checks, body", "S.handler", "D.mcp"),
    ("engine begin + authorize", "D.mcp", "D.call"),
    ("wait for the world", "R.world", "R.world.done"),
    ("dispatch starts -> evaluate sent", "D.call", "C.evaluate$last"),
    ("evaluate sent -> script starts", "C.evaluate$last", "P.start"),
    ("page script", "P.start", "P.end"),
    ("script ends -> reply in Python", "P.end", "C.evaluate.done$last"),
    ("reply in Python -> dispatch ends", "C.evaluate.done$last", "D.call.done"),
    ("dispatch, all of it", "D.call", "D.call.done"),
    ("engine: result + MCP answer", "G.advance$last", "G.advance.done$last"),
    ("answer -> client HTTP", "G.advance.done$last", "H.resp"),
    ("client SDK in", "H.resp", "call.done"),
    ("TOTAL", "call", "call.done"),
)

HOST_SIDE = r"""
import json, os, time
LOG = open(os.environ["KELPIE_PROFILE_LOG"], "a", buffering=1)
def mark(what, **kw):
    LOG.write(json.dumps({"t": time.monotonic() * 1000, "w": time.time() * 1000, "what": what, **kw}) + "\n")
from kelpie_gateway.host import driver, server
from kelpie_gateway.host.browser.world import World
from playwright.async_api import CDPSession
def timed(cls, name, label):
    inner = getattr(cls, name)
    async def wrapper(*args, **kwargs):
        mark(label)
        try:
            return await inner(*args, **kwargs)
        finally:
            mark(label + ".done")
    setattr(cls, name, wrapper)
timed(server.HostServer, "mcp", "S.handler")
timed(driver.Driver, "mcp", "D.mcp")
timed(driver.Driver, "_call", "D.call")
timed(World, "world", "R.world")
init = driver.Driver.__init__
def driver_init(self, gateway, *args, **kwargs):
    for name in ("begin_mcp", "advance"):
        inner = getattr(gateway, name)
        def wrapper(*a, _inner=inner, _name=name, **k):
            mark("G." + _name)
            try:
                return _inner(*a, **k)
            finally:
                mark("G." + _name + ".done")
        setattr(gateway, name, wrapper)
    init(self, gateway, *args, **kwargs)
driver.Driver.__init__ = driver_init
def wrap_send(cls):
    send = cls.send
    async def cdp_send(self, method, params=None):
        timing = method == "Runtime.evaluate" and bool(params and params.get("awaitPromise"))
        if timing:
            params = dict(params)
            params["expression"] = ("(async () => { const t0 = performance.timeOrigin + performance.now(); const v = await ("
                + params["expression"] + "); return {kelpieProfile: [t0, performance.timeOrigin + performance.now()], v}; })()")
            mark("C.evaluate")
        reply = await send(self, method, params)
        if timing:
            value = reply.get("result", {}).get("value")
            if isinstance(value, dict) and "kelpieProfile" in value:
                mark("P.script", w0=value["kelpieProfile"][0], w1=value["kelpieProfile"][1])
                reply = {**reply, "result": {**reply["result"], "value": value["v"]}}
            mark("C.evaluate.done")
        return reply
    cls.send = cdp_send
wrap_send(CDPSession)
from kelpie_gateway.host.browser.direct import DirectSession  # --direct-cdp: the same hops on its sessions
wrap_send(DirectSession)
"""
"""Installed as ``sitecustomize`` in the host child (found through its PYTHONPATH): wraps the hops."""


def analyse(lines: list[dict[str, Any]], skip: int) -> dict[str, dict[str, list[float]]]:
    """Per step and hop, the milliseconds of each round after the first `skip`."""
    offset = statistics.median(e["w"] - e["t"] for e in lines if "w" in e)  # wall -> monotonic
    events = list(lines)
    for e in lines:
        if e["what"] == "P.script":
            events += [{"t": e["w0"] - offset, "what": "P.start"}, {"t": e["w1"] - offset, "what": "P.end"}]
    events.sort(key=lambda e: e["t"])
    calls: list[tuple[str, dict[str, float]]] = []
    current: dict[str, float] | None = None
    for e in events:
        if e["what"] == "call":
            current = {}
            calls.append((e["step"], current))
        if current is not None:
            current.setdefault(e["what"], e["t"])
            current[e["what"] + "$last"] = e["t"]
        if e["what"] == "call.done":
            current = None
    hops: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[str, int] = defaultdict(int)
    for step, at in calls:
        seen[step] += 1
        if seen[step] > skip:
            for name, start, end in HOPS:
                if start in at and end in at:
                    hops[step][name].append(at[end] - at[start])
    return hops


async def drive(url: str, token: str, rounds: int, mark: Any, snapshots_only: bool = False) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    sys.path.insert(0, str(ROOT / "tools"))
    from bench_latency import ref

    async def sent(_request: Any) -> None:
        mark("H.sent")

    async def answered(_response: Any) -> None:
        mark("H.resp")

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=60.0,
        event_hooks={"request": [sent], "response": [answered]},
    )
    async with (
        http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="2026-07-28") as client,
    ):

        async def call(step: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
            for _ in range(10):
                mark("call", step=step)
                result = await client.call_tool(
                    "kelpie_browser_control", {"method": method, "params": params}
                )
                mark("call.done", step=step)
                envelope = result.structured_content
                assert isinstance(envelope, dict), result
                if envelope["success"]:
                    return dict(envelope["result"])
                await asyncio.sleep(0.05)  # a retryable refusal (a late navigation event)
            raise SystemExit(f"{method} failed: {envelope}")

        listed = await call("tabs.list", "tabs.list", {})
        tab, first = listed["tabs"][0]["tabId"], listed["tabs"][0]["url"]
        for n in range(rounds):
            await call(
                "navigate", "tab.navigate", {"tabId": tab, "url": f"{first.rsplit('/', 1)[0]}/small.html?{n}"}
            )
            await call("first snapshot", "tab.snapshot", {"tabId": tab})
            snap = await call("repeated snapshot", "tab.snapshot", {"tabId": tab})
            if snapshots_only:
                continue
            await call("click by ref", "tab.click", {"tabId": tab, "ref": ref(snap, "button", "Send")})
            snap = await call("snapshot after click", "tab.snapshot", {"tabId": tab})
            await call(
                "type by ref", "tab.type", {"tabId": tab, "ref": ref(snap, "input", "Name"), "text": "Ada"}
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--skip", type=int, default=2, help="first rounds left out (warm-up)")
    parser.add_argument(
        "--items",
        type=int,
        default=0,
        help="instead of the small page, bench_reader's big page with N items; navigate and the two snapshots only",
    )
    parser.add_argument("serve_flags", nargs="*", help="after --: more `serve` flags, e.g. --via-abi")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tools"))
    from bench_latency import PAGE
    from bench_reader import big_page

    page = big_page(args.items) if args.items else PAGE
    from kelpie_gateway.host.launch import HostProcess

    with tempfile.TemporaryDirectory() as folder:
        site, log = Path(folder) / "site", Path(folder) / "hops.jsonl"
        site.mkdir()
        for name in ("index.html", "small.html"):
            (site / name).write_text(page, encoding="utf-8")
        (Path(folder) / "sitecustomize.py").write_text(HOST_SIDE, encoding="utf-8")
        client_lines: list[dict[str, Any]] = []

        def mark(what: str, **extra: Any) -> None:
            client_lines.append({"t": time.monotonic() * 1000, "what": what, **extra})

        host = HostProcess(
            ["--site", str(site), "--approve-pairing", "auto", "--pairings", "memory", *args.serve_flags],
            env={"KELPIE_PROFILE_LOG": str(log), "PYTHONPATH": folder},
        )
        try:
            url = host.start()
            asyncio.run(drive(url, host.pair("profile-hops"), args.rounds, mark, snapshots_only=args.items > 0))
        finally:
            host.stop()
        lines = [json.loads(line) for line in log.read_text().splitlines()] + client_lines
    print(
        f"{args.rounds} rounds ({args.skip} left out); milliseconds, median (min – max); load {os.getloadavg()[0]:.1f}"
    )
    for step, hops in analyse(lines, args.skip).items():
        if step == "tabs.list":
            continue
        print(f"== {step}")
        for name, *_ in HOPS:
            if hops.get(name):
                values = hops[name]
                print(
                    f"  {name:<34}{statistics.median(values):8.2f} ({min(values):6.2f} – {max(values):7.2f})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
