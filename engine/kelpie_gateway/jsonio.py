"""JSON in and out of the gateway (CONTRACT.md §4, §8).

* :func:`loads` parses UTF-8 JSON with orjson after checking the byte cap *before* parsing. Lone
  surrogate escapes (``"\\ud800"``), invalid UTF-8, NaN/Infinity and nesting deeper than orjson's
  limit are all refused with :class:`JsonError` (never any other exception).
* :func:`dumps` always produces well-formed UTF-8: strings holding lone surrogates (which can only come
  from Python callers or a buggy renderer) are repaired to U+FFFD first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import orjson

_T = TypeVar("_T")
_SEQUENCES: Final = (list, tuple)

MAX_REQUEST_BYTES: Final = 4 * 1024 * 1024
"""Canonical or JSON-RPC request cap (4 MiB, CONTRACT.md §8)."""
MAX_RESULT_BYTES: Final = 32 * 1024 * 1024
"""Renderer result cap (32 MiB, CONTRACT.md §8)."""


class JsonError(ValueError):
    """Input could not be taken as JSON. ``code`` is INVALID_JSON or REQUEST_TOO_LARGE."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _lenient(raw: bytes | bytearray | memoryview) -> Any:
    """Parse JSON whose only fault is lone-surrogate escapes (``"\\ud800"``): grammatical JSON that a
    page's text produces through CDP or WebKit. The strings are repaired to U+FFFD."""
    try:
        return _repair(json.loads(bytes(raw), parse_constant=_refuse_constant))
    except (ValueError, RecursionError) as exc:
        raise JsonError("INVALID_JSON", f"not valid JSON: {exc}") from None


def loads(
    data: str | bytes | bytearray | memoryview, *, cap: int = MAX_REQUEST_BYTES, lone_surrogates: bool = False
) -> Any:
    """Parse JSON text of at most ``cap`` UTF-8 bytes; raises :class:`JsonError` only.

    ``lone_surrogates=True`` (renderer results, CONTRACT.md §8) accepts ``\\uD800``-style escapes of lone
    surrogates and replaces them with U+FFFD; requests from clients are refused ``INVALID_JSON`` instead."""
    if isinstance(data, str):
        try:
            raw: bytes | bytearray | memoryview = data.encode("utf-8")
        except UnicodeEncodeError:
            raise JsonError(
                "INVALID_JSON", "input holds a lone surrogate; JSON text must be valid UTF-8"
            ) from None
    else:
        raw = data
    size = len(raw)
    if size > cap:
        raise JsonError(
            "REQUEST_TOO_LARGE", f"the JSON is {size} bytes; the cap is {cap} bytes ({cap >> 20} MiB)"
        )
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if lone_surrogates and "surrogate" in str(exc):
            return _lenient(raw)
        raise JsonError("INVALID_JSON", f"not valid JSON: {exc}") from None


def _repair(value: Any) -> Any:
    if isinstance(value, str):
        if value.isascii():  # no surrogate is ASCII: nothing to repair
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            # UTF-16 round trip: a surrogate pair stored as two code points recombines; every lone
            # surrogate becomes exactly one U+FFFD.
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, Mapping):
        return {_repair(k): _repair(v) for k, v in value.items()}
    if isinstance(value, _SEQUENCES):
        return [_repair(v) for v in value]
    return value


def repair_surrogates(value: Any) -> Any:
    """Return ``value`` with lone surrogates replaced by U+FFFD in every string (keys included)."""
    return _repair(value)


def dumps(value: Any) -> bytes:
    """Serialise to compact UTF-8 JSON bytes; never raises for str/lone-surrogate content.

    Raises ``TypeError`` only for values that are not JSON types (a programming error).
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        if "surrogates" in str(exc) or "UTF-8" in str(exc):
            return orjson.dumps(_repair(value))
        raise TypeError(str(exc)) from None


def size_of(value: Any) -> int:
    """UTF-8 byte length of ``value`` serialised as JSON."""
    return len(dumps(value))


def clone(value: _T) -> _T:
    """An independent deep copy of a JSON value (a serialise/parse round trip: faster than
    ``copy.deepcopy`` for JSON, and lone surrogates are repaired on the way)."""
    copied: _T = orjson.loads(dumps(value))
    return copied
