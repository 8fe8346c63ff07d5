"""Fixtures for the Swift binding tests: run `swift test` once, inside the Debian 13 Swift environment.

The environment (a debootstrap root filesystem with Debian's `swiftlang`, outside the checkout) is made by
`tools/dev setup` (tools/build.d/50-swift.sh -> tools/swiftenv prepare); `tools/swiftenv run` runs SwiftPM
in a private mount namespace with this checkout mounted read-only at its own path, so nothing stays
mounted after the run. The C library comes from tools/build.d/30-abi.sh (also run by setup). Every XCTest case becomes its
own pytest case, and so does every shared vector (the Swift test prints `VECTOR PASS|FAIL name`).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SWIFTENV = ROOT / "tools" / "swiftenv"
PACKAGE = ROOT / "bindings" / "swift"
LIB = ROOT / "build" / "abi" / "lib" / "libkelpie_browser_gateway.so"


@dataclass
class SwiftRun:
    returncode: int
    output: str
    seconds: float
    passed: set[str] = field(default_factory=set)
    failed: dict[str, list[str]] = field(default_factory=dict)
    vectors_passed: set[str] = field(default_factory=set)
    vectors_failed: dict[str, str] = field(default_factory=dict)
    info: list[str] = field(default_factory=list)
    executed: int | None = None


_CASE = re.compile(r"^Test Case '(?:-\[)?[\w.]*?(\w+)[. ](\w+)\]?' (passed|failed)")
_ERROR = re.compile(r"^.*?: error: (?:-\[)?[\w.]*?(\w+)[. ](\w+)\]? : (.*)$")
_EXECUTED = re.compile(r"^\s*Executed (\d+) tests?, with (\d+) failures?")


def swiftenv(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SWIFTENV), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        encoding="utf-8",
        errors="replace",
    )


def parse(output: str) -> SwiftRun:
    run = SwiftRun(0, output, 0.0)
    for line in output.splitlines():
        if m := _CASE.match(line):
            name = f"{m.group(1)}.{m.group(2)}"
            if m.group(3) == "passed":
                run.passed.add(name)
            else:
                run.failed.setdefault(name, [])
        elif m := _ERROR.match(line):
            run.failed.setdefault(f"{m.group(1)}.{m.group(2)}", []).append(m.group(3))
        elif line.startswith("VECTOR PASS "):
            run.vectors_passed.add(line[12:].strip())
        elif line.startswith("VECTOR FAIL "):
            name, _, problems = line[12:].partition(": ")
            run.vectors_failed[name.strip()] = problems
        elif line.startswith("INFO "):
            run.info.append(line[5:])
        elif m := _EXECUTED.match(line):
            run.executed = int(m.group(1))
    return run


@pytest.fixture(scope="session")
def swift_run() -> SwiftRun:
    """`swift test` of bindings/swift, once per session."""
    status = swiftenv("status", timeout=60)
    assert "ready: swift" in status.stdout, (
        f"no Swift environment ({status.stdout.strip()}): run `tools/dev setup` (tools/build.d/50-swift.sh)"
    )
    assert LIB.exists(), f"no C library at {LIB}: run `tools/dev setup` (tools/build.d/30-abi.sh)"
    t0 = time.monotonic()
    proc = swiftenv("run", "test", "--package-path", str(PACKAGE))
    run = parse(proc.stdout + "\n" + proc.stderr)
    run.returncode = proc.returncode
    run.seconds = time.monotonic() - t0
    return run
