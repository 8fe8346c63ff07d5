"""The Kotlin/JVM binding over the C ABI (JNA), issue 6: build it with Debian's kotlinc and run it.

- Every test of bindings/kotlin/src/test (BindingTests.kt) runs in one JVM; each is reported here as its
  own pytest case and must print PASS (typed steps, BUSY, cancel, late callback, destroy while pending,
  config errors, UTF-8, the driver loop with timeouts, threads).
- The library also loads by name through jna.library.path with RTLD_LOCAL open flags.
- Every shared vector under fixtures/vectors, its modern twin (plus one Kotlin-specific vector) is replayed through
  KelpieBrowserGateway by VectorReplayer in one JVM and checked with tools/vectors.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import LIB, LIB_DIR, ROOT, KotlinBuild, RunResult, run_binding_tests

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tools import vectors

# The session fixture compiles the binding (kotlinc, up to 600 s per build step under load) inside the first
# test's setup, which pytest-timeout counts against that test: give this module room for it.
pytestmark = pytest.mark.timeout(1500)

KOTLIN_TESTS = [
    "json_escapes_and_surrogate_pairs",
    "json_numbers_keep_their_text",
    "json_rejects_invalid_text",
    "version_and_load_flags",
    "create_refuses_bad_config_as_typed_exception",
    "simple_transaction_typed_steps",
    "not_authorized_refusal",
    "busy_while_a_transaction_is_active",
    "stale_duplicate_forged_and_malformed_results_are_rejected",
    "cancel_during_authorize",
    "cancel_read_dispatch_late_callback_and_destroy_while_pending",
    "cancel_mutating_dispatch_is_unknown_outcome_then_retire",
    "closed_gateway_refuses_as_values",
    "embedded_nul_and_lone_surrogates_in_input",
    "utf8_round_trip_through_the_gateway",
    "mcp_initialize_notification_and_errors",
    "overdue_retirement_is_visible_through_next_then_retire",
    "undelivered_mutation_requires_a_reconcile",
    "driver_runs_a_transaction_to_completion",
    "driver_policy_denies",
    "driver_timeout_cancels_and_late_result_retires",
    "driver_handler_failures_complete_the_transaction",
    "driver_after_close_completes_instead_of_throwing",
    "invalidate_refs_from_another_thread_during_a_transaction",
    "concurrent_threads_on_one_gateway_busy_or_complete",
    "concurrent_threads_each_with_its_own_gateway",
]


@pytest.mark.parametrize("name", KOTLIN_TESTS)
def test_kotlin_binding(binding_run: RunResult, name: str) -> None:
    if name in binding_run.failed:
        pytest.fail(f"{name}: {binding_run.failed[name]}\n{binding_run.stderr[-3000:]}")
    assert name in binding_run.passed, (
        f"{name} did not run (exit {binding_run.returncode}):\n{binding_run.stdout[-2000:]}\n"
        f"{binding_run.stderr[-3000:]}"
    )


def test_kotlin_runner_ran_exactly_the_listed_tests(binding_run: RunResult) -> None:
    """A test added to or dropped from BindingTests.kt must be listed here too."""
    assert sorted({**binding_run.passed, **binding_run.failed}) == sorted(KOTLIN_TESTS)
    assert binding_run.returncode == (0 if not binding_run.failed else 1)
    assert any(f"openFlags={0x102}" in i for i in binding_run.info), binding_run.info  # RTLD_NOW|RTLD_GLOBAL


def test_loads_by_name_with_rtld_local(kotlin: KotlinBuild) -> None:
    """No explicit path (jna.library.path + the library name) and RTLD_NOW without RTLD_GLOBAL."""
    res = run_binding_tests(
        kotlin,
        "version_and_load_flags",
        "simple_transaction_typed_steps",
        "mcp_initialize_notification_and_errors",
        props={"jna.library.path": str(LIB_DIR), "kelpie.gateway.openFlags": "2"},
    )
    assert res.returncode == 0 and not res.failed, f"{res.stdout}\n{res.stderr[-3000:]}"
    assert len(res.passed) == 3
    assert any(i.endswith("loaded kelpie_browser_gateway openFlags=2") for i in res.info), res.info


# ---------------------------------------------------------------- vectors

KOTLIN_VECTOR: dict[str, Any] = {
    "name": "kotlin-binding",
    "description": "Byte-exact payloads through the Kotlin binding: NULL/plain-string arguments, invalid "
    "UTF-8, BUSY, cancel during dispatch, a late callback that retires.",
    "config": {"nativeMethods": ["get-tabs"]},
    "steps": [
        {"call": "next", "input": None, "expect": {"step": "idle"}},
        {
            "call": "begin",
            "input": {"version": 1, "id": "k-🦭", "method": "tabs.list", "params": {}},
            "expect": {"step": "authorize", "transaction": "t1", "seq": 1, "request": {"id": "k-🦭"}},
        },
        {"call": "next", "input": "t1", "expect": {"step": "authorize", "transaction": "t1"}},
        {"call": "invalidate_refs", "input": "tab-1"},
        {
            "call": "begin",
            "input": {"version": 1, "method": "tabs.list", "params": {}},
            "expect": {"step": "complete", "response": {"error": {"code": "BUSY", "retryable": True}}},
        },
        {
            "call": "advance",
            "input": {"transaction": "t1", "seq": 1, "result": {"success": True}},
            "expect": {"step": "dispatch", "method": "get-tabs", "params": {}},
        },
        {
            "call": "cancel",
            "input": {"transaction": "t1", "reason": "timeout"},
            "expect": {
                "step": "complete",
                "response": {"error": {"code": "TIMEOUT"}, "mayHaveCompleted": False},
            },
        },
        {
            "call": "advance",
            "input": {"transaction": "t1", "seq": 2, "result": {"success": True, "tabs": []}},
            "expect": {"step": "retired", "transaction": "t1"},
        },
        {"call": "invalidate_refs", "input": None},
        {
            "call": "begin",
            "inputHex": "7bff7d",
            "expect": {"step": "complete", "response": {"error": {"code": "INVALID_JSON"}}},
        },
        {
            "call": "begin_mcp",
            "inputHex": "fffe7b7d",
            "expect": {"step": "complete", "response": {"error": {"code": -32700}}},
        },
        {
            "call": "advance",
            "inputText": "{not json",
            "expect": {
                "step": "rejected",
                "error": {"code": {"$oneOf": ["INVALID_REQUEST", "INVALID_JSON"]}},
            },
        },
    ],
}


def _all_vectors() -> list[tuple[str, dict[str, Any]]]:
    """Every shared vector file, the modern (2026-07-28) twin of each, and the Kotlin-specific one."""
    return [*vectors.all_cases(), (KOTLIN_VECTOR["name"], KOTLIN_VECTOR)]


VECTORS = _all_vectors()


@pytest.fixture(scope="session")
def replayed(kotlin: KotlinBuild, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    """Replays every vector in one JVM; maps vector name -> output lines."""
    tmp = tmp_path_factory.mktemp("kotlin-vectors")
    args: list[str] = []
    outs: dict[str, Path] = {}
    for name, vector in VECTORS:
        plan = tmp / f"{name}.plan"
        plan.write_bytes(b"".join(line + b"\n" for line in vectors.plan(vector)))
        outs[name] = tmp / f"{name}.out"
        args += [str(plan), str(outs[name])]
    proc = kotlin.java(
        "kelpie.gateway.test.VectorReplayer", *args, props={"kelpie.gateway.library": str(LIB)}
    )
    assert proc.returncode == 0, f"replayer failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    result = {}
    for name, path in outs.items():
        data = path.read_bytes()
        result[name] = data[:-1].split(b"\n") if data.endswith(b"\n") else ([data] if data else [])
    return result


def test_shared_vectors_exist() -> None:
    assert len(VECTORS) > 1, "fixtures/vectors holds no shared vectors"
    assert any(v.get("era") == vectors.MODERN for _, v in VECTORS), "no modern twins"


@pytest.mark.parametrize(("name", "vector"), VECTORS, ids=[n for n, _ in VECTORS])
def test_vector(replayed: dict[str, list[bytes]], name: str, vector: dict[str, Any]) -> None:
    problems = vectors.check(vector, replayed[name])
    assert not problems, "\n".join(problems)
