"""The Swift binding over the C ABI (issue 15): `swift test` of bindings/swift inside the Debian 13 Swift
environment (Debian's swiftlang 6.0.3), every XCTest case and every shared vector as a pytest case.

- JSONTests: the strict JSON parser and writer of the typed layer.
- RawLayerTests: BrowserGateway (init error envelope, typed steps and their round trip, BUSY, stale and
  forged results, cancel during authorize and dispatch, late result retires, close while pending, closed
  handle, Unicode, embedded NUL, invalid UTF-8, MCP, invalidateRefs from another thread).
- DriverTests: GatewayDriver against a fake host (success, policy denial, handler failures, timeout with
  a late retire, Task cancellation, cancellation before dispatch, an overdue retirement, concurrent runs).
- ConcurrencyAndLeakTests: 8 tasks on one gateway with invalidateRefs from two threads (no double
  dispatch); 100,000 transactions with flat RSS.
- VectorTests: every fixtures/vectors/*.json replayed through the raw layer and checked by tools/vectors.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, SwiftRun, parse, swiftenv

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tools import vectors

pytestmark = pytest.mark.timeout(1800)  # the first case includes `swift test` (an incremental build)

SWIFT_TESTS = [
    "JSONTests.testParsesEveryKindAndKeepsIntegersExact",
    "JSONTests.testEscapesAndSurrogatePairs",
    "JSONTests.testRefusesWhatRFC8259Refuses",
    "JSONTests.testWriterRoundTripsAndAgreesWithFoundation",
    "RawLayerTests.testVersionIsTheLibrarys",
    "RawLayerTests.testInitRefusesBadConfigWithTheEnvelope",
    "RawLayerTests.testSimpleTransactionThroughTypedSteps",
    "RawLayerTests.testTypedStepsRoundTrip",
    "RawLayerTests.testBusyWhileATransactionIsActive",
    "RawLayerTests.testStaleDuplicateForgedAndMalformedResultsAreRejected",
    "RawLayerTests.testCancelDuringAuthorizeIsARefusal",
    "RawLayerTests.testCancelledMutationIsUnknownOutcomeAndTheLateResultRetires",
    "RawLayerTests.testCancelledReadCanBeRetiredAsRendererClosed",
    "RawLayerTests.testClosedGatewayRefusesAsValues",
    "RawLayerTests.testUnicodeEmbeddedNulAndInvalidBytes",
    "RawLayerTests.testMCPInitializeNotificationAndErrors",
    "RawLayerTests.testInvalidateRefsFromAnotherThreadDuringATransaction",
    "DriverTests.testDriverRunsATransactionToCompletion",
    "DriverTests.testPolicyDenies",
    "DriverTests.testHandlerFailuresCompleteTheTransaction",
    "DriverTests.testTimeoutCancelsAndTheLateResultRetires",
    "DriverTests.testTaskCancellationCancelsTheDispatchedMutation",
    "DriverTests.testTaskCancelledBeforeTheDispatchInvokesNothing",
    "DriverTests.testOverdueRetirementIsEndedByTheHost",
    "DriverTests.testConcurrentRunsOnOneDriverAreCompleteOrBusy",
    "ConcurrencyAndLeakTests.testEightTasksHammerOneGatewayWithInvalidateRefsFromOtherThreads",
    "ConcurrencyAndLeakTests.testNoLeakOverAHundredThousandTransactions",
    "VectorTests.testEverySharedVectorReplaysThroughTheRawLayer",
]


def _explain(run: SwiftRun) -> str:
    return f"exit {run.returncode} after {run.seconds:.0f} s:\n{run.output[-4000:]}"


@pytest.mark.parametrize("name", SWIFT_TESTS)
def test_swift_binding(swift_run: SwiftRun, name: str) -> None:
    if name in swift_run.failed:
        pytest.fail(f"{name}: " + "\n".join(swift_run.failed[name]) + "\n" + _explain(swift_run))
    assert name in swift_run.passed, f"{name} did not run: {_explain(swift_run)}"


def test_swift_runner_ran_exactly_the_listed_tests(swift_run: SwiftRun) -> None:
    """A test added to or dropped from bindings/swift/Tests must be listed here too."""
    assert sorted(swift_run.passed | set(swift_run.failed)) == sorted(SWIFT_TESTS), _explain(swift_run)
    assert swift_run.executed == len(SWIFT_TESTS), _explain(swift_run)
    assert swift_run.returncode == (0 if not swift_run.failed else 1), _explain(swift_run)
    print(
        f"swift test: {swift_run.executed} XCTest cases in {swift_run.seconds:.1f} s; "
        + "; ".join(swift_run.info)
    )


VECTOR_NAMES = [name for name, _ in vectors.all_cases()]
"""Every vector file and its modern (2026-07-28) twin (tools/vectors.py)."""


def test_shared_vectors_exist() -> None:
    assert len(VECTOR_NAMES) > 1, "fixtures/vectors holds no shared vectors"


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector(swift_run: SwiftRun, name: str) -> None:
    if name in swift_run.vectors_failed:
        pytest.fail(f"{name}: {swift_run.vectors_failed[name]}")
    assert name in swift_run.vectors_passed, f"vector {name} was not replayed: {_explain(swift_run)}"


# ---------------------------------------------------------------- the environment itself


def test_output_parser_reads_xctest_lines() -> None:
    """The parser behind every case above: passes, failures with their messages, vectors, the count."""
    run = parse(
        "Test Case 'RawLayerTests.testA' started at 2026-11-30 10:00:00.000\n"
        "Test Case 'RawLayerTests.testA' passed (0.001 seconds)\n"
        '/x/RawLayerTests.swift:9: error: RawLayerTests.testB : XCTAssertEqual failed: ("1") is not equal to ("2")\n'
        "Test Case 'RawLayerTests.testB' failed (0.002 seconds)\n"
        "VECTOR PASS mcp-ping\nVECTOR FAIL mcp-busy: steps[1]: expected BUSY\nINFO hello\n"
        "\t Executed 2 tests, with 1 failure (0 unexpected) in 0.003 (0.003) seconds\n"
    )
    assert run.passed == {"RawLayerTests.testA"}
    assert run.failed == {"RawLayerTests.testB": ['XCTAssertEqual failed: ("1") is not equal to ("2")']}
    assert run.vectors_passed == {"mcp-ping"} and run.vectors_failed == {
        "mcp-busy": "steps[1]: expected BUSY"
    }
    assert run.info == ["hello"] and run.executed == 2


def test_no_mount_outlives_a_swift_run(swift_run: SwiftRun) -> None:
    """`tools/swiftenv` mounts in a private namespace: after a run nothing is mounted under the root fs
    (in any namespace), and the checkout was read-only inside."""
    status = swiftenv("status", timeout=60)
    assert "mounts: none" in status.stdout, status.stdout
    probe = swiftenv(
        "exec", "sh", "-c", f"touch {ROOT}/.swift-ro-probe 2>&1; findmnt -n -o OPTIONS {ROOT}", timeout=120
    )
    assert "Read-only file system" in probe.stdout, probe.stdout + probe.stderr
    options = [line for line in probe.stdout.splitlines() if line.strip()][-1]
    assert "ro" in options.split(","), probe.stdout
    assert not (ROOT / ".swift-ro-probe").exists()
    after = swiftenv("status", timeout=60)
    assert "mounts: none" in after.stdout, after.stdout


def test_prepare_is_idempotent() -> None:
    """On a machine that has the environment, `prepare` only says so (what every `tools/dev setup` runs)."""
    proc = swiftenv("prepare", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "[swift] root filesystem ready:" in proc.stderr and "(swiftlang 6." in proc.stderr, proc.stderr


def test_clean_refuses_a_tree_that_still_has_mounts(tmp_path: Path) -> None:
    """`clean` of a root filesystem under which something is mounted (here: in another process's private
    mount namespace, as a running `tools/dev swift` would hold) deletes nothing; once the mount is gone,
    it deletes the tree."""
    rootfs = tmp_path / "rootfs"
    (rootfs / "mnt").mkdir(parents=True)
    keep = rootfs / "keep.txt"
    keep.write_text("precious")
    holder = subprocess.Popen(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            f"mount -t tmpfs kelpie-test {rootfs / 'mnt'} && echo mounted && exec sleep 60",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "mounted"
        env = dict(os.environ, KELPIE_SWIFT_ROOTFS=str(rootfs))
        refused = subprocess.run(
            [str(ROOT / "tools" / "swiftenv"), "clean"], env=env, capture_output=True, text=True, timeout=60
        )
        assert refused.returncode != 0
        assert "refusing to delete" in refused.stderr and str(rootfs / "mnt") in refused.stderr, (
            refused.stderr
        )
        assert keep.read_text() == "precious"
    finally:
        holder.kill()
        holder.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the namespace goes away with its last process
        done = subprocess.run(
            [str(ROOT / "tools" / "swiftenv"), "clean"], env=env, capture_output=True, text=True, timeout=60
        )
        if done.returncode == 0:
            break
        time.sleep(0.1)
    assert done.returncode == 0, done.stderr
    assert not rootfs.exists()


def test_ctrl_c_leaves_no_mount() -> None:
    """While `tools/swiftenv exec` runs, its mounts exist (in its own namespace only: the caller's
    `findmnt` never shows them); Ctrl-C (SIGINT to the process group) ends it and every mount with it."""
    proc = subprocess.Popen(
        [str(ROOT / "tools" / "swiftenv"), "exec", "sh", "-c", "echo inside; exec sleep 120"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
        during = swiftenv("status", timeout=60).stdout
        assert str(ROOT) in during and "/proc" in during, during  # held by the running process
        findmnt = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True).stdout
        assert "kelpie-gateway" not in findmnt, "a mount leaked into the caller's namespace"
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    after = swiftenv("status", timeout=60).stdout
    assert "mounts: none" in after, after
