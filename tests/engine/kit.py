"""Shared helpers for engine tests: a scripted fake renderer and a driver loop (no browser needed:
the engine is sans-I/O; DOM behaviour is tested in real Chromium under tests/browser)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from kelpie_gateway import Gateway
from kelpie_gateway.schema import NATIVE_ENDPOINTS

ALL_NATIVE = list(NATIVE_ENDPOINTS)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
"""Any JSON value (64-bit integers, no NaN): for fuzzing inputs and renderer results."""


def make(*, clock: Callable[[], float] | None = None, **config: Any) -> Gateway:
    base: dict[str, Any] = {"nativeMethods": list(ALL_NATIVE), "fixedReader": True}
    base.update(config)
    return Gateway(base, clock=clock)


def req(method: str, rid: Any = 1, **params: Any) -> dict[str, Any]:
    return {"version": 1, "id": rid, "method": method, "params": params}


def ok(gw: Gateway, step: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Answer ``step`` with a success result carrying ``fields``."""
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True, **fields}})


def admit(gw: Gateway, step: dict[str, Any]) -> dict[str, Any]:
    assert step["step"] == "authorize", step
    return ok(gw, step)


class FakeRenderer:
    """A tiny renderer model: tabs with generations, snapshots of ``buttons`` elements, click counters."""

    def __init__(self, tabs: tuple[str, ...] = ("A", "B"), buttons: int = 3) -> None:
        self.tabs = {t: {"generation": 1, "url": f"http://127.0.0.1/{t}", "title": t} for t in tabs}
        self.active = tabs[0]
        self.buttons = buttons
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def snapshot_value(self, tab: str) -> dict[str, Any]:
        return {
            "url": self.tabs[tab]["url"], "title": self.tabs[tab]["title"], "text": "Hello", "truncated": False,
            "elements": [
                {"handle": f"0123456789abcdef-{tab.lower()}{i}", "tag": "button", "role": "button", "label": f"Button {i}"}
                for i in range(1, self.buttons + 1)
            ],
        }

    def __call__(self, kind: str, step: dict[str, Any]) -> dict[str, Any]:
        """``kind`` is the canonical method being served; returns the native result."""
        method, params = step["method"], step["params"]
        self.calls.append((method, params))
        if method == "get-tabs":
            return {"success": True, "tabs": [
                {"tabId": t, "generation": v["generation"], "url": v["url"], "title": v["title"],
                 "active": t == self.active} for t, v in self.tabs.items()]}
        if method == "switch-tab":
            self.active = params["tabId"]
            return {"success": True, "tabId": params["tabId"], "generation": self.tabs[params["tabId"]]["generation"]}
        if method == "new-tab":
            tab = f"T{len(self.tabs) + 1}"
            self.tabs[tab] = {"generation": 1, "url": params.get("url", "about:blank"), "title": ""}
            return {"success": True, "tabId": tab, "generation": 1}
        if method == "close-tab":
            self.tabs.pop(params["tabId"], None)
            return {"success": True}
        if method == "navigate":
            tab = self.tabs[params["tabId"]]
            tab["generation"] += 1
            tab["url"] = params["url"]
            return {"success": True, "tabId": params["tabId"], "generation": tab["generation"], "url": params["url"]}
        if method == "screenshot":
            return {"success": True, "mimeType": "image/png", "data": "iVBORw0KGgo=", "width": 800, "height": 600}
        if method == "browser-control-evaluate":
            tab = params["tabId"]
            if kind == "tab.snapshot":
                return {"success": True, "value": self.snapshot_value(tab), "generation": self.tabs[tab]["generation"]}
            if kind == "tab.click":
                return {"success": True, "value": {"clicked": True}}
            if kind == "tab.type":
                return {"success": True, "value": {"typed": 3}}
        return {"success": True}


def run(gw: Gateway, request: Any, renderer: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        *, authorize: bool = True) -> dict[str, Any]:
    """Drive one transaction to its complete step (admitting every authorize step)."""
    kind = request["method"] if isinstance(request, dict) else ""
    step = gw.begin(request)
    render = renderer or FakeRenderer()
    for _ in range(10):
        if step["step"] == "complete":
            return step
        if step["step"] == "authorize":
            step = ok(gw, step) if authorize else gw.advance(
                {"transaction": step["transaction"], "seq": step["seq"],
                 "result": {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": "user said no"}}})
        elif step["step"] == "dispatch":
            step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": render(kind, step)})
        else:
            raise AssertionError(step)
    raise AssertionError("transaction did not complete")


def response(step: dict[str, Any]) -> dict[str, Any]:
    assert step["step"] == "complete", step
    resp: dict[str, Any] = step["response"]
    return resp

