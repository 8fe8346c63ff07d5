"""What ``tools/bench`` and ``tools/bench_abi.sh`` share to measure on a shared, noisy machine
(docs/performance.md, "Measuring on a noisy machine"): CPU pinning, ABBA ordering, paired ratios with a
distribution-free confidence interval, and instruction counts under callgrind."""

from __future__ import annotations

import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence


def pin_cpu(choice: str) -> str | None:
    """The CPU to pin the measured processes to: ``auto`` = the last CPU this process may use (None
    without ``taskset``), ``none`` = no pinning, else ``choice`` itself."""
    if choice == "none" or shutil.which("taskset") is None:
        return None
    if choice == "auto":
        return str(sorted(os.sched_getaffinity(0))[-1])
    return choice


def pinned(cmd: list[str], cpu: str | None) -> list[str]:
    return cmd if cpu is None else ["taskset", "-c", cpu, *cmd]


def abba(names: Sequence[str], round_no: int) -> list[str]:
    """The order of round ``round_no``: base, this, then this, base (a drift of the load hits both alike)."""
    return list(names) if round_no % 2 == 0 else list(names)[::-1]


def median_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """The median of ``values`` and a distribution-free ~95 % confidence interval for it (order statistics
    of the sign test: binomial(n, 1/2), normal approximation; the whole range below 6 values)."""
    v = sorted(values)
    n = len(v)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(v), v[lo], v[hi]


def ratio_cell(base: Sequence[float], new: Sequence[float]) -> str:
    """``median [lo, hi]`` of the per-round ratios new/base (rounds paired in order)."""
    ratio, lo, hi = median_ci([n / b for b, n in zip(base, new, strict=True)])
    return f"{ratio:.3f} [{lo:.3f}, {hi:.3f}]"


def callgrind_instructions(cmd: list[str], env: dict[str, str] | None = None) -> int:
    """Instructions ``cmd`` executes under ``valgrind --tool=callgrind`` (deterministic: load does not enter)."""
    if shutil.which("valgrind") is None:
        sys.exit("instruction counts need valgrind (tools/dev setup installs it)")
    full = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    done = subprocess.run(full, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"{' '.join(full)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return int(found.group(1))
