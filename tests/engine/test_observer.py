"""One-shot observers (config ``observer: true``, CONTRACT.md §2, §9 v1.2; docs/contract-notes.md
"Observers"): a read-only session whose ``tab.snapshot`` runs the reader without a registry, issues no
refs, offers no cursor, and is discarded ``RENDERER_CHANGED`` unless the host confirms the tab's document
stayed the same during the read. The DOM side (no registry, no listener) is tested in real Chromium:
tests/browser/test_observer_reader.py and tests/host/test_observer.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kelpie_gateway.mcp import tools as mcp_tools

from tests.engine.kit import ALL_NATIVE, admit, make, ok, req, response, run

READ_EXT = {
    "name": "page_facts",
    "method": "page-facts",
    "description": "a read-only extension taking a ref",
    "inputSchema": {
        "type": "object",
        "properties": {"tabId": {"type": "string"}, "ref": {"type": "string"}},
        "required": ["tabId"],
        "additionalProperties": False,
    },
    "mutates": False,
    "refArguments": ["ref"],
}
ACT_EXT = {**READ_EXT, "name": "poke", "method": "poke", "mutates": True, "refArguments": []}


def observer(**config: Any) -> Any:
    return make(
        observer=True,
        nativeMethods=[*ALL_NATIVE, "page-facts", "poke"],
        extensions=[READ_EXT, ACT_EXT],
        **config,
    )


def value(elements: int = 2, text: str = "Hello") -> dict[str, Any]:
    return {
        "url": "http://127.0.0.1/p",
        "title": "P",
        "text": text,
        "truncated": False,
        "elements": [
            {"tag": "a", "role": "link", "label": f"Link {i}", "url": f"http://127.0.0.1/{i}"}
            for i in range(1, elements + 1)
        ],
    }


def read(gw: Any, result: dict[str, Any], **params: Any) -> dict[str, Any]:
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A", **params)))
    assert step["step"] == "dispatch" and step["method"] == "browser-control-evaluate", step
    done = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})
    return response(done)


def test_observer_implies_allow_actions_false_and_says_so() -> None:
    for extra in ({}, {"allowActions": True}, {"allowActions": False}):
        caps = response(run(observer(**extra), req("capabilities")))["result"]
        assert caps["observer"] is True and caps["allowActions"] is False, caps
        assert set(caps["methods"]) == {"documentation", "capabilities", "tabs.list", "tab.snapshot",
                                        "tab.screenshot", "extension.call"}
        assert caps["extensions"] == ["page_facts"]  # the mutating extension is not admitted
    assert response(run(make(), req("capabilities")))["result"]["observer"] is False


def test_observer_refuses_every_mutation_before_anything_runs() -> None:
    gw = observer()
    for method, params in (("tab.click", {"tabId": "A", "ref": "s1e1"}), ("tab.navigate", {"tabId": "A", "url": "http://x/"}),
                           ("tabs.open", {}), ("tabs.close", {"tabId": "A"})):
        envelope = response(gw.begin(req(method, **params)))
        assert envelope["error"]["code"] == "ACTIONS_DISABLED" and envelope["mayHaveCompleted"] is False
    poke = response(gw.begin(req("extension.call", name="poke", arguments={"tabId": "A"})))
    assert poke["error"]["code"] == "EXTENSION_NOT_ADMITTED"


def test_the_dispatch_is_the_readers_one_shot_mode_without_key_or_registry() -> None:
    gw = observer()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A", maxChars=50, maxElements=7)))
    script = step["params"]["script"]
    assert script.endswith('({"observe":true,"maxChars":50,"maxElements":7})'), script[-120:]
    assert step["params"]["world"] == "KelpieBrowserControl" and step["params"]["tabId"] == "A"
    # The per-gateway key names the registry; an observer's script carries none.
    ordinary = make()
    plain = admit(ordinary, ordinary.begin(req("tab.snapshot", tabId="A")))
    assert '"key":' in plain["params"]["script"] and '"key":' not in script


def test_an_observation_has_no_refs_no_snapshot_id_and_no_cursor() -> None:
    envelope = read(observer(), {"success": True, "generation": 4, "value": value()})
    result = envelope["result"]
    assert result == {
        "tabId": "A",
        "generation": 4,
        "url": "http://127.0.0.1/p",
        "title": "P",
        "text": "Hello",
        "truncated": False,
        "elements": [
            {"tag": "a", "role": "link", "label": "Link 1", "url": "http://127.0.0.1/1"},
            {"tag": "a", "role": "link", "label": "Link 2", "url": "http://127.0.0.1/2"},
        ],
        "observer": True,
    }


def test_an_observation_keeps_the_snapshot_bounds() -> None:
    """The same shaping rules as a snapshot: text cut to maxChars (never a split pair), at most maxElements
    elements, labels cut at 500 UTF-16 units, truncated:true whenever something was cut — and still no
    ``next``: an observer's read is one page."""
    long = value(elements=5, text="x" * 9 + "\U0001f600" + "y" * 20)
    long["elements"][0]["label"] = "L" * 600
    result = read(observer(), {"success": True, "generation": 1, "value": long}, maxChars=10, maxElements=3)["result"]
    assert result["text"] == "x" * 9 and result["truncated"] is True
    assert len(result["elements"]) == 3 and len(result["elements"][0]["label"]) == 500
    assert "next" not in result and all("ref" not in e for e in result["elements"])


def test_a_read_the_host_did_not_confirm_unchanged_is_discarded() -> None:
    """The renderer identity check: the host reports the tab's document generation with the result only
    when it was the same before and after the evaluation (the reference host does, host/browser/world.py)."""
    for result in ({"success": True, "value": value()}, {"success": True, "value": value(), "generation": "4"},
                   {"success": True, "value": value(), "generation": None}):
        envelope = read(observer(), result)
        assert envelope["success"] is False and envelope["error"]["code"] == "RENDERER_CHANGED", envelope
        assert envelope["error"]["retryable"] is True and envelope["mayHaveCompleted"] is False


def test_a_read_during_which_the_tab_was_invalidated_is_discarded() -> None:
    """The host reports a navigation (or a renderer change) with invalidate_refs while the read is out."""
    gw = observer()
    step = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    gw.invalidate_refs("A")
    envelope = response(ok(gw, step, generation=2, value=value()))
    assert envelope["error"]["code"] == "RENDERER_CHANGED" and envelope["error"]["retryable"] is True
    again = read(gw, {"success": True, "generation": 3, "value": value()})
    assert again["success"] is True  # the next read of the new document is kept
    other = admit(gw, gw.begin(req("tab.snapshot", tabId="A")))
    gw.invalidate_refs("B")  # another tab's change does not matter
    assert response(ok(gw, other, generation=3, value=value()))["success"] is True


@pytest.mark.parametrize(
    "bad",
    [
        {"elements": [{"handle": "0123456789abcdef-1", "tag": "a", "role": "link", "label": "x"}]},
        {"elements": ["a"]},
        {"rest": {"snapshot": "0123456789abcdef-1", "textAt": 0, "elementAt": 1}},
    ],
)
def test_a_read_that_kept_nodes_or_pages_is_malformed(bad: dict[str, Any]) -> None:
    envelope = read(observer(), {"success": True, "generation": 1, "value": {**value(), **bad}})
    assert envelope["error"]["code"] == "RENDERER_FAILED" and envelope["mayHaveCompleted"] is False


def test_the_pages_own_refusal_passes_through() -> None:
    failed = {"error": {"code": "RENDERER_FAILED", "message": "reader failed"}, "mayHaveCompleted": False}
    envelope = read(observer(), {"success": True, "generation": 1, "value": failed})
    assert envelope["error"] == {"code": "RENDERER_FAILED", "message": "reader failed", "retryable": False}


OBSERVER_REFUSED: dict[str, Any] = {
    "scope": "s1e1",
    "cursor": "s1p1",
    "since": "s1",  # v1.2: an observer issues no snapshot id to compare with
    "include": "controls",  # v1.2: an observation is the whole tab in one page
    "find": {"role": "button"},
}


@pytest.mark.parametrize("param", sorted(OBSERVER_REFUSED))
def test_anchors_and_v12_reads_are_refused_before_anything_runs(param: str) -> None:
    gw = observer()
    envelope = response(gw.begin(req("tab.snapshot", tabId="A", **{param: OBSERVER_REFUSED[param]})))
    assert envelope["error"]["code"] == "INVALID_PARAMS" and envelope["mayHaveCompleted"] is False
    assert envelope["error"]["message"].startswith(f"/params/{param}: this gateway is an observer")


def test_a_ref_made_up_from_an_observation_authorizes_nothing() -> None:
    """Nothing from an observation names a node: a ref built from its output (the element's position, the
    snapshot numbering of an ordinary gateway) is unknown to the observer's ref store, so even a read-only
    ref-bearing extension refuses it before dispatch — and an action gateway never issued it either."""
    gw = observer()
    elements = read(gw, {"success": True, "generation": 1, "value": value()})["result"]["elements"]
    for i in range(1, len(elements) + 1):
        for ref in (f"s1e{i}", f"s2e{i}", f"e{i}"):
            envelope = response(gw.begin(req("extension.call", name="page_facts", arguments={"tabId": "A", "ref": ref})))
            assert envelope["error"]["code"] == "UNKNOWN_REF" and envelope["mayHaveCompleted"] is False
            action = make()
            click = response(action.begin(req("tab.click", tabId="A", ref=ref)))
            assert click["error"]["code"] == "UNKNOWN_REF" and click["mayHaveCompleted"] is False
    without_ref = admit(gw, gw.begin(req("extension.call", name="page_facts", arguments={"tabId": "A"})))
    assert without_ref["step"] == "dispatch" and "kelpieCaptured" not in without_ref["params"]


def test_mcp_clients_are_told_they_talk_to_an_observer() -> None:
    text = mcp_tools.instructions(observer())
    assert "read-only observer" in text and "without refs" in text and "refs (like s3e7)" not in text
    assert "refs (like s3e7)" in mcp_tools.instructions(make())


def test_observer_must_be_a_boolean() -> None:
    from kelpie_gateway import GatewayConfigError

    for bad in ("true", 1, None):
        with pytest.raises(GatewayConfigError) as info:
            make(observer=bad)
        assert info.value.envelope["error"]["message"].startswith("/observer:"), info.value.envelope
    assert json.loads(json.dumps(response(run(observer(), req("capabilities")))))["result"]["observer"] is True
