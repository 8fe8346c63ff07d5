"""Python half of libkelpie_browser_gateway: the cffi embedding init code (CONTRACT.md §10).

abi/build_abi.py embeds this file in the library; it runs once, inside the embedded interpreter, the first
time a C caller needs the runtime. Nothing about the build machine is recorded in it: the engine's bundle
directory is found by the C side relative to the library (``lib._kg_bundle_dir()``).

The shims are thin: bytes in, one engine call, bytes out (``Gateway.call_json``: the step's JSON, made
once). They parse nothing and decide nothing except the handle lookup. Once a gateway is created, the C
side makes its calls itself (``gw.call_json`` through the C API, abi/kelpie_abi.c "direct crossing");
``_kg_py_call`` answers only what that path leaves: a thread's first call, an unknown handle, a failed
initialisation. Each shim catches everything (BaseException included): no Python exception ever crosses
into C. Strings go back to C through ``lib._kg_dup`` (C
malloc), never ffi.new memory. Handles are integers looked up in ``_TABLE``: they are not object
addresses, are never reused in a process, and an unknown one is refused without use.

This module never raises at import either: if the engine cannot be imported, ``_INIT_ERROR`` says why
and every call reports it (create: an INTERNAL envelope through error_json_out).
"""

import functools
import itertools
import secrets
import sys
import threading

from _kelpie_gateway_abi import ffi, lib  # the embedded module itself (set up by cffi before this runs)

# <the library's directory>/kelpie-browser-gateway/python: the bundled engine and its dependencies. A C host's
# interpreter has it first on sys.path already; a Python host only falls back to it.
BUNDLE_PATH = ffi.string(lib._kg_bundle_dir()).decode("utf-8", "surrogateescape")

OK, PENDING, INVALID, ERROR = 0, 1, 2, 3  # KELPIE_GATEWAY_* in the header
_OPS = ("begin", "begin_mcp", "next", "advance", "cancel")  # KG_OP_* in abi/kelpie_abi.c
_INVALID_UTF8 = "the argument is not valid UTF-8"

_INIT_ERROR = None
try:
    try:
        import kelpie_gateway  # noqa: F401  (probe: is the engine importable here?)
    except ImportError:
        # Not installed in the running interpreter's path: use the engine bundled with this library.
        if BUNDLE_PATH and BUNDLE_PATH not in sys.path:
            sys.path.append(BUNDLE_PATH)
    from kelpie_gateway import Gateway, GatewayConfigError, GatewayPendingError
    from kelpie_gateway.jsonio import dumps
except BaseException as exc:
    _INIT_ERROR = (
        f"the Kelpie gateway runtime failed to initialise: cannot import the engine "
        f"({type(exc).__name__}: {exc}); sys.path={sys.path!r}"
    )

_TABLE = {}  # handle (int) -> Gateway
_TABLE_LOCK = threading.Lock()  # serialises create/destroy bookkeeping only, never a transaction
# Handles: a per-process random salt in bits 32..47 and a counter below, so a stale, forged or garbage
# pointer value is unknown (and refused) rather than aliasing a live gateway.
_SALT = (secrets.randbits(15) | 0x4000) << 32
_COUNTER = itertools.count(1)


def _out(data):
    """bytes -> malloc'd NUL-terminated char* owned by the C caller."""
    p = lib._kg_dup(data, len(data))
    if p == ffi.NULL:
        raise MemoryError("malloc failed")
    return p


def _describe(exc):
    return f"internal error in the gateway runtime: {type(exc).__name__}: {exc}".encode("utf-8", "replace")


@ffi.def_extern(error=0)
def _kg_py_create(config, size, error_out):
    try:
        if _INIT_ERROR is not None:
            error_out[0] = lib._kg_error_envelope(b"INTERNAL", _INIT_ERROR.encode("utf-8", "replace"))
            return 0
        try:
            gw = Gateway(ffi.unpack(config, size))
        except GatewayConfigError as exc:
            error_out[0] = _out(dumps(exc.envelope))
            return 0
        handle = _SALT | next(_COUNTER)  # itertools.count: atomic under the GIL
        # The C side answers next(NULL) on a free direct lane itself, and makes every other call on this
        # handle with the C API, gw.call_json(...), keeping its own reference to gw (abi/kelpie_abi.c,
        # "handle table"): id() is the object's address in CPython, and gw stays alive here while
        # _kg_handle_bind takes that reference (with the GIL: cffi releases it around every lib call).
        gw.watch_direct_lane(functools.partial(lib._kg_lane_busy, handle))
        lib._kg_handle_bind(handle, ffi.cast("void *", id(gw)))
        with _TABLE_LOCK:
            _TABLE[handle] = gw
        return handle
    except BaseException as exc:
        error_out[0] = lib._kg_error_envelope(b"INTERNAL", _describe(exc))
        return 0


@ffi.def_extern(error=ERROR)
def _kg_py_destroy(handle):
    try:
        if _INIT_ERROR is not None:
            return ERROR
        with _TABLE_LOCK:
            gw = _TABLE.get(handle)
            if gw is None:
                return INVALID
            try:
                gw.close()
            except GatewayPendingError:
                return PENDING
            lib._kg_handle_forget(handle)
            del _TABLE[handle]
        return OK
    except BaseException:
        return ERROR


@ffi.def_extern(error=ffi.NULL)
def _kg_py_call(handle, op, data, size, status_out):
    try:
        if _INIT_ERROR is not None:
            return lib._kg_error_step(op, b"INTERNAL", _INIT_ERROR.encode("utf-8", "replace"))
        gw = _TABLE.get(handle)
        if gw is None:
            status_out[0] = INVALID
            return ffi.NULL
        if data == ffi.NULL:
            arg = None
        elif op == 2:  # next(transaction): the identifier as text
            try:
                arg = ffi.unpack(data, size).decode("utf-8")
            except UnicodeDecodeError:
                return lib._kg_error_step(op, b"INVALID_REQUEST", _INVALID_UTF8.encode())
        else:
            arg = ffi.unpack(data, size)
        return _out(gw.call_json(_OPS[op], arg))
    except BaseException as exc:
        return lib._kg_error_step(op, b"INTERNAL", _describe(exc))


@ffi.def_extern(error=ERROR)
def _kg_py_invalidate(handle, tab_id, size):
    try:
        if _INIT_ERROR is not None:
            return ERROR
        gw = _TABLE.get(handle)
        if gw is None:
            return INVALID
        tab = None
        if tab_id != ffi.NULL:
            try:
                tab = ffi.unpack(tab_id, size).decode("utf-8")
            except UnicodeDecodeError:
                return INVALID
        gw.invalidate_refs(tab)
        return OK
    except BaseException:
        return ERROR
