"""The C ABI under churn (issue 27): bindings/c/stress.c run by tools/abi_stress, plain and under the sanitizers.

Worker threads that never had a Python thread state call every entry point on the gateway they hold,
threads start and end all the time, and the main thread keeps creating a gateway and destroying the old
one (docs/c-abi.md, "Stress: churn, sanitizers, core dumps"). Each run here is a few seconds; the long
runs behind the evidence in docs/c-abi.md are the same tool with more runs and seconds.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, Abi, compile_c, pkg_config_flags

SECONDS = 4


def stress(variant: str, out: Path) -> tuple[dict[str, str], str]:
    """One run of tools/abi_stress (it builds the variant's library and programs first): the counters of
    the stress summary line, and everything the runner printed."""
    runner = [str(ROOT / "tools" / "abi_stress"), "--variant", variant, "--runs", "1"]
    proc = subprocess.run(
        [*runner, "--seconds", str(SECONDS), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    printed = proc.stdout + proc.stderr
    run_dir = out / variant / "run-1"
    err = (run_dir / "err.txt").read_text(errors="replace") if (run_dir / "err.txt").exists() else ""
    assert proc.returncode == 0, printed + "\n--- stress stderr ---\n" + err[-8000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("run 1: ok "))
    return dict(re.findall(r"(\w+)=(\S+)", line)), printed


def assert_every_path_was_exercised(fields: dict[str, str]) -> None:
    """The run did what it claims: nothing unexpected, and each kind of race actually happened."""
    n = {k: int(v) for k, v in fields.items() if v.isdigit()}
    assert fields["result"] == "OK" and n["unexpected"] == 0 and n["nulls"] == 0, fields
    assert n["threads"] > n["workers"], fields  # churned threads ended and were replaced
    assert n["destroys"] > 100 and n["creates"] >= n["destroys"], fields
    assert n["refused_handle"] > 0 and n["stale_checks"] > 0, fields  # destroyed handles were refused
    assert n["transactions"] > 0 and n["cancelled"] > 0 and n["retired"] > 0, fields
    assert n["mcp"] > 0 and n["busy"] > 0, fields


@pytest.mark.usefixtures("abi")
def test_stress_every_entry_point_while_gateways_are_replaced(tmp_path: Path) -> None:
    fields, _ = stress("plain", tmp_path)
    assert_every_path_was_exercised(fields)


@pytest.mark.usefixtures("abi")
def test_stress_under_thread_sanitizer_finds_no_race(tmp_path: Path) -> None:
    """Regression (issue 27, the SIGSEGV of the last performance pass): destroy dropped the C handle
    table's reference to the Gateway with Py_XDECREF in _kg_handle_forget, called from Python through cffi,
    which releases the GIL around every call into C. That non-atomic decrement raced the reference count
    changes of calls in flight on the same gateway; a lost update freed a Gateway still in use. Before the
    fix ThreadSanitizer reported that race (_kg_handle_forget against _kg_call) in 10 of 10 runs of this
    length; abi_stress fails a run on any ThreadSanitizer report."""
    fields, _ = stress("tsan", tmp_path)
    assert_every_path_was_exercised(fields)


@pytest.mark.usefixtures("abi")
def test_stress_under_address_sanitizer_is_clean(tmp_path: Path) -> None:
    """AddressSanitizer with the embedded interpreter allocating through malloc (every Python object its own
    block, freed memory poisoned and overwritten): no invalid access, double free or use after free."""
    fields, _ = stress("asan", tmp_path)
    assert_every_path_was_exercised(fields)


@pytest.mark.usefixtures("abi")
def test_contract_and_hammer_under_address_sanitizer() -> None:
    """The contract program and the threaded hammer, built by abi_stress beside the stress program, pass
    under AddressSanitizer too (the library's own C code instrumented: buffers, escapes, the handle table)."""
    build = subprocess.run(
        [str(ROOT / "tools" / "abi_stress"), "--variant", "asan", "--runs", "0"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    prefix = ROOT / "build" / "abi-asan" / "bin"
    env = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:disable_coredump=1"}
    contract = subprocess.run(
        [str(prefix / "contract_test"), "--quick"], env=env, capture_output=True, text=True, timeout=600
    )
    out = contract.stdout + contract.stderr
    assert contract.returncode == 0 and ", 0 failures" in contract.stdout, out[-6000:]
    assert "AddressSanitizer" not in contract.stderr, out[-6000:]
    hammer = subprocess.run(
        [str(prefix / "hammer"), "--threads", "8", "--gateways", "4", "--transactions", "20000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = hammer.stdout + hammer.stderr
    assert hammer.returncode == 0 and "result=OK" in hammer.stdout, out[-6000:]
    assert "AddressSanitizer" not in hammer.stderr, out[-6000:]


BOOT_THREAD = r"""
    /* The runtime is started by a thread that then ends; later threads (and main) keep using it. */
    #include <pthread.h>
    #include "kelpie_test_support.h"
    static KelpieBrowserGatewayRef shared;
    static int bad;
    static int transaction(KelpieBrowserGatewayRef gw) {
        kj_node *r = kt_run(gw, "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}", NULL, NULL);
        int ok = !strcmp(kt_step(r), "complete") && kj_path(r, "response.success") &&
                 kj_path(r, "response.success")->type == KJ_TRUE;
        kj_free(r);
        return ok;
    }
    static void *boot(void *arg) {
        char *err = NULL;
        (void)arg;
        shared = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
        if (!shared || !transaction(shared)) bad++;
        return NULL;
    }
    static void *user(void *arg) {
        (void)arg;
        for (int i = 0; i < 50; i++) {
            char *err = NULL;
            KelpieBrowserGatewayRef own = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
            if (!own || !transaction(own) || kelpie_browser_gateway_destroy(own) != KELPIE_GATEWAY_OK) bad++;
            kj_free(kt_take(kelpie_browser_gateway_next(shared, NULL), "next"));
        }
        return NULL;
    }
    int main(void) {
        pthread_t t[4];
        pthread_create(&t[0], NULL, boot, NULL);
        pthread_join(t[0], NULL);
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, user, NULL);
            for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        }
        if (!transaction(shared) || kelpie_browser_gateway_destroy(shared) != KELPIE_GATEWAY_OK) bad++;
        printf("boot_thread: bad=%d\n", bad);
        return bad != 0;
    }
"""


def test_a_runtime_started_by_a_thread_that_ended_serves_every_later_thread(abi: Abi, tmp_path: Path) -> None:
    """The first call of a process (which starts the interpreter and owns its first thread state) may come
    from a host thread that then ends: later threads, first calls and main still get correct answers."""
    c_dir = str(ROOT / "bindings" / "c")
    flags = ["-I", c_dir, *pkg_config_flags(abi.pkgconfig), "-lpthread", "-lm"]
    exe = compile_c(tmp_path, abi, BOOT_THREAD, "boot_thread", flags)
    proc = subprocess.run([str(exe)], env={}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "boot_thread: bad=0" in proc.stdout, proc.stdout + proc.stderr
