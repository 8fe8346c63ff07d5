"""Ref-bearing extensions (``refArguments``): the gateway checks an extension's element refs exactly like
``tab.click``'s before anything is dispatched, and hands only the host the captured node behind each ref
(docs/contract-notes.md, "Ref-bearing extensions"; CONTRACT.md §2, §6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kelpie_gateway.errors import GatewayConfigError

from tests.engine.kit import ALL_NATIVE, FakeRenderer, admit, make, ok, req, response, run

FOCUS = {
    "name": "focus_key",
    "method": "press-key",
    "description": "press a key in a tab, focusing a captured element first",
    "inputSchema": {
        "type": "object",
        "properties": {"tabId": {"type": "string"}, "key": {"type": "string"}, "ref": {"type": "string"}},
        "required": ["tabId", "key"],
        "additionalProperties": False,
    },
    "mutates": True,
    "refArguments": ["ref"],
}


def gateway() -> Any:
    return make(nativeMethods=[*ALL_NATIVE, "press-key"], extensions=[FOCUS])


def snapshot(gw: Any, tab: str, renderer: FakeRenderer) -> dict[str, Any]:
    out = response(run(gw, req("tab.snapshot", tabId=tab), renderer))
    assert out["success"], out
    return dict(out["result"])


def call(gw: Any, **arguments: Any) -> dict[str, Any]:
    return gw.begin(req("extension.call", name="focus_key", arguments=arguments))


def test_the_host_gets_the_captured_node_and_the_client_never_sees_it() -> None:
    gw, renderer = gateway(), FakeRenderer()
    ref = snapshot(gw, "A", renderer)["elements"][1]["ref"]
    step = admit(gw, call(gw, tabId="A", key="Enter", ref=ref))
    assert step["step"] == "dispatch" and step["method"] == "press-key"
    captured = step["params"].pop("kelpieCaptured")
    assert step["params"] == {"tabId": "A", "key": "Enter", "ref": ref}
    assert captured["world"] == "KelpieBrowserControl"
    assert captured["handles"] == {"ref": "0123456789abcdef-a2"}  # the node behind exactly that ref
    assert len(captured["key"]) == 32
    done = ok(gw, step, pressed="Enter")
    envelope = response(done)
    assert envelope["result"] == {"pressed": "Enter"}
    assert "0123456789abcdef" not in json.dumps(done) and captured["key"] not in json.dumps(done)


def test_without_a_ref_the_arguments_go_to_the_host_unchanged() -> None:
    gw = gateway()
    step = admit(gw, call(gw, tabId="A", key="Tab"))
    assert step["params"] == {"tabId": "A", "key": "Tab"}


@pytest.mark.parametrize(
    ("make_ref", "code"),
    [
        (lambda refs: "s99e1", "UNKNOWN_REF"),
        (lambda refs: "not-a-ref", "UNKNOWN_REF"),
        (lambda refs: refs["B"], "CROSS_TAB_REF"),
        (lambda refs: refs["old"], "STALE_SNAPSHOT"),
    ],
)
def test_bad_refs_are_refused_before_anything_is_dispatched(make_ref: Any, code: str) -> None:
    gw, renderer = gateway(), FakeRenderer()
    refs = {"old": snapshot(gw, "A", renderer)["elements"][0]["ref"]}
    refs["A"] = snapshot(gw, "A", renderer)["elements"][0]["ref"]
    refs["B"] = snapshot(gw, "B", renderer)["elements"][0]["ref"]
    renderer.calls.clear()
    envelope = response(call(gw, tabId="A", key="Enter", ref=make_ref(refs)))
    assert envelope["error"]["code"] == code, envelope
    assert envelope["mayHaveCompleted"] is False
    assert renderer.calls == []


def test_a_mutating_extension_invalidates_its_tab_refs_so_the_next_use_is_refused() -> None:
    gw, renderer = gateway(), FakeRenderer()
    ref = snapshot(gw, "A", renderer)["elements"][0]["ref"]
    assert response(run(gw, req("extension.call", name="focus_key", arguments={"tabId": "A", "key": "a", "ref": ref})))[
        "success"
    ]
    again = response(call(gw, tabId="A", key="a", ref=ref))
    assert again["error"]["code"] == "REFS_INVALIDATED" and again["mayHaveCompleted"] is False
    # a navigation reported by the browser side invalidates too
    ref = snapshot(gw, "A", renderer)["elements"][0]["ref"]
    gw.invalidate_refs("A")
    assert response(call(gw, tabId="A", key="a", ref=ref))["error"]["code"] == "REFS_INVALIDATED"


def test_an_unknown_outcome_requires_a_fresh_snapshot_before_the_next_key() -> None:
    gw, renderer = gateway(), FakeRenderer()
    ref = snapshot(gw, "A", renderer)["elements"][0]["ref"]
    step = admit(gw, call(gw, tabId="A", key="Enter", ref=ref))
    lost = response(gw.cancel({"transaction": step["transaction"], "reason": "timeout"}))
    assert lost["mayHaveCompleted"] is True
    gw.advance({"transaction": step["transaction"], "retire": "renderer-closed"})
    assert response(call(gw, tabId="A", key="Enter"))["error"]["code"] == "RECONCILE_REQUIRED"
    fresh = snapshot(gw, "A", renderer)["elements"][0]["ref"]  # observing the tab clears the mark
    assert admit(gw, call(gw, tabId="A", key="Enter", ref=fresh))["step"] == "dispatch"


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"refArguments": ["missing"]}, "/extensions/0/refArguments/0"),
        ({"refArguments": ["tabId"]}, "/extensions/0/refArguments/0"),
        ({"refArguments": ["key", "key"]}, "/extensions/0/refArguments"),
        ({"refArguments": ["1bad"]}, "/extensions/0/refArguments/0"),
        (
            {"inputSchema": {**FOCUS["inputSchema"], "properties": {"ref": {"type": "string"}, "kelpieCaptured": {}}}},
            "/extensions/0/inputSchema/properties/kelpieCaptured",
        ),
    ],
)
def test_ref_arguments_must_name_declared_string_arguments(change: dict[str, Any], pointer: str) -> None:
    with pytest.raises(GatewayConfigError) as err:
        make(nativeMethods=["press-key"], extensions=[{**FOCUS, **change}])
    assert err.value.envelope["error"]["message"].startswith(pointer + ":"), err.value.envelope
