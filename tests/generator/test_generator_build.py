"""The build regenerates when its sources change (issue 7): `tools/generate.py` skips while the sources
digest matches, `--check` reports stale output, and a changed engine or reader source is picked up.
Also: the generated docs say what the engine says (every method, param, default, bound, error code,
transition)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import generate
from kelpie_gateway import errors, schema, transaction

ROOT = Path(__file__).resolve().parents[2]


def _copy_tree(dst: Path) -> Path:
    """A throwaway copy of what the generator reads, so the test can edit 'sources' safely."""
    shutil.copytree(
        ROOT / "engine" / "kelpie_gateway",
        dst / "engine" / "kelpie_gateway",
        ignore=shutil.ignore_patterns("__pycache__", "_generated"),
    )
    (dst / "tools").mkdir()
    for name in ("generate.py", "gen_reader.py"):
        if (ROOT / "tools" / name).is_file():
            shutil.copy2(ROOT / "tools" / name, dst / "tools" / name)
    return dst


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "tools" / "generate.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_generate_skips_when_current_and_check_reports_stale_sources(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path / "repo")
    out = root / "build" / "generated"
    first = _run(root)
    assert first.returncode == 0, first.stderr
    assert sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and "js" not in p.parts
    ) == sorted([*generate.OUTPUTS, generate.STAMP])
    assert _run(root, "--check").returncode == 0
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = _run(root)
    assert "up to date" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == mtimes

    # an engine source changes: the default timeout becomes 9000 ms
    src = root / "engine" / "kelpie_gateway" / "schema.py"
    text = src.read_text("utf-8")
    assert "TIMEOUT_DEFAULT_MS: Final = 10_000" in text
    src.write_text(
        text.replace("TIMEOUT_DEFAULT_MS: Final = 10_000", "TIMEOUT_DEFAULT_MS: Final = 9_000"), "utf-8"
    )
    stale = _run(root, "--check")
    assert stale.returncode == 1
    for name in (
        "docs/methods.md",
        "zod/kelpie_schema.mjs",
        "schema/request.schema.json",
        "parity/fixtures.json",
    ):
        assert name in stale.stderr
    assert _run(root).returncode == 0
    assert "| `timeoutMs` | integer | `9000` |" in (out / "docs" / "methods.md").read_text("utf-8")
    assert "z.int().min(1).max(30000).default(9000)" in (out / "zod" / "kelpie_schema.mjs").read_text("utf-8")
    assert _run(root, "--check").returncode == 0


def test_check_reports_an_edited_output_and_force_repairs_it(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path / "repo")
    out = root / "build" / "generated"
    assert _run(root).returncode == 0
    target = out / "schema" / "request.schema.json"
    target.write_text(target.read_text("utf-8").replace('"maximum": 30000', '"maximum": 60000'), "utf-8")
    stale = _run(root, "--check")
    assert stale.returncode == 1 and "schema/request.schema.json" in stale.stderr
    assert _run(root, "--force").returncode == 0
    assert _run(root, "--check").returncode == 0


def test_a_reader_source_change_makes_the_reader_bundles_stale(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path / "repo")
    out = root / "build" / "generated"
    assert _run(root).returncode == 0
    assert (out / "js" / "snapshot.js").is_file()
    core = root / "engine" / "kelpie_gateway" / "js" / "core" / "75-describe.js"  # a part of core.js
    core.write_text(core.read_text("utf-8") + "\n// changed\n", "utf-8")
    stale = _run(root, "--check")
    assert stale.returncode == 1 and "js/snapshot.js" in stale.stderr
    assert _run(root).returncode == 0
    assert "// changed" in (out / "js" / "snapshot.js").read_text("utf-8")


def test_methods_reference_lists_every_method_param_default_bound_and_error_code(generated: Path) -> None:
    doc = (generated / "docs" / "methods.md").read_text("utf-8")
    for m in schema.METHODS.values():
        assert f"## `{m.name}`" in doc
        for p in m.params:
            assert any(line.startswith(f"| `{p.name}` | {p.kind} |") for line in doc.splitlines())
            if p.default is not None and not isinstance(p.default, dict):
                assert f"`{p.default}`" in doc
            if p.maximum is not None:
                assert f"≤ {p.maximum}" in doc
            if p.max_length is not None:
                assert f"len ≤ {p.max_length}" in doc
    for code in errors.ERROR_CODES:
        assert f"- `{code}`" in doc


def test_state_machine_doc_draws_every_transition_of_the_table(generated: Path) -> None:
    doc = (generated / "docs" / "state-machine.md").read_text("utf-8")
    assert "```mermaid\nstateDiagram-v2\n" in doc
    for event, sources, dest in transaction.TRANSITIONS:
        for s in sources:
            assert f"    {s} --> {dest}: {event}\n" in doc
        assert f"| `{event}` | {', '.join(f'`{s}`' for s in sources)} | `{dest}` |" in doc
    for state in transaction.STATES:
        assert f"| `{state}` |" in doc
