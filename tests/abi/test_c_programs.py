"""The C programs of bindings/c against the built library (CONTRACT.md §10; issue 4).

Each program runs with an empty environment: a C host needs no PYTHONHOME, PYTHONPATH or
LD_LIBRARY_PATH when the project is set up as the README says.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, Abi, compile_c, pkg_config_flags


def run(cmd: list[str], env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def test_contract_program_passes_with_no_environment(abi: Abi, clean_env: dict[str, str]) -> None:
    proc = run([str(abi.program("contract_test"))], clean_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    match = re.search(r"contract_test: (\d+) checks, 0 failures", proc.stdout)
    assert match and int(match.group(1)) > 200, proc.stdout


def test_contract_program_under_valgrind_is_clean(abi: Abi, clean_env: dict[str, str]) -> None:
    """Zero invalid reads/writes and zero definitely-lost bytes (tests/abi/valgrind.supp explains why it
    is empty). --quick skips the payloads over 1 MiB: CPython runs ~50x slower under memcheck."""
    valgrind = shutil.which("valgrind")
    assert valgrind, "valgrind is installed by tools/dev setup"
    proc = run(
        [
            valgrind,
            "--tool=memcheck",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
            f"--suppressions={Path(__file__).with_name('valgrind.supp')}",
            "--error-exitcode=97",
            "--num-callers=30",
            str(abi.program("contract_test")),
            "--quick",
        ],
        clean_env,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert "contract_test:" in out and ", 0 failures" in out, out[-4000:]
    assert re.search(r"ERROR SUMMARY: 0 errors", out), out[-6000:]
    assert re.search(r"definitely lost: 0 bytes in 0 blocks", out) or "All heap blocks were freed" in out, (
        out[-4000:]
    )
    assert "Invalid read" not in out and "Invalid write" not in out and "Invalid free" not in out
    assert proc.returncode == 0, out[-4000:]


def test_threaded_hammer_accounts_for_every_transaction(abi: Abi, clean_env: dict[str, str]) -> None:
    proc = run(
        [str(abi.program("hammer")), "--threads", "8", "--gateways", "4", "--transactions", "100000"],
        clean_env,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    fields = dict(re.findall(r"(\w+)=(\S+)", proc.stdout))
    assert fields["completed"] == "100000" and fields["dispatches"] == "100000", out
    assert fields["duplicate_dispatches"] == "0" and fields["unexpected_steps"] == "0", out
    assert fields["mismatched_ids"] == "0" and fields["result"] == "OK", out


def test_example_host_loads_with_dlopen_rtld_global(abi: Abi, clean_env: dict[str, str]) -> None:
    proc = run([str(abi.program("example_host")), str(abi.lib)], clean_env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    canonical = next(line for line in proc.stdout.splitlines() if line.startswith("canonical: "))
    assert '"success":true' in canonical and '"tabId":"t1"' in canonical


HELLO = r"""
    #include <stdio.h>
    #include <string.h>
    #include <kelpie/browser_gateway_c_api.h>
    int main(void) {
        char *err = NULL, *step;
        KelpieBrowserGatewayRef gw = kelpie_browser_gateway_create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
        if (!gw) { printf("create failed: %s\n", err); return 1; }
        step = kelpie_browser_gateway_begin(gw, "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}");
        printf("%s\n", step);
        kelpie_mcp_free_string(step);
        printf("destroy=%d\n", (int)kelpie_browser_gateway_destroy(gw));
        return 0;
    }
"""


def test_pkg_config_install_layout_builds_a_plain_c_host(
    abi: Abi, tmp_path: Path, clean_env: dict[str, str]
) -> None:
    """include/ + lib/ + lib/pkgconfig: `pkg-config --cflags --libs` is all a host build needs."""
    assert (abi.include / "kelpie" / "browser_gateway_c_api.h").is_file()
    pc = pkg_config_flags(abi.pkgconfig)
    exe = compile_c(tmp_path, abi, HELLO, "hello", pc)
    proc = run([str(exe)], clean_env, timeout=60)
    assert proc.returncode == 0 and '"step":"authorize"' in proc.stdout, proc.stdout + proc.stderr
    assert "destroy=0" in proc.stdout  # an authorize step is not a pending renderer callback


def test_the_quick_start_program_in_the_c_abi_doc_builds_and_runs_as_written(
    abi: Abi, tmp_path: Path, clean_env: dict[str, str]
) -> None:
    """docs/c-abi.md's quick start: its C block, compiled with its own command line, runs the three
    steps its comments name (a new user copies it; it must not be a fragment)."""
    doc = (ROOT / "docs" / "c-abi.md").read_text(encoding="utf-8")
    source = re.search(r"## Quick start.*?```c\n(.*?)```", doc, re.S)
    assert source, "docs/c-abi.md has a Quick start with a C block"
    (tmp_path / "host.c").write_text(source.group(1), encoding="utf-8")
    build = subprocess.run(
        "cc -Wall -Werror -o host host.c $(pkg-config --cflags --libs kelpie-browser-gateway)",
        shell=True,
        cwd=tmp_path,
        env={"PKG_CONFIG_PATH": str(abi.pkgconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    proc = run([str(tmp_path / "host")], clean_env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [
        '"step":"authorize"' in steps[0],
        '"step":"dispatch"' in steps[1],
        '"step":"complete"' in steps[2],
    ] == [
        True,
        True,
        True,
    ], proc.stdout
    assert '"success":true' in steps[2] and '"tabs":[]' in steps[2]


DLOPEN_LOCAL = r"""
    #include <dlfcn.h>
    #include <stdio.h>
    #include <string.h>
    #include <kelpie/browser_gateway_c_api.h>
    int main(int argc, char **argv) {
        void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        KelpieBrowserGatewayRef (*create)(const char *, char **);
        char *(*begin)(KelpieBrowserGatewayRef, const char *);
        char *err = NULL, *step;
        KelpieBrowserGatewayRef gw;
        (void)argc;
        if (!lib) { printf("dlopen: %s\n", dlerror()); return 1; }
        *(void **)&create = dlsym(lib, "kelpie_browser_gateway_create");
        *(void **)&begin = dlsym(lib, "kelpie_browser_gateway_begin");
        gw = create("{\"nativeMethods\":[\"get-tabs\"]}", &err);
        if (!gw) { printf("create failed: %s\n", err); return 2; }
        step = begin(gw, "{\"version\":1,\"method\":\"tabs.list\",\"params\":{}}");
        printf("%s\n", step);
        return strstr(step, "\"authorize\"") ? 0 : 3;
    }
"""


def test_rtld_local_host_still_works_because_libpython_is_promoted(
    abi: Abi, tmp_path: Path, clean_env: dict[str, str]
) -> None:
    """Regression: a host that dlopen()s with RTLD_LOCAL used to break _cffi_backend/orjson imports
    (undefined Py* symbols); the library now promotes libpython to RTLD_GLOBAL before starting Python."""
    exe = compile_c(tmp_path, abi, DLOPEN_LOCAL, "dlopen_local", [f"-I{abi.include}", "-ldl"])
    proc = run([str(exe), str(abi.lib)], clean_env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_the_contract_functions_are_exported(abi: Abi) -> None:
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(abi.lib)], capture_output=True, text=True, check=True
    )
    names = {line.split()[-1] for line in nm.stdout.splitlines() if " T " in line}
    assert names == {
        "kelpie_browser_gateway_create",
        "kelpie_browser_gateway_destroy",
        "kelpie_browser_gateway_begin",
        "kelpie_browser_gateway_begin_mcp",
        "kelpie_browser_gateway_next",
        "kelpie_browser_gateway_advance",
        "kelpie_browser_gateway_cancel",
        "kelpie_browser_gateway_invalidate_refs",
        "kelpie_browser_gateway_version",
        "kelpie_mcp_free_string",
    }


def test_libpython_is_found_through_rpath_not_the_environment(abi: Abi) -> None:
    dyn = subprocess.run(["readelf", "-d", str(abi.lib)], capture_output=True, text=True, check=True).stdout
    assert "libpython3" in dyn
    # DT_RPATH (not RUNPATH): LD_LIBRARY_PATH cannot swap in another libpython (e.g. Debian's 3.11).
    assert "(RPATH)" in dyn and "(RUNPATH)" not in dyn


def _install(prefix: Path) -> None:
    """``abi/build_abi.py --prefix``: the documented way to install the C library."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "abi" / "build_abi.py"), "--prefix", str(prefix)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runtime_init_failure_is_reported_through_create(
    abi: Abi, tmp_path: Path, clean_env: dict[str, str]
) -> None:
    """An installed tree whose bundled engine is gone cannot import it: create returns NULL and
    error_json_out carries an INTERNAL envelope naming the cause (not only stderr); later calls report the
    same instead of crashing."""
    prefix = tmp_path / "broken"
    _install(prefix)
    shutil.rmtree(prefix / "lib" / "kelpie-browser-gateway" / "python" / "kelpie_gateway")
    exe = compile_c(
        tmp_path,
        abi,
        HELLO,
        "hello_broken",
        [
            f"-I{prefix / 'include'}",
            f"-L{prefix / 'lib'}",
            f"-Wl,-rpath,{prefix / 'lib'}",
            "-lkelpie_browser_gateway",
        ],
    )
    proc = run([str(exe)], clean_env, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout.startswith("create failed: {")
    assert '"code":"INTERNAL"' in proc.stdout and "failed to initialise" in proc.stdout
    assert "kelpie_gateway" in proc.stdout  # names what could not be imported


def test_installed_prefix_still_works_after_it_is_moved(tmp_path: Path, clean_env: dict[str, str]) -> None:
    """Issue 14: ``build_abi.py --prefix P`` is relocatable. After moving P, the C example host (dlopen) and a
    host built with the moved tree's pkg-config file both run with an empty environment; nothing in P names
    the old location or the checkout; the soname is versioned; no build stamp is left in P."""
    first, moved = tmp_path / "first" / "P", tmp_path / "elsewhere" / "Q"
    _install(first)
    moved.parent.mkdir()
    shutil.move(str(first), str(moved))
    shutil.rmtree(tmp_path / "first")
    lib = moved / "lib"

    proc = run(
        [str(ROOT / "build" / "abi" / "bin" / "example_host"), str(lib / "libkelpie_browser_gateway.so")],
        clean_env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    canonical = next(line for line in proc.stdout.splitlines() if line.startswith("canonical: "))
    assert '"success":true' in canonical and '"tabId":"t1"' in canonical

    pc = pkg_config_flags(lib / "pkgconfig")
    assert any(flag.startswith("-L") and Path(flag[2:]).resolve() == lib for flag in pc), pc
    exe = compile_c(
        tmp_path, Abi(moved, lib, moved / "include", lib / "pkgconfig", lib), HELLO, "hello_moved", pc
    )
    proc = run([str(exe)], clean_env, timeout=60)
    assert proc.returncode == 0 and '"step":"authorize"' in proc.stdout, proc.stdout + proc.stderr

    dyn = subprocess.run(
        ["readelf", "-d", str(lib / "libkelpie_browser_gateway.so")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Library soname: [libkelpie_browser_gateway.so.0]" in dyn
    assert (lib / "libkelpie_browser_gateway.so").is_symlink() and (
        lib / "libkelpie_browser_gateway.so.0"
    ).is_symlink()
    assert (lib / "kelpie-browser-gateway" / "python" / "kelpie_gateway" / "gateway.py").is_file()
    assert not (lib / "kelpie-browser-gateway" / "python" / "kelpie_gateway" / "host").exists()
    assert not list(moved.rglob("*stamp*"))
    for path in moved.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for old in (str(tmp_path / "first").encode(), str(ROOT).encode(), b"/.venv/"):
                assert old not in data, (path, old)
