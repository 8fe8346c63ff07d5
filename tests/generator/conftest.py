"""Fixtures for the generator tests: one generator run per session into a temporary folder, and the npm
packages (zod) that the Zod parity test resolves from tools/node/node_modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT / "engine", ROOT / "tools"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import generate  # noqa: E402


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh generator output folder (the same code path as `python tools/generate.py --out DIR`)."""
    out = tmp_path_factory.mktemp("generated")
    assert generate.generate(out, log=lambda _m: None)
    return out


@pytest.fixture(scope="session")
def node() -> str:
    """node from PATH, with zod installed under tools/node (tools/build.d/40-node.sh when missing)."""
    exe = shutil.which("node")
    assert exe, "node is not on PATH: install Node.js >= 18 (tools/dev setup does)"
    if not (ROOT / "tools" / "node" / "node_modules" / "zod" / "package.json").is_file():
        subprocess.run(["bash", str(ROOT / "tools" / "build.d" / "40-node.sh")], check=True, cwd=ROOT)
    return exe
