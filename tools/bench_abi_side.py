#!/usr/bin/env python3
"""The C ABI benchmark driver behind ``tools/bench_abi.sh`` (issue 16): many short runs of ``bench_abi``, and
with ``--base REV`` the library of commit REV measured side by side with this tree's, interleaved.

    tools/bench_abi.sh [--base REV] [--rounds R] [--cold-runs K] [--transactions N] [--crossings N] [--cpu C]
    tools/bench_abi.sh [--base REV] --instructions [--count N]

* Cold start is one sample per process (the first create starts the embedded interpreter and imports the
  engine), so it is the median of K processes (``bench_abi --cold``: create, then the first full
  transaction, reported separately).
* The steady-state figures (no-op crossing, full transaction median and p99, ...) come from R short runs
  of ``bench_abi --summary`` (default 16 of 5,000 transactions), pinned to one CPU (``--cpu``, default the
  last; ``none``: not pinned) and in ABBA order (base, this, this, base, ...); the median over runs is
  printed, and with a base the median of the per-round ratios this/base with a distribution-free 95 %
  confidence interval (docs/performance.md, "Measuring on a noisy machine"; a change is shown when the
  interval excludes 1.0).
* Like with like: the full transaction's host parses every step with a small C JSON reader; the rows
  "host's own JSON work alone" (that reader on the same step texts, no ABI call), "minimal-host transaction
  through the ABI" (no parsing) and "same minimal host in Python" (``Gateway.call_json``, the entry the ABI
  calls, with the same bytes) split it into host work, crossings and engine. Every row runs in one process
  on the libpython the library loads (``bench_abi`` prints its path).
* ``--instructions``: instructions per full transaction through the ABI (the C host's work, the crossings
  and the engine) counted under callgrind: ``bench_abi --count N`` minus ``--count 0``, deterministic.
* ``--base REV``: REV is checked out into a temporary git worktree, its library built there with its own
  ``abi/build_abi.py`` (and this interpreter), and this tree's ``tools/bench_abi.c`` compiled against it, so
  the two libraries are measured by the same program.

Targets (issue 16): median full transaction <= 40 us, no-op crossing (next on idle) <= 1 us, cold start
(first create) <= 150 ms. On a shared machine the ratios in the last column are what to compare.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchstats import abba, callgrind_instructions, pin_cpu, pinned, ratio_cell

ROOT = Path(__file__).resolve().parent.parent
PY = os.environ.get("PY", str(ROOT / ".venv" / "bin" / "python"))

ROWS = (  # key in the summary line, label, unit, target (None: no target)
    ("cold_ms", "cold start: first create (embedded Python + engine)", "ms", 150.0),
    ("first_tx_ms", "  then the first full transaction", "ms", None),
    ("version_ns", "exported call, no Python (version)", "ns", None),
    ("next_ns", "no-op crossing (next on idle + free)", "ns", 1000.0),
    ("round_ns", "begin + advance + free round (no authorize)", "ns", None),
    ("median_us", "median full transaction through the ABI", "us", 40.0),
    ("p10_us", "p10 full transaction through the ABI", "us", None),
    ("p99_us", "p99 full transaction through the ABI", "us", None),
    ("tx_per_s", "full transactions per second", "/s", None),
    ("host_us", "  the host's own JSON work alone (C reader, no ABI)", "us", None),
    ("min_us", "minimal-host transaction through the ABI (no parse)", "us", None),
    ("py_json_us", "same minimal host in Python (Gateway.call_json)", "us", None),
    ("py_us", "same transaction, Python API (dict), median", "us", None),
    ("py_bytes_us", "same transaction, Python API (JSON bytes), median", "us", None),
    ("rss_growth_kib", "RSS growth after warm-up", "KiB", None),
)


def figures(line: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", line)}


def run(binary: Path, *args: str, cpu: str | None = None) -> str:
    done = subprocess.run(pinned([str(binary), *args], cpu), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def build_base(rev: str, tmp: Path) -> Path:
    tree, prefix = tmp / "base", tmp / "prefix"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True
    )
    subprocess.run(
        [PY, str(tree / "abi" / "build_abi.py"), "--prefix", str(prefix)], check=True, stdout=sys.stderr
    )
    out = tmp / "bin"
    subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT / "bindings" / "c"),
            f"PREFIX={prefix}",
            f"OUT={out}",
            f"PY={PY}",
            str(out / "bench_abi"),
        ],
        check=True,
    )
    return out / "bench_abi"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", metavar="REV")
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--transactions", type=int, default=5_000)
    ap.add_argument("--crossings", type=int, default=50_000)
    ap.add_argument("--py-calls", type=int, default=4_000, help="timed calls of each Python API row per run")
    ap.add_argument("--cpu", default="auto")
    ap.add_argument("--instructions", action="store_true")
    ap.add_argument("--count", type=int, default=1_000, help="--instructions: transactions counted")
    args = ap.parse_args()
    cpu = pin_cpu(args.cpu)
    steady = [
        "--summary",
        "--transactions", str(args.transactions),
        "--crossings", str(args.crossings),
        "--py-calls", str(args.py_calls),
    ]  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="kelpie-bench-abi-") as tmp:
        benches = {"this tree": ROOT / "build" / "abi" / "bin" / "bench_abi"}
        try:
            if args.base:
                benches = {f"base {args.base}": build_base(args.base, Path(tmp)), **benches}
            if args.instructions:
                counts = {}
                for name, binary in benches.items():
                    zero, n = (
                        callgrind_instructions([str(binary), "--count", str(k)]) for k in (0, args.count)
                    )
                    counts[name] = (n - zero) / args.count
                print(
                    f"instructions per full transaction through the ABI (callgrind, {args.count} transactions)"
                )
                for name, value in counts.items():
                    print(f"  {name:30}{value:14,.0f}")
                if len(counts) == 2:
                    print(f"  {'this/base':30}{counts['this tree'] / counts[f'base {args.base}']:14.3f}")
                return
            load_before = os.getloadavg()
            cold: dict[str, list[dict[str, float]]] = {name: [] for name in benches}
            warm: dict[str, list[dict[str, float]]] = {name: [] for name in benches}
            last = ""
            for r in range(max(1, args.cold_runs)):
                for name in abba(list(benches), r):
                    cold[name].append(figures(run(benches[name], "--cold", cpu=cpu)))
            for r in range(max(1, args.rounds)):
                for name in abba(list(benches), r):
                    last = run(benches[name], *steady, cpu=cpu)
                    warm[name].append(figures(last.splitlines()[-1].removeprefix("summary ")))
            load_after = os.getloadavg()
        finally:
            if args.base:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "base")],
                    check=False,
                )

    if not args.base:
        print(last.rstrip().rsplit("\nsummary ", 1)[0])
        print()
    names = list(benches)
    medians = {}
    for name in names:
        medians[name] = {k: statistics.median(r[k] for r in cold[name]) for k in ("cold_ms", "first_tx_ms")}
        for key, *_ in ROWS:
            if key not in medians[name]:
                medians[name][key] = statistics.median(r[key] for r in warm[name])
    print(
        f"bench_abi {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: medians; cold start over "
        f"{args.cold_runs} processes, the rest over {args.rounds} runs of {args.transactions} transactions "
        f"per library, ABBA-interleaved, {'pinned to CPU ' + cpu if cpu is not None else 'not pinned'}; load "
        f"average before {' '.join(f'{x:.1f}' for x in load_before)}, after {' '.join(f'{x:.1f}' for x in load_after)}"
    )
    head = f"  {'':52}" + "".join(f"{n[:18]:>19}" for n in names)
    print(head + (f"{'this/base [95% CI]':>26}" if len(names) == 2 else "") + "   target")
    for key, label, unit, target in ROWS:
        row = f"  {label:52}" + "".join(f"{medians[n][key]:15.1f} {unit:>3}" for n in names)
        if len(names) == 2:
            runs = cold if key in ("cold_ms", "first_tx_ms") else warm
            base_runs = [r[key] for r in runs[names[0]]]
            row += (
                f"{ratio_cell(base_runs, [r[key] for r in runs['this tree']]):>26}"
                if all(base_runs)
                else f"{'':26}"
            )
        if target is not None:
            met = medians["this tree"][key] <= target
            row += f"   <= {target:g} {unit}: {'met' if met else 'NOT met'}"
        print(row)


if __name__ == "__main__":
    main()
