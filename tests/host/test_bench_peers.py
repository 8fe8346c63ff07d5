"""``tools/bench_peers`` keeps working (issues 16 and 35): a benchmark, not a timed test, so this runs it cheaply —
the product only (Python API, ``--via-abi``, stdio and ``--direct-cdp``, real headless Chromium), one repetition, the small page and
the isolated-agents rows (one-second loops, one extra client) — and checks that it prints its table with a figure
in every product cell. No timing is asserted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURE = re.compile(r"^\d+(\.\d+)?( ms| s|k)?$")  # "43 ms", "1.58 s", "1.4k", "812"


@pytest.mark.timeout(600)
def test_bench_peers_prints_a_figure_in_every_product_cell(tmp_path: Path) -> None:
    raw = tmp_path / "raw.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "bench_peers.py"),
            "--only",
            "product",
            "--reps",
            "1",
            "--pages",
            "small,agents",
            "--agent-seconds",
            "1",
            "--agent-extra",
            "1",
            "--json",
            str(raw),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert header[:5] == [
        "metric",
        "product (Python API)",
        "product (--via-abi)",
        "product (stdio)",
        "product (--direct-cdp)",
    ], header
    table = [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]
    body = {cells[0]: cells[1:5] for cells in table if not cells[0].startswith(("one more", "4 isolated"))}
    agents = {cells[0]: cells for cells in table if cells[0].startswith(("one more", "4 isolated"))}
    expected = [
        "navigate to the small page",
        "small page: first snapshot after loading",
        "small page: first snapshot, characters",
        "small page: repeated snapshot",
        "click by ref",
        "native click by ref (product: click extension; peers: their click)",
        "native hover by ref (product: hover extension; peers: their hover)",
        "type by ref",
    ]
    assert list(body) == expected, run.stdout
    for metric, cells in body.items():
        for cell in cells:
            assert FIGURE.match(cell), (metric, cell, run.stdout)
    # nothing failed on the way (a failed click, hover or type would be a note, and its cell not a figure)
    assert "notes:" not in run.stdout, run.stdout
    # the isolated agents (tools/bench_isolation's run): the Python API column has the figures, no peer ran
    assert [label.split(":")[0] for label in agents] == [
        "one more isolated agent",
        "one more isolated agent",
        "4 isolated agents",
    ], run.stdout
    for label, cells in agents.items():
        cell = cells[1]
        if label.startswith("4 isolated"):
            assert re.match(r"^\d+\.\d\d× \(\d+\.\d / \d+\.\d tx/s\)$", cell), (label, cell)
        else:
            assert re.match(r"^-?\d+ MiB$", cell), (label, cell)
        assert cells[2:5] == ["—", "—", "—"], (label, cells)
    figures = json.loads(raw.read_text())
    assert set(figures["agents"]["throughput"]) == {"1", "4"}, figures["agents"]
    assert "playwright" not in figures["agents"]["memory"]


@pytest.mark.timeout(600)
def test_bench_isolation_prints_a_figure_in_every_cell(tmp_path: Path) -> None:
    """``tools/bench_isolation`` keeps working (issue 31): one short repetition, no peer; a figure in every
    cell of both tables and no BUSY answer between isolated clients (a fact, not a timing)."""
    raw = tmp_path / "raw.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench_isolation.py"), "--seconds", "1", "--reps", "1",
         "--extra", "1", "--no-peer", "--json", str(raw)],
        capture_output=True, text=True, timeout=540,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in run.stdout.splitlines() if line.startswith("|")]
    throughput = [r for r in rows if r[0] in ("1", "2", "4")]
    assert [r[0] for r in throughput] == ["1", "2", "4"], run.stdout
    for row in throughput:
        assert re.match(r"^\d+(\.\d+)?$", row[1]) and float(row[1]) > 0, row
        assert re.match(r"^\d+\.\d\d×$", row[2]) and row[3] == "0", row
    memory = [r for r in rows if r[0].startswith("an isolated client")]
    assert len(memory) == 1 and all(re.match(r"^-?\d+ MiB$", cell) for cell in memory[0][1:]), run.stdout
    figures = json.loads(raw.read_text())
    assert set(figures["throughput"]) == {"1", "2", "4"} and "product" in figures["memory"]
