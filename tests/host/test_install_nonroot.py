"""Installing without root (issue 34; docs/host.md "Installing without root"): ``tools/dev`` run by a user
who cannot apt-get stops at once, naming the missing Debian packages, the exact command, and the install
that needs no root — before it builds anything — and the browser discovery it uses runs on a bare
``python3`` (no virtualenv yet); the README's two install snippets (a virtualenv, pipx) run as written.

Run for real as an unprivileged user (``nobody`` through ``setpriv`` when the tests run as root), on a
copy of the two files involved, with ``KELPIE_DEV_SYSTEM_ROOT`` showing a machine without the packages.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from stdio_testlib import ROOT

pytestmark = pytest.mark.timeout(120)


def _as_user(cmd: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    return subprocess.run(
        [*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
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
    assert (
        "[dev]   then tools/dev setup again. Only the host, without the test tools, needs no root:" in lines
    )
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
    assert nothing.stderr.startswith(
        "no Chromium or Chrome found (looked at --browser-executable (not given)"
    )
    assert "kelpie-gateway install-browser" in nothing.stderr
    chrome = bare / "opt/google/chrome/chrome"
    chrome.parent.mkdir(parents=True)
    chrome.write_text("#!/bin/sh\n")
    chrome.chmod(0o755)
    for path in (bare / "opt", bare / "opt/google", chrome.parent):
        path.chmod(0o755)
    found = _as_user(["/usr/bin/python3", "-I", script], env)
    assert found.returncode == 0 and found.stdout.strip() == str(chrome), found.stderr


IGNORED = (".git", "build", ".venv", "node_modules", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")
PIP_SETTINGS = ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


def readme_snippet(name: str) -> str:
    """The ``sh`` block after ``<!-- readme-snippet: NAME -->`` in the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- readme-snippet: {re.escape(name)} -->\n+```sh\n(.*?)```", text, re.S)
    assert found is not None, name
    return found.group(1)


@pytest.mark.timeout(1500)
def test_readme_install_snippets_run_as_an_unprivileged_user() -> None:
    with tempfile.TemporaryDirectory(prefix="kelpie-install-") as where:
        base = Path(where)
        base.chmod(0o755)
        src, home = base / "checkout", base / "home"
        shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
        home.mkdir()
        if os.geteuid() == 0:  # the user owns its home and the checkout it builds from (pip builds in place)
            nobody = pwd.getpwnam("nobody")
            for path in (home, src, *src.rglob("*")):
                os.lchown(path, nobody.pw_uid, nobody.pw_gid)
        env = {
            "HOME": str(home),
            "PATH": f"{home}/.local/bin:{home}/tools/bin:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items() if k in PIP_SETTINGS},
        }

        def sh(script: str) -> subprocess.CompletedProcess[str]:
            done = _as_user(["/bin/sh", "-ec", script.replace("<checkout>", str(src))], env, timeout=900)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            return done

        venv = sh(readme_snippet("install-venv"))
        assert "a browser is already there: /usr/bin/chromium (Debian/Ubuntu package)" in venv.stderr
        assert venv.stdout.strip().splitlines()[-1] == "ready: kelpie-gateway serve / mcp can start", (
            venv.stdout
        )
        assert (home / ".local/share/kelpie-gateway/bin/kelpie-gateway").exists()

        sh("python3 -m venv ~/tools && ~/tools/bin/pip install -q pipx")  # pipx as a user gets it, no root
        pipx = sh(readme_snippet("install-pipx"))
        assert "a browser is already there: /usr/bin/chromium (Debian/Ubuntu package)" in pipx.stderr
        assert pipx.stdout.strip().splitlines()[-1] == "ready: kelpie-gateway serve / mcp can start", (
            pipx.stdout
        )
        assert (home / ".local/bin/kelpie-gateway").exists()


PIP_TRANSCRIPT = [  # pip's own lines, phase by phase, as `pip install -e '.[test]'` prints them
    ("Obtaining file:///src\n", "resolving: 1 requirements so far, now src"),
    (
        "Processing /opt/pypi/files/six-1.17.0-py2.py3-none-any.whl (from transitions>=0.9->kelpie)\n"
        "Collecting orjson>=3.9 (from kelpie-browser-gateway==0.1.0)\n",
        "resolving: 3 requirements so far, now orjson>=3.9",
    ),
    (
        "  Downloading orjson-3.10.0-cp311-manylinux.whl (130 kB)\n",
        "downloading orjson-3.10.0-cp311-manylinux.whl (130 kB)",
    ),
    (
        "Building wheels for collected packages: kelpie-browser-gateway\n"
        "  Building editable for kelpie-browser-gateway (pyproject.toml): started\n",
        "building kelpie-browser-gateway (pyproject.toml): started",
    ),
    (
        "Installing collected packages: six, orjson, playwright\n",
        "installing 3 packages (unpacking; the largest is Playwright's driver)",
    ),
    ("Successfully installed orjson-3.10.0 playwright-1.65.2 six-1.17.0\n", "installed 3 packages"),
]


def test_pip_progress_names_the_phase_pip_is_in(tmp_path: Path) -> None:
    out = tmp_path / "pip.out"
    out.write_text("")
    phase = 'source <(sed -n "/^pip_phase()/,/^}/p" "$0"); pip_phase "$1"'
    said = []
    for lines, _expected in [("", "starting"), *PIP_TRANSCRIPT]:
        with out.open("a") as sink:
            sink.write(lines)
        done = subprocess.run(
            ["bash", "-c", phase, str(ROOT / "tools/dev"), str(out)], capture_output=True, text=True
        )
        said.append(done.stdout.strip())
    assert said == ["starting", *(expected for _lines, expected in PIP_TRANSCRIPT)]


def test_dev_setup_prints_pips_phase_while_it_waits(tree: Path) -> None:
    """``tools/dev setup`` with a stand-in for the virtualenv's Python that prints pip's lines and then waits
    (until the test has seen the heartbeat): the ``still pip …`` line says the phase, not a raw line."""
    (tree / ".venv/bin").mkdir(parents=True)
    go_on = tree / "go-on"
    fake = tree / ".venv/bin/python"
    fake.write_text(
        "#!/bin/sh\n"
        "printf 'Obtaining file:///src\\nCollecting playwright>=1.45 (from kelpie-browser-gateway==0.1.0)\\n'\n"
        f'while [ ! -e "{go_on}" ]; do sleep 0.2; done\n'
    )
    fake.chmod(0o755)
    proc = subprocess.Popen(
        [str(tree / "tools/dev"), "setup"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "KELPIE_DEV_HEARTBEAT_S": "1"},
    )
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line.rstrip("\n"))
            if "still pip:" in line:
                go_on.touch()
        assert proc.wait(60) == 0, seen
    finally:
        go_on.touch()
        proc.wait(60)
    still = [line for line in seen if "still pip:" in line]
    assert still and still[0].endswith(": resolving: 2 requirements so far, now playwright>=1.45"), seen
    assert any(line.startswith("[dev]   done: pip: installing kelpie-browser-gateway") for line in seen), seen


def test_the_swift_step_without_root_says_it_is_skipped_and_why(tree: Path) -> None:
    (tree / "tools/build.d").mkdir()
    step = tree / "tools/build.d/50-swift.sh"
    shutil.copy2(ROOT / "tools/build.d/50-swift.sh", step)
    step.chmod(0o755)
    done = _as_user(["/bin/bash", str(step)], {"PATH": "/usr/bin:/bin", "ROOT": str(tree), "HOME": str(tree)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "[swift] skipped: not root (the Swift environment is a chroot with bind mounts"
    )
    assert "tests/swift will fail" in done.stderr
