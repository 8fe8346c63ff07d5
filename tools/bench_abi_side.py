#!/usr/bin/env python3
"""The C ABI benchmark driver behind ``tools/bench_abi.sh`` (issue 16): medians over several processes, and
with ``--base REV`` the library of commit REV measured side by side with this tree's, interleaved.

    tools/bench_abi.sh [--base REV] [--rounds R] [--cold-runs K] [--transactions N] [--crossings N]

* Cold start is one sample per process (the first create starts the embedded interpreter and imports the
  engine), so it is the median of K processes (``bench_abi --cold``: create, then the first full
  transaction, reported separately).
* The steady-state figures (no-op crossing, full transaction median and p99, ...) come from R runs of
  ``bench_abi --summary``; the median over runs is printed.
* ``--base REV``: REV is checked out into a temporary git worktree, its library built there with its own
  ``abi/build_abi.py`` (and this interpreter), and this tree's ``tools/bench_abi.c`` compiled against it, so
  the two libraries are measured by the same program; base and this tree alternate run by run.

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = os.environ.get("PY", str(ROOT / ".venv" / "bin" / "python"))

ROWS = (  # key in the summary line, label, unit, target (None: no target)
    ("cold_ms", "cold start: first create (embedded Python + engine)", "ms", 150.0),
    ("first_tx_ms", "  then the first full transaction", "ms", None),
    ("version_ns", "exported call, no Python (version)", "ns", None),
    ("next_ns", "no-op crossing (next on idle + free)", "ns", 1000.0),
    ("round_ns", "begin + advance + free round (no authorize)", "ns", None),
    ("median_us", "median full transaction through the ABI", "us", 40.0),
    ("p99_us", "p99 full transaction through the ABI", "us", None),
    ("tx_per_s", "full transactions per second", "/s", None),
    ("py_us", "same transaction, Python API (dict), median", "us", None),
    ("py_bytes_us", "same transaction, Python API (JSON bytes), median", "us", None),
    ("rss_growth_kib", "RSS growth after warm-up", "KiB", None),
)


def figures(line: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", line)}


def run(binary: Path, *args: str) -> str:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def build_base(rev: str, tmp: Path) -> Path:
    tree, prefix = tmp / "base", tmp / "prefix"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    subprocess.run([PY, str(tree / "abi" / "build_abi.py"), "--prefix", str(prefix)], check=True, stdout=sys.stderr)
    out = tmp / "bin"
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "bindings" / "c"), f"PREFIX={prefix}", f"OUT={out}", f"PY={PY}",
         str(out / "bench_abi")],
        check=True,
    )
    return out / "bench_abi"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", metavar="REV")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--transactions", type=int, default=200_000)
    ap.add_argument("--crossings", type=int, default=1_000_000)
    args = ap.parse_args()
    steady = ["--summary", "--transactions", str(args.transactions), "--crossings", str(args.crossings)]

    with tempfile.TemporaryDirectory(prefix="kelpie-bench-abi-") as tmp:
        benches = {"this tree": ROOT / "build" / "abi" / "bin" / "bench_abi"}
        try:
            if args.base:
                benches = {f"base {args.base}": build_base(args.base, Path(tmp)), **benches}
            cold: dict[str, list[dict[str, float]]] = {name: [] for name in benches}
            warm: dict[str, list[dict[str, float]]] = {name: [] for name in benches}
            last = ""
            for _ in range(max(1, args.cold_runs)):  # interleaved: base, this, base, this, ...
                for name, binary in benches.items():
                    cold[name].append(figures(run(binary, "--cold")))
            for _ in range(max(1, args.rounds)):
                for name, binary in benches.items():
                    last = run(binary, *steady)
                    warm[name].append(figures(last.splitlines()[-1].removeprefix("summary ")))
        finally:
            if args.base:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "base")], check=False
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
        f"medians: cold start over {args.cold_runs} processes, the rest over {args.rounds} runs of "
        f"{args.transactions} transactions (per engine)"
    )
    head = f"  {'':52}" + "".join(f"{n[:18]:>19}" for n in names)
    print(head + (f"{'this/base':>11}" if len(names) == 2 else "") + "   target")
    for key, label, unit, target in ROWS:
        row = f"  {label:52}" + "".join(f"{medians[n][key]:15.1f} {unit:>3}" for n in names)
        if len(names) == 2:
            base = medians[names[0]][key]
            row += f"{medians['this tree'][key] / base:11.2f}" if base else f"{'':11}"
        if target is not None:
            met = medians["this tree"][key] <= target
            row += f"   <= {target:g} {unit}: {'met' if met else 'NOT met'}"
        print(row)


if __name__ == "__main__":
    main()
