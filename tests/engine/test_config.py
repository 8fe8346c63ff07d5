"""Config validation (CONTRACT.md §2): every field, defaults, JSON Pointer errors, nothing created."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kelpie_gateway import Gateway, GatewayConfigError
from kelpie_gateway.config import config_json_schema, plainly_valid
from kelpie_gateway.schema import strict_validator

from tests.depth import examples

GOOD_EXT = {"name": "dialog_accept", "method": "dialog-accept", "description": "Accept the open dialog.",
            "inputSchema": {"type": "object"}, "mutates": True, "recovery": True}


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"nativeMethods": "get-tabs"}, "/nativeMethods"),
        ({"nativeMethods": ["Get_Tabs"]}, "/nativeMethods/0"),
        ({"nativeMethods": ["get-tabs", "get-tabs"]}, "/nativeMethods"),
        ({"targeting": "visible"}, "/targeting"),
        ({"browserAvailable": "yes"}, "/browserAvailable"),
        ({"fixedReader": 1}, "/fixedReader"),
        ({"allowActions": None}, "/allowActions"),
        ({"requireAuthorization": "no"}, "/requireAuthorization"),
        ({"realm": "main"}, "/realm"),
        ({"pinnedTab": 3}, "/pinnedTab"),
        ({"colour": "red"}, ""),
        ({"extensions": [{**GOOD_EXT, "name": "Bad-Name"}]}, "/extensions/0/name"),
        ({"extensions": [{**GOOD_EXT, "method": "dialog_accept"}]}, "/extensions/0/method"),
        ({"extensions": [{k: v for k, v in GOOD_EXT.items() if k != "mutates"}]}, "/extensions/0"),
        ({"extensions": [GOOD_EXT, GOOD_EXT]}, "/extensions/1/name"),
        ({"extensions": [{**GOOD_EXT, "inputSchema": {"type": "nonsense"}}]}, "/extensions/0/inputSchema"),
        ({"extensions": [{**GOOD_EXT, "inputSchema": {"type": "string"}}]}, "/extensions/0/inputSchema/type"),
        ({"extensions": [{**GOOD_EXT, "coordinator": "other"}]}, "/extensions/0/coordinator"),
        ({"extensions": [{**GOOD_EXT, "extra": 1}]}, "/extensions/0"),
        ({"extensionFilter": {"include": "x"}}, "/extensionFilter/include"),
        ({"extensionFilter": {"allow": []}}, "/extensionFilter"),
    ],
)
def test_invalid_config_names_the_field(config: dict[str, Any], pointer: str) -> None:
    with pytest.raises(GatewayConfigError) as info:
        Gateway(config)
    env = info.value.envelope
    assert env["success"] is False and env["mayHaveCompleted"] is False
    assert env["error"]["code"] == "INVALID_REQUEST"
    assert env["error"]["message"].startswith(f"{pointer or '/'}: "), env["error"]["message"]
    assert env["error"]["message"].endswith("(config)")


@pytest.mark.parametrize("text", [b"", b"{", b"[]", b"null", b'{"pinnedTab": "\\ud800"}'])
def test_config_that_is_not_an_object_is_refused(text: bytes) -> None:
    with pytest.raises(GatewayConfigError) as info:
        Gateway(text)
    assert info.value.envelope["error"]["code"] in {"INVALID_JSON", "INVALID_REQUEST"}


def test_defaults() -> None:
    gw = Gateway({})
    caps = gw._catalog.capabilities()
    assert caps["targeting"] == "direct" and caps["realm"] == "isolated" and caps["allowActions"] is True
    assert caps["browserAvailable"] is True and caps["methods"] == ["documentation", "capabilities"]
    assert caps["extensions"] == [] and caps["requireAuthorization"] is True


def test_extension_filter_include_and_exclude_globs() -> None:
    exts = [{**GOOD_EXT, "name": n, "method": "m", "mutates": False} for n in ("dialog_accept", "dialog_x", "vision")]
    gw = Gateway({"nativeMethods": ["m"], "extensions": exts,
                  "extensionFilter": {"include": ["dialog_*", "vision"], "exclude": ["*_x"]}})
    assert gw._catalog.capabilities()["extensions"] == ["dialog_accept", "vision"]


# ---------------------------------------------------------------- the config fast path (issue 16)
# ``config.plainly_valid`` lets the usual config through without importing jsonschema (cold start). It must
# never accept what the jsonschema validator refuses, and must accept every valid config without extensions.
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 6000), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3), st.just(1.0), st.just([]), st.just({}),
)
_long_name = "a" + "b" * 63  # 64 code points: the longest native method name
_names = st.one_of(
    st.sampled_from(["get-tabs", "switch-tab", "a", "a-1", "x9-y", "A", "a_b", "-a", "a-", "a--b", "get-tabs\n", "",
                     _long_name, _long_name + "c", "é"]),
    st.from_regex(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", fullmatch=True),
    st.text(max_size=70),
)
_glob = st.one_of(st.sampled_from(["", "x", "*", "g" * 128, "g" * 129]), st.text(max_size=130), _scalars)
_globs = st.one_of(
    st.lists(_glob, max_size=4), st.lists(st.just("x"), min_size=256, max_size=257), _scalars
)
_values = {
    "nativeMethods": st.one_of(
        st.lists(_names, max_size=4),
        st.lists(st.sampled_from([f"m{i}" for i in range(300)]), min_size=255, max_size=258, unique=True),
        _scalars,
    ),
    "targeting": st.one_of(st.sampled_from(["direct", "selected", "visible"]), _scalars),
    "realm": st.one_of(st.sampled_from(["isolated", "page", "main"]), _scalars),
    "browserAvailable": _scalars,
    "fixedReader": _scalars,
    "allowActions": _scalars,
    "requireAuthorization": _scalars,
    "observer": _scalars,
    "pinnedTab": st.one_of(st.sampled_from(["", "t", "t" * 256, "t" * 257]), st.text(max_size=3), _scalars),
    "retirementGraceMs": st.one_of(st.sampled_from([-1, 0, 1, 4999, 5000, 5001, 5000.0, True]), _scalars),
    "extensions": st.one_of(st.just([]), st.just([GOOD_EXT]), _scalars),
    "extensionFilter": st.one_of(
        st.fixed_dictionaries({}, optional={"include": _globs, "exclude": _globs}),
        st.dictionaries(st.sampled_from(["include", "exclude", "allow"]), _globs, max_size=2),
        _scalars,
    ),
    "colour": _scalars,
}
_valid = {
    "nativeMethods": st.lists(st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,8})?", fullmatch=True), max_size=3,
                              unique=True),
    "targeting": st.sampled_from(["direct", "selected"]),
    "realm": st.sampled_from(["isolated", "page"]),
    "browserAvailable": st.booleans(),
    "fixedReader": st.booleans(),
    "allowActions": st.booleans(),
    "requireAuthorization": st.booleans(),
    "observer": st.booleans(),
    "pinnedTab": st.one_of(st.none(), st.text(min_size=1, max_size=5)),
    "retirementGraceMs": st.integers(0, 5000),
    "extensionFilter": st.fixed_dictionaries(
        {}, optional={"include": st.lists(st.text(min_size=1, max_size=4)), "exclude": st.lists(st.just("*"))}
    ),
}


@st.composite
def _configs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid config, then (mostly) one field replaced by an arbitrary, often invalid, value: one fault at a
    time, so each rule of the schema is what decides."""
    config = draw(st.fixed_dictionaries({}, optional=_valid))
    key = draw(st.one_of(st.none(), st.sampled_from(sorted(_values))))
    if key is not None:
        config[key] = draw(_values[key])
    return config


_AUTHORITY = strict_validator(config_json_schema())


@settings(max_examples=examples(600), deadline=None)
@given(_configs())
def test_config_fast_path_agrees_with_the_jsonschema_validator(data: dict[str, Any]) -> None:
    data = orjson.loads(orjson.dumps(data))  # what parse_config sees: parsed JSON
    authority = _AUTHORITY.is_valid(data)
    fast = plainly_valid(data)
    assert not fast or authority, data  # never accepts what jsonschema refuses
    if not data.get("extensions"):
        assert fast == authority, data  # and accepts every valid config without extensions


_EDGES: dict[str, list[Any]] = {
    "nativeMethods": [[], ["get-tabs"], [_long_name], [_long_name + "c"], ["a--b"], ["get-tabs\n"], ["A"], [""],
                      ["x", "x"], [f"m{i}" for i in range(256)], [f"m{i}" for i in range(257)], [1], "get-tabs"],
    "targeting": ["direct", "selected", "visible", None, 1],
    "realm": ["isolated", "page", "main", None],
    "browserAvailable": [True, False, 0, 1, None, "true"],
    "observer": [True, False, 0, 1, None, "true"],
    "pinnedTab": [None, "", "t", "t" * 256, "t" * 257, 3, ["t"]],
    "retirementGraceMs": [-1, 0, 5000, 5001, 5000.0, 0.0, True, None, "5"],
    "extensions": [[], [GOOD_EXT], {}, None],
    "extensionFilter": [{}, {"include": []}, {"exclude": ["*"]}, {"include": [""]}, {"include": ["g" * 128]},
                        {"include": ["g" * 129]}, {"include": ["x"] * 256}, {"include": ["x"] * 257},
                        {"allow": []}, {"include": "x"}, {"include": [1]}, [], None],
    "colour": ["red"],
}
_FULL = {"nativeMethods": ["get-tabs"], "targeting": "selected", "realm": "page", "browserAvailable": True,
         "fixedReader": False, "allowActions": True, "requireAuthorization": False, "pinnedTab": "t1",
         "retirementGraceMs": 10, "extensionFilter": {"include": ["*"], "exclude": []}}


@pytest.mark.parametrize("key", sorted(_EDGES))
def test_config_fast_path_agrees_on_every_edge(key: str) -> None:
    """Each field at and across its bounds, alone and in an otherwise complete valid config."""
    for value in _EDGES[key]:
        for data in ({key: value}, {**_FULL, key: value}):
            data = orjson.loads(orjson.dumps(data))
            authority = _AUTHORITY.is_valid(data)
            assert not plainly_valid(data) or authority, data
            if not data.get("extensions"):
                assert plainly_valid(data) == authority, data


def test_a_usual_config_does_not_import_jsonschema() -> None:
    """Creating a gateway from a valid config without extensions stays off the jsonschema import (the
    largest part of a cold start); a refused config still gets the validator's wording."""
    code = (
        "import sys\n"
        "from kelpie_gateway import Gateway, GatewayConfigError\n"
        "Gateway({'nativeMethods': ['get-tabs'], 'targeting': 'selected', 'pinnedTab': None})\n"
        "assert 'jsonschema' not in sys.modules, 'jsonschema imported for a plain config'\n"
        "try:\n"
        "    Gateway({'targeting': 'visible'})\n"
        "except GatewayConfigError as exc:\n"
        "    print(exc.envelope['error']['message'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "/targeting: 'visible' is not one of ['direct', 'selected'] (config)"


@pytest.mark.parametrize("schema", [
    {"type": "object", "$ref": "http://127.0.0.1:9/s.json"},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
])
def test_extension_schema_with_unresolvable_ref_fails_at_create(schema: dict[str, Any]) -> None:
    """Regression (adversarial review, 487190e): an extension ``inputSchema`` whose ``$ref`` cannot be
    resolved passed ``Gateway(config)`` and failed at call time. Guards: it is refused at create, naming the
    field."""
    ext = {"name": "x", "method": "m", "description": "d", "mutates": False, "inputSchema": schema}
    with pytest.raises(GatewayConfigError) as info:
        Gateway({"nativeMethods": ["m"], "extensions": [ext]})
    assert info.value.envelope["error"]["message"].startswith("/extensions/0/inputSchema: ")
