"""Shared request/response vectors — every file and its modern (2026-07-28) twin — replayed through the
C ABI by a C host (fixtures/vectors/README.md).

vector_replay (bindings/c) reads the flat plans `tools/vectors.py plan` writes and prints what the ABI
returned; `vectors.check` applies each vector's expectations. Besides every vector under
fixtures/vectors, one ABI-specific vector (below) always runs, so the replayer itself is exercised even
before the shared set grows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import ROOT, Abi

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tools import vectors

TABS = [{"tabId": "t1", "generation": 1, "url": "https://example.test/", "title": "Example", "active": True}]
CANONICAL = '{"version":1,"method":"tabs.list","params":{}}'

ABI_VECTOR: dict[str, Any] = {
    "name": "abi-tabs-list",
    "description": "A full tabs.list transaction, NULL/plain-string arguments and the C-side request cap.",
    "config": {"nativeMethods": ["get-tabs"]},
    "steps": [
        {"call": "next", "input": None, "expect": {"step": "idle"}},
        {
            "call": "begin",
            "input": {"version": 1, "method": "tabs.list", "params": {}},
            "expect": {"step": "authorize", "transaction": "t1", "seq": 1, "lane": "direct"},
        },
        {"call": "next", "input": "t1", "expect": {"step": "authorize", "transaction": "t1"}},
        {
            "call": "advance",
            "input": {"transaction": "t1", "seq": 1, "result": {"success": True}},
            "expect": {"step": "dispatch", "method": "get-tabs", "params": {}},
        },
        {"call": "invalidate_refs", "input": None},
        {
            "call": "advance",
            "input": {"transaction": "t1", "seq": 2, "result": {"success": True, "tabs": TABS}},
            "expect": {"step": "complete", "response": {"success": True, "result": {"tabs": TABS}}},
        },
        {
            "call": "advance",
            "input": {"transaction": "t1", "seq": 2, "result": {"success": True, "tabs": TABS}},
            "expect": {"step": "rejected", "error": {"code": "STALE_STEP"}},
        },
        {
            "call": "begin",
            "inputHex": "fffe7b7d",
            "expect": {"response": {"error": {"code": "INVALID_JSON"}}},
        },
        {
            "call": "begin",
            "inputRepeat": {"prefix": CANONICAL, "repeat": " ", "times": 4 * 1024 * 1024, "suffix": ""},
            "expect": {
                "step": "complete",
                "response": {"error": {"code": "REQUEST_TOO_LARGE", "message": {"$contains": "4 MiB"}}},
            },
        },
        {
            "call": "advance",
            "input": None,
            "expect": {"step": "rejected", "error": {"code": "INVALID_REQUEST"}},
        },
    ],
}


def test_vectors_replayed_by_the_c_host_match(abi: Abi, tmp_path: Path) -> None:
    own = tmp_path / f"{ABI_VECTOR['name']}.json"
    own.write_text(json.dumps(ABI_VECTOR))
    loaded = {own.stem: vectors.load(own), **dict(vectors.all_cases())}
    assert any(v.get("era") == vectors.MODERN for v in loaded.values()), "no modern twins replayed"
    args: list[str] = []
    for i, vector in enumerate(loaded.values()):
        plan = tmp_path / f"{i}.plan"
        plan.write_bytes(
            b"".join(line if line.endswith(b"\n") else line + b"\n" for line in vectors.plan(vector))
        )
        args += [str(plan), str(tmp_path / f"{i}.out")]
    proc = subprocess.run(
        [str(abi.program("vector_replay")), *args], env={}, capture_output=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    problems: list[str] = []
    for i, (path, vector) in enumerate(loaded.items()):
        outputs = (tmp_path / f"{i}.out").read_bytes().splitlines()
        problems += [f"{path}: {p}" for p in vectors.check(vector, outputs)]
    assert not problems, "\n".join(problems[:40])
