"""Every request/response vector in fixtures/vectors — and the modern twin of each (2026-07-28, CONTRACT.md
§7 v1.1) — replays through the Python API, and the flat plan / check pipeline the C and Kotlin replayers
use gives the same verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import dumps

from tools import vectors

VECTORS = vectors.all_vectors()
CASES = vectors.all_cases()


def test_there_are_vectors_for_every_area() -> None:
    names = {p.stem for p in VECTORS}
    assert len(names) >= 50
    for needle in (
        "initialize",
        "ping",
        "notification",
        "batch",
        "parse-error",
        "tools-list",
        "too-large",
        "kelpie-extensions",
        "kelpie-extension-tools",
        "kelpie-extension",
        "direct-extension",
        "busy",
        "stale-snapshot",
        "cross-tab-ref",
        "reconcile",
        "id-types",
        "params-not-object",
    ):
        assert any(needle in n for n in names), needle


def test_every_canonical_method_is_called_through_mcp() -> None:
    called = set()
    for path in VECTORS:
        for step in vectors.load(path)["steps"]:
            message = step.get("input")
            if (
                step["call"] == "begin_mcp"
                and isinstance(message, dict)
                and message.get("method") == "tools/call"
            ):
                params = message.get("params")
                arguments = params.get("arguments") if isinstance(params, dict) else None
                if isinstance(arguments, dict) and params.get("name") == "kelpie_browser_control":
                    called.add(arguments.get("method"))
    from kelpie_gateway.schema import METHODS

    assert set(METHODS) <= called


@pytest.mark.parametrize(("name", "vector"), CASES, ids=[n for n, _ in CASES])
def test_vector(name: str, vector: dict[str, Any]) -> None:
    assert vectors.check(vector, vectors.replay(vector)) == []


def test_every_mcp_vector_with_tool_traffic_has_a_modern_twin() -> None:
    """The twins are derived, so every vector that lists or calls tools is spoken in both eras."""
    twins = {n for n, v in CASES if v.get("era") == vectors.MODERN}
    for path in VECTORS:
        methods = {
            s["input"].get("method")
            for s in vectors.load(path)["steps"]
            if s["call"] == "begin_mcp" and isinstance(s.get("input"), dict)
        }
        if methods & {"tools/list", "tools/call"} and not path.stem.startswith("mcp-2026-"):
            shaped = any(
                vectors._modernizable(s) for s in vectors.load(path)["steps"] if s["call"] == "begin_mcp"
            )
            assert (f"{path.stem}@{vectors.MODERN}" in twins) == shaped, path.stem
    assert len(twins) >= 40


def test_a_twin_sends_the_envelope_and_keeps_the_expectations() -> None:
    source = vectors.load(vectors.VECTOR_DIR / "mcp-call-tab-screenshot.json")
    made = vectors.load(f"{vectors.VECTOR_DIR / 'mcp-call-tab-screenshot.json'}@{vectors.MODERN}")
    assert made["name"] == f"mcp-call-tab-screenshot@{vectors.MODERN}"
    assert made["steps"][0]["input"]["params"]["_meta"] == vectors.MODERN_META
    assert [s.get("expect") for s in made["steps"]] == [s.get("expect") for s in source["steps"]]
    assert [s.get("expectCount") for s in made["steps"]] == [s.get("expectCount") for s in source["steps"]]
    with pytest.raises(ValueError, match="no modern twin"):
        vectors.load(f"{vectors.VECTOR_DIR / 'mcp-ping.json'}@{vectors.MODERN}")


def _edit(line: bytes, change: Any) -> bytes:
    step = json.loads(line)
    change(step)
    return json.dumps(step).encode()


def test_the_era_check_catches_a_wrong_era() -> None:
    """The era members are checked, not just tolerated: a stateless answer without resultType, a
    handshake answer with one, and an error without (or with a wrong) httpStatus all fail."""
    made = vectors.twin(vectors.load(vectors.VECTOR_DIR / "mcp-call-tab-click.json"))
    assert made is not None
    out = vectors.replay(made)
    assert vectors.check(made, out) == []
    complete = next(i for i, line in enumerate(out) if json.loads(line)["step"] == "complete")
    bare = list(out)
    bare[complete] = _edit(out[complete], lambda s: s["response"]["result"].pop("resultType"))
    assert any("resultType" in p for p in vectors.check(made, bare))
    unstamped = list(out)
    unstamped[complete] = _edit(out[complete], lambda s: s["response"]["result"].pop("_meta"))
    assert any("serverInfo" in p for p in vectors.check(made, unstamped))

    legacy = vectors.load(vectors.VECTOR_DIR / "mcp-call-tab-click.json")
    old = vectors.replay(legacy)
    assert vectors.check(legacy, old) == []
    leaked = list(old)
    leaked[complete] = _edit(old[complete], lambda s: s["response"]["result"].update(resultType="complete"))
    assert any("stateless members" in p for p in vectors.check(legacy, leaked))

    errors = vectors.load(vectors.VECTOR_DIR / "mcp-2026-removed-methods.json")
    out = vectors.replay(errors)
    assert vectors.check(errors, out) == []
    unstatused = [_edit(out[0], lambda s: s.pop("httpStatus")), *out[1:]]
    assert any("httpStatus" in p for p in vectors.check(errors, unstatused))
    legacy_404 = [*out[:3], _edit(out[3], lambda s: s.update(httpStatus=404))]
    assert any("httpStatus" in p for p in vectors.check(errors, legacy_404))


def _replay_plan_like_c(lines: list[bytes]) -> list[bytes]:
    """What a C replayer does: split each plan line on the first two spaces, call, print the result."""
    call, kind, payload = lines[0].split(b" ", 2)
    assert (call, kind) == (b"create", b"J")
    gw = Gateway(payload)
    out = []
    for line in lines[1:]:
        call, kind, payload = line.split(b" ", 2)
        arg = None if kind == b"N" else payload
        if call == b"invalidate_refs":
            gw.invalidate_refs(None if arg is None else arg.decode())
            out.append(b"null")
        elif call == b"next":
            out.append(dumps(gw.next(None if arg is None else arg.decode())))
        else:
            out.append(dumps(getattr(gw, call.decode())(arg)))
    return out


@pytest.mark.parametrize("name", ["mcp-call-tab-screenshot", "mcp-parse-error-encoding", "mcp-busy"])
def test_plan_lines_replay_to_the_same_verdict(name: str) -> None:
    vector = vectors.load(vectors.VECTOR_DIR / f"{name}.json")
    lines = vectors.plan(vector)
    assert all(b"\n" not in line and b"\r" not in line for line in lines)
    assert len(lines) == len(vector["steps"]) + 1
    assert vectors.check(vector, _replay_plan_like_c(lines)) == []


def test_cli_plan_and_check_round_trip(tmp_path: Path) -> None:
    path = vectors.VECTOR_DIR / "mcp-unknown-outcome-then-reconcile.json"
    tool = [sys.executable, str(vectors.ROOT / "tools" / "vectors.py")]
    plan = subprocess.run([*tool, "plan", str(path)], capture_output=True, check=True).stdout
    lines = plan.rstrip(b"\n").split(b"\n")
    outputs = _replay_plan_like_c(lines)
    good = tmp_path / "good.txt"
    good.write_bytes(b"\n".join(outputs) + b"\n")
    assert subprocess.run([*tool, "check", str(path), str(good)], capture_output=True).returncode == 0
    # A replayer that got the outcome wrong (mayHaveCompleted false after the cancelled click) is caught.
    tampered = [line.replace(b'"mayHaveCompleted":true', b'"mayHaveCompleted":false') for line in outputs]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\n".join(tampered) + b"\n")
    result = subprocess.run([*tool, "check", str(path), str(bad)], capture_output=True, text=True)
    assert result.returncode == 1 and "mayHaveCompleted" in result.stdout
    short = tmp_path / "short.txt"
    short.write_bytes(b"\n".join(outputs[:-1]) + b"\n")
    assert subprocess.run([*tool, "check", str(path), str(short)], capture_output=True).returncode == 1


def test_subset_rule() -> None:
    m = vectors.match
    assert m({"a": 1}, {"a": 1.0, "b": 2}) == []
    assert m({"a": 1}, {"a": True}) != []
    assert m(True, 1) != []
    assert m([{"a": 1}], [{"a": 1, "b": 2}]) == []
    assert m([1], [1, 2]) != []
    assert m({"a": {"$absent": True}}, {"b": 1}) == []
    assert m({"a": {"$absent": True}}, {"a": None}) != []
    assert m({"$type": "integer"}, 3) == [] and m({"$type": "integer"}, 3.5) != []
    assert m({"$contains": "ab"}, "xaby") == [] and m({"$contains": "ab"}, 5) != []
    assert m({"$json": {"k": [1]}}, json.dumps({"k": [1], "z": 0})) == []
    assert m({"$json": {"k": 1}}, "{not json") != []
    assert m({"$len": 0}, {}) == [] and m({"$len": 0}, {"x": 1}) != []
    assert m({"$oneOf": [1, "a"]}, "a") == [] and m({"$oneOf": [1, "a"]}, 2) != []
    assert m(None, None) == [] and m(None, 0) != [] and m("1", 1) != []


def test_malformed_vectors_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad-vector.json"
    path.write_text(json.dumps({"name": "bad-vector", "config": {}, "steps": [{"call": "begin_mcp"}]}))
    with pytest.raises(ValueError, match="exactly one"):
        vectors.load(path)
    newline = {"name": "x", "config": {}, "steps": [{"call": "begin_mcp", "inputText": "{\n}"}]}
    with pytest.raises(ValueError, match="newline"):
        vectors.plan(newline)
