"""The steps handed to a host (engine/kelpie_gateway/steps.py; docs/engine.md, "Performance"): an
``authorize`` or ``dispatch`` step handed to a Python caller is copied directly when its params are flat and
through its JSON text otherwise. Either way it must equal the step's JSON (what the C ABI sends) and share
nothing with what the gateway keeps: editing it, however deeply, changes neither ``next`` nor what is
dispatched."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.depth import examples
from tests.engine.kit import admit, make, req

EXT = {"name": "fill", "method": "ext-fill", "description": "d", "mutates": False, "inputSchema": {"type": "object"}}



KEYS = st.text(alphabet="abxyz", min_size=1, max_size=4)



JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)



IDS = st.none() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=5)



def scramble(value: Any) -> None:
    """Edit every container of ``value`` in place, however deep."""
    if isinstance(value, dict):
        for v in list(value.values()):
            scramble(v)
        value.clear()
        value["edited"] = 1
    elif isinstance(value, list):
        for v in value:
            scramble(v)
        value.append("edited")



@settings(max_examples=examples(300), deadline=None)
@given(arguments=st.dictionaries(KEYS, JSON, max_size=4), rid=IDS)
def test_python_steps_equal_their_json_and_share_nothing(arguments: dict[str, Any], rid: Any) -> None:
    gw = make(nativeMethods=["ext-fill"], extensions=[EXT])
    step = gw.begin(req("extension.call", rid, name="fill", arguments=arguments))
    assert step["step"] == "authorize", step
    tid = step["transaction"]
    assert step == orjson.loads(gw.call_json("next", tid))
    assert step["request"]["params"] == {"name": "fill", "arguments": arguments}
    scramble(step)
    again = gw.next(tid)
    assert again == orjson.loads(gw.call_json("next", tid))
    assert again["request"]["params"]["arguments"] == arguments
    dispatch = admit(gw, again)
    assert dispatch["step"] == "dispatch" and dispatch["params"] == arguments
    assert dispatch == orjson.loads(gw.call_json("next", tid))
    scramble(dispatch)
    assert gw.next(tid)["params"] == arguments
    assert gw.next(tid) == orjson.loads(gw.call_json("next", tid))



@settings(max_examples=examples(200), deadline=None)
@given(tab=st.text(min_size=1, max_size=6), url_path=st.text(alphabet="abc/", max_size=8), rid=IDS)
def test_flat_steps_with_a_target_are_copied_whole(tab: str, url_path: str, rid: Any) -> None:
    gw = make()
    step = gw.begin(req("tab.navigate", rid, tabId=tab, url=f"https://ok.example/{url_path}"))
    assert step["step"] == "authorize", step
    tid = step["transaction"]
    assert step == orjson.loads(gw.call_json("next", tid))
    scramble(step)
    dispatch = admit(gw, gw.next(tid))
    assert dispatch == orjson.loads(gw.call_json("next", tid))
    assert dispatch["params"]["url"] == f"https://ok.example/{url_path}"
    scramble(dispatch)
    assert gw.next(tid)["params"]["url"] == f"https://ok.example/{url_path}"



def test_editing_a_returned_step_cannot_change_what_is_dispatched() -> None:
    """Regression (adversarial review, 487190e): returned steps shared dicts with the gateway, so editing an
    authorize step's request changed the URL that was then dispatched. Guards: steps are independent copies."""
    gw = make()
    step = gw.begin(req("tab.navigate", tabId="A", url="https://ok.example/"))
    step["request"]["params"]["url"] = "javascript:alert(1)"
    dispatch = admit(gw, step)
    assert dispatch["params"]["url"] == "https://ok.example/"
    dispatch["params"].pop("url")
    assert gw.next()["params"]["url"] == "https://ok.example/"
