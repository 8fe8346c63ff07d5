"""Property: whatever arrives, begin_mcp never raises and (after a fake host drives any authorize and
dispatch steps) yields a valid JSON-RPC response or a notification step (CONTRACT.md §5, §7)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import dumps, loads

from tests.depth import examples
from tests.mcp.helpers import FULL, NOAUTH

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
ids = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
    | st.just([1])
)
methods = st.sampled_from(
    ["initialize", "ping", "tools/list", "tools/call", "notifications/initialized", "resources/list", ""]
)
tools = st.sampled_from(
    [
        "kelpie_browser_control",
        "kelpie_extensions",
        "kelpie_extension_tools",
        "kelpie_extension",
        "page_summary",
        "dialog_observe",
        "form_fill",
        "secret_dump",
        "nope",
        "Bad-Name",
    ]
)
canonical = st.sampled_from(
    [
        "documentation",
        "capabilities",
        "tabs.list",
        "tabs.select",
        "tabs.open",
        "tabs.close",
        "tab.snapshot",
        "tab.click",
        "tab.type",
        "tab.navigate",
        "tab.screenshot",
        "extension.call",
        "tab.scroll",
    ]
)
params_values = st.fixed_dictionaries(
    {},
    optional={
        "tabId": st.sampled_from(["A", "B", "", 5]),
        "ref": st.sampled_from(["s1e1", "s2e1", "x"]),
        "text": st.text(max_size=5),
        "url": st.sampled_from(["https://example.com/", "about:blank", "ftp://x"]),
        "name": st.sampled_from(["page_summary", "form_fill", "secret_dump", "x"]),
        "arguments": st.fixed_dictionaries({}, optional={"tabId": st.sampled_from(["A", 1])}),
        "maxChars": st.integers(-1, 13000),
        "timeoutMs": st.integers(0, 40000),
    },
)


@st.composite
def arguments_for(draw: st.DrawFn, tool: str) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    if tool == "kelpie_browser_control":
        return {"method": draw(canonical), "params": draw(params_values)}
    if tool == "kelpie_extension":
        return {"name": draw(tools), "arguments": draw(params_values)}
    if tool == "kelpie_extension_tools":
        return {"names": draw(st.lists(tools, max_size=22))}
    return draw(params_values)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))}
    if draw(st.booleans()) or draw(st.booleans()):
        message["id"] = draw(ids)
    method = draw(methods)
    message["method"] = method
    if method == "tools/call":
        tool = draw(tools)
        message["params"] = {"name": tool, "arguments": draw(arguments_for(tool))}
    elif method == "initialize":
        message["params"] = {"protocolVersion": draw(st.sampled_from(["2025-06-18", "2025-11-25", "x", 1]))}
    elif draw(st.booleans()):
        message["params"] = draw(json_values)
    if draw(st.integers(0, 20)) == 0:
        message[draw(st.text(max_size=5))] = draw(json_values)
    return message


def _fake_result(step: dict[str, Any], choice: int) -> Any:
    method = step["method"]
    if choice == 0:
        return {"success": False, "error": {"code": "TAB_NOT_FOUND", "message": "gone"}}
    if choice == 1:
        return "garbage"
    if method == "get-tabs":
        return {
            "success": True,
            "tabs": [{"tabId": "A", "generation": 1, "url": "u", "title": "t", "active": True}],
        }
    if method in ("switch-tab", "new-tab"):
        return {"success": True, "tabId": "A", "generation": 2}
    if method == "navigate":
        return {"success": True, "tabId": "A", "generation": 3, "url": "about:blank"}
    if method == "screenshot":
        return {"success": True, "mimeType": "image/png", "data": "iVBORw0KGgo=", "width": 1, "height": 1}
    if method == "browser-control-evaluate":
        return {
            "success": True,
            "value": {
                "url": "u",
                "title": "t",
                "text": "x",
                "truncated": False,
                "elements": [{"handle": "00000000000000aa-1", "tag": "a", "role": "link", "label": "l"}],
                "clicked": True,
                "typed": 1,
            },
        }
    return {"success": True, "done": True}


def _drive(gw: Gateway, step: dict[str, Any], choices: list[int]) -> dict[str, Any]:
    for i in range(10):
        if step["step"] == "complete":
            return step
        choice = choices[i % len(choices)]
        assert step["step"] in ("authorize", "dispatch"), step
        if step["step"] == "authorize":
            result: Any = {"success": choice != 0}
        elif choice == 3:
            step = gw.cancel({"transaction": step["transaction"], "reason": "timeout"})
            pending = gw.next(None)
            late = pending.get("awaitingRetirement")
            if late:
                assert (
                    gw.advance({"transaction": late["transaction"], "retire": "renderer-closed"})["step"]
                    == "retired"
                )
            continue
        else:
            result = _fake_result(step, choice)
        step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})
    raise AssertionError(f"transaction did not complete: {step}")


def _assert_valid(step: dict[str, Any], sent: Any) -> None:
    assert step["step"] == "complete", step
    loads(dumps(step))  # the whole step is well-formed JSON
    response = step["response"]
    if response is None:
        assert step["httpStatus"] == 202
        return
    assert "httpStatus" not in step
    assert response["jsonrpc"] == "2.0"
    rid = response["id"]
    assert rid is None or (isinstance(rid, str | int | float) and not isinstance(rid, bool))
    assert ("result" in response) != ("error" in response)
    assert set(response) == {"jsonrpc", "id", "result" if "result" in response else "error"}
    if "error" in response:
        assert type(response["error"]["code"]) is int and isinstance(response["error"]["message"], str)
    else:
        assert isinstance(response["result"], dict)
        if isinstance(sent, dict) and sent.get("method") == "tools/call":
            content = response["result"]["content"]
            assert loads(content[0]["text"]) == response["result"]["structuredContent"]
    if isinstance(sent, dict) and sent.get("jsonrpc") == "2.0" and "result" in response:
        assert rid == sent["id"]


GATEWAYS = {"auth": Gateway(FULL), "noauth": Gateway(NOAUTH)}
SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(value=json_values, which=st.sampled_from(list(GATEWAYS)))
def test_random_json_values(value: Any, which: str) -> None:
    gw = GATEWAYS[which]
    _assert_valid(_drive(gw, gw.begin_mcp(dumps(value)), [2]), value)
    assert gw.next() == {"step": "idle"}


@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    gw = GATEWAYS["noauth"]
    step = gw.begin_mcp(data)
    _assert_valid(_drive(gw, step, [2]), None)


@SETTINGS
@given(
    message=messages(),
    which=st.sampled_from(list(GATEWAYS)),
    choices=st.lists(st.integers(0, 3), min_size=1, max_size=4),
)
def test_random_json_rpc_messages(message: Any, which: str, choices: list[int]) -> None:
    gw = GATEWAYS[which]
    for form in (message, dumps(message)):
        step = _drive(gw, gw.begin_mcp(form), choices)
        _assert_valid(step, message)
    assert gw.next() == {"step": "idle"}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_STATUS = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32022: 400, -32601: 404}


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages(), choices=st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_the_stateless_answer_is_the_handshake_answer_plus_its_era(message: Any, choices: list[int]) -> None:
    """CONTRACT.md §7 v1.1: for any message of a method both eras have, adding the per-request envelope
    changes only the era's own members — resultType and the serverInfo stamp on a result, the HTTP status
    of an error — never the tool result, structuredContent, content blocks or the error itself. Both runs
    use fresh gateways, so transaction and snapshot ids line up."""
    params = message.get("params", {})
    if message.get("method") in ("initialize", "ping") or not isinstance(params, dict):
        return
    modern = {**message, "params": {**params, "_meta": MODERN_META}}
    legacy_gw, modern_gw = Gateway(NOAUTH), Gateway(NOAUTH)
    old = _drive(legacy_gw, legacy_gw.begin_mcp(message), choices)
    new = _drive(modern_gw, modern_gw.begin_mcp(modern), choices)
    if old["response"] is None:
        assert new["response"] is None and new["httpStatus"] == old["httpStatus"] == 202
        return
    assert "httpStatus" not in old
    if "error" in old["response"]:
        code = old["response"]["error"]["code"]
        assert new["response"] == old["response"]
        assert new.get("httpStatus") == MODERN_STATUS.get(code)
        return
    result = dict(new["response"]["result"])
    assert result.pop("resultType") == "complete"
    assert result.pop("_meta")["io.modelcontextprotocol/serverInfo"]["name"] == "kelpie-browser-gateway"
    if message.get("method") == "tools/list":
        assert (result.pop("ttlMs"), result.pop("cacheScope")) == (300_000, "private")
    assert {**new["response"], "result": result} == old["response"]
    assert "httpStatus" not in new
