"""``tools/bench`` keeps working and its statistics say what docs/performance.md ("Measuring on a noisy
machine") claims (issue 16). A benchmark, not a timed test: the run is tiny and no timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from benchstats import abba, median_ci, ratio_cell  # noqa: E402


def test_median_ci_is_the_sign_test_interval() -> None:
    values = [float(v) for v in range(1, 41)]  # n = 40: the 95 % interval is the 14th to 27th value
    assert median_ci(values) == (20.5, 14.0, 27.0)
    assert median_ci([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)  # few values: the whole range
    same = median_ci([1.0] * 40)
    assert same == (1.0, 1.0, 1.0)


def test_ratios_are_paired_by_round_and_rounds_alternate() -> None:
    # a load that doubles halfway hits both sides alike: the paired ratio stays exact
    base = [10.0] * 20 + [20.0] * 20
    new = [9.0] * 20 + [18.0] * 20
    assert ratio_cell(base, new) == "0.900 [0.900, 0.900]"
    assert [abba(["base", "this"], r) for r in range(3)] == [["base", "this"], ["this", "base"], ["base", "this"]]


@pytest.mark.timeout(300)
def test_bench_prints_every_row_with_a_calibrated_ratio() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench"), "--calibrate", "10", "--rounds", "4", "--n", "200"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    rows = (
        "full transaction, dict API",
        "full transaction, JSON bytes in/out",
        "next on an idle gateway",
        "full MCP tools/call (begin_mcp+2 advance)",
    )
    for row in rows:
        line = next(line for line in out.splitlines() if line.startswith(row))
        cells = re.findall(r"\d+\.\d+ \(\d+\.\d+\)|\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", line)
        assert len(cells) == 4, line  # two engines' median (p10), two ratios with their intervals
        assert re.search(rf"{re.escape(row)}[^\n]*expected ratio 1\.\d{{3}}", out)
    assert "fast validator (schema.validate_request)" in out
    assert re.search(r"target median <= 30 us: (met|NOT met)", out)
