"""Build libkelpie_browser_gateway (cffi embedding) as a relocatable install tree (CONTRACT.md §10).

    python abi/build_abi.py --prefix P [--force]

Produces, under P (see docs/c-abi.md, "Install layout"):

* ``lib/libkelpie_browser_gateway.so.X.Y.Z`` with SONAME ``libkelpie_browser_gateway.so.0`` (the major
  version) and the links ``.so.0`` and ``.so`` (``.dylib`` on macOS, untested);
* ``lib/kelpie-browser-gateway/python/``: the engine (``kelpie_gateway`` without the reference host) and
  its Python dependencies (cffi's ``_cffi_backend``, orjson, jsonschema, …) copied from this interpreter's
  installed distributions and byte-compiled; the library finds this directory relative to itself;
* ``include/kelpie/browser_gateway_c_api.h`` and ``lib/pkgconfig/kelpie-browser-gateway.pc`` (its prefix
  is ``${pcfiledir}/../..``, so it stays right when P moves).

Nothing in P names the checkout, the virtualenv or P itself; moving P, or copying it to another machine
with the same Python runtime (the libpython the library links, found through its rpath or the loader's
usual search), keeps it working. The only recorded path is that rpath to this interpreter's ``LIBDIR``.
Skips all work when a stamp of the inputs (kept under ``build/.stamps/``, never in P) is unchanged.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import hashlib
import importlib.metadata
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
# Run from a checkout (abi/ beside engine/) or from an installed package (kelpie_gateway/abi/, which
# `kelpie-gateway build-abi` runs): the engine, the stamps and the default prefix follow.
CHECKOUT = (HERE.parent / "engine" / "kelpie_gateway" / "__init__.py").is_file()
ROOT = HERE.parent
ENGINE = ROOT / "engine" / "kelpie_gateway" if CHECKOUT else HERE.parent
DIST = "kelpie-browser-gateway"
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

BUNDLE_SUBDIR = "kelpie-browser-gateway/python"
STAMPS: Path | None = ROOT / "build" / ".stamps" if CHECKOUT else None  # installed: always rebuild

CDEF = """
const char *_kg_bundle_dir(void);
extern "Python" uintptr_t _kg_py_create(const char *config, size_t size, char **error_out);
extern "Python" int32_t _kg_py_destroy(uintptr_t handle);
extern "Python" char *_kg_py_call(uintptr_t handle, int32_t op, const char *data, size_t size,
                                  int32_t *status_out);
extern "Python" int32_t _kg_py_invalidate(uintptr_t handle, const char *tab_id, size_t size);
char *_kg_dup(const char *p, size_t n);
char *_kg_error_step(int32_t op, const char *code, const char *message);
char *_kg_error_envelope(const char *code, const char *message);
void _kg_lane_busy(uintptr_t handle, int32_t busy);
void _kg_handle_bind(uintptr_t handle, void *gateway);
void _kg_handle_forget(uintptr_t handle);
"""


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def project_version() -> str:
    """``kelpie_gateway.version.__version__`` (the one place the version is written), read as text."""
    text = (ENGINE / "version.py").read_text()
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)
    if match is None:
        raise SystemExit(f"build_abi: no __version__ = \"X.Y.Z\" line in {ENGINE / 'version.py'}")
    return match.group(1)


def _requirement_closure(roots: list[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``roots`` need, transitively (markers evaluated, extras ignored)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # a virtualenv always has pip, which vendors packaging
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]

    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        req = Requirement(todo.pop())
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        dist = importlib.metadata.distribution(req.name)
        seen[key] = dist
        todo.extend(dist.requires or [])
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def _engine_requirements() -> list[str]:
    """The core dependencies (what embedding needs; extras are the host's): pyproject.toml's in a checkout,
    else the installed distribution's (requirements of extras carry an ``extra ==`` marker and drop out)."""
    if CHECKOUT:
        import tomllib

        data = tomllib.loads((ROOT / "pyproject.toml").read_text())
        return list(data["project"]["dependencies"])
    return list(importlib.metadata.requires(DIST) or [])


def _engine_files() -> list[Path]:
    return sorted(
        f
        for f in ENGINE.rglob("*")
        if f.is_file()
        and "__pycache__" not in f.parts
        and f.relative_to(ENGINE).parts[0] not in ("host", "abi")  # the engine only
    )


def build_bundle(target: Path, dists: list[importlib.metadata.Distribution]) -> None:
    """Copy the engine and ``dists`` (their files inside site-packages) to ``target`` and byte-compile."""
    tmp = target.with_name(target.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in _engine_files():
        dest = tmp / "kelpie_gateway" / f.relative_to(ENGINE)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest)
    for dist in dists:
        base = Path(str(dist.locate_file(""))).resolve()
        for rel in dist.files or []:
            src = Path(str(dist.locate_file(rel))).resolve()
            if "__pycache__" in rel.parts or not src.is_file() or base not in src.parents:
                continue  # scripts in bin/, caches: not part of an importable package
            dest = tmp / src.relative_to(base)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
    # Byte-compiled here (same interpreter); the code objects name paths inside the bundle, not this tree.
    compileall.compile_dir(str(tmp), quiet=2, stripdir=str(tmp), prependdir=BUNDLE_SUBDIR)
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _link(path: Path, to: str) -> None:
    """``path`` -> ``to`` (a relative symlink), replacing whatever is at ``path``."""
    tmp = path.with_name(path.name + ".tmp-link")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(to, tmp)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if CHECKOUT:
        ap.add_argument("--prefix", default=str(ROOT / "build" / "abi"))
    else:
        ap.add_argument("--prefix", required=True)
    ap.add_argument("--force", action="store_true")
    ap.add_argument(
        "--sanitize",
        choices=("address", "thread"),
        help="a checking build for tools/abi_stress (docs/c-abi.md, 'Stress'): -fsanitize=address (the embedded "
        "interpreter then allocates with plain malloc, so a freed Python object is seen) or =thread; link "
        "the host with the same flag. Never for an installed tree.",
    )
    args = ap.parse_args()

    prefix = Path(args.prefix).resolve()
    libdir, incdir = prefix / "lib", prefix / "include" / "kelpie"
    version = project_version()
    major = version.split(".")[0]
    darwin = sys.platform == "darwin"
    linkname = f"lib{LIBNAME}.dylib" if darwin else f"lib{LIBNAME}.so"
    soname = f"lib{LIBNAME}.{major}.dylib" if darwin else f"{linkname}.{major}"
    real = f"lib{LIBNAME}.{version}.dylib" if darwin else f"{linkname}.{version}"
    target = libdir / real
    py_libdir = sysconfig.get_config_var("LIBDIR")
    ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
    py_lib = "python" + sysconfig.get_config_var("LDVERSION")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        print(f"build_abi: {sys.executable} was not built with --enable-shared ({ldlib})", file=sys.stderr)
        return 1

    defines = "\n".join(
        f"#define {name} {c_string(value)}"
        for name, value in (("KELPIE_BUILD_VERSION", version), ("KELPIE_BUNDLE_SUBDIR", BUNDLE_SUBDIR))
    )
    preamble = defines + "\n" + (HERE / "kelpie_abi.c").read_text()
    init_code = (HERE / "shims.py").read_text()
    header = HERE / "include" / "kelpie" / "browser_gateway_c_api.h"
    dists = _requirement_closure(_engine_requirements())

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
    sanitize = [f"-fsanitize={args.sanitize}", "-fno-omit-frame-pointer"] if args.sanitize else []
    if args.sanitize == "address":
        sanitize.append("-DKELPIE_ABI_MALLOC_ALLOCATOR=1")
    cflags += sanitize
    # The one recorded path: the rpath to the Python runtime's libpython (DT_RPATH, so LD_LIBRARY_PATH
    # cannot swap in another libpython3.11 such as Debian's).
    ldflags = ["-shared", *sanitize[:1], f"-L{py_libdir}", f"-l{py_lib}", "-lpthread", "-ldl"]
    if darwin:
        ldflags += [f"-Wl,-rpath,{py_libdir}", f"-Wl,-install_name,@rpath/{soname}"]
    else:
        ldflags += [f"-Wl,-rpath,{py_libdir}", "-Wl,--disable-new-dtags", f"-Wl,-soname,{soname}"]

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
            sys.version,
            *(f"{d.metadata['Name']}=={d.version}" for d in dists),
            *(f"{f}:{hashlib.sha256(f.read_bytes()).hexdigest()}" for f in _engine_files()),
        ]
    )
    stamp = hashlib.sha256(stamp_src.encode()).hexdigest()
    stamp_file = STAMPS / f"abi-{hashlib.sha256(str(prefix).encode()).hexdigest()[:16]}" if STAMPS else None
    pc_file = libdir / "pkgconfig" / "kelpie-browser-gateway.pc"
    bundle = libdir / BUNDLE_SUBDIR
    if (
        not args.force
        and target.exists()
        and (libdir / linkname).exists()
        and pc_file.exists()
        and (bundle / "kelpie_gateway" / "__init__.py").exists()
        and (incdir / header.name).exists()
        and stamp_file is not None
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
        if not darwin:
            vs = Path(tmp) / "exports.map"
            vs.write_text("{\n  global:\n" + "".join(f"    {n};\n" for n in EXPORTS) + "  local: *;\n};\n")
            link_extra = [f"-Wl,--version-script={vs}"]
        else:
            el = Path(tmp) / "exports.txt"
            el.write_text("".join(f"_{n}\n" for n in EXPORTS))
            link_extra = [f"-Wl,-exported_symbols_list,{el}"]
        tmp_target = Path(tmp) / target.name
        # Debug info names no build directory either (relocatable, reproducible).
        maps = [f"-ffile-prefix-map={tmp}=kelpie-abi", f"-ffile-prefix-map={ROOT}=.", f"-ffile-prefix-map={HERE}=abi"]
        cmd = [cc, *cflags, *maps, str(c_file), "-o", str(tmp_target), *ldflags, *link_extra]
        subprocess.run(cmd, check=True, cwd=tmp)
        # Replace atomically-ish: a running process keeps its mapping of the old file.
        tmp_final = target.with_name(target.name + ".tmp")
        shutil.copy2(tmp_target, tmp_final)
        os.replace(tmp_final, target)
    _link(libdir / soname, real)
    _link(libdir / linkname, soname)
    build_bundle(bundle, dists)
    shutil.copy2(header, incdir / header.name)
    pc_file.write_text(
        "prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n\n"
        "Name: kelpie-browser-gateway\n"
        "Description: Kelpie browser gateway C ABI (sans-I/O browser-control gateway, embedded CPython)\n"
        f"Version: {version}\n"
        "Cflags: -I${includedir}\n"
        "Libs: -L${libdir} -Wl,-rpath,${libdir} -lkelpie_browser_gateway\n"
        "Libs.private: -lpthread -ldl\n"
    )
    with contextlib.suppress(FileNotFoundError):
        (prefix / ".build-stamp").unlink()  # left by older builds
    if stamp_file is not None:
        stamp_file.parent.mkdir(parents=True, exist_ok=True)
        stamp_file.write_text(stamp)
    print(f"build_abi: built {target} (SONAME {soname}) and its bundle ({len(dists)} distributions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
