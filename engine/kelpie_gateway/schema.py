"""The single source of truth for canonical methods, params, defaults and bounds (CONTRACT.md §3).

Everything else derives from :data:`METHODS`:

* :func:`validate_request` — the canonical validator used on every ``begin`` (hand-compiled from the
  table for speed: ≈3 µs against ≈60 µs for a ``jsonschema`` validator on this machine);
* :func:`request_json_schema` / :func:`params_json_schema` — JSON Schema 2020-12 for the generator,
  the docs, the MCP tool schemas and the Zod module; the test suite checks with Hypothesis that
  ``jsonschema`` and :func:`validate_request` give the same verdict on random requests;
* the capability projection (:mod:`kelpie_gateway.catalog`) and the documentation text.

Rules that JSON Schema cannot say are written here too and enforced by the fast validator:
integers must be JSON integers (``10.0`` is refused: CONTRACT.md §3 refuses floats), and an option of
the right type but an unsupported value (``format:"jpeg"``, ``fullPage:true``) is refused
``OPTION_UNSUPPORTED`` rather than ``INVALID_PARAMS``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

JsonObject = dict[str, Any]

VERSION: Final = 1
TIMEOUT_MIN_MS: Final = 1
TIMEOUT_MAX_MS: Final = 30_000
TIMEOUT_DEFAULT_MS: Final = 10_000
MAX_CHARS: Final = 12_000
MAX_ELEMENTS: Final = 200
MAX_TEXT_CODE_POINTS: Final = 200_000
MAX_URL_CHARS: Final = 65_536
MAX_TAB_ID_CHARS: Final = 256
MAX_REF_CHARS: Final = 64
MAX_CURSOR_CHARS: Final = 128
MAX_SNAPSHOT_ID_CHARS: Final = 64
MAX_FIND_CHARS: Final = 200
"""``find.name`` and ``find.text`` are at most 200 code points (CONTRACT.md §9 v1.2)."""
MAX_ROLE_CHARS: Final = 128
SNAPSHOT_INCLUDE: Final = ("all", "controls")
"""``tab.snapshot`` ``include`` values (CONTRACT.md §9 v1.2); ``all`` is the default."""
ELEMENT_STATES: Final = (
    "checked",
    "collapsed",
    "disabled",
    "expanded",
    "invalid",
    "mixed",
    "offscreen",
    "pressed",
    "readonly",
    "required",
    "selected",
)
"""The closed set of snapshot element ``states`` (CONTRACT.md §9 v1.1), sorted."""
MAX_EXTENSION_TOOL_NAMES: Final = 20
_NOT_SPACE: Final = r"[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
URL_PATTERN: Final = r"^(?:[hH][tT][tT][pP][sS]?://" + _NOT_SPACE + r"+|about:blank)(?!\n)$"
r"""Same meaning in Python ``re`` and ECMAScript: explicit code points instead of ``\s`` (whose members
differ between the two), and ``(?!\n)$`` so that Python's ``$`` (which also matches before a final
newline) means "end of string" as in ECMAScript. JSON Schema users see this pattern; ``tools/generate.py`` checks the two engines agree."""
_URL_RE: Final = re.compile(URL_PATTERN)


class ParamError(ValueError):
    """A request or params refusal: ``code`` (INVALID_REQUEST / INVALID_PARAMS / OPTION_UNSUPPORTED /
    UNSUPPORTED_METHOD) and ``pointer`` (JSON Pointer of the offending value, relative to the request)."""

    def __init__(self, code: str, pointer: str, message: str) -> None:
        super().__init__(f"{pointer or '/'}: {message}")
        self.code = code
        self.pointer = pointer


@dataclass(frozen=True)
class Param:
    """One parameter. ``kind``: string | integer | boolean | object. Bounds are inclusive.

    String lengths count Unicode code points. ``supported`` lists the only values this version accepts
    (others of the right type are refused OPTION_UNSUPPORTED); ``choices`` lists the only values the param
    has at all (others are refused INVALID_PARAMS). ``apply_default: False`` documents ``default`` (in the
    schema and docs) without writing it into the normalized params (absent means the default).
    ``properties`` gives an ``object`` param a closed set of members (each a Param of its own, refused
    INVALID_PARAMS under ``/params/<name>/<member>``), at least ``min_properties`` of them present."""

    name: str
    kind: str
    description: str
    required: bool = False
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    supported: tuple[Any, ...] | None = None
    choices: tuple[str, ...] | None = None
    apply_default: bool = True
    properties: tuple[Param, ...] | None = None
    min_properties: int = 0


@dataclass(frozen=True)
class Method:
    """One canonical method (CONTRACT.md §3).

    ``endpoints``: native endpoints it needs; ``reader``: needs ``fixedReader``; ``tab_scoped``: acts on
    one tab (``tabId`` param, targeting rules of §5); ``browser``: needs a renderer."""

    name: str
    mutates: bool
    endpoints: tuple[str, ...]
    params: tuple[Param, ...]
    summary: str
    result: str
    reader: bool = False
    tab_scoped: bool = False
    browser: bool = True
    by_name: Mapping[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {p.name: p for p in self.params})


def _timeout() -> Param:
    return Param(
        "timeoutMs",
        "integer",
        "Renderer deadline in milliseconds.",
        default=TIMEOUT_DEFAULT_MS,
        minimum=TIMEOUT_MIN_MS,
        maximum=TIMEOUT_MAX_MS,
    )


def _tab_id(required: bool = False) -> Param:
    text = "Target tab id (from tabs.list)." + ("" if required else " Required in direct targeting.")
    return Param("tabId", "string", text, required=required, min_length=1, max_length=MAX_TAB_ID_CHARS)


def _ref() -> Param:
    return Param(
        "ref",
        "string",
        "Element ref from this tab's latest tab.snapshot.",
        required=True,
        min_length=1,
        max_length=MAX_REF_CHARS,
    )


METHODS: Final[dict[str, Method]] = {
    m.name: m
    for m in (
        Method(
            "documentation",
            False,
            (),
            (),
            "Markdown reference of the methods this gateway advertises.",
            "{format:'markdown', text}",
            browser=False,
        ),
        Method(
            "capabilities",
            False,
            (),
            (),
            "What this gateway offers: methods, extensions, targeting, limits.",
            "{version, methods, extensions, targeting, realm, allowActions, browserAvailable, limits}",
            browser=False,
        ),
        Method(
            "tabs.list",
            False,
            ("get-tabs",),
            (),
            "List the open tabs (crashed:true marks a tab whose renderer crashed).",
            "{tabs:[{tabId, generation, url, title, active, crashed?, popupsClosed?}]}",
        ),
        Method(
            "tabs.select",
            True,
            ("switch-tab",),
            (_tab_id(True),),
            "Make a tab the selected (visible) tab.",
            "{tabId, generation}",
        ),
        Method(
            "tabs.open",
            True,
            ("new-tab",),
            (
                Param(
                    "url",
                    "string",
                    "Page to open (http, https or about:blank).",
                    max_length=MAX_URL_CHARS,
                    pattern=URL_PATTERN,
                ),
            ),
            "Open a new tab.",
            "{tabId, generation, download?}",
        ),
        Method("tabs.close", True, ("close-tab",), (_tab_id(True),), "Close a tab.", "{closed: true}"),
        Method(
            "tab.snapshot",
            False,
            ("browser-control-evaluate",),
            (
                _tab_id(),
                Param(
                    "maxChars",
                    "integer",
                    "Page text budget in UTF-16 code units.",
                    default=MAX_CHARS,
                    minimum=1,
                    maximum=MAX_CHARS,
                ),
                Param(
                    "maxElements",
                    "integer",
                    "Most elements returned per page (text entry, then buttons and toggles, then select "
                    "options, then links first; listed in page order).",
                    default=MAX_ELEMENTS,
                    minimum=1,
                    maximum=MAX_ELEMENTS,
                ),
                Param(
                    "scope",
                    "string",
                    "A ref from this tab's latest snapshot: read only that element's subtree (a new snapshot).",
                    min_length=1,
                    max_length=MAX_REF_CHARS,
                ),
                Param(
                    "cursor",
                    "string",
                    "The `next` of this tab's latest snapshot page: the next page of the same snapshot "
                    "(alone: no include, find or since with it).",
                    min_length=1,
                    max_length=MAX_CURSOR_CHARS,
                ),
                Param(
                    "include",
                    "string",
                    "`controls`: only elements to act on (text entry, buttons and toggles, options, links, "
                    "other controls), no page text: the smallest answer to act on.",
                    default="all",
                    choices=SNAPSHOT_INCLUDE,
                    apply_default=False,
                ),
                Param(
                    "find",
                    "object",
                    "Only the elements that match every criterion given (role equal, name contained in the "
                    "label, text contained in the lines around the element; case-insensitive), and as text "
                    "the lines around each match.",
                    properties=(
                        Param(
                            "role", "string", "Role, e.g. button.", min_length=1, max_length=MAX_ROLE_CHARS
                        ),
                        Param(
                            "name", "string", "Part of the label.", min_length=1, max_length=MAX_FIND_CHARS
                        ),
                        Param(
                            "text",
                            "string",
                            "Part of the nearby text.",
                            min_length=1,
                            max_length=MAX_FIND_CHARS,
                        ),
                    ),
                    min_properties=1,
                ),
                Param(
                    "since",
                    "string",
                    "The `snapshot` id of this tab's latest snapshot (refs invalidated by an action are "
                    "fine): what changed since, as `changes`, with new refs for added and changed elements.",
                    min_length=1,
                    max_length=MAX_SNAPSHOT_ID_CHARS,
                ),
                _timeout(),
            ),
            "Value-free text and element snapshot of a tab (element states, range values, link urls, select "
            "options); issues the refs that click and type take. When `truncated` comes with `next`, pass it "
            'as `cursor` for the next page of the same snapshot. Cheaper reads: `include:"controls"`, '
            "`find`, and `since` after an action.",
            "{tabId, generation, snapshot, url, title, text, truncated, next?, removed?, changes?, "
            "elements:[{ref, tag, role, label, states?, value?, url?, …}]}",
            reader=True,
            tab_scoped=True,
        ),
        Method(
            "tab.click",
            True,
            ("browser-control-evaluate",),
            (_tab_id(), _ref(), _timeout()),
            "Activate the element behind a ref (synthetic DOM click); on a select option, choose it "
            "(a multiple select toggles it). Disabled targets are refused NOT_ACTIONABLE.",
            "{clicked: true}",
            reader=True,
            tab_scoped=True,
        ),
        Method(
            "tab.type",
            True,
            ("browser-control-evaluate",),
            (
                _tab_id(),
                _ref(),
                Param(
                    "text",
                    "string",
                    "Text to append (code points).",
                    required=True,
                    min_length=1,
                    max_length=MAX_TEXT_CODE_POINTS,
                ),
                _timeout(),
            ),
            "Append text to a text input, textarea or contenteditable element; refused NOT_ACTIONABLE "
            "when disabled, EFFECT_NOT_OBSERVED when the page does not keep the text.",
            "{typed: <code points appended>}",
            reader=True,
            tab_scoped=True,
        ),
        Method(
            "tab.navigate",
            True,
            ("navigate",),
            (
                _tab_id(),
                Param(
                    "url",
                    "string",
                    "Destination (http, https or about:blank).",
                    required=True,
                    max_length=MAX_URL_CHARS,
                    pattern=URL_PATTERN,
                ),
                _timeout(),
            ),
            "Navigate a tab; its refs are invalidated.",
            "{tabId, generation, url, download?}",
            tab_scoped=True,
        ),
        Method(
            "tab.screenshot",
            False,
            ("screenshot",),
            (
                _tab_id(),
                Param("format", "string", "Image format; only png.", default="png", supported=("png",)),
                Param(
                    "fullPage",
                    "boolean",
                    "Viewport only; true is not supported.",
                    default=False,
                    supported=(False,),
                ),
                _timeout(),
            ),
            "PNG of the tab's viewport.",
            "{mimeType:'image/png', data:<base64>, width, height}",
            tab_scoped=True,
        ),
        Method(
            "extension.call",
            False,
            (),
            (
                Param(
                    "name", "string", "Admitted extension name.", required=True, min_length=1, max_length=64
                ),
                Param(
                    "arguments",
                    "object",
                    "Arguments, validated against the extension's inputSchema.",
                    default={},
                ),
            ),
            "Call an admitted extension.",
            "the handler's result",
            browser=False,
        ),
    )
}
"""Every canonical method. ``extension.call`` mutates per descriptor; its endpoint is the descriptor's."""

NATIVE_ENDPOINTS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(e for m in METHODS.values() for e in m.endpoints)
)
"""Every native endpoint a core method can need, in table order (a host implementing all of them gets
every core method advertised)."""

_REQUEST_KEYS: Final = frozenset({"version", "id", "method", "params"})
_ID_TYPES: Final = (str, int, float)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return type(value) is int
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, dict)


_KIND_WORD: Final = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "a boolean",
    "object": "an object",
}


def _check_param(p: Param, value: Any, pointer: str) -> None:
    if not _type_ok(p.kind, value):
        raise ParamError("INVALID_PARAMS", pointer, f"must be {_KIND_WORD[p.kind]}")
    if p.kind == "integer":
        if p.minimum is not None and value < p.minimum:
            raise ParamError("INVALID_PARAMS", pointer, f"must be at least {p.minimum}")
        if p.maximum is not None and value > p.maximum:
            raise ParamError("INVALID_PARAMS", pointer, f"must be at most {p.maximum}")
    elif p.kind == "string":
        n = len(value)
        if p.min_length is not None and n < p.min_length:
            raise ParamError("INVALID_PARAMS", pointer, f"must have at least {p.min_length} code point(s)")
        if p.max_length is not None and n > p.max_length:
            raise ParamError(
                "INVALID_PARAMS", pointer, f"must have at most {p.max_length} code points (has {n})"
            )
        if p.pattern is not None and _URL_RE.fullmatch(value) is None:
            raise ParamError("INVALID_PARAMS", pointer, "must be an http(s) URL or about:blank")
    if p.choices is not None and value not in p.choices:
        raise ParamError("INVALID_PARAMS", pointer, f"must be one of {', '.join(map(repr, p.choices))}")
    if p.properties is not None:
        _check_members(p, value, pointer)
    if p.supported is not None and value not in p.supported:
        raise ParamError("OPTION_UNSUPPORTED", pointer, f"only {list(p.supported)!r} is supported")


def _check_members(p: Param, value: JsonObject, pointer: str) -> None:
    """An ``object`` param with a closed set of members (``p.properties``)."""
    members = {m.name: m for m in p.properties or ()}
    for key in value:
        if key not in members:
            raise ParamError("INVALID_PARAMS", f"{pointer}/{_escape(key)}", f"unknown field of {p.name}")
    for m in p.properties or ():
        if m.name in value:
            _check_param(m, value[m.name], f"{pointer}/{m.name}")
        elif m.required:
            raise ParamError("INVALID_PARAMS", f"{pointer}/{m.name}", "is required")
    if len(value) < p.min_properties:
        names = ", ".join(m.name for m in p.properties or ())
        raise ParamError("INVALID_PARAMS", pointer, f"needs at least {p.min_properties} of {names}")


def validate_params(method: Method, params: Any) -> JsonObject:
    """Validate ``params`` for ``method`` and return a new dict with defaults applied.

    Raises :class:`ParamError` (pointer under ``/params``). Unknown fields are refused, never ignored.
    """
    if not isinstance(params, dict):
        raise ParamError("INVALID_PARAMS", "/params", "must be an object")
    by_name = method.by_name
    for key in params:
        if key not in by_name:
            raise _unknown_field("INVALID_PARAMS", "/params", key, f"for {method.name}")
    out: JsonObject = {}
    for p in method.params:
        if p.name in params:
            value = params[p.name]
            _check_param(p, value, f"/params/{p.name}")
            out[p.name] = value
        elif p.required:
            raise ParamError("INVALID_PARAMS", f"/params/{p.name}", "is required")
        elif p.default is not None and p.apply_default:
            out[p.name] = dict(p.default) if isinstance(p.default, dict) else p.default
    return out


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


_FIELD_NAME: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]{0,39}\Z")


def _unknown_field(code: str, parent: str, key: str, where: str = "") -> ParamError:
    """An unknown member ``key`` of the object at ``parent``: the pointer names it when it looks like a
    field name (a typo: ``/params/tabid``); anything else — a bearer token sent as a name — is only
    described, at its parent's pointer (issue 27: messages quote a client string only in the shape they
    expect)."""
    suffix = f" {where}" if where else ""
    if _FIELD_NAME.match(key):
        return ParamError(code, f"{parent}/{_escape(key)}", f"unknown field{suffix}")
    return ParamError(
        code, parent, f"unknown field{suffix} (a {len(key)}-character name that is not a field name)"
    )


def validate_request(request: Any) -> tuple[Any, Method | None, str, JsonObject]:
    """Validate the canonical envelope of a request (CONTRACT.md §3).

    Returns ``(id, method or None, method name, normalized params)``; ``method`` is None for an unknown
    method name (the caller refuses UNSUPPORTED_METHOD). Raises :class:`ParamError`; its ``.request_id``
    attribute carries the id when it could be read.
    """
    if not isinstance(request, dict):
        raise ParamError("INVALID_REQUEST", "", "a canonical request must be a JSON object")
    request_id: Any = request.get("id")
    kind = type(request_id)
    if kind is int:  # the usual ids first (exact types: what the JSON parser makes)
        if not -(2**63) <= request_id < 2**64:
            raise ParamError("INVALID_REQUEST", "/id", "an integer id must fit in 64 bits")
    elif kind is not str and request_id is not None:
        _check_unusual_id(request_id)
    if not _REQUEST_KEYS.issuperset(request):
        for key in request:
            if key not in _REQUEST_KEYS:
                raise _with_id(_unknown_field("INVALID_REQUEST", "", key), request_id)
    version = request.get("version")
    if type(version) is not int or version != VERSION:
        raise _with_id(ParamError("INVALID_REQUEST", "/version", "must be the integer 1"), request_id)
    name = request.get("method")
    if not isinstance(name, str):
        raise _with_id(ParamError("INVALID_REQUEST", "/method", "must be a string"), request_id)
    params = request.get("params", {})
    if not isinstance(params, dict):
        raise _with_id(ParamError("INVALID_REQUEST", "/params", "must be an object"), request_id)
    method = METHODS.get(name)
    if method is None:
        return request_id, None, name, params
    try:
        return request_id, method, name, validate_params(method, params)
    except ParamError as exc:
        raise _with_id(exc, request_id) from None


def _check_unusual_id(request_id: Any) -> None:
    """An id that is not an exact ``int``, ``str`` or None: floats and subclasses (raises ParamError)."""
    if not isinstance(request_id, _ID_TYPES) or isinstance(request_id, bool):
        raise ParamError("INVALID_REQUEST", "/id", "must be a string, a number or null")
    if isinstance(request_id, int) and not -(2**63) <= request_id < 2**64:
        raise ParamError("INVALID_REQUEST", "/id", "an integer id must fit in 64 bits")
    if isinstance(request_id, float) and not math.isfinite(request_id):
        raise ParamError("INVALID_REQUEST", "/id", "must be a finite number")
    if isinstance(request_id, float) and request_id.is_integer() and abs(request_id) >= 2.0**64:
        # the JSON parser turns integers beyond 64 bits into floats: such an id cannot be echoed exactly
        raise ParamError("INVALID_REQUEST", "/id", "an integer id must fit in 64 bits")


def _with_id(exc: ParamError, request_id: Any) -> ParamError:
    exc.request_id = request_id  # type: ignore[attr-defined]
    return exc


# ---------------------------------------------------------------- JSON Schema (generated, 2020-12)


def param_json_schema(p: Param) -> JsonObject:
    """JSON Schema of one parameter (``integer`` means a JSON integer; see module doc)."""
    s: JsonObject = {"type": p.kind, "description": p.description}
    if p.minimum is not None:
        s["minimum"] = p.minimum
    if p.maximum is not None:
        s["maximum"] = p.maximum
    if p.min_length is not None:
        s["minLength"] = p.min_length
    if p.max_length is not None:
        s["maxLength"] = p.max_length
    if p.pattern is not None:
        s["pattern"] = p.pattern
    if p.supported is not None:
        s["enum"] = list(p.supported)
    if p.choices is not None:
        s["enum"] = list(p.choices)
    if p.properties is not None:
        s["properties"] = {m.name: param_json_schema(m) for m in p.properties}
        s["additionalProperties"] = False
        required = [m.name for m in p.properties if m.required]
        if required:
            s["required"] = required
        if p.min_properties:
            s["minProperties"] = p.min_properties
    if p.default is not None:
        s["default"] = p.default
    return s


def params_json_schema(method: Method, *, tab_required: bool = False) -> JsonObject:
    """JSON Schema of ``method``'s params object (``additionalProperties: false``)."""
    required = [p.name for p in method.params if p.required or (tab_required and p.name == "tabId")]
    schema: JsonObject = {
        "type": "object",
        "properties": {p.name: param_json_schema(p) for p in method.params},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def request_json_schema(methods: list[str] | None = None) -> JsonObject:
    """JSON Schema 2020-12 of a canonical request for ``methods`` (default: all of them)."""
    names = list(METHODS) if methods is None else methods
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kelpie.invalid/schema/v1/request.json",
        "title": "Kelpie canonical request v1",
        "type": "object",
        "properties": {
            "version": {"type": "integer", "const": VERSION},
            "id": {"type": ["string", "number", "null"]},
            "method": {"enum": names},
            "params": {"type": "object"},
        },
        "required": ["version", "method"],
        "additionalProperties": False,
        "allOf": [
            {
                "if": {"properties": {"method": {"const": n}}, "required": ["method"]},
                "then": {"properties": {"params": params_json_schema(METHODS[n])}}
                | ({"required": ["params"]} if any(p.required for p in METHODS[n].params) else {}),
            }
            for n in names
        ],
    }


def envelope_json_schema() -> JsonObject:
    """JSON Schema 2020-12 of the response envelope (CONTRACT.md §4)."""
    from .errors import ERROR_CODES

    base = {"version": {"const": VERSION}, "id": {"type": ["string", "number", "null"]}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kelpie.invalid/schema/v1/envelope.json",
        "title": "Kelpie response envelope v1",
        "oneOf": [
            {
                "type": "object",
                "properties": {**base, "success": {"const": True}, "result": {"type": "object"}},
                "required": ["version", "id", "success", "result"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    **base,
                    "success": {"const": False},
                    "error": {
                        "type": "object",
                        "properties": {
                            "code": {"enum": sorted(ERROR_CODES)},
                            "message": {"type": "string"},
                            "retryable": {"type": "boolean"},
                        },
                        "required": ["code", "message", "retryable"],
                        "additionalProperties": False,
                    },
                    "mayHaveCompleted": {"type": "boolean"},
                },
                "required": ["version", "id", "success", "error", "mayHaveCompleted"],
                "additionalProperties": False,
                # v1.1: an unknown outcome is never an invitation to resend.
                "if": {"properties": {"mayHaveCompleted": {"const": True}}},
                "then": {"properties": {"error": {"properties": {"retryable": {"const": False}}}}},
            },
        ],
    }


def strict_validator(schema: JsonObject) -> Any:
    """A ``jsonschema`` 2020-12 validator (built once) whose ``integer`` excludes floats such as ``1.0``
    and whose ``number`` excludes booleans, matching the fast validator and CONTRACT.md §3."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _c, v: type(v) is int)
    cls = jsonschema.validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]
    return cls(schema, format_checker=None)
