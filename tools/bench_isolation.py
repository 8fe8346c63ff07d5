#!/usr/bin/env python3
"""Isolated clients on one host, side by side with one Playwright MCP process per agent (issue 31).

Usage::

    tools/bench_isolation [--seconds 10] [--reps 3] [--clients 1,2,4] [--extra 4] [--no-peer] [--json FILE]

One run, on this machine, at the same moment:

* **Throughput.** One ``kelpie-gateway serve --isolation per-client`` on the built-in fixture site; ``max(clients)``
  paired clients, each with its own context and its tab on ``click.html``. For each N of ``--clients``
  (order rotating per repetition), N clients run at once for ``--seconds``, each a loop of ``tab.snapshot``
  then ``tab.click`` of the snapshot's "Increment" ref over the canonical route (one HTTP request = one
  transaction). The row is the aggregate transactions per second, the ratio to 1 client, and the BUSY
  answers (there must be none: no client shares a lane). Medians over ``--reps``.
* **Memory.** What one more isolated client costs: PSS and RSS of the host's whole process tree (the host,
  Playwright's driver, Chromium's browser, renderer, GPU/utility processes) with 1 client, then with
  1 + ``--extra`` clients (each with a tab on ``click.html`` after a snapshot), divided by ``--extra``.
  Beside it, what one more agent costs with Playwright MCP (npm ``@playwright/mcp``, the version
  ``tools/bench_peers`` pins, ``--isolated``, the same Chromium and flags): two processes started one after
  the other, each navigated to the same page with a snapshot; the figure is the tree of each (node and its
  own Chromium), their mean. PSS (proportional set size, ``/proc/PID/smaps_rollup``) counts a page shared
  by N processes as 1/N to each, so a tree's PSS is what it adds to the machine; RSS counts shared pages in
  every process and is shown for reference.

A benchmark, not a test: prints one Markdown table (and ``--json`` the raw figures). Absolute figures move with
the machine's load; compare the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tools"))

from bench_peers import PEERS, Playwright, install_peers  # noqa: E402
from kelpie_gateway.host.browser import DEFAULT_CHROMIUM  # noqa: E402
from kelpie_gateway.host.launch import HostProcess  # noqa: E402


# ---------------------------------------------------------------------------------------------- processes
def _tree() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    return children


def descendants(root: int, tree: dict[int, list[int]] | None = None) -> list[int]:
    """``root`` and every process below it."""
    tree = _tree() if tree is None else tree
    found, todo = [root], [root]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(PSS, RSS) in KiB summed over ``pids`` (``/proc/PID/smaps_rollup``)."""
    pss = rss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except OSError:
            continue
    return pss, rss


def settle() -> None:
    time.sleep(3.0)  # let Chromium finish the page's work and the allocators settle


# ---------------------------------------------------------------------------------------------- the host
class Client:
    """One paired client of the per-client host, over the canonical route."""

    def __init__(self, host: HostProcess, name: str) -> None:
        self.url = host.url
        self.token = host.pair(name)
        self.tab = ""

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"version": 1, "id": 1, "method": method, "params": params}).encode()
        request = urllib.request.Request(
            f"{self.url}/v1/browser-control",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            envelope: dict[str, Any] = json.loads(response.read())
        return envelope

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        envelope = self.call(method, params)
        if not envelope["success"]:
            raise RuntimeError(f"{method}: {envelope['error']}")
        return dict(envelope["result"])

    def open(self, page: str) -> dict[str, Any]:
        self.tab = self.ok("tabs.list", {})["tabs"][0]["tabId"]
        self.ok("tab.navigate", {"tabId": self.tab, "url": page})
        return self.ok("tab.snapshot", {"tabId": self.tab})


def increment(snapshot: dict[str, Any]) -> str:
    return next(e["ref"] for e in snapshot["elements"] if e.get("label") == "Increment")


def loop(client: Client, until: float, counts: dict[str, int], lock: threading.Lock) -> None:
    """snapshot + click until ``until``; counts transactions answered and BUSY answers."""
    done = busy = 0
    while time.monotonic() < until:
        snapshot = client.call("tab.snapshot", {"tabId": client.tab})
        done += 1
        if not snapshot["success"]:
            busy += snapshot["error"]["code"] == "BUSY"
            continue
        clicked = client.call("tab.click", {"tabId": client.tab, "ref": increment(snapshot["result"])})
        done += 1
        if not clicked["success"]:
            busy += clicked["error"]["code"] == "BUSY"
    with lock:
        counts["tx"] += done
        counts["busy"] += busy


def throughput(clients: list[Client], seconds: float) -> tuple[float, int]:
    """Aggregate transactions/s of ``clients`` running at once, and their BUSY answers."""
    counts, lock = {"tx": 0, "busy": 0}, threading.Lock()
    started = time.monotonic()
    until = started + seconds
    with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
        for future in [pool.submit(loop, c, until, counts, lock) for c in clients]:
            future.result()
    return counts["tx"] / (time.monotonic() - started), counts["busy"]


# ---------------------------------------------------------------------------------------------- the peer
async def peer_memory(work: Path, page: str, executable: str) -> list[tuple[int, int]]:
    """Two Playwright MCP processes, started one after the other; (PSS, RSS) KiB of each one's tree."""
    install_peers(["playwright"])
    figures: list[tuple[int, int]] = []
    started: list[Playwright] = []
    try:
        for index in range(2):
            peer_work = work / f"peer-{index}"
            peer_work.mkdir()
            (peer_work / "playwright").mkdir()
            before = set(_tree().get(os.getpid(), []))
            peer = Playwright(peer_work, executable)
            await peer.launch(page)
            await peer.snapshot(60)
            started.append(peer)
            await asyncio.sleep(3.0)
            tree = _tree()
            roots = [pid for pid in tree.get(os.getpid(), []) if pid not in before]
            pids = [pid for root in roots for pid in descendants(root, tree)]
            figures.append(memory_kib(pids))
    finally:
        for peer in started:
            await peer.close()
    return figures


# ---------------------------------------------------------------------------------------------- the run
def run(args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {"load_before": os.getloadavg(), "throughput": {}, "memory": {}}
    process = HostProcess(
        ["--approve-pairing", "auto", "--pairings", "memory", "--isolation", "per-client",
         "--max-contexts", str(max(max(args.clients), 1 + args.extra) + 1), "--context-idle-s", "3600",
         "--browser-executable", args.executable]
    )
    process.start()
    try:
        line = process.wait_for_line("site ", 30) or ""
        page = line.rsplit(" at ", 1)[1].rstrip("/") + "/click.html"
        assert process._proc is not None
        host_pid = process._proc.pid

        print("bench_isolation: memory, 1 client …", file=sys.stderr)
        clients = [Client(process, "bench-0")]
        refs = [clients[0].open(page)]
        settle()
        one = memory_kib(descendants(host_pid))
        print(f"bench_isolation: memory, 1 + {args.extra} clients …", file=sys.stderr)
        for index in range(1, 1 + args.extra):
            clients.append(Client(process, f"bench-{index}"))
            refs.append(clients[-1].open(page))
        settle()
        more = memory_kib(descendants(host_pid))
        figures["memory"]["product"] = {
            "one_client": one,
            "with_extra": more,
            "extra": args.extra,
            "per_client_kib": [(more[0] - one[0]) / args.extra, (more[1] - one[1]) / args.extra],
        }

        for extra in range(len(clients), max(args.clients)):
            clients.append(Client(process, f"bench-{extra}"))
            clients[-1].open(page)
        for n in args.clients:
            figures["throughput"][n] = {"tx_s": [], "busy": 0}
        for rep in range(args.reps):
            order = args.clients[rep % len(args.clients) :] + args.clients[: rep % len(args.clients)]
            for n in order:
                print(f"bench_isolation: repetition {rep + 1}/{args.reps}, {n} client(s) …", file=sys.stderr)
                rate, busy = throughput(clients[:n], args.seconds)
                figures["throughput"][n]["tx_s"].append(rate)
                figures["throughput"][n]["busy"] += busy

        if not args.no_peer:  # while the host runs: the same page, the same moment
            print("bench_isolation: Playwright MCP, two processes …", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
                peers = asyncio.run(peer_memory(Path(tmp), page, args.executable))
            figures["memory"]["playwright"] = {
                "each": peers,
                "per_agent_kib": [statistics.mean(p[0] for p in peers), statistics.mean(p[1] for p in peers)],
            }
    finally:
        process.stop()
    figures["load_after"] = os.getloadavg()
    return figures


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f} MiB"


def table(figures: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"bench_isolation: {args.seconds:g} s per measurement, {args.reps} repetition(s), medians; load "
        f"{figures['load_before'][0]:.1f} before, {figures['load_after'][0]:.1f} after",
        "",
        "| isolated clients at once | transactions/s (snapshot + click) | ratio to 1 client | BUSY answers |",
        "|---|---|---|---|",
    ]
    base = statistics.median(figures["throughput"][args.clients[0]]["tx_s"]) if args.clients else 0.0
    one = statistics.median(figures["throughput"][1]["tx_s"]) if 1 in figures["throughput"] else base
    for n in args.clients:
        cell = figures["throughput"][n]
        rate = statistics.median(cell["tx_s"])
        lines.append(f"| {n} | {rate:.1f} | {rate / one:.2f}× | {cell['busy']} |")
    product = figures["memory"]["product"]
    lines += [
        "",
        "| one more agent | PSS (what it adds) | RSS (shared pages counted in each process) |",
        "|---|---|---|",
        f"| an isolated client of the host (context + gateway; mean of {product['extra']}) | "
        f"{mib(product['per_client_kib'][0])} | {mib(product['per_client_kib'][1])} |",
    ]
    peer = figures["memory"].get("playwright")
    if peer is not None:
        lines.append(
            f"| a Playwright MCP {PEERS['playwright'][1]} process with its own browser (mean of 2) | "
            f"{mib(peer['per_agent_kib'][0])} | {mib(peer['per_agent_kib'][1])} |"
        )
        lines.append(
            f"| ratio (isolated client / Playwright MCP process) | "
            f"{product['per_client_kib'][0] / peer['per_agent_kib'][0]:.2f}× | "
            f"{product['per_client_kib'][1] / peer['per_agent_kib'][1]:.2f}× |"
        )
    lines.append(
        f"\nThe host with 1 client: PSS {mib(product['one_client'][0])}, RSS {mib(product['one_client'][1])}; "
        f"with {1 + product['extra']}: PSS {mib(product['with_extra'][0])}, RSS {mib(product['with_extra'][1])}."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each throughput measurement")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (medians are printed)")
    parser.add_argument(
        "--clients", default="1,2,4", help="comma-separated numbers of clients at once (default 1,2,4)"
    )
    parser.add_argument("--extra", type=int, default=4, help="clients added for the memory figure (default 4)")
    parser.add_argument("--no-peer", action="store_true", help="skip Playwright MCP")
    parser.add_argument("--executable", default=DEFAULT_CHROMIUM, help="Chromium for every target")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    args.clients = [int(n) for n in args.clients.split(",") if n.strip()]
    figures = run(args)
    print(table(figures, args))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
