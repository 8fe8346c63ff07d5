"""JSON in and out of the gateway (CONTRACT.md §4, §8).

* :func:`loads` parses UTF-8 JSON with orjson after checking the byte cap *before* parsing. Lone
  surrogate escapes (``"\\ud800"``), invalid UTF-8, NaN/Infinity and nesting deeper than orjson's
  limit are all refused with :class:`JsonError` (never any other exception).
* :func:`dumps` always produces well-formed UTF-8: strings holding lone surrogates (which can only come
  from Python callers or a buggy renderer) are repaired to U+FFFD first.
* **Duplicate member names are refused** (:class:`DuplicateMember`, issue 27): orjson, like most parsers,
  keeps the last of two equal names silently, so ``{"method":"tabs.list","method":"tabs.close"}`` closed
  a tab. :func:`loads` refuses them (``unique=False`` for the host's own messages, see :func:`loads`), and
  :func:`check_unique` is the check for a text parsed elsewhere. It is exact and costs a count of the
  colons in C for the usual request: every member of an object has exactly one colon outside strings, so
  when the text's colons number the members of the parsed value no name was repeated (and no string holds
  a colon); otherwise the parsed value is written back (orjson, in C) and the colons compared again —
  equal unless a member was dropped, since a string writes its colons back literally — and only a text
  that escapes a colon (``\\u003a``) or still differs is parsed once more with the standard library, which
  names the repeated member.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import orjson

from .errors import NAME_SHAPE, shown

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


class DuplicateMember(JsonError):
    """The JSON text repeats a member name inside one object (RFC 8259 §4 says names SHOULD be unique,
    I-JSON, RFC 7493 §2.3, that they MUST): code INVALID_JSON. The MCP frontend answers it ``-32600``
    (the text parses, the message is not an acceptable request)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            "INVALID_JSON",
            f"member {shown(name, 'a member name', NAME_SHAPE)} appears twice in one object: "
            "a JSON object must not repeat a name (RFC 8259 §4, I-JSON); nothing was done",
        )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise DuplicateMember(name)
            seen.add(name)
    return out


def _lenient(raw: bytes | bytearray | memoryview, unique: bool) -> Any:
    """Parse JSON whose only fault is lone-surrogate escapes (``"\\ud800"``): grammatical JSON that a
    page's text produces through CDP or WebKit. The strings are repaired to U+FFFD."""
    hook = _unique_pairs if unique else None
    try:
        return _repair(json.loads(bytes(raw), parse_constant=_refuse_constant, object_pairs_hook=hook))
    except DuplicateMember:
        raise
    except (ValueError, RecursionError) as exc:
        raise JsonError("INVALID_JSON", f"not valid JSON: {exc}") from None


def _members(value: Any) -> int:
    """The members of ``value``'s top-level object and of the objects directly inside it: never more than
    the value holds (what :func:`check_unique` compares first)."""
    if type(value) is not dict:
        return 0
    n = len(value)
    for inner in value.values():
        if type(inner) is dict:
            n += len(inner)
    return n


def check_unique(raw: bytes | bytearray | memoryview, value: Any) -> None:
    """Raise :class:`DuplicateMember` when the JSON text ``raw``, which parsed to ``value``, repeats a
    member name in any object at any depth (module docstring: exact, a colon count for the usual
    request)."""
    if type(raw) is memoryview:  # no count() of its own
        raw = bytes(raw)
    colons = raw.count(b":")
    if colons == _members(value):  # every colon is a member's and each one is in value: none was dropped
        return
    try:
        again = orjson.dumps(value).count(b":")
    except orjson.JSONEncodeError:  # what orjson parsed it writes back; belt and braces
        again = -1
    if colons == again and b"\\u003" not in raw:
        return  # the same colons written back: no member (and none of its strings) was dropped
    try:
        json.loads(bytes(raw), parse_constant=_refuse_constant, object_pairs_hook=_unique_pairs)
    except DuplicateMember:
        raise
    except (ValueError, RecursionError):
        return  # not for the standard library to judge (orjson's own refusal is the caller's)


def loads(
    data: str | bytes | bytearray | memoryview,
    *,
    cap: int = MAX_REQUEST_BYTES,
    lone_surrogates: bool = False,
    unique: bool = True,
) -> Any:
    """Parse JSON text of at most ``cap`` UTF-8 bytes; raises :class:`JsonError` only.

    ``lone_surrogates=True`` (renderer results, CONTRACT.md §8) accepts ``\\uD800``-style escapes of lone
    surrogates and replaces them with U+FFFD; requests from clients are refused ``INVALID_JSON`` instead.
    ``unique`` (the default: clients' requests, the config) refuses a repeated member name
    (:class:`DuplicateMember`); the host's own messages (``advance``, ``cancel``: made by its serialiser,
    never by a client) are read as orjson reads them, the last name winning, so their hot path pays
    nothing."""
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
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if lone_surrogates and "surrogate" in str(exc):
            return _lenient(raw, unique)
        raise JsonError("INVALID_JSON", f"not valid JSON: {exc}") from None
    if unique and type(raw) is bytes and type(value) is dict:
        # check_unique's first comparison inlined (the hot path: a request whose every colon is one of its
        # top two levels' members); anything else takes check_unique.
        members = len(value)
        for inner in value.values():
            if type(inner) is dict:
                members += len(inner)
        if raw.count(b":") != members:
            check_unique(raw, value)
    elif unique:
        check_unique(raw, value)
    return value


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
