"""The deep profile's report (issue 19): for every property-based test, the examples run, the failures and
the time, printed at the end of the session (and as JSON lines to ``$KELPIE_DEEP_REPORT`` if set).

Examples are counted from Hypothesis' own run statistics (``hypothesis.statistics.collector``: one entry
per test case with its status), so a state machine counts runs of its rules, and a test that draws examples
with a nested ``@given`` (the Zod parity collector) is counted too. Loaded by tests/conftest.py only when
``KELPIE_HYPOTHESIS_PROFILE=deep``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis.statistics import collector

from tests.depth import DEEP_EXAMPLES

_COUNTED_PHASES = ("explicit", "reuse", "generate")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@dataclass
class Row:
    nodeid: str
    examples: int = 0
    invalid: int = 0
    failing: int = 0  # failing test cases Hypothesis found (before shrinking)
    outcome: str = "not run"
    seconds: float = 0.0
    stopped: list[str] = field(default_factory=list)


class DeepReport:
    """A pytest plugin: counts each property test's examples and prints one line per test.

    A deep run is long, so stopping it early still prints the figures of the tests that finished: SIGTERM
    (``kill``, ``timeout``) interrupts the session like Ctrl-C, and Ctrl-C works even when the run was
    started in the background of a non-interactive shell (which starts it with SIGINT ignored)."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.started = time.monotonic()
        signal.signal(signal.SIGTERM, _interrupt)
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        # trylast: this wrapper runs inside Hypothesis' own, so its statistics callback is chained, not replaced.
        outer = collector.value
        row = self.rows.setdefault(item.nodeid, Row(item.nodeid))

        def note(stats: dict[str, Any]) -> None:
            for phase in _COUNTED_PHASES:
                for case in stats.get(f"{phase}-phase", {}).get("test-cases", []):
                    status = case.get("status")
                    if status in ("valid", "interesting"):
                        row.examples += 1
                    else:
                        row.invalid += 1
                    row.failing += status == "interesting"
            row.stopped.append(str(stats.get("stopped-because", "")))
            if outer is not None:
                outer(stats)

        started = time.monotonic()
        row.outcome = "running"  # still so if the session is interrupted (Ctrl-C) during this test
        try:
            with collector.with_value(note):
                yield
        finally:
            row.seconds += time.monotonic() - started

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.rows.get(report.nodeid)
        counts = report.when == "call" or report.outcome != "passed"
        if row is not None and counts and row.outcome in ("not run", "running", "passed"):
            row.outcome = report.outcome

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for r in self.rows.values():
            if r.outcome == "running":
                r.outcome = "stopped"  # interrupted: Hypothesis reports a test's examples only when it ends
        rows = [r for r in self.rows.values() if r.examples or r.failing or r.outcome in ("failed", "stopped")]
        write = terminalreporter.write_line
        write("")
        write(f"deep properties (target {DEEP_EXAMPLES} examples each):")
        write(f"{'examples':>9} {'invalid':>8} {'failing':>8} {'seconds':>8}  outcome  test")
        for r in rows:
            write(f"{r.examples:>9} {r.invalid:>8} {r.failing:>8} {r.seconds:>8.1f}  {r.outcome:<7}  {r.nodeid}")
        short = [r.nodeid for r in rows if r.examples < DEEP_EXAMPLES and r.outcome != "stopped"]
        total = time.monotonic() - self.started
        write(f"{len(rows)} property tests, {sum(r.examples for r in rows)} examples, "
              f"{sum(r.outcome == 'failed' for r in rows)} failed, {total:.0f} s")
        for nodeid in short:
            why = "; ".join(sorted(set(self.rows[nodeid].stopped))) or "?"
            write(f"fewer than {DEEP_EXAMPLES} examples: {nodeid} (Hypothesis stopped because: {why})")
        for r in rows:
            if r.outcome == "stopped":
                write(f"interrupted after {r.seconds:.0f} s (its examples are not counted): {r.nodeid}")
        target = os.environ.get("KELPIE_DEEP_REPORT")
        if target:
            with open(target, "a", encoding="utf-8") as out:
                for r in rows:
                    out.write(json.dumps(r.__dict__) + "\n")
