"""The generated Zod module gives the engine validator's verdict (CONTRACT.md §3), run by node on every
parity fixture and on Hypothesis-generated requests: same valid/invalid, and for valid requests the same
normalized request (defaults applied)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import generate
import pytest
from hypothesis import given, settings

from tests.depth import examples
from tests.generator.gen_strategies import javascript_safe, load_cases, requests

RUNNER = Path(__file__).with_name("zod_parity.mjs")


def run_zod(node: str, out: Path, cases: list[dict[str, Any]], tmp: Path) -> dict[str, dict[str, Any]]:
    cases_file = tmp / "cases.json"
    cases_file.write_text(json.dumps({"cases": cases}, ensure_ascii=False), "utf-8")
    proc = subprocess.run(
        [node, str(RUNNER), str(out / "zod" / "kelpie_schema.mjs"), str(cases_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout)}


def mismatches(cases: list[dict[str, Any]], zod: dict[str, dict[str, Any]]) -> list[Any]:
    bad = []
    for c in cases:
        z = zod[c["name"]]
        if z["valid"] != c["valid"] or (c["valid"] and z["normalized"] != c["normalized"]):
            bad.append((c["name"], c.get("code"), z.get("issues") or z.get("normalized")))
    return bad


def test_zod_module_agrees_with_the_engine_on_every_parity_fixture(
    generated: Path, node: str, tmp_path: Path
) -> None:
    cases = load_cases(generated)
    zod = run_zod(node, generated, cases, tmp_path)
    assert mismatches(cases, zod) == []
    # the astral limit is counted in code points, not UTF-16 units (what a plain z.string().max would do)
    assert zod["text 200000 astral code points (valid)"]["valid"] is True
    assert zod["text 200001 astral code points (invalid)"]["valid"] is False
    assert any("code points" in i for i in zod["text 200001 astral code points (invalid)"]["issues"])
    assert zod["tab.snapshot params omitted (defaults)"]["normalized"]["params"] == {
        "maxChars": 12000,
        "maxElements": 200,
        "timeoutMs": 10000,
    }


@pytest.mark.hypothesis  # draws through a nested @given: marked so `tools/dev deep-properties` selects it
def test_zod_module_agrees_with_the_engine_on_generated_requests(
    generated: Path, node: str, tmp_path: Path
) -> None:
    """Hypothesis draws the requests; one node run judges all of them."""
    drawn: list[Any] = []

    @settings(max_examples=examples(800), deadline=None, database=None)
    @given(requests())
    def collect(req: Any) -> None:
        if javascript_safe(req):
            drawn.append(req)

    collect()
    cases = [{"name": str(i), "request": r, **generate.python_verdict(r)} for i, r in enumerate(drawn)]
    assert len(cases) > 500
    assert sum(c["valid"] for c in cases) > 50
    assert mismatches(cases, run_zod(node, generated, cases, tmp_path)) == []


def test_typescript_module_is_the_javascript_module_plus_types(generated: Path) -> None:
    """The .ts and .mjs come from one code path: dropping the TypeScript-only lines and annotations of
    the .ts gives the .mjs byte for byte, so the parity proven on the .mjs holds for the .ts."""
    ts = (generated / "zod" / "kelpie_schema.ts").read_text("utf-8")
    mjs = (generated / "zod" / "kelpie_schema.mjs").read_text("utf-8")
    stripped = ts
    for annotation in (
        ": string | null",
        ": number | null",
        ": number",
        ": string",
        ": unknown",
        ": Verdict",
        ": readonly unknown[]",
        ": T",
        "<T extends z.ZodType>",
        " as const",
    ):
        stripped = stripped.replace(annotation, "")
    lines = stripped.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("export type CanonicalRequest "))
    end = next(i for i in range(start, len(lines)) if lines[i] == "")
    assert "\n".join(lines[:start] + lines[end + 1 :]) == mjs
