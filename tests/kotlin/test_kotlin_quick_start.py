"""docs/kotlin.md's quick start, built and run exactly as written, and build.sh's progress lines (issue 34).

- The Kotlin block of the quick start is saved as ``MyHost.kt`` in a folder of its own and the doc's own
  ``kotlinc`` and ``java`` lines are run there by bash, with ``KELPIE`` set to this checkout as the doc's
  ``KELPIE=$PWD`` line sets it. The binding's jar is the session fixture's (the same ``build.sh`` the doc
  names), so nothing is compiled twice but the program itself.
- ``bindings/kotlin/build.sh`` says what it compiles, prints a "still compiling" line while kotlinc is
  silent, how long each jar took, and that an up-to-date jar is skipped: checked with a stand-in kotlinc
  that takes a few seconds, so the test costs no real compile.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import JNA, ROOT, KotlinBuild

pytestmark = pytest.mark.timeout(1500)  # the session fixture may compile the binding first (see conftest)

DOC = ROOT / "docs" / "kotlin.md"


def quick_start() -> tuple[str, str]:
    """(the sh block, the kotlin block) of docs/kotlin.md's "Quick start"."""
    section = DOC.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    sh = re.search(r"```sh\n(.*?)```", section, re.S)
    kotlin = re.search(r"```kotlin\n(.*?)```", section, re.S)
    assert sh and kotlin, "docs/kotlin.md's quick start has a sh block and a kotlin block"
    return sh.group(1), kotlin.group(1)


def commands(sh: str) -> list[str]:
    """The sh block's command lines (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", sh)
    return [line.split("  #", 1)[0].strip() for line in joined.splitlines() if line.strip()]


def test_the_quick_start_builds_the_jar_the_fixture_builds() -> None:
    """The steps this test takes from the fixture are the doc's own: setup, build.sh, KELPIE=$PWD."""
    lines = commands(quick_start()[0])
    assert lines[:3] == ["tools/dev setup", "bash bindings/kotlin/build.sh", "KELPIE=$PWD"], lines
    assert [line.split()[0] for line in lines[3:]] == ["mkdir", "kotlinc", "java"], lines


def test_the_quick_start_program_builds_and_runs_as_written(kotlin: KotlinBuild, tmp_path: Path) -> None:
    sh, program = quick_start()
    folder = tmp_path / "MyHost"
    folder.mkdir()
    (folder / "MyHost.kt").write_text(program, encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "KELPIE": str(ROOT),
        "LC_ALL": "C",  # the binding must not depend on the JVM's default charset
    }
    outputs = []
    for line in commands(sh):
        if line.split()[0] not in ("kotlinc", "java"):
            continue
        proc = subprocess.run(
            ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
        outputs.append(proc.stdout)
    out = outputs[-1]
    lines = out.splitlines()
    assert lines[0].startswith("library ") and len(lines[0]) > len("library "), out
    by_hand = next(line for line in lines if line.startswith("by hand: "))
    driver = next(line for line in lines if line.startswith("driver: "))
    for line, request_id in ((by_hand, 1), (driver, 2)):
        assert f'"id":{request_id}' in line and '"success":true' in line and '"tabId":"t1"' in line, out
    assert "refused: NOT_AUTHORIZED mayHaveCompleted=false" in lines, out
    assert any(line.startswith('mcp: success=true {"jsonrpc":"2.0","id":4') for line in lines), out


FAKE_KOTLINC = """#!/bin/sh
# A stand-in for kotlinc: silent for a while, then writes the jar named after -d.
sleep "${FAKE_KOTLINC_SECONDS:-3}"
while [ $# -gt 0 ]; do
  if [ "$1" = -d ]; then echo jar > "$2"; fi
  shift
done
"""
BUILD_SH = ROOT / "bindings" / "kotlin" / "build.sh"


def _stand_in_tree(tmp_path: Path, kotlinc: str, parts: tuple[str, ...]) -> tuple[Path, dict[str, str]]:
    """A ROOT with one placeholder source per part (main, test) and a stand-in kotlinc; the env to run in."""
    assert JNA.exists(), "JNA missing: apt-get install libjna-java (tools/dev setup does)"
    root = tmp_path / "root"
    for part in parts:
        src = root / "bindings" / "kotlin" / "src" / part / "kotlin"
        src.mkdir(parents=True)
        (src / f"{part.title()}.kt").write_text("// placeholder\n", encoding="utf-8")
    fake = tmp_path / "kotlinc"
    fake.write_text(kotlinc, encoding="utf-8")
    fake.chmod(0o755)
    return root, dict(os.environ, ROOT=str(root), KOTLINC=str(fake), KELPIE_DEV_HEARTBEAT_S="1")


def _build(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=120)


def test_build_sh_prints_progress_while_kotlinc_is_silent(tmp_path: Path) -> None:
    root, env = _stand_in_tree(tmp_path, FAKE_KOTLINC, ("main", "test"))
    first = _build(env)
    assert first.returncode == 0, first.stderr
    err = first.stderr
    assert "[kotlin] compiling the binding: 1 Kotlin files with" in err, err
    assert re.search(r"\[kotlin\]   still compiling the binding \(\d+ s\)", err), err
    assert re.search(r"\[kotlin\]   done: the binding in \d+ s -> .*/build/kotlin/kelpie-gateway.jar", err), (
        err
    )
    assert "[kotlin] compiling the tests: 1 Kotlin files" in err and "done: the tests in" in err, err
    assert first.stdout.strip() == str(root / "build" / "kotlin" / "kelpie-gateway.jar")

    again = _build(env)
    assert again.returncode == 0, again.stderr
    assert "the binding is up to date" in again.stderr and "the tests are up to date" in again.stderr
    assert "compiling" not in again.stderr, again.stderr


def test_build_sh_reports_a_failed_compile_and_leaves_no_jar(tmp_path: Path) -> None:
    failing = "#!/bin/sh\necho 'error: unresolved reference: nope' >&2\nexit 1\n"
    root, env = _stand_in_tree(tmp_path, failing, ("main",))
    proc = _build(env)
    assert proc.returncode == 1, proc.stderr
    assert "unresolved reference: nope" in proc.stderr
    assert "[kotlin] FAILED: compiling the binding (kotlinc exit 1)" in proc.stderr, proc.stderr
    assert not list((root / "build" / "kotlin").glob("*.jar")), "a failed compile must leave no jar"
