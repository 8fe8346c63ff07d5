"""Fixtures for the C ABI tests (CONTRACT.md §10): build the library and the C programs once per session.

The build is tools/build.d/30-abi.sh (the same idempotent step `tools/dev setup` runs), so a fresh clone
and a developer tree test the same artefacts under build/abi/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


def pkg_config_flags(pkgconfig: Path) -> list[str]:
    """`pkg-config --cflags --libs kelpie-browser-gateway` of the tree whose pkgconfig folder is given."""
    return subprocess.run(
        ["pkg-config", "--cflags", "--libs", "kelpie-browser-gateway"],
        env={"PKG_CONFIG_PATH": str(pkgconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def compile_c(tmp_path: Path, abi: Abi, source: str, name: str, extra: list[str]) -> Path:
    """Compile `source` (dedented) as NAME in tmp_path with gcc -Werror and `extra` flags; asserts it built."""
    src = tmp_path / f"{name}.c"
    src.write_text(textwrap.dedent(source))
    exe = tmp_path / name
    cmd = [
        "gcc",
        "-std=c11",
        "-D_GNU_SOURCE",
        "-Wall",
        "-Wextra",
        "-Werror",
        str(src),
        "-o",
        str(exe),
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return exe
