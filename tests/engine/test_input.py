"""Reading host input (engine/kelpie_gateway/inputs.py; CONTRACT.md §3, §5, §8, §11): bad input of every
kind gets an envelope or a rejected step, never an exception, and leaves the gateway usable (errors are
values); a Python host's dicts are read as their JSON text would be (caps, lone surrogates, ids), and
nothing the host edits afterwards changes the gateway; and each entry point's fast reader answers what its
general reader answers, type for type (docs/engine.md, "Performance")."""

from __future__ import annotations

import enum
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway, GatewayConfigError, inputs, jsonio
from kelpie_gateway.errors import Refusal
from kelpie_gateway.schema import ParamError, validate_request

from tests.depth import examples
from tests.engine.kit import admit, json_values, make, ok, req, response


def _usable(gw: Gateway) -> None:
    step = gw.begin(req("tabs.list", rid="probe"))
    assert step["step"] == "authorize", step
    assert gw.cancel({"transaction": step["transaction"], "reason": "cancelled"})["step"] == "complete"



BAD_REQUESTS: list[Any] = [
    b"", b"\xff\xfe", b"nul", b"[", "{\"version\":1,\"method\":\"tabs.list\",\"id\":\"\\ud800\"}",
    b"[]", b"42", b"null", "\"string\"", {"version": 1}, {"method": "tabs.list"},
    {"version": True, "method": "tabs.list"}, {"version": 1.0, "method": "tabs.list"},
    {"version": 1, "method": 7}, {"version": 1, "method": "tabs.list", "params": []},
    {"version": 1, "method": "tabs.list", "params": {"x": 1}}, {"version": 1, "method": "tabs.list", "extra": 1},
    {"version": 1, "method": "tabs.list", "id": {"nested": 1}}, {"version": 1, "method": "tabs.list", "id": True},
    req("tab.snapshot", tabId="A", timeoutMs=10.0), req("tab.snapshot", tabId="A", timeoutMs=10.5),
    req("tab.snapshot", tabId="A", timeoutMs="10"), req("tab.snapshot", tabId="A", timeoutMs=-1),
    req("tab.snapshot", tabId="A", timeoutMs=30001), req("tab.snapshot", tabId="A", maxElements=201),
    req("tab.type", tabId="A", ref="s1e1", text=""), req("tab.type", tabId="A", ref="s1e1", text="x" * 200_001),
    req("tab.navigate", tabId="A", url="javascript:alert(1)"), req("tab.navigate", tabId="A", url="file:///etc"),
    req("tab.click", tabId="A", ref=""), req("tab.click", tabId="A", ref="x" * 65), req("tab.click", tabId="", ref="a"),
    req("tab.click", tabId="A", ref="\ud800"), b"[" * 5000 + b"]" * 5000,
    json.dumps({"version": 1, "method": "tabs.list", "params": {"a": [[[[[[[]]]]]]]}}).encode(),
    "{\"version\":1,\"method\":\"tabs.list\"}\x00", b'{"version":1,"method":"tabs.list","params":{}} trailing',
    {"version": 1, "method": "tabs.list", "id": 2**70},
]



@pytest.mark.parametrize("bad", BAD_REQUESTS, ids=[f"bad{i}" for i in range(len(BAD_REQUESTS))])
def test_bad_requests_get_envelopes(bad: Any) -> None:
    gw = make()
    step = gw.begin(bad)
    assert step["step"] == "complete"
    env = step["response"]
    assert env["success"] is False and env["mayHaveCompleted"] is False
    assert env["error"]["code"] in {"INVALID_JSON", "INVALID_REQUEST", "INVALID_PARAMS", "UNSUPPORTED_METHOD",
                                    "REQUEST_TOO_LARGE", "UNKNOWN_REF"}, env
    _usable(gw)



@given(json_values)
@settings(max_examples=examples(300), deadline=None)
def test_random_json_never_raises_anywhere(value: Any) -> None:
    gw = make(targeting="selected")
    for call in (gw.begin, gw.advance, gw.cancel):
        out = call(value)
        assert out["step"] in {"complete", "rejected", "authorize"}
        if out["step"] == "authorize":
            gw.cancel({"transaction": out["transaction"], "reason": "cancelled"})
    gw.next(value if isinstance(value, str) else None)
    _usable(gw)



@given(st.binary(max_size=200))
@settings(max_examples=examples(300), deadline=None)
def test_random_bytes_never_raise(data: bytes) -> None:
    gw = make()
    for call in (gw.begin, gw.advance, gw.cancel):
        assert call(data)["step"] in {"complete", "rejected", "authorize"}
    assert gw.next() in ({"step": "idle"},) or gw.next()["step"] == "authorize"



@pytest.mark.parametrize("bad", [None, 1, "x", [], {"transaction": 1, "seq": 1, "result": {}},
                                 {"transaction": "t1"}, {"transaction": "t1", "seq": "1", "result": {}},
                                 {"transaction": "t1", "seq": 1, "result": {}, "more": 1},
                                 {"transaction": "t1", "retire": "yes"}])
def test_malformed_advance_is_rejected_and_changes_nothing(bad: Any) -> None:
    gw = make()
    step = gw.begin(req("tabs.list"))
    out = gw.advance(bad)
    assert out["step"] == "rejected" and out["error"]["code"] in {"INVALID_REQUEST", "STALE_STEP"}
    assert gw.next() == step



def test_malformed_authorization_result_is_rejected_and_step_stays() -> None:
    gw = make()
    step = gw.begin(req("tabs.list"))
    out = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {"ok": True}})
    assert out["step"] == "rejected" and out["error"]["code"] == "INVALID_REQUEST"
    assert gw.next() == step



def test_lone_surrogate_escapes_in_renderer_results_are_replaced_not_refused() -> None:
    gw = make()
    step = ok(gw, gw.begin(req("tab.snapshot", tabId="A")))
    head = f'{{"transaction":"{step["transaction"]}","seq":{step["seq"]},'
    text = head + (
        '"result":{"success":true,"value":{"url":"http://x/","title":"\\ud800",'
        '"text":"a\\udc00b","truncated":false,"elements":[]}}}'
    )
    out = response(gw.advance(text))
    assert out["success"] and out["result"]["title"] == "\ufffd" and out["result"]["text"] == "a\ufffdb"
    # a client's request with the same escape is refused, not repaired
    assert response(gw.begin('{"version":1,"method":"tabs.list","id":"\\ud800"}'))["error"]["code"] == "INVALID_JSON"



def test_invalidate_refs_ignores_non_strings() -> None:
    gw = make()
    gw.invalidate_refs(123)  # type: ignore[arg-type]
    _usable(gw)



def test_gateway_accepts_json_text_and_bytes() -> None:
    gw = Gateway('{"nativeMethods": ["get-tabs"]}')
    step = gw.begin(b'{"version":1,"id":"x","method":"tabs.list","params":{}}')
    step = gw.advance(f'{{"transaction":"{step["transaction"]}","seq":{step["seq"]},"result":{{"success":true}}}}')
    assert step["step"] == "dispatch"



def _utf8(step: dict[str, Any]) -> None:
    json.dumps(step, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate



def test_lone_surrogates_in_dict_results_are_repaired_everywhere() -> None:
    """Regression (adversarial review, 487190e): a Python host's dict result skipped the lone-surrogate repair
    that JSON text gets, so a page's lone surrogate reached the envelope and broke its UTF-8. Guards: dict
    results are repaired like text, in error messages and in shaped results alike."""
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    out = gw.advance({"transaction": step["transaction"], "seq": step["seq"],
                      "result": {"success": False, "error": {"code": "RENDERER_FAILED", "message": "bad \ud800"}}})
    _utf8(out)
    assert out["response"]["error"]["message"] == "bad \ufffd"
    step = admit(gw, gw.begin(req("tab.navigate", tabId="B", url="https://x.test/")))
    out = ok(gw, step, tabId="B", generation=2, url="https://x/\udc00")
    _utf8(out)
    assert out["response"]["result"]["url"] == "https://x/\ufffd"



def test_dict_request_with_lone_surrogate_is_refused_like_json_text() -> None:
    """Regression (adversarial review, 487190e): a client's dict request holding a lone surrogate is refused
    INVALID_REQUEST, as its JSON text is, never repaired into a different request."""
    out = response(make().begin(req("tab.snapshot", tabId="A\ud800")))
    assert out["error"]["code"] == "INVALID_REQUEST"



def test_editing_the_callers_request_after_begin_changes_nothing() -> None:
    """Regression (adversarial review, 487190e): the gateway kept the caller's request dicts, so editing the
    arguments after ``begin`` changed what was dispatched (past the argument validation). Guards: ``begin``
    keeps its own copy."""
    ext = {"name": "fill", "method": "ext-fill", "description": "d", "mutates": False,
           "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},
                           "additionalProperties": False}}
    gw = make(nativeMethods=["ext-fill"], extensions=[ext])
    request = req("extension.call", name="fill", arguments={"n": 1})
    step = gw.begin(request)
    request["params"]["arguments"]["n"] = 10**6
    assert admit(gw, step)["params"] == {"n": 1}



def test_ids_beyond_64_bits_are_refused_not_echoed_changed() -> None:
    """Regression (3695b7a): an id beyond 64 bits was echoed back changed (rounded) instead of refused. Guards:
    INVALID_REQUEST on the canonical and the MCP route; 2**64 - 1 still works."""
    gw = make()
    canonical = response(gw.begin(b'{"version":1,"id":123456789012345678901,"method":"capabilities","params":{}}'))
    assert canonical["error"]["code"] == "INVALID_REQUEST" and "64 bits" in canonical["error"]["message"]
    exact = gw.begin(b'{"version":1,"id":18446744073709551615,"method":"capabilities","params":{}}')
    assert exact["step"] == "authorize" and exact["request"]["id"] == 18446744073709551615
    gw.cancel({"transaction": exact["transaction"], "reason": "cancelled"})
    rpc = gw.begin_mcp(b'{"jsonrpc":"2.0","id":123456789012345678901,"method":"ping"}')["response"]
    assert rpc["error"]["code"] == -32600



def test_result_over_32_mib_passed_as_a_dict_is_refused() -> None:
    """Regression (adversarial review, 487190e): a Python host's dict result skipped the 32 MiB result cap
    that JSON text gets. Guards: RESPONSE_TOO_LARGE for a dict as for text."""
    gw = make()
    step = admit(gw, gw.begin(req("tabs.list")))
    big = {"success": True, "tabs": [{"tabId": "A", "generation": 1, "url": "u", "title": "x" * (33 << 20),
                                      "active": True}]}
    out = response(gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": big}))
    assert out["error"]["code"] == "RESPONSE_TOO_LARGE"



def test_the_32_mib_cap_is_the_results_own_size_not_the_advance_wrapper() -> None:
    """Regression (d154790): the 32 MiB cap was measured on the whole ``advance`` text, so a result of exactly
    32 MiB was refused because of its wrapper. Guards: the cap is the result's own JSON size."""
    gw = make()
    step = admit(gw, gw.begin(req("tab.screenshot", tabId="A")))
    head = f'{{"transaction":"{step["transaction"]}","seq":{step["seq"]},"result":'.encode()
    prefix = b'{"success":true,"mimeType":"image/png","width":1,"height":1,"data":"'
    filler = (32 << 20) - len(prefix) - 2  # result JSON exactly 32 MiB: allowed
    filler -= filler % 4
    result = prefix + b"A" * filler + b'"}'
    assert len(result) <= 32 << 20 < len(head) + len(result) + 1
    out = response(gw.advance(head + result + b"}"))
    assert out["success"] is True



_request_like = st.fixed_dictionaries(
    {"version": st.sampled_from([1, 1, 1, 2, "1", True, 1.0])},
    optional={
        "id": st.none() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=6) | st.floats(allow_nan=False),
        "method": st.sampled_from(["tabs.list", "tab.snapshot", "tab.click", "tabs.open", "nope", ""]) | st.text(),
        "params": st.dictionaries(
            st.sampled_from(["tabId", "timeoutMs", "url", "ref", "maxElements", "x"]), json_values, max_size=3
        )
        | json_values,
        "extra": json_values,
    },
)



@given(_request_like | st.dictionaries(st.text(max_size=8), json_values, max_size=4))
@settings(max_examples=examples(200), deadline=None)
def test_a_python_request_gets_exactly_the_step_of_its_json_text(request: Any) -> None:
    """``begin`` with a Python dict parses orjson's own text directly (the fast path of a dict request,
    docs/engine.md "Performance"); the JSON text of the same request goes through ``jsonio.loads``.
    Both must answer the same step, refusals and their audit included (any JSON a dict can hold: floats,
    64-bit integers, nesting; lone surrogates are refused by both but worded differently, and excluded)."""
    clock = lambda: 0.0  # noqa: E731  (audit.elapsedMs equal on both sides)
    as_object, as_text = make(clock=clock), make(clock=clock)
    try:
        text = json.dumps(request, allow_nan=False)
    except ValueError:
        return
    assert as_object.begin(request) == as_text.begin(text)



def test_a_python_request_over_the_cap_is_refused_like_its_json_text() -> None:
    big = req("tab.type", tabId="A", ref="s1e1", text="x" * (4 * 1024 * 1024))
    clock = lambda: 0.0  # noqa: E731
    step = make(clock=clock).begin(big)
    assert step["response"]["error"]["code"] == "REQUEST_TOO_LARGE"
    as_text = make(clock=clock).begin(orjson.dumps(big))  # the same compact text: the same size
    assert step["response"]["error"] == as_text["response"]["error"]
    assert step["response"]["id"] == 1  # a dict's id is readable without parsing; text's is not (None)
    assert as_text["response"]["id"] is None



class _Key(str):
    """A ``str`` subclass: a key orjson writes as its text, which a round trip turns into a plain ``str``."""



_results = st.one_of(
    st.just({"success": True}),
    st.fixed_dictionaries({"success": st.booleans()}, optional={"error": json_values, "x": json_values}),
    st.fixed_dictionaries(
        {"success": st.just(True), "tabs": st.lists(st.fixed_dictionaries({
            "tabId": st.sampled_from(["A", "B", "\ud800"]), "generation": st.integers(-2, 2**65) | st.floats(),
            "url": st.text(max_size=4), "title": st.text(max_size=4), "active": st.booleans(),
        }), max_size=2)}
    ),
    st.builds(lambda v: {_Key("success"): v}, st.just(True) | st.just(False)),
    st.sampled_from([{"success": True, "bad": {1, 2}}, {"success": float("nan")}, {"success": (True,)},
                     {"success": True, 7: 1}, {"success": True, "s": "\udfff"}, ("success", True), [True], None, "x"]),
    json_values,
)



def _twin_gateways(phase: str) -> tuple[Gateway, Gateway, dict[str, Any]]:
    """Two gateways on one clock (audit.elapsedMs equal on both), each with the same ``tabs.list``
    transaction waiting at ``phase`` (``authorize`` or ``dispatch``); returns them and that pending step."""
    clock = lambda: 0.0  # noqa: E731
    fast, general = make(clock=clock), make(clock=clock)
    steps = [gw.begin(req("tabs.list")) for gw in (fast, general)]
    if phase == "dispatch":
        steps = [ok(gw, s) for gw, s in zip((fast, general), steps, strict=True)]
    assert steps[0] == steps[1] and steps[0]["step"] == phase
    return fast, general, steps[0]



@given(
    phase=st.sampled_from(["authorize", "dispatch"]),
    tid=st.sampled_from(["ok", "ok", "t999", 7, None]),
    seq=st.sampled_from(["ok", "ok", "ok", 0, 99, 2**70, "1", True, 1.0]),
    result=_results,
    other_key=st.booleans(),
)
@settings(max_examples=examples(400), deadline=None)
def test_a_python_advance_answers_exactly_what_its_copy_answers(
    phase: str, tid: Any, seq: Any, result: Any, other_key: bool
) -> None:
    """``advance`` with a Python dict reads the usual ``{transaction, seq, result}`` without the general
    parsing, and an exact ``{"success": true}`` result without copying it (docs/engine.md "Performance").
    The general path — what any other Mapping takes — is the authority: both must answer the same step,
    leave the same pending step behind, and nothing the host edits afterwards may change the gateway."""
    from types import MappingProxyType

    fast, general, pending = _twin_gateways(phase)
    message = {
        "transaction": pending["transaction"] if tid == "ok" else tid,
        "seq": pending["seq"] if seq == "ok" else seq,
        ("result" if not other_key else "resuIt"): result,
    }
    answer = fast.advance(message)
    assert answer == general.advance(MappingProxyType(message))
    scramble_all = [message, result]
    for value in scramble_all:
        if isinstance(value, dict):
            value.clear()
            value["edited"] = 1
    assert fast.next() == general.next()
    assert fast.next(pending["transaction"]) == general.next(pending["transaction"])



class _Int(enum.IntEnum):
    ONE = 1



class _Str(enum.StrEnum):
    A = "A"



_odd_values = st.sampled_from(
    [_Key("A"), _Int.ONE, _Str.A, "\ud800", "A\udfff", float("nan"), 1.5, (1,), 2**64, None, {"a": 1}, "é" * 3]
)



_PLAIN = [
    req("tabs.list"), req("tab.snapshot", "s", tabId="A"), req("tab.navigate", None, tabId="A", url="https://x.example/"),
    req("tab.type", 2**63, tabId="A", ref="s1e1", text="héllo"), req("tab.click", "é", tabId="A", ref="s1e1"),
    req("tab.screenshot", -5, tabId="A", fullPage=False), req("extension.call", 1, name="fill", arguments={}),
]



def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (a ``str`` subclass equals its text under ``==``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(type(k) is str and _same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN is itself



@st.composite
def _nearly_plain_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A valid plain request with at most one odd thing in one place (what the fast path must notice)."""
    request = orjson.loads(orjson.dumps(draw(st.sampled_from(_PLAIN))))
    where = draw(st.sampled_from(["nowhere", "id", "value", "key", "top key", "params", "method"]))
    odd = draw(_odd_values)
    params = request["params"]
    if where == "id":
        request["id"] = odd
    elif where == "value" and params:
        key = draw(st.sampled_from(sorted(params)))
        params[key] = _Key(params[key]) if isinstance(params[key], str) and draw(st.booleans()) else odd
    elif where == "key" and params:
        key = draw(st.sampled_from(sorted(params)))
        params[_Key(key)] = params.pop(key)
    elif where == "method":
        request["method"] = _Key(request["method"])
    elif where == "top key":
        request[_Key("method")] = request.pop("method")
    elif where == "params":
        request["params"] = odd if draw(st.booleans()) else type("D", (dict,), {})(params)
    return request



@given(request=_nearly_plain_requests(), edit=st.booleans())
@settings(max_examples=examples(400), deadline=None)
def test_a_python_request_taken_as_it_is_answers_what_its_copy_answers(request: Any, edit: bool) -> None:
    """``begin`` with a plain Python dict (exact str keys; str, int and bool values; a flat params dict)
    is validated as it is, without the JSON round trip of its copy (docs/engine.md "Performance"). The
    copy — what any other Mapping gets — is the authority: both answer the same step, type for type, and
    leave the same pending step; str subclasses, enum members, lone surrogates, floats, tuples, integers
    beyond 64 bits and nested params all take the copy's way. Editing the caller's dicts afterwards
    changes nothing."""
    from types import MappingProxyType

    clock = lambda: 0.0  # noqa: E731  (audit.elapsedMs equal on both sides)
    fast, general = make(clock=clock), make(clock=clock)
    first = fast.begin(request)
    assert _same(first, general.begin(MappingProxyType(request)))
    if edit and isinstance(request.get("params"), dict):
        request["params"].clear()
        request["params"]["tabId"] = "edited"
        request["id"] = "edited"
    assert fast.next() == general.next()
    if first["step"] == "authorize":
        assert fast.next(first["transaction"])["request"] == first["request"]



@pytest.mark.parametrize(
    "request_",
    [
        {"version": 1, "id": 1, "method": "x" * (4 * 1024 * 1024), "params": {}},  # unknown: no bound on the name
        {"version": 1, "id": "i" * (4 * 1024 * 1024), "method": "tabs.list", "params": {}},
    ],
    ids=["method name", "id"],
)
def test_a_plain_python_request_over_the_cap_is_refused_like_its_json_text(request_: dict[str, Any]) -> None:
    """A plain request is validated as it is only when its JSON text is within the 4 MiB cap: one whose
    method name or id alone passes the cap is refused REQUEST_TOO_LARGE like its JSON text."""
    step = make().begin(request_)
    assert step["response"]["error"]["code"] == "REQUEST_TOO_LARGE"
    assert step["response"]["error"] == make().begin(orjson.dumps(request_))["response"]["error"]



@pytest.mark.parametrize("phase", ["authorize", "dispatch"])
@pytest.mark.parametrize("key", ["transaction", "seq", "result"])
def test_a_python_advance_with_a_str_subclass_key_is_refused_like_its_copy(phase: str, key: str) -> None:
    """A ``{transaction, seq, result}`` dict one of whose own keys is a ``str`` subclass is not JSON data
    (orjson: "Dict key must be str"): the general path refuses it INVALID_REQUEST, so the exact
    ``{"success": true}`` fast path must too — it must not admit an authorization or complete a dispatch
    on a message every other way of sending it is refused."""
    from types import MappingProxyType

    fast, general, pending = _twin_gateways(phase)
    message: dict[Any, Any] = {"transaction": pending["transaction"], "seq": pending["seq"]}
    message["result"] = {"success": True}
    message[_Key(key)] = message.pop(key)
    answer = fast.advance(message)
    assert answer == general.advance(MappingProxyType(message))
    assert answer["step"] == "rejected" and answer["error"]["code"] == "INVALID_REQUEST"
    assert fast.next() == general.next()  # the same pending step is still waiting on both



class _Lying(dict[str, Any]):
    """A dict subclass whose ``[]`` answers other than its contents (which orjson serialises as they are)."""

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        return "https://elsewhere.example/" if key == "url" else value



def test_a_python_request_whose_params_are_a_dict_subclass_is_read_like_its_copy() -> None:
    """``begin`` validates a plain dict request as it is only when its copy would be equal: a params
    object of a dict subclass is serialised from its contents, so a subclass overriding ``[]`` (or ``in``,
    or iteration) must take the copy's way — the URL the host is asked to authorize and navigate to is the
    one the request's JSON text carries, as for any other Mapping."""
    from types import MappingProxyType

    request = {
        "version": 1,
        "id": 1,
        "method": "tab.navigate",
        "params": _Lying(tabId="A", url="https://ok.example/"),
    }
    clock = lambda: 0.0  # noqa: E731  (audit.elapsedMs equal on both sides)
    fast, general, text = make(clock=clock), make(clock=clock), make(clock=clock)
    step = fast.begin(request)
    assert step == general.begin(MappingProxyType(request)) == text.begin(orjson.dumps(request))
    assert step["step"] == "authorize"
    assert step["request"]["params"]["url"] == "https://ok.example/"



# ---------------------------------------------------------------------- each fast reader equals its general reader
def _answer(read: Any, value: Any) -> Any:
    """What a reader answers for ``value``: its reading, or the refusal it raises (type, code, message,
    the request id an Unreadable carries)."""
    try:
        return read(value)
    except Refusal as exc:
        return ("refused", type(exc), exc.code, exc.message, getattr(exc, "request_id", None))


def _same_reading(fast: Any, general: Any) -> bool:
    """Equal type for type; an ``advance`` reading's size (its last field) may differ only where both are
    under the 32 MiB result cap (the fast reader knows an exact ``{"success": true}`` is)."""
    if isinstance(fast, tuple) and fast and fast[0] == inputs.RESULT and isinstance(general, tuple):
        cap = jsonio.MAX_RESULT_BYTES
        sizes_agree = fast[-1] == general[-1] or (fast[-1] <= cap and general[-1] <= cap)
        return sizes_agree and _same(list(fast[:-1]), list(general[:-1]))
    if isinstance(fast, tuple) and fast and fast[0] == "refused":
        return fast == general
    return _same(fast, general)


def _checked_like_the_copy(checked: Any, copy: Any) -> bool:
    """A request validated as it is says what validating its copy says, type for type (the method's
    descriptor is the very same object)."""
    try:
        expected = validate_request(copy)
    except ParamError:
        return False
    return checked[1] is expected[1] and _same([checked[0], checked[2], checked[3]], [expected[0], expected[2], expected[3]])


def _text_forms(value: Any) -> list[Any]:
    """``value`` itself, and its JSON as bytes and as text when it has one."""
    try:
        text = orjson.dumps(value)
    except TypeError:
        return [value]
    return [value, text, text.decode()]


@given(request=_nearly_plain_requests() | _request_like | st.binary(max_size=40))
@settings(max_examples=examples(400), deadline=None)
def test_the_fast_request_reader_answers_what_the_general_reader_answers(request: Any) -> None:
    """``inputs.fast_request`` (what ``begin`` calls) recognises JSON bytes and plain dict requests, and
    takes the latter as they are; ``inputs.read_request`` — the copy every other input gets — is the
    authority: the same request (type for type), the same refusal, and when the fast reader validated
    the request itself, what validating the copy says."""
    for value in _text_forms(request):
        fast, general = _answer(inputs.fast_request, value), _answer(inputs.read_request, value)
        if isinstance(fast, tuple) and len(fast) == 2 and fast[1] is not None:  # validated as it is
            assert general[1] is None and _same(fast[0], general[0]), (value, fast, general)
            assert _checked_like_the_copy(fast[1], general[0]), value
        else:
            assert _same_reading(fast, general), (value, fast, general)


_tids = st.sampled_from(["t1", "t1", "é1", "t\ud800", _Key("t1"), 7, None])
_seqs = st.sampled_from([1, 1, 0, 2**63, 2**64, -(2**63) - 1, True, 1.0, "1"])
_keys = st.sampled_from(["transaction", "seq", "result", _Key("transaction"), _Key("result"), "resuIt", "x"])


@st.composite
def _advance_messages(draw: st.DrawFn) -> Any:
    """``{transaction, seq, result}`` and its near misses: odd ids and seqs, odd or extra keys, every kind
    of result, and the three host reports."""
    kind = draw(st.sampled_from(["result", "result", "result", "report", "any"]))
    if kind == "any":
        return draw(json_values)
    if kind == "report":
        return draw(st.sampled_from([
            {"tabClosed": "A"}, {"tabClosed": ""}, {"tabClosed": "A", "x": 1},
            {"transaction": "t1", "undelivered": True}, {"transaction": "t1", "undelivered": 1},
            {"transaction": "t1", "retire": "renderer-closed"}, {"transaction": "t1", "retire": "x"},
            {"transaction": "t1"}, {"transaction": "t1", "seq": 1, "result": {}, "more": 1},
        ]))
    message: dict[Any, Any] = {"transaction": draw(_tids), "seq": draw(_seqs), "result": draw(_results)}
    if draw(st.booleans()):
        key = draw(st.sampled_from(["transaction", "seq", "result"]))
        message[draw(_keys)] = message.pop(key)
    return message


@given(message=_advance_messages())
@settings(max_examples=examples(400), deadline=None)
def test_the_fast_advance_reader_answers_what_the_general_reader_answers(message: Any) -> None:
    """``inputs.fast_advance`` (what ``advance`` calls) reads a dict ``{transaction, seq, result}`` without
    the shape checks, and an exact ``{"success": true}`` result without copying it; ``inputs.read_advance``
    is the authority: the same kind, id, seq and result type for type, the same refusal."""
    for value in _text_forms(message):
        assert _same_reading(_answer(inputs.fast_advance, value), _answer(inputs.read_advance, value)), value


@given(
    tid=st.sampled_from(["t1", "é", "t\ud800", _Key("t1"), 1, None, ["t1"]]),
    reason=st.sampled_from(["timeout", "cancelled", "renderer-closed", "nope", _Key("timeout"), [], {}, None]),
    keys=st.sampled_from([("transaction", "reason"), (_Key("transaction"), "reason"), ("transaction", "why")]),
    extra=st.booleans(),
)
@settings(max_examples=examples(300), deadline=None)
def test_the_fast_cancel_reader_answers_what_the_general_reader_answers(
    tid: Any, reason: Any, keys: tuple[Any, Any], extra: bool
) -> None:
    """``inputs.fast_cancel`` reads a dict of plain strings as it is; ``inputs.read_cancel`` is the
    authority: the same ``(transaction, reason)`` type for type, or the same refusal."""
    message: dict[Any, Any] = {keys[0]: tid, keys[1]: reason}
    if extra:
        message["x"] = 1
    for value in _text_forms(message):
        assert _same_reading(_answer(inputs.fast_cancel, value), _answer(inputs.read_cancel, value)), value


def test_a_cancel_whose_reason_is_an_array_or_object_is_refused_invalid_request() -> None:
    """Regression (issue 26's review of reading host input): a reason that was an array or an object reached
    ``reason in CANCEL_CODES`` and raised (unhashable), so the cancel was answered INTERNAL. Guards: it is
    INVALID_REQUEST like any other bad reason, as text or as a dict, and the pending step is untouched."""
    gw = make()
    step = gw.begin(req("tabs.list"))
    for reason in ([], {}, ["timeout"]):
        for message in ({"transaction": step["transaction"], "reason": reason},
                        json.dumps({"transaction": step["transaction"], "reason": reason})):
            answer = gw.cancel(message)
            assert answer["step"] == "rejected" and answer["error"]["code"] == "INVALID_REQUEST", answer
    assert gw.next() == step


# ------------------------------------------------------------------ repeated member names (issue 27)
_names = st.sampled_from(["a", "b", "method", "params", "tabId", "x:y", "\u00e9", ""])
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.text(alphabet=st.sampled_from(['a', ':', ' ', '"', '\\', '\u00e9', '/', '{']), max_size=6),
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3).map(lambda xs: ("list", xs))
    | st.lists(st.tuples(_names, inner), max_size=4).map(lambda ps: ("object", ps)),
    max_leaves=12,
)
"""A JSON value whose objects are lists of (name, value) pairs: names may repeat, at any depth."""


def _text(tree: Any, style: Any) -> str:
    """``tree`` as JSON text: ``style`` draws whitespace and whether a string spells its colons ``\\u003a``."""
    gap = style(st.sampled_from(["", " ", "\n\t"]))
    if isinstance(tree, tuple) and tree[0] == "list":
        return "[" + ("," + gap).join(_text(v, style) for v in tree[1]) + "]"
    if isinstance(tree, tuple):
        return "{" + ",".join(
            f"{gap}{_string(k, style)}{gap}:{gap}{_text(v, style)}" for k, v in tree[1]
        ) + "}"
    if isinstance(tree, str):
        return _string(tree, style)
    return json.dumps(tree)


def _string(s: str, style: Any) -> str:
    text = json.dumps(s, ensure_ascii=style(st.booleans()))
    return text.replace(":", "\\u003a") if style(st.booleans()) else text


def _repeats(tree: Any) -> bool:
    if isinstance(tree, tuple) and tree[0] == "list":
        return any(_repeats(v) for v in tree[1])
    if isinstance(tree, tuple):
        names = [k for k, _ in tree[1]]
        return len(set(names)) != len(names) or any(_repeats(v) for _, v in tree[1])
    return False


@given(tree=_trees, data=st.data())
@settings(max_examples=examples(500), deadline=None)
def test_a_repeated_member_name_is_refused_exactly(tree: Any, data: Any) -> None:
    """Issue 27: ``{"method":"tabs.list","method":"tabs.close",…}`` closed a tab (orjson keeps the last
    name). ``jsonio.loads`` refuses a text exactly when one of its objects repeats a name, at any depth —
    whatever the whitespace, colons inside strings, escaped colons (``\\u003a``, which the colon count
    alone would miss) — and otherwise parses it as orjson does."""
    text = _text(tree, data.draw).encode()
    if _repeats(tree):
        with pytest.raises(jsonio.DuplicateMember):
            jsonio.loads(text)
    else:
        assert jsonio.loads(text) == orjson.loads(text)
    assert jsonio.loads(text, unique=False) == orjson.loads(text)  # the host's own messages: last name wins


def test_repeated_names_through_every_begin() -> None:
    """The canonical ``begin`` (bytes, str, a repeated name in params), ``begin_mcp`` (-32600, id null), the
    config, and the host's own ``advance`` (read as before: last name wins)."""
    gw = make()
    for text in (b'{"version":1,"id":1,"method":"tabs.list","method":"tabs.close","params":{"tabId":"A"}}',
                 '{"version":1,"id":1,"method":"tabs.list","params":{},"params":{}}',
                 b'{"version":1,"id":1,"method":"tab.snapshot","params":{"tabId":"A","tabId":"B"}}'):
        step = gw.begin(text)
        env = response(step)
        assert env["error"]["code"] == "INVALID_JSON" and "appears twice" in env["error"]["message"], env
        assert step["audit"]["dispatches"] == 0
    rpc = gw.begin_mcp(b'{"jsonrpc":"2.0","id":1,"method":"tools/list","id":2}')["response"]
    assert rpc["id"] is None and rpc["error"]["code"] == -32600, rpc
    with pytest.raises(GatewayConfigError) as refused:
        Gateway(b'{"allowActions":false,"allowActions":true}')
    assert refused.value.envelope["error"]["code"] == "INVALID_JSON"
    step = gw.begin(req("tabs.list"))
    assert gw.advance(b'{"transaction":"%s","seq":%d,"result":{"success":false,"success":true}}'
                      % (step["transaction"].encode(), step["seq"]))["step"] == "dispatch"
    _usable_after_dispatch = gw.cancel({"transaction": step["transaction"], "reason": "cancelled"})
    assert _usable_after_dispatch["step"] == "complete"
