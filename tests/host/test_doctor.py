"""``kelpie-gateway doctor`` (issue 34; docs/host.md "doctor"): one line per check, the fix for each that
failed, exit 1 on a failure — run as a subprocess on real machine states: the browser, the C library and the
pairing file each pointed somewhere broken.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from host_testlib import cli

pytestmark = pytest.mark.timeout(180)


def _doctor(tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    pairings = tmp_path / "pairings.json"
    done = cli("doctor", "--pairings", str(pairings), *args, env=env)
    return done.returncode, done.stdout + done.stderr


def test_a_ready_machine_says_so(tmp_path: Path) -> None:
    code, out = _doctor(tmp_path)
    lines = out.splitlines()
    assert code == 0, out
    for name in ("python", "browser", "reader bundles", "C library", "pairing file"):
        assert any(line.startswith("ok   " + name + ":") for line in lines), out
    assert "does not exist yet" in out and lines[-1].startswith("ready")


def test_no_browser_is_a_failure_with_its_fix(tmp_path: Path) -> None:
    code, out = _doctor(tmp_path, CHROME_PATH=str(tmp_path / "nowhere" / "chrome"), PATH=str(tmp_path))
    assert code == 1, out
    assert f"FAIL browser: {tmp_path / 'nowhere' / 'chrome'} (CHROME_PATH) is not an executable file" in out
    assert "fix: run `kelpie-gateway install-browser`" in out and "--browser-executable or CHROME_PATH" in out
    assert out.splitlines()[-1] == "1 problem(s): browser"


def test_a_browser_that_does_not_start_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "chromium"
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries: libnss3.so' >&2\nexit 127\n")
    broken.chmod(0o755)
    code, out = _doctor(tmp_path, "--browser-executable", str(broken))
    assert code == 1 and "exited 127: error while loading shared libraries: libnss3.so" in out, out


def test_a_missing_library_is_a_warning_with_how_to_build_it(tmp_path: Path) -> None:
    code, out = _doctor(tmp_path, KELPIE_GATEWAY_LIBRARY=str(tmp_path / "libnothing.so"))
    assert code == 0, out  # only --via-abi and the bindings need it
    assert f"warn C library: {tmp_path / 'libnothing.so'} does not exist" in out
    assert "kelpie-gateway build-abi --prefix DIR" in out and "KELPIE_GATEWAY_LIBRARY" in out
    (tmp_path / "libbad.so").write_text("not an ELF file")
    _code, bad = _doctor(tmp_path, KELPIE_GATEWAY_LIBRARY=str(tmp_path / "libbad.so"))
    assert "does not load:" in bad, bad


def test_a_broken_pairing_file_is_a_failure(tmp_path: Path) -> None:
    (tmp_path / "pairings.json").write_text("{not json")
    os.chmod(tmp_path / "pairings.json", 0o600)
    code, out = _doctor(tmp_path)
    assert code == 1 and "FAIL pairing file:" in out and "is not valid" in out, out
    assert "fix: move" in out and out.splitlines()[-1] == "1 problem(s): pairing file"


def test_a_broken_install_without_the_reader_core_is_a_failure(tmp_path: Path) -> None:
    import shutil

    import kelpie_gateway

    copy = tmp_path / "site"
    shutil.copytree(Path(kelpie_gateway.__file__).parent, copy / "kelpie_gateway",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for part in (copy / "kelpie_gateway" / "js" / "core").glob("*.js"):
        part.unlink()  # an install that lost the reader's core
    code, out = _doctor(tmp_path, PYTHONPATH=str(copy))
    assert code == 1, out
    assert "FAIL reader bundles: cannot assemble the reader scripts" in out and "fix: reinstall" in out
    assert "ok   browser:" in out  # the other checks still ran
