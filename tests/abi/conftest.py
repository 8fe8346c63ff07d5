"""Fixtures for the C ABI tests (CONTRACT.md §10): build the library and the C programs once per session.

The build is tools/build.d/30-abi.sh (the same idempotent step `tools/dev setup` runs), so a fresh clone
and a developer tree test the same artefacts under build/abi/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / "build" / "abi"


@dataclass(frozen=True)
class Abi:
    prefix: Path
    lib: Path
    include: Path
    pkgconfig: Path
    bin: Path

    def program(self, name: str) -> Path:
        return self.bin / name


@pytest.fixture(scope="session")
def abi() -> Abi:
    env = dict(os.environ, ROOT=str(ROOT), PY=sys.executable)
    proc = subprocess.run(
        ["bash", str(ROOT / "tools" / "build.d" / "30-abi.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"ABI build failed:\n{proc.stdout}\n{proc.stderr}"
    return Abi(
        prefix=PREFIX,
        lib=PREFIX / "lib" / "libkelpie_browser_gateway.so",
        include=PREFIX / "include",
        pkgconfig=PREFIX / "lib" / "pkgconfig",
        bin=PREFIX / "bin",
    )


@pytest.fixture(scope="session")
def clean_env() -> dict[str, str]:
    """The environment of a C host that knows nothing about Python: nothing at all."""
    return {}
