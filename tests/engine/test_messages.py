"""Client strings in refusal messages (issue 27): a message quotes what the client sent only when it has
the shape the message expects — a ref, a cursor, a tab id, a member, method or tool name, a protocol
revision — and otherwise describes it (``a 43-character string that is not a ref``). A bearer token sent
as a ref was quoted back to the client (and from there into its logs and the model's context).

Every entry point is tried with a token where a ref, a tab id, a cursor, a method, an extension or tool
name, a field or member name, a revision or an extension argument goes; the whole answer (envelope,
JSON-RPC response, audit) must not contain it. The shapes that are quoted still are (a typo stays
readable)."""

from __future__ import annotations

import json
import secrets
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway

from tests.depth import examples
from tests.engine.kit import FakeRenderer, make, req, response, run

EXTENSION = {"name": "press", "method": "press", "description": "presses a key", "mutates": True,
             "inputSchema": {"type": "object", "properties": {"tabId": {"type": "string"},
                                                              "key": {"type": "string", "pattern": "^[A-Z][a-z]+$"}},
                             "additionalProperties": False}}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _gateway() -> Gateway:
    gw = make(nativeMethods=["get-tabs", "browser-control-evaluate", "press", "navigate"], extensions=[EXTENSION],
              requireAuthorization=False)
    run(gw, req("tab.snapshot", tabId="A"), FakeRenderer())  # refs s1e1…, so ref checks get past "never issued"
    return gw


def _answers(gw: Gateway, token: str) -> list[Any]:
    """Every refusal a client can provoke with ``token`` in one of its strings."""
    canonical = [
        req("tab.click", tabId="A", ref=token[:64]),
        req("tab.click", tabId=token, ref="s1e1"),
        req("tab.snapshot", tabId=token, cursor="s1p2"),
        req("tab.snapshot", tabId="B", cursor="s1p2"),
        {"version": 1, "id": 1, "method": token, "params": {}},
        req("extension.call", name=token, arguments={}),
        req("extension.call", name="press", arguments={"tabId": "A", "key": token}),
        req("extension.call", name="press", arguments={"tabId": "A", token: 1}),
        {"version": 1, "id": 1, "method": "tabs.list", "params": {token: 1}},
        {"version": 1, "id": 1, "method": "tabs.list", "params": {}, token: 1},
    ]
    out: list[Any] = [gw.begin(r) for r in canonical]
    out.append(Gateway({"nativeMethods": ["get-tabs", "browser-control-evaluate"], "fixedReader": True,
                        "pinnedTab": "A"}).begin(req("tab.snapshot", tabId=token)))
    rpc = [
        {"jsonrpc": "2.0", "id": 1, "method": token},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", token: 1},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": token, "arguments": {}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "kelpie_browser_control", "arguments": {"method": "tabs.list", token: 1}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "kelpie_extension_tools", "arguments": {"names": [token]}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "press", "arguments": {"key": token}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
         "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": token}}},
        {"jsonrpc": "2.0", "id": 1, "method": token, "params": {"_meta": META}},
    ]
    out += [gw.begin_mcp(m) for m in rpc]
    out.append(gw.begin('{"version":1,"id":1,"method":"tabs.list","params":{},"' + token + '":1,"' + token + '":2}'))
    return out


def _error_texts(answers: list[Any]) -> str:
    """The error messages and data of the answers (a result may carry what the client asked about back as
    data, e.g. ``kelpie_extension_tools``' ``name``; messages may not)."""
    texts = []
    for step in answers:
        response = step.get("response") or {}
        error = response.get("error") or {}
        texts.append(json.dumps(error))
        inner = (response.get("result") or {}).get("structuredContent") or {}
        texts.append(json.dumps(inner.get("error") or {}))
        for tool in (response.get("result") or {}).get("structuredContent", {}).get("result", {}).get("tools", []):
            texts.append(json.dumps(tool.get("error") or {}))
    return "\n".join(texts)


def test_a_bearer_token_sent_in_any_client_string_is_never_quoted_back() -> None:
    """Issue 27: ``tab.click {ref: <token>}`` answered ``'<token>' is not a ref issued by this gateway``."""
    gw = _gateway()
    token = secrets.token_urlsafe(32)  # what the host's pairing issues: 43 characters
    answers = _answers(gw, token)
    assert all(step["step"] == "complete" for step in answers), answers
    texts = _error_texts(answers)
    assert token not in texts and token[:40] not in texts, texts
    assert "43-character string that is not" in texts


@given(token=st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Z")), min_size=45,
                     max_size=80))
@settings(max_examples=examples(100), deadline=None)
def test_no_long_client_string_is_quoted_back(token: str) -> None:
    """The same with any string longer than every shape a message quotes (40 characters): a sentence, a
    URL, a secret of any alphabet."""
    gw = _gateway()
    texts = _error_texts(_answers(gw, token))
    assert token[:41] not in texts and json.dumps(token)[1:42] not in texts


def test_what_has_the_expected_shape_is_still_quoted() -> None:
    """A typo stays readable: a ref of the gateway's shape, a short tab id, a field name, a method name."""
    gw = _gateway()
    assert "'s99e1'" in response(gw.begin(req("tab.click", tabId="A", ref="s99e1")))["error"]["message"]
    assert "'s1e1' belongs to tab 'A', not 'B'" in response(gw.begin(req("tab.click", tabId="B", ref="s1e1")))[
        "error"]["message"]
    assert "'tab.clik'" in response(gw.begin(req("tab.clik")))["error"]["message"]
    assert response(gw.begin(req("tabs.list", tabid="A")))["error"]["message"].startswith("/params/tabid: unknown field")
    tool = gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "kelpie_browsr_control", "arguments": {}}})["response"]
    assert "'kelpie_browsr_control'" in tool["error"]["message"], tool
    bad_key = response(gw.begin(req("extension.call", name="press", arguments={"tabId": "A", "key": "enter"})))
    assert "a 5-character string does not match" in bad_key["error"]["message"], bad_key
