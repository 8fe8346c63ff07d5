"""The generated JSON Schemas are valid 2020-12 schemas and give the engine validator's verdict
(CONTRACT.md §2, §3, §4): on every parity fixture and on Hypothesis-generated requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import generate
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kelpie_gateway import errors, schema
from kelpie_gateway.config import parse_config
from kelpie_gateway.errors import GatewayConfigError

from tests.depth import examples
from tests.generator.gen_strategies import load_cases, requests

NAMES = ("request", "config", "envelope")


def _load(out: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "schema" / f"{name}.schema.json").read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def request_validator(generated: Path) -> Any:
    return schema.strict_validator(_load(generated, "request"))


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_a_valid_2020_12_schema(generated: Path, name: str) -> None:
    s = _load(generated, name)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)


def test_request_schema_agrees_with_the_engine_on_every_parity_fixture(
    generated: Path, request_validator: Any
) -> None:
    cases = load_cases(generated)
    assert len(cases) > 250
    wrong = [c["name"] for c in cases if request_validator.is_valid(c["request"]) != c["valid"]]
    assert wrong == []
    # the fixture verdicts are the engine's, not stale copies
    assert all(generate.python_verdict(c["request"])["valid"] == c["valid"] for c in cases)


def test_fixtures_cover_both_verdicts_bounds_and_astral_text(generated: Path) -> None:
    by_name = {c["name"]: c for c in load_cases(generated)}
    expected = {
        "tab.snapshot timeoutMs=0": False,
        "tab.snapshot timeoutMs=1": True,
        "tab.snapshot timeoutMs=30000": True,
        "tab.snapshot timeoutMs=30001": False,
        "tab.snapshot timeoutMs=10.5": False,
        "tab.snapshot maxChars=12001": False,
        "tab.snapshot maxElements=200": True,
        "text 200000 astral code points (valid)": True,
        "text 200001 astral code points (invalid)": False,
        "text max code points but more UTF-16 units": True,
        "unknown top-level field": False,
        "tab.type unknown param": False,
    }
    assert {n: by_name[n]["valid"] for n in expected} == expected
    emoji = by_name["text 200000 astral code points (valid)"]["request"]["params"]["text"]
    assert len(emoji) == 200_000 and set(emoji) == {"\U0001f600"}
    defaults = by_name["tab.snapshot params omitted (defaults)"]["normalized"]["params"]
    assert defaults == {"maxChars": 12000, "maxElements": 200, "timeoutMs": 10000}
    assert by_name["extension.call default arguments"]["normalized"]["params"] == {
        "name": "x",
        "arguments": {},
    }
    assert by_name["fullPage=True"]["code"] == "OPTION_UNSUPPORTED"


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_request_schema_agrees_with_the_engine_on_generated_requests(
    request_validator: Any, req: Any
) -> None:
    assert request_validator.is_valid(req) == generate.python_verdict(req)["valid"], req


def test_version_one_point_zero_is_refused_like_the_engine(request_validator: Any) -> None:
    req = {"version": 1.0, "method": "tabs.list"}
    assert not generate.python_verdict(req)["valid"]
    assert not request_validator.is_valid(req)


def test_envelope_schema_accepts_every_envelope_the_engine_builds(generated: Path) -> None:
    v = schema.strict_validator(_load(generated, "envelope"))
    for code in errors.ERROR_CODES:
        for may in (False, True):
            assert v.is_valid(errors.failure("r1", code, None, may_have_completed=may)), code
    assert v.is_valid(errors.success(7, {"tabs": []}))
    assert v.is_valid(errors.success(None, {}))
    bad = errors.failure("r1", "BUSY")
    bad["error"]["code"] = "NOT_A_CODE"
    assert not v.is_valid(bad)
    assert not v.is_valid({**errors.success(1, {}), "extra": 1})
    assert not v.is_valid({k: v_ for k, v_ in errors.failure(1, "BUSY").items() if k != "mayHaveCompleted"})


CONFIGS: list[Any] = [
    {},
    {"nativeMethods": ["get-tabs", "browser-control-evaluate"], "fixedReader": True},
    {"nativeMethods": ["Get-Tabs"]},
    {"nativeMethods": ["get-tabs", "get-tabs"]},
    {"nativeMethods": ["get-tabs\n"]},
    {"targeting": "selected", "realm": "page", "pinnedTab": "t1"},
    {"targeting": "nearest"},
    {"pinnedTab": ""},
    {"allowActions": 1},
    {"unknown": True},
    {"extensionFilter": {"include": ["a*"], "exclude": []}},
    {"extensionFilter": {"other": []}},
    {
        "nativeMethods": ["x-y"],
        "extensions": [
            {
                "name": "ok_name",
                "method": "x-y",
                "description": "d",
                "inputSchema": {"type": "object"},
                "mutates": False,
            }
        ],
    },
    {
        "nativeMethods": ["x-y"],
        "extensions": [
            {
                "name": "Bad",
                "method": "x-y",
                "description": "d",
                "inputSchema": {"type": "object"},
                "mutates": False,
            }
        ],
    },
    {
        "nativeMethods": ["x-y"],
        "extensions": [
            {
                "name": "trailing\n",
                "method": "x-y",
                "description": "d",
                "inputSchema": {"type": "object"},
                "mutates": False,
            }
        ],
    },
    {"extensions": [{"name": "n", "method": "m", "description": "d", "inputSchema": {"type": "object"}}]},
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=range(len(CONFIGS)))
def test_config_schema_agrees_with_parse_config_on_shape(generated: Path, cfg: Any) -> None:
    """parse_config adds semantic checks (duplicate names, inputSchema validity), never looser ones: what
    it accepts the generated schema accepts, and these shape-only configs get the same verdict."""
    v = schema.strict_validator(_load(generated, "config"))
    try:
        parse_config(cfg)
        engine_ok = True
    except GatewayConfigError:
        engine_ok = False
    assert v.is_valid(cfg) == engine_ok


# ------------------------------------------------------------------ the portable pattern rewrite


PATTERNS = [schema.URL_PATTERN, r"^[a-z][a-z0-9_]{0,63}$", r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$", r"^a.b\s$"]


PIECES = [
    "a",
    "b",
    "z",
    "0",
    "_",
    "-",
    "/",
    ":",
    "h",
    "t",
    "p",
    "\n",
    "\r",
    " ",
    "\x1c",
    "\x85",
    "\ufeff",
    "\u2028",
    "http://",
    "HTTPS://",
    "about:blank",
    "\U0001f600",
]


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from(PATTERNS), st.lists(st.sampled_from(PIECES), max_size=6).map("".join))
def test_portable_pattern_keeps_the_python_meaning(pattern: str, text: str) -> None:
    portable = generate.portable_pattern(pattern)
    assert (re.search(pattern, text) is None) == (re.search(portable, text) is None)


@pytest.mark.parametrize("pattern", [r"\d+", r"\w", r"\bx", r"(?i)abc", r"(?P<n>x)", r"[]a]", r"\S"])
def test_portable_pattern_refuses_constructs_it_cannot_translate(pattern: str) -> None:
    with pytest.raises(generate.PatternError):
        generate.portable_pattern(pattern)
