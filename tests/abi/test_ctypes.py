"""The built library driven through ctypes from this (same) Python (CONTRACT.md §10, §11).

Loaded into a process that already runs the same Python, the library must reuse this interpreter, so
the ABI and the Python API can be compared step for step in one process.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import ROOT, Abi

OK, PENDING, INVALID, ERROR = 0, 1, 2, 3
CONFIG = {"nativeMethods": ["get-tabs", "switch-tab"]}
TABS = {
    "success": True,
    "tabs": [{"tabId": "t1", "generation": 1, "url": "about:blank", "title": "", "active": True}],
}


class Lib:
    """Typed ctypes view of the ten exported functions; every returned string is copied then freed."""

    def __init__(self, path: str) -> None:
        self.dll = dll = ctypes.CDLL(path)
        dll.kelpie_browser_gateway_create.restype = ctypes.c_void_p
        dll.kelpie_browser_gateway_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        dll.kelpie_browser_gateway_destroy.restype = ctypes.c_int32
        dll.kelpie_browser_gateway_destroy.argtypes = [ctypes.c_void_p]
        for name in ("begin", "begin_mcp", "next", "advance", "cancel"):
            fn = getattr(dll, f"kelpie_browser_gateway_{name}")
            fn.restype = ctypes.c_void_p  # not c_char_p: we must free the pointer ourselves
            fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        dll.kelpie_browser_gateway_invalidate_refs.restype = ctypes.c_int32
        dll.kelpie_browser_gateway_invalidate_refs.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        dll.kelpie_browser_gateway_version.restype = ctypes.c_char_p
        dll.kelpie_mcp_free_string.argtypes = [ctypes.c_void_p]
        dll.kelpie_mcp_free_string.restype = None

    def take(self, ptr: int | None) -> Any:
        assert ptr, "the ABI returned NULL"
        try:
            return json.loads(ctypes.string_at(ptr))
        finally:
            self.dll.kelpie_mcp_free_string(ptr)

    def create(self, config: Any) -> tuple[int | None, Any]:
        err = ctypes.c_void_p()
        raw = config if isinstance(config, bytes) else json.dumps(config).encode()
        handle = self.dll.kelpie_browser_gateway_create(raw, ctypes.byref(err))
        return handle, (self.take(err.value) if err.value else None)

    def call(self, name: str, handle: int | None, arg: Any) -> Any:
        raw = arg if arg is None or isinstance(arg, bytes) else json.dumps(arg).encode()
        return self.take(getattr(self.dll, f"kelpie_browser_gateway_{name}")(handle, raw))

    def destroy(self, handle: int | None) -> int:
        return int(self.dll.kelpie_browser_gateway_destroy(handle))


@pytest.fixture(scope="module")
def lib(abi: Abi) -> Lib:
    return Lib(str(abi.lib))


@pytest.fixture
def gw(lib: Lib) -> Iterator[int]:
    handle, err = lib.create(CONFIG)
    assert handle and err is None
    yield handle
    lib.destroy(handle)


def _drive_python(g: Any, steps: list[Any], first: Any) -> None:
    step = first
    steps.append(step)
    while step["step"] in ("authorize", "dispatch"):
        result = {"success": True} if step["step"] == "authorize" else TABS
        step = g({"transaction": step["transaction"], "seq": step["seq"], "result": result})
        steps.append(step)


def _strip_timing(step: Any) -> Any:
    if isinstance(step, dict) and isinstance(step.get("audit"), dict):
        step = dict(step, audit={k: v for k, v in step["audit"].items() if k != "elapsedMs"})
    return step


def test_abi_steps_equal_python_api_steps(lib: Lib, gw: int) -> None:
    """CONTRACT §11: steps are plain dicts equal to the ABI's JSON — same inputs, same steps."""
    from kelpie_gateway import Gateway

    py = Gateway(CONFIG)
    requests = [
        {"version": 1, "id": "a", "method": "tabs.list", "params": {}},
        {"version": 1, "id": 2, "method": "tabs.select", "params": {"tabId": "t1"}},
        {"version": 1, "method": "tabs.select", "params": {}},
        {"version": 1, "method": "capabilities", "params": {}},
    ]
    for request in requests:
        via_py: list[Any] = []
        via_abi: list[Any] = []
        _drive_python(py.advance, via_py, py.begin(request))
        _drive_python(lambda r: lib.call("advance", gw, r), via_abi, lib.call("begin", gw, request))
        assert [_strip_timing(s) for s in via_abi] == [_strip_timing(s) for s in via_py]
    mcp = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert _strip_timing(lib.call("begin_mcp", gw, mcp)) == _strip_timing(py.begin_mcp(mcp))


def test_library_reuses_the_running_interpreter(lib: Lib, gw: int) -> None:
    """No second interpreter: the embedded module and the engine are this process's modules."""
    import kelpie_gateway

    assert "_kelpie_gateway_abi" in sys.modules
    assert lib.dll.kelpie_browser_gateway_version().decode() == kelpie_gateway.__version__
    # An engine patch made here is seen by calls through the ABI: same module objects.
    original = kelpie_gateway.Gateway.call_json  # what the shims call (one JSON text out per step)

    def boom(self: Any, operation: str, argument: Any) -> Any:
        raise RuntimeError("injected fault")

    kelpie_gateway.Gateway.call_json = boom  # type: ignore[method-assign]
    try:
        step = lib.call("begin", gw, {"version": 1, "method": "tabs.list", "params": {}})
    finally:
        kelpie_gateway.Gateway.call_json = original  # type: ignore[method-assign]
    # ...and a Python exception never crosses the boundary: it becomes an INTERNAL envelope.
    assert step["step"] == "complete" and step["response"]["error"]["code"] == "INTERNAL"
    assert "injected fault" in step["response"]["error"]["message"]
    assert lib.call("next", gw, None)["step"] == "idle"  # the gateway stays usable


def test_handles_are_table_ids_not_object_addresses(lib: Lib, gw: int) -> None:
    import gc

    from kelpie_gateway import Gateway

    addresses = {id(o) for o in gc.get_objects() if isinstance(o, Gateway)}
    assert gw not in addresses
    for forged in (gw + 1, gw - 1, gw ^ (1 << 40), 0xDEADBEEF):
        assert lib.call("next", forged, None)["error"]["code"] == "INVALID_REQUEST"
        assert lib.destroy(forged) == INVALID
    assert lib.call("next", gw, None)["step"] == "idle"


def test_destroy_pending_then_retire_then_double_destroy(lib: Lib) -> None:
    handle, _ = lib.create(CONFIG)
    step = lib.call("begin", handle, {"version": 1, "method": "tabs.select", "params": {"tabId": "t1"}})
    step = lib.call(
        "advance",
        handle,
        {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}},
    )
    assert step["step"] == "dispatch" and step["mutates"] is True
    done = lib.call("cancel", handle, {"transaction": step["transaction"], "reason": "timeout"})
    assert done["response"]["mayHaveCompleted"] is True
    assert lib.destroy(handle) == PENDING
    late = lib.call(
        "advance", handle, {"transaction": step["transaction"], "seq": step["seq"], "result": TABS}
    )
    assert late["step"] == "retired" and late["transaction"] == step["transaction"]
    assert lib.destroy(handle) == OK
    assert lib.destroy(handle) == INVALID
    assert lib.dll.kelpie_browser_gateway_invalidate_refs(handle, None) == INVALID


def test_create_error_envelope_equals_python_config_error(lib: Lib) -> None:
    from kelpie_gateway import Gateway, GatewayConfigError

    bad = {"nativeMethods": ["get-tabs"], "targeting": "sideways"}
    handle, err = lib.create(bad)
    assert handle is None
    with pytest.raises(GatewayConfigError) as info:
        Gateway(bad)
    assert err == info.value.envelope


def test_invalidate_refs_from_python_threads_during_a_transaction(lib: Lib, gw: int) -> None:
    step = lib.call("begin", gw, {"version": 1, "method": "tabs.list", "params": {}})
    results: list[int] = []

    def hammer() -> None:
        for i in range(200):
            results.append(lib.dll.kelpie_browser_gateway_invalidate_refs(gw, b"t1" if i % 2 else None))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [OK] * 800
    assert lib.call("next", gw, None) == step  # nothing about the pending transaction changed


def test_engine_import_failure_is_reported_through_create(abi: Abi) -> None:
    """The embedded init code never raises: a missing engine is an INTERNAL envelope from create, and
    every later call reports the same rather than crashing."""
    script = textwrap.dedent(
        f"""
        import ctypes, json, sys
        sys.modules["kelpie_gateway"] = None  # makes `import kelpie_gateway` raise ImportError
        dll = ctypes.CDLL({str(abi.lib)!r})
        dll.kelpie_browser_gateway_create.restype = ctypes.c_void_p
        dll.kelpie_browser_gateway_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        dll.kelpie_browser_gateway_begin.restype = ctypes.c_char_p
        dll.kelpie_browser_gateway_begin.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        err = ctypes.c_char_p()
        h = dll.kelpie_browser_gateway_create(b"{{}}", ctypes.byref(err))
        print(json.dumps({{"handle": h, "error": json.loads(err.value)}}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["handle"] is None
    assert out["error"]["success"] is False and out["error"]["error"]["code"] == "INTERNAL"
    assert "kelpie_gateway" in out["error"]["error"]["message"]


def test_request_cap_is_enforced_before_python(lib: Lib, gw: int) -> None:
    over = b'{"version":1,"method":"tabs.list","params":{}}'.ljust(4 * 1024 * 1024 + 1, b" ")
    step = lib.call("begin", gw, over)
    assert step["response"]["error"]["code"] == "REQUEST_TOO_LARGE"
    assert "4194304" in step["response"]["error"]["message"]
    at_cap = over[:-1]
    step = lib.call("begin", gw, at_cap)
    assert step["step"] == "authorize"
    lib.call("cancel", gw, {"transaction": step["transaction"], "reason": "cancelled"})


def _raw_next(lib: Lib, handle: int | None, transaction: bytes | None = None) -> bytes:
    ptr = lib.dll.kelpie_browser_gateway_next(handle, transaction)
    try:
        return ctypes.string_at(ptr)
    finally:
        lib.dll.kelpie_mcp_free_string(ptr)


def test_idle_next_is_answered_by_c_with_the_engines_exact_answer(lib: Lib) -> None:
    """Issue 16: next(NULL) on a free direct lane is answered without entering Python, byte for byte
    what the engine answers; every other state (a pending step, a cancelled dispatch awaiting
    retirement, a destroyed handle) still comes from the engine, in lockstep with a Python gateway."""
    from kelpie_gateway import Gateway, dumps

    handle, _ = lib.create(CONFIG)
    assert handle
    py = Gateway(CONFIG)

    def both_next() -> tuple[bytes, bytes]:
        return _raw_next(lib, handle), dumps(py.next())

    idle = both_next()
    assert idle[0] == idle[1] == b'{"step":"idle"}'
    # The engine is not consulted for it: with the engine's entry broken, an idle next still answers...
    import kelpie_gateway

    original = kelpie_gateway.Gateway.call_json

    def boom(self: Any, operation: str, argument: Any) -> Any:
        raise RuntimeError("engine entered")

    kelpie_gateway.Gateway.call_json = boom  # type: ignore[method-assign]
    try:
        assert _raw_next(lib, handle) == b'{"step":"idle"}'
        # ...while anything that needs the engine reports the fault as a value.
        assert "engine entered" in json.loads(_raw_next(lib, handle, b"t1"))["error"]["message"]
    finally:
        kelpie_gateway.Gateway.call_json = original  # type: ignore[method-assign]

    select = {"version": 1, "method": "tabs.select", "params": {"tabId": "t1"}}
    a, p = lib.call("begin", handle, select), py.begin(select)
    assert a == p and a["step"] == "authorize"
    assert both_next()[0] == both_next()[1] == dumps(a)  # busy: the pending step, from the engine
    ok = {"result": {"success": True}}
    a = lib.call("advance", handle, {"transaction": a["transaction"], "seq": a["seq"], **ok})
    p = py.advance({"transaction": p["transaction"], "seq": p["seq"], **ok})
    assert a == p and a["step"] == "dispatch"
    assert both_next()[0] == both_next()[1] == dumps(a)
    cancel = {"transaction": a["transaction"], "reason": "timeout"}
    lib.call("cancel", handle, cancel)
    py.cancel(cancel)
    waiting = both_next()  # the lane stays taken while the late callback is out: not the plain idle
    assert waiting[0] == waiting[1] and json.loads(waiting[0])["awaitingRetirement"]["transaction"] == a["transaction"]
    late = {"transaction": a["transaction"], "seq": a["seq"], "result": {"success": True, "tabId": "t1", "generation": 1}}
    assert lib.call("advance", handle, late)["step"] == py.advance(late)["step"] == "retired"
    assert both_next() == idle
    # A transaction answered inside the engine (capabilities) holds the lane only until it completes.
    tools = {"version": 1, "method": "capabilities", "params": {}}
    a = lib.call("begin", handle, tools)
    assert a["step"] == "authorize" and a["lane"] == "direct"
    assert json.loads(_raw_next(lib, handle)) == a
    a = lib.call("advance", handle, {"transaction": a["transaction"], "seq": a["seq"], **ok})
    assert a["step"] == "complete"
    assert _raw_next(lib, handle) == b'{"step":"idle"}'
    assert lib.destroy(handle) == OK
    assert json.loads(_raw_next(lib, handle))["error"]["code"] == "INVALID_REQUEST"  # forgotten by C too


def test_python_api_steps_are_independent_of_the_engine(lib: Lib, gw: int) -> None:
    """A pending step handed out by the Python API is the caller's: editing it changes neither what next
    returns nor what the ABI sends."""
    from kelpie_gateway import Gateway, dumps

    py = Gateway(CONFIG)
    step = py.begin({"version": 1, "method": "tabs.select", "params": {"tabId": "t1"}})
    step["request"]["params"]["tabId"] = "edited"
    step["seq"] = 99
    again = py.next()
    assert again["request"]["params"]["tabId"] == "t1" and again["seq"] == 1
    again["request"]["method"] = "edited"
    assert py.next()["request"]["method"] == "tabs.select"
    assert py.call_json("next", None) == dumps(py.next())


def test_c_side_holds_the_gateway_exactly_until_destroy(lib: Lib) -> None:
    """The C side keeps its own reference to each gateway for the direct crossing (docs/c-abi.md, "Costs"):
    the gateway lives while its handle does, whatever Python drops, and is freed once destroyed."""
    import gc
    import weakref

    from kelpie_gateway import Gateway

    made: list[weakref.ref[Gateway]] = []
    original = Gateway.__init__

    def recording_init(self: Gateway, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    Gateway.__init__ = recording_init  # type: ignore[method-assign]
    try:
        handle, err = lib.create(CONFIG)
    finally:
        Gateway.__init__ = original  # type: ignore[method-assign]
    assert handle and err is None and len(made) == 1
    gc.collect()
    assert made[0]() is not None
    request = {"version": 1, "method": "tabs.list", "params": {}}
    step = lib.call("begin", handle, request)
    step = lib.call("advance", handle, {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}})
    step = lib.call("advance", handle, {"transaction": step["transaction"], "seq": step["seq"], "result": TABS})
    assert step["step"] == "complete" and step["response"]["result"]["tabs"][0]["tabId"] == "t1"
    assert lib.destroy(handle) == OK
    gc.collect()
    assert made[0]() is None, "the gateway outlived its handle"
    assert lib.call("begin", handle, request)["response"]["error"]["code"] == "INVALID_REQUEST"
