"""Installing without root (issue 34; docs/host.md "Installing without root"): ``tools/dev`` run by a user
who cannot apt-get stops at once, naming the missing Debian packages, the exact command, and the install
that needs no root — before it builds anything — and the browser discovery it uses runs on a bare
``python3`` (no virtualenv yet).

Run for real as an unprivileged user (``nobody`` through ``setpriv`` when the tests run as root), on a
copy of the two files involved, with ``KELPIE_DEV_SYSTEM_ROOT`` showing a machine without the packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from stdio_testlib import ROOT

pytestmark = pytest.mark.timeout(120)


def _as_user(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    return subprocess.run(
        [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )


@pytest.fixture
def tree() -> Iterator[Path]:
    """A world-readable copy of tools/dev and the discovery module, as a checkout lays them out (in a
    folder of its own under /tmp: pytest's tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(prefix="kelpie-nonroot-") as where:
        yield _copy(Path(where))


def _copy(tmp_path: Path) -> Path:
    box = tmp_path / "checkout"
    (box / "tools").mkdir(parents=True)
    (box / "engine/kelpie_gateway/host").mkdir(parents=True)
    shutil.copy2(ROOT / "tools/dev", box / "tools/dev")
    shutil.copy2(ROOT / "engine/kelpie_gateway/host/discovery.py", box / "engine/kelpie_gateway/host")
    (tmp_path / "bare").mkdir()
    for path in (tmp_path, *tmp_path.rglob("*")):  # readable by the unprivileged user, writable by none
        path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else path.stat().st_mode | 0o444)
    return box


def test_dev_setup_without_root_stops_naming_the_packages_and_the_command(tree: Path) -> None:
    bare = tree.parent / "bare"
    done = _as_user(
        [str(tree / "tools/dev"), "setup"],
        {"PATH": "/usr/bin:/bin", "HOME": str(bare), "KELPIE_DEV_SYSTEM_ROOT": str(bare)},
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    packages = "chromium valgrind kotlin libjna-java pkg-config xvfb xauth poppler-utils"
    assert lines[0] == f"[dev] missing Debian packages: {packages}"
    assert f"[dev]     sudo apt-get install -y --no-install-recommends {packages}" in lines
    assert "[dev]   then tools/dev setup again. Only the host, without the test tools, needs no root:" in lines
    assert any("pip install '.[host]' && .venv/bin/kelpie-gateway install-browser" in line for line in lines)
    assert not (tree / ".venv").exists()  # stopped before anything was made


def test_dev_setup_without_root_goes_on_when_the_packages_are_there(tree: Path) -> None:
    # The real machine's packages are visible; the step after them (the virtualenv) is what fails here,
    # because the copied tree has no pyproject.toml: the package check itself let it through.
    done = _as_user([str(tree / "tools/dev"), "setup"], {"PATH": "/usr/bin:/bin", "HOME": str(tree.parent)})
    assert "[dev] Debian packages: present" in done.stderr.splitlines()[0], done.stderr
    assert "missing Debian packages" not in done.stderr


def test_the_discovery_tools_dev_uses_runs_on_a_bare_python(tree: Path) -> None:
    bare = tree.parent / "bare"
    script = str(tree / "engine/kelpie_gateway/host/discovery.py")
    env = {"PATH": str(bare), "HOME": str(bare), "KELPIE_GATEWAY_BROWSER_ROOT": str(bare)}
    nothing = _as_user(["/usr/bin/python3", "-I", script], env)
    assert nothing.returncode == 1 and nothing.stdout == ""
    assert nothing.stderr.startswith("no Chromium or Chrome found (looked at --browser-executable (not given)")
    assert "kelpie-gateway install-browser" in nothing.stderr
    chrome = bare / "opt/google/chrome/chrome"
    chrome.parent.mkdir(parents=True)
    chrome.write_text("#!/bin/sh\n")
    chrome.chmod(0o755)
    for path in (bare / "opt", bare / "opt/google", chrome.parent):
        path.chmod(0o755)
    found = _as_user(["/usr/bin/python3", "-I", script], env)
    assert found.returncode == 0 and found.stdout.strip() == str(chrome), found.stderr
