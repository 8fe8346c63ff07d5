"""Build libkelpie_browser_gateway (cffi embedding) and its install layout (CONTRACT.md §10).

    python abi/build_abi.py --prefix build/abi [--engine-path DIR] [--site-packages DIR] [--force]

Produces ``PREFIX/lib/libkelpie_browser_gateway.so`` (``.dylib`` on macOS), ``PREFIX/include/kelpie/
browser_gateway_c_api.h`` and ``PREFIX/lib/pkgconfig/kelpie-browser-gateway.pc``. Skips all work when a
stamp of the inputs (sources, compiler flags, recorded paths) is unchanged.

Recorded at build time (so a C host needs no environment variables, see docs/c-abi.md):
* an rpath (DT_RPATH, which LD_LIBRARY_PATH cannot override) to the running Python's LIBDIR (libpython);
* the (virtualenv's) python executable path, used as PyConfig.program_name when the library starts the
  interpreter, so prefix, base prefix and site-packages come out exactly as when running that python;
* the virtualenv's site-packages (added with site.addsitedir, so the editable install's .pth applies);
* the engine directory (fallback if ``kelpie_gateway`` is not importable in a host Python).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import cffi

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODULE = "_kelpie_gateway_abi"
LIBNAME = "kelpie_browser_gateway"
EXPORTS = (
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
)

CDEF = """
extern "Python" uintptr_t _kg_py_create(const char *config, size_t size, char **error_out);
extern "Python" int32_t _kg_py_destroy(uintptr_t handle);
extern "Python" char *_kg_py_call(uintptr_t handle, int32_t op, const char *data, size_t size,
                                  int32_t *status_out);
extern "Python" int32_t _kg_py_invalidate(uintptr_t handle, const char *tab_id, size_t size);
char *_kg_dup(const char *p, size_t n);
char *_kg_error_step(int32_t op, const char *code, const char *message);
char *_kg_error_envelope(const char *code, const char *message);
"""


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def project_version() -> str:
    match = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    return match.group(1) if match else "0.0.0"


def default_site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default=str(ROOT / "build" / "abi"))
    ap.add_argument("--engine-path", default=str(ROOT / "engine"))
    ap.add_argument("--site-packages", default=default_site_packages())
    ap.add_argument(
        "--python",
        default=os.path.abspath(sys.executable),
        help="interpreter to impersonate when the library starts Python (default: this one)",
    )
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()

    prefix = Path(args.prefix).resolve()
    libdir, incdir = prefix / "lib", prefix / "include" / "kelpie"
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    target = libdir / f"lib{LIBNAME}{suffix}"
    py_libdir = sysconfig.get_config_var("LIBDIR")
    ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
    py_lib = "python" + sysconfig.get_config_var("LDVERSION")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        print(f"build_abi: {sys.executable} was not built with --enable-shared ({ldlib})", file=sys.stderr)
        return 1
    py_exe = args.python

    version = project_version()
    defines = "\n".join(
        f"#define {name} {c_string(value)}"
        for name, value in (
            ("KELPIE_BUILD_VERSION", version),
            ("KELPIE_BUILD_PYTHON_EXE", py_exe),
            ("KELPIE_BUILD_SITE_PACKAGES", args.site_packages),
        )
    )
    preamble = defines + "\n" + (HERE / "kelpie_abi.c").read_text()
    init_code = (HERE / "shims.py").read_text().replace('"@KELPIE_ENGINE_PATH@"', repr(args.engine_path))
    header = HERE / "include" / "kelpie" / "browser_gateway_c_api.h"

    cc = os.environ.get("CC", "gcc")
    cflags = [
        "-O2",
        "-g",
        "-fPIC",
        "-fvisibility=hidden",
        "-Wall",
        "-Wno-unused-function",
        "-Wno-unused-parameter",
        "-I",
        sysconfig.get_paths()["include"],
        "-I",
        str(HERE / "include"),
    ]
    ldflags = ["-shared", f"-L{py_libdir}", f"-l{py_lib}", "-lpthread", "-ldl"]
    if sys.platform == "darwin":
        ldflags += [f"-Wl,-rpath,{py_libdir}", f"-Wl,-install_name,@rpath/lib{LIBNAME}{suffix}"]
    else:
        ldflags += [f"-Wl,-rpath,{py_libdir}", "-Wl,--disable-new-dtags", f"-Wl,-soname,lib{LIBNAME}{suffix}"]

    stamp_src = "\0".join(
        [
            preamble,
            init_code,
            header.read_text(),
            CDEF,
            cffi.__version__,
            cc,
            *cflags,
            *ldflags,
            str(prefix),
            sys.version,
        ]
    )
    stamp = hashlib.sha256(stamp_src.encode()).hexdigest()
    stamp_file = prefix / ".build-stamp"
    pc_file = libdir / "pkgconfig" / "kelpie-browser-gateway.pc"
    if (
        not args.force
        and target.exists()
        and pc_file.exists()
        and (incdir / header.name).exists()
        and stamp_file.exists()
        and stamp_file.read_text() == stamp
    ):
        print(f"build_abi: {target} is up to date")
        return 0

    ffi = cffi.FFI()
    ffi.embedding_api("")
    ffi.cdef(CDEF)
    ffi.set_source(MODULE, preamble)
    ffi.embedding_init_code(init_code)

    libdir.mkdir(parents=True, exist_ok=True)
    incdir.mkdir(parents=True, exist_ok=True)
    (libdir / "pkgconfig").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kelpie-abi-") as tmp:
        c_file = Path(tmp) / f"{MODULE}.c"
        ffi.emit_c_code(str(c_file))
        link_extra: list[str] = []
        if sys.platform != "darwin":
            vs = Path(tmp) / "exports.map"
            vs.write_text("{\n  global:\n" + "".join(f"    {n};\n" for n in EXPORTS) + "  local: *;\n};\n")
            link_extra = [f"-Wl,--version-script={vs}"]
        else:
            el = Path(tmp) / "exports.txt"
            el.write_text("".join(f"_{n}\n" for n in EXPORTS))
            link_extra = [f"-Wl,-exported_symbols_list,{el}"]
        tmp_target = Path(tmp) / target.name
        cmd = [cc, *cflags, str(c_file), "-o", str(tmp_target), *ldflags, *link_extra]
        subprocess.run(cmd, check=True)
        # Replace atomically-ish: a running process keeps its mapping of the old file.
        tmp_final = target.with_name(target.name + ".tmp")
        shutil.copy2(tmp_target, tmp_final)
        os.replace(tmp_final, target)
    shutil.copy2(header, incdir / header.name)
    pc_file.write_text(
        f"prefix={prefix}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n"
        "Name: kelpie-browser-gateway\n"
        "Description: Kelpie browser gateway C ABI (sans-I/O browser-control gateway, embedded CPython)\n"
        f"Version: {version}\n"
        "Cflags: -I${includedir}\n"
        "Libs: -L${libdir} -Wl,-rpath,${libdir} -lkelpie_browser_gateway\n"
        "Libs.private: -lpthread -ldl\n"
    )
    stamp_file.write_text(stamp)
    print(f"build_abi: built {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
