"""The ``audit`` object of the ``complete`` step (issue 17; docs/engine.md, "The audit record"): what an
embedding host's audit trail needs — method or extension, tab, lane, outcome and code, ``mayHaveCompleted``,
``authorized``, duration — and the params only as the SHA-256 of their canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.engine.kit import FakeRenderer, admit, make, ok, req, response, run

SECRET = "correct horse battery staple"


def digest(params: dict[str, Any]) -> str:
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def snapshot_ref(gw: Any, renderer: FakeRenderer) -> str:
    snap = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]
    return str(snap["elements"][0]["ref"])


def test_a_typed_text_appears_only_as_the_digest_of_the_normalized_params(renderer: FakeRenderer) -> None:
    gw = make()
    ref = snapshot_ref(gw, renderer)
    done = run(gw, req("tab.type", tabId="A", ref=ref, text=SECRET), renderer)
    audit = done["audit"]
    assert SECRET not in json.dumps(audit)
    # Canonical = the normalized params (defaults filled in), keys sorted, compact UTF-8 JSON.
    expected = digest({"tabId": "A", "ref": ref, "text": SECRET, "timeoutMs": 10000})
    assert audit["paramsSha256"] == expected
    assert audit == {
        "method": "tab.type",
        "extension": None,
        "lane": "direct",
        "tabId": "A",
        "outcome": "success",
        "code": None,
        "mayHaveCompleted": False,
        "mutates": True,
        "authorized": True,
        "dispatches": 1,
        "elapsedMs": audit["elapsedMs"],
        "paramsSha256": expected,
    }
    # The same request with the default written out hashes the same; another text does not.
    again = run(gw, req("tab.snapshot", tabId="A"), renderer)
    assert again["audit"]["paramsSha256"] == digest({"tabId": "A", "maxChars": 12000, "maxElements": 200, "timeoutMs": 10000})


def test_unknown_outcome_and_refusals_before_and_at_authorize(renderer: FakeRenderer) -> None:
    gw = make()
    ref = snapshot_ref(gw, renderer)
    dispatch = admit(gw, gw.begin(req("tab.click", tabId="A", ref=ref)))
    busy = gw.begin(req("tabs.list"))
    assert busy["audit"]["code"] == "BUSY" and busy["audit"]["authorized"] is None
    assert busy["audit"]["paramsSha256"] == digest({}) and busy["audit"]["method"] == "tabs.list"
    cancelled = gw.cancel({"transaction": dispatch["transaction"], "reason": "cancelled"})
    audit = cancelled["audit"]
    assert (audit["outcome"], audit["code"], audit["mayHaveCompleted"]) == ("unknown", "CANCELLED", True)
    assert audit["authorized"] is True and audit["dispatches"] == 1 and audit["mutates"] is True
    ok(gw, dispatch, value={"clicked": True})  # the late reply retires the lane
    reconcile = gw.begin(req("tab.navigate", tabId="A", url="http://127.0.0.1/elsewhere"))
    assert reconcile["audit"]["code"] == "RECONCILE_REQUIRED" and reconcile["audit"]["authorized"] is None
    assert reconcile["audit"]["mayHaveCompleted"] is False
    refused = run(gw, req("tab.navigate", tabId="B", url="http://127.0.0.1/x"), renderer, authorize=False)
    assert refused["audit"]["code"] == "NOT_AUTHORIZED" and refused["audit"]["authorized"] is False
    assert refused["audit"]["dispatches"] == 0 and refused["audit"]["mutates"] is True
    invalid = gw.begin(req("tab.click", tabId="A"))  # no ref: refused by validation, params still hashed
    assert invalid["audit"]["code"] == "INVALID_PARAMS" and invalid["audit"]["paramsSha256"] == digest({"tabId": "A"})


def test_extension_name_and_mcp_protocol_messages() -> None:
    gw = make(
        nativeMethods=["get-tabs", "infer"],
        extensions=[{"name": "infer", "method": "infer", "description": "d", "mutates": False,
                     "coordinator": "dedicated", "inputSchema": {"type": "object"}}],
    )
    step = gw.begin(req("extension.call", name="infer", arguments={"q": SECRET}))
    done = ok(gw, admit(gw, step), answer=1)
    assert done["audit"]["extension"] == "infer" and done["audit"]["lane"] == "dedicated:infer"
    assert SECRET not in json.dumps(done["audit"])
    unknown = gw.begin(req("extension.call", name="nope", arguments={}))
    assert unknown["audit"]["extension"] == "nope" and unknown["audit"]["code"] == "EXTENSION_NOT_ADMITTED"
    # MCP protocol messages are not canonical transactions: no params digest.
    init = gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    assert init["audit"]["paramsSha256"] is None and init["audit"]["authorized"] is None
    listed = gw.begin_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert listed["audit"]["paramsSha256"] is None
    # A tools/call of a canonical method carries the digest of the canonical params it became.
    call = gw.begin_mcp({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "kelpie_browser_control", "arguments": {"method": "tabs.list", "params": {}}}})
    done = ok(gw, ok(gw, call), tabs=[])
    assert done["audit"]["method"] == "tabs.list" and done["audit"]["paramsSha256"] == digest({})


def test_early_refusals_name_what_the_request_named_and_nothing_else() -> None:
    """The audit of a refusal before any lane (worked out only when a refusal needs it): the canonical
    method and tab the request named, its params' digest (normalized once validated), or nulls."""
    gw = make()
    unknown = gw.begin({"version": 1, "id": 1, "method": "tabs.nope", "params": {"tabId": "A", "x": [1]}})
    assert unknown["audit"]["method"] is None and unknown["audit"]["tabId"] == "A"
    assert unknown["audit"]["paramsSha256"] == digest({"tabId": "A", "x": [1]})
    bad = gw.begin(req("tab.snapshot", tabId="B", maxChars=-1))
    assert bad["audit"]["method"] == "tab.snapshot" and bad["audit"]["tabId"] == "B"
    assert bad["audit"]["paramsSha256"] == digest({"tabId": "B", "maxChars": -1})
    pinned = make(pinnedTab="P").begin(req("tab.snapshot", tabId="Q"))
    assert pinned["audit"]["code"] == "TAB_PINNED" and pinned["audit"]["tabId"] == "Q"
    assert pinned["audit"]["paramsSha256"] == digest({"tabId": "Q", "maxChars": 12000, "maxElements": 200, "timeoutMs": 10000})
    empty = gw.begin_mcp({"jsonrpc": "2.0", "id": 7, "method": ""})
    assert empty["audit"]["method"] is None and empty["audit"]["tabId"] is None
    assert [unknown["audit"]["lane"], bad["audit"]["dispatches"], empty["audit"]["elapsedMs"]] == [None, 0, 0.0]


def test_audit_of_an_early_refusal_names_the_method_and_tab_the_request_named() -> None:
    """Regression (newcomer review, 513923d): the audit of a refusal before any lane logged no tab although the
    request named one. Guards: it names the canonical method and tab the request named, and invents none."""
    gw = make()
    out = gw.begin(req("tab.click", tabId="A", ref="s9e9"))
    assert out["audit"]["method"] == "tab.click" and out["audit"]["tabId"] == "A"
    bad = gw.begin(req("tabs.select"))
    assert bad["audit"]["method"] == "tabs.select" and bad["audit"]["code"] == "INVALID_PARAMS"
    assert gw.begin(b"nonsense")["audit"]["method"] is None  # nothing readable, nothing invented
