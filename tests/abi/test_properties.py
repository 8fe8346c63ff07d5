"""Property-based checks of the C ABI (CONTRACT.md §10, §11): Hypothesis drives the same random sequence of
calls — well-formed and malformed requests, JSON-RPC messages, results, cancels, retirements, invalidations,
random bytes — through the shared library (ctypes, this process) and through the Python API.

For every call: the library returns a JSON object, never NULL and never a crash; it equals the Python API's
answer step for step (timing aside); and afterwards both gateways still answer a fresh request. Configs
without the fixed reader keep dispatch params free of the per-gateway random key, so equality is exact.
Examples: 150 in CI; ``tools/dev deep-properties`` runs 10,000 (tests/depth.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway

from tests.depth import examples

from .conftest import Abi
from .test_ctypes import Lib, _strip_timing

CONFIG = {"nativeMethods": ["get-tabs", "switch-tab", "new-tab", "close-tab", "navigate", "screenshot"]}

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
methods = st.sampled_from(
    ["tabs.list", "tabs.select", "tabs.open", "tabs.close", "tab.navigate", "tab.screenshot", "tab.click",
     "capabilities", "documentation", "nope"]
)
params = st.fixed_dictionaries(
    {},
    optional={
        "tabId": st.sampled_from(["t1", "t2", ""]) | st.integers(0, 3),
        "url": st.sampled_from(["https://a.test/", "about:blank", "ftp://x", ""]),
        "timeoutMs": st.sampled_from([1, 10000, 30001, 0, 1.5]),
        "ref": st.text(max_size=6),
    },
)
requests = st.builds(
    lambda m, p, i: {"version": 1, "id": i, "method": m, "params": p}, methods, params,
    st.none() | st.integers(-5, 5) | st.text(max_size=4),
)
native_results = st.one_of(
    st.just({"success": True}),
    st.builds(lambda g: {"success": True, "tabId": "t1", "generation": g, "url": "https://a.test/"},
              st.integers(-1, 3)),
    st.just({"success": True, "tabs": [{"tabId": "t1", "generation": 1, "url": "about:blank", "title": "",
                                        "active": True}]}),
    st.builds(lambda c: {"success": False, "error": {"code": c, "message": "x"}},
              st.sampled_from(["RENDERER_FAILED", "TIMEOUT", "NOT_AUTHORIZED", "WHATEVER"])),
    json_values,
)
# One operation: (kind, payload). "answer" payloads are results for whatever step is pending.
operations = st.one_of(
    st.tuples(st.just("begin"), requests | json_values),
    st.tuples(st.just("begin_mcp"), st.sampled_from([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "kelpie_browser_control", "arguments": {"method": "tabs.list", "params": {}}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        [{"jsonrpc": "2.0", "id": 3, "method": "ping"}],
    ]) | json_values),
    st.tuples(st.just("answer"), native_results),
    st.tuples(st.just("cancel"), st.sampled_from(["timeout", "cancelled", "renderer-closed", "bogus"])),
    st.tuples(st.just("retire"), st.just("renderer-closed")),
    st.tuples(st.just("advance"), json_values),
    st.tuples(st.just("next"), st.none() | st.text(max_size=4)),
    st.tuples(st.just("invalidate"), st.none() | st.sampled_from(["t1", "t2"])),
    st.tuples(st.just("raw"), st.sampled_from(["begin", "begin_mcp", "advance", "cancel"])
              .flatmap(lambda f: st.tuples(st.just(f), st.binary(max_size=40)))),
)


@pytest.fixture(scope="module")
def lib(abi: Abi) -> Lib:
    return Lib(str(abi.lib))


@pytest.fixture(scope="module")
def pair(lib: Lib) -> Iterator[tuple[Lib, list[Any]]]:
    handles: list[Any] = []
    yield lib, handles
    for handle in handles:  # each example retires what it left pending before destroying; this is a backstop
        lib.destroy(handle)


def _pending_transaction(step: Any) -> tuple[str, int] | None:
    if isinstance(step, dict) and step.get("step") in ("authorize", "dispatch"):
        return step["transaction"], step["seq"]
    return None


def _text(value: Any) -> bytes:
    """The one JSON text both sides receive (NaN and infinities stay in: both must refuse them alike)."""
    return json.dumps(value).encode()


def _same(via_abi: Any, via_py: Any, what: str) -> None:
    assert isinstance(via_abi, dict), f"{what}: the ABI returned {via_abi!r}"
    assert _strip_timing(via_abi) == _strip_timing(via_py), what


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operations, min_size=1, max_size=12))
def test_random_call_sequences_through_the_abi_equal_the_python_api(
    pair: tuple[Lib, list[Any]], ops: list[tuple[str, Any]]
) -> None:
    lib, handles = pair
    handle, err = lib.create(CONFIG)
    assert handle and err is None
    handles.append(handle)
    py = Gateway(CONFIG)
    last: Any = None  # the last step that may be pending
    retiring: str | None = None
    for kind, payload in ops:
        if kind in ("begin", "begin_mcp"):
            a, p = lib.call(kind, handle, _text(payload)), getattr(py, kind)(_text(payload))
        elif kind == "answer":
            pending = _pending_transaction(last)
            if pending is None:
                continue
            msg = _text({"transaction": pending[0], "seq": pending[1], "result": payload})
            a, p = lib.call("advance", handle, msg), py.advance(msg)
        elif kind in ("cancel", "retire"):
            txn = (last or {}).get("transaction") if isinstance(last, dict) else None
            txn = retiring if kind == "retire" and retiring else txn
            key = "reason" if kind == "cancel" else "retire"
            msg = _text({"transaction": txn, key: payload})
            function = "cancel" if kind == "cancel" else "advance"
            a, p = lib.call(function, handle, msg), getattr(py, function)(msg)
        elif kind == "advance":
            a, p = lib.call("advance", handle, _text(payload)), py.advance(_text(payload))
        elif kind == "next":
            a = lib.call("next", handle, None if payload is None else payload.encode())
            p = py.next(payload)
        elif kind == "invalidate":
            code = lib.dll.kelpie_browser_gateway_invalidate_refs(handle, None if payload is None else payload.encode())
            py.invalidate_refs(payload)
            assert code == 0
            continue
        else:
            function, data = payload
            data = data.replace(b"\0", b"")  # a C string ends at its first NUL
            a, p = lib.call(function, handle, data), getattr(py, function)(data)
        _same(a, p, f"{kind} {payload!r}")
        if isinstance(a, dict) and a.get("step") in ("authorize", "dispatch", "complete"):
            last = a
            if a["step"] == "complete" and kind == "cancel" and a.get("transaction"):
                retiring = a["transaction"]
    # Both still serve a fresh request identically, then the example retires what is pending and destroys.
    probe = {"version": 1, "id": "probe", "method": "capabilities", "params": {}}
    _same(lib.call("begin", handle, probe), py.begin(probe), "probe")
    for gateway_next, gateway_advance in (
        (lambda: lib.call("next", handle, None), lambda m: lib.call("advance", handle, m)),
        (lambda: py.next(None), py.advance),
    ):
        step = gateway_next()
        if step.get("awaitingRetirement") or step.get("step") != "idle":
            txn = step.get("transaction")
            if txn:
                gateway_advance({"transaction": txn, "retire": "renderer-closed"})
    if lib.destroy(handle) == 0:
        handles.remove(handle)
