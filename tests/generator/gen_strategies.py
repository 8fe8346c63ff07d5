"""Hypothesis strategies for canonical requests: mostly near-valid requests with one or more faults
(bounds, wrong types, unknown fields, floats, odd URLs), so both verdicts are well represented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from kelpie_gateway import schema

WHITESPACE_ISH = [
    "\n",
    "\t",
    " ",
    "\x0b",
    "\x1c",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2028",
    "\u3000",
    "\ufeff",
]
chars = st.characters(exclude_categories=("Cs",))
small_text = st.text(chars, max_size=6)
url_like = st.builds(
    lambda a, b, c: a + b + c,
    st.sampled_from(["http://", "https://", "HtTpS://", "ftp://", "", "about:blank", "about:", "http:/"]),
    st.text(st.sampled_from(["a", "/", ".", ":", "?", "\U0001f600", *WHITESPACE_ISH]), max_size=5),
    st.sampled_from(["", "\n", "\n\n", " ", "x"]),
)
BOUNDARY_INTS = [
    -(2**31),
    -1,
    0,
    1,
    2,
    199,
    200,
    201,
    9999,
    10000,
    11999,
    12000,
    12001,
    29999,
    30000,
    30001,
    2**40,
]


def _rare(draw: st.DrawFn, one_in: int) -> bool:
    """True about once in ``one_in`` draws (a middle value: Hypothesis favours the ends of a range)."""
    return draw(st.integers(0, one_in - 1)) == one_in // 2


def _any_value(ints: bool = True) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(BOUNDARY_INTS) if ints else st.just(0),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
        small_text,
        st.lists(st.integers(-3, 3), max_size=2),
        st.dictionaries(small_text, st.integers(-3, 3), max_size=2),
    )


def _sized_text(lo: int | None, hi: int | None) -> st.SearchStrategy[str]:
    top = hi if hi is not None and hi <= 300 else 8
    lengths = st.sampled_from(sorted({0, 1, 2, max(0, top - 1), top, top + 1}))
    unit = st.sampled_from(["a", "\U0001f600", "\u00e9"])
    return st.builds(lambda n, u: u * n, lengths, unit)


def value_for(p: schema.Param) -> st.SearchStrategy[Any]:
    if p.kind == "integer":
        good: st.SearchStrategy[Any] = st.one_of(
            st.sampled_from(BOUNDARY_INTS), st.integers(min_value=-5, max_value=40000)
        )
    elif p.kind == "string":
        if p.pattern is not None:
            good = url_like
        elif p.supported is not None:
            good = st.sampled_from([*p.supported, "jpeg", "PNG", ""])
        elif p.choices is not None:
            good = st.sampled_from([*p.choices, p.choices[-1].upper(), ""])
        else:
            good = st.one_of(_sized_text(p.min_length, p.max_length), small_text)
    elif p.kind == "boolean":
        good = st.booleans()
    elif p.properties is not None:  # closed members: mostly valid ones, sometimes none or an unknown one
        good = st.fixed_dictionaries({}, optional={m.name: value_for(m) for m in p.properties})
        good = st.one_of(good, st.dictionaries(st.sampled_from(["label", "Role", ""]), _any_value(), max_size=1))
    else:
        good = st.dictionaries(small_text, _any_value(), max_size=3)
    return st.one_of(good, _any_value()) if p.kind == "object" else good


@st.composite
def requests(draw: st.DrawFn) -> Any:
    """A JSON-compatible value that is usually a canonical request and sometimes not."""
    if _rare(draw, 40):
        return draw(_any_value())
    name = draw(
        st.one_of(st.sampled_from(list(schema.METHODS)), st.sampled_from(["tabs.nope", "", "TAB.TYPE"]))
    )
    method = schema.METHODS.get(name)
    params: Any = {}
    if method is not None:
        for p in method.params:
            if draw(st.booleans()):
                params[p.name] = draw(_any_value()) if _rare(draw, 8) else draw(value_for(p))
    if _rare(draw, 8):
        params[draw(st.sampled_from(["extra", "__proto__", "TabId", "constructor", ""]))] = draw(_any_value())
    if _rare(draw, 15):
        params = draw(_any_value())
    request: dict[str, Any] = {}
    if not _rare(draw, 15):
        request["version"] = draw(_any_value()) if _rare(draw, 6) else 1
    if not _rare(draw, 15):
        request["method"] = name if not _rare(draw, 15) else draw(_any_value())
    if draw(st.booleans()):
        request["params"] = params
    if draw(st.booleans()):
        request["id"] = (
            draw(_any_value()) if _rare(draw, 6) else draw(st.one_of(small_text, st.integers(-99, 99)))
        )
    if _rare(draw, 10):
        request[draw(st.sampled_from(["extra", "Version", "__proto__", "jsonrpc"]))] = draw(_any_value())
    return request


def javascript_safe(value: Any) -> bool:
    """False for values JavaScript reads differently: integral floats (10.0 reads as 10) and integers
    beyond 2^53 (precision)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, float):
        return not value.is_integer()
    if isinstance(value, int):
        return abs(value) <= 2**53 - 1
    if isinstance(value, dict):
        return all(javascript_safe(k) and javascript_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(javascript_safe(v) for v in value)
    return False


def load_cases(out: Path) -> list[dict[str, Any]]:
    """The parity cases of a generator output folder."""
    cases: list[dict[str, Any]] = json.loads((out / "parity" / "fixtures.json").read_text("utf-8"))["cases"]
    return cases
