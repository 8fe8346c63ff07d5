"""Gateway config and extension descriptors (CONTRACT.md §2).

:func:`parse_config` validates every field once at create, applies defaults, compiles each
extension's ``inputSchema`` once, and raises :class:`~kelpie_gateway.errors.GatewayConfigError` whose
envelope message starts with the JSON Pointer of the first bad field, e.g.
``/extensions/1/name: duplicate extension name 'x' (config)``. Nothing is created on error.

Choices where the contract is silent (see ``docs/contract-notes.md``): the config error code is
``INVALID_REQUEST``; duplicate ``nativeMethods`` are refused; an extension's ``inputSchema`` must be a
valid JSON Schema 2020-12 object schema (``"type": "object"``, as MCP requires of tool schemas).

``refArguments`` (optional, up to 4 names): top-level string arguments of the extension that hold element
refs of the gateway (§6). The gateway checks them like ``tab.click``'s ``ref`` before anything is
dispatched and hands the host the captured nodes behind them in the dispatch params' ``kelpieCaptured``
field (see ``docs/contract-notes.md``, "Ref-bearing extensions").
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from . import jsonio
from .errors import NAME_SHAPE, GatewayConfigError, JsonObject, failure, shown
from .schema import strict_validator

NAME_PATTERN: Final = r"^[a-z][a-z0-9_]{0,63}(?!\n)$"
KEBAB_PATTERN: Final = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?!\n)$"
"""``(?!\n)$``: end of string in both Python ``re`` and ECMAScript (Python's bare ``$`` also matches
before a final newline)."""
MAX_LIST: Final = 256
MAX_REF_ARGUMENTS: Final = 4
ARGUMENT_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_]{0,63}(?!\n)$"
CAPTURED_FIELD: Final = "kelpieCaptured"
"""The field the gateway adds to a ref-bearing extension's dispatch params (``refArguments``)."""
_ARGUMENT_RE: Final = re.compile(ARGUMENT_PATTERN)
RETIREMENT_GRACE_MAX_MS: Final = 5_000
"""CONTRACT.md §5 (v1.1): a cancelled dispatch may hold its lane at most ``timeoutMs`` + this grace."""
RETIREMENT_GRACE_DEFAULT_MS: Final = RETIREMENT_GRACE_MAX_MS
_NAME_RE: Final = re.compile(NAME_PATTERN)
_KEBAB_RE: Final = re.compile(KEBAB_PATTERN)


def config_json_schema() -> JsonObject:
    """JSON Schema 2020-12 of the gateway config (CONTRACT.md §2)."""
    globs = {
        "type": "array",
        "maxItems": MAX_LIST,
        "items": {"type": "string", "minLength": 1, "maxLength": 128},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kelpie.invalid/schema/v1/config.json",
        "title": "Kelpie gateway config v1",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "nativeMethods": {
                "type": "array",
                "maxItems": MAX_LIST,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": KEBAB_PATTERN, "maxLength": 64},
            },
            "targeting": {"enum": ["direct", "selected"]},
            "browserAvailable": {"type": "boolean"},
            "fixedReader": {"type": "boolean"},
            "allowActions": {"type": "boolean"},
            "requireAuthorization": {"type": "boolean"},
            "realm": {"enum": ["isolated", "page"]},
            "mcpTools": {"enum": ["compact", "full"]},
            "pinnedTab": {"type": ["string", "null"], "minLength": 1, "maxLength": 256},
            "retirementGraceMs": {"type": "integer", "minimum": 0, "maximum": RETIREMENT_GRACE_MAX_MS},
            "observer": {"type": "boolean"},
            "extensions": {
                "type": "array",
                "maxItems": MAX_LIST,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "method", "description", "inputSchema", "mutates"],
                    "properties": {
                        "name": {"type": "string", "pattern": NAME_PATTERN},
                        "method": {"type": "string", "pattern": KEBAB_PATTERN, "maxLength": 64},
                        "description": {"type": "string", "maxLength": 4096},
                        "inputSchema": {"type": "object"},
                        "mutates": {"type": "boolean"},
                        "coordinator": {"enum": ["direct", "dedicated"]},
                        "recovery": {"type": "boolean"},
                        "refArguments": {
                            "type": "array",
                            "maxItems": MAX_REF_ARGUMENTS,
                            "uniqueItems": True,
                            "items": {"type": "string", "pattern": ARGUMENT_PATTERN},
                        },
                    },
                },
            },
            "extensionFilter": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"include": globs, "exclude": globs},
            },
        },
    }


@dataclass(frozen=True)
class Extension:
    """An extension descriptor after validation. ``lane`` is where its transactions run:
    ``recovery`` (recovery:true), ``dedicated:<name>`` (coordinator dedicated) or ``direct``."""

    name: str
    method: str
    description: str
    input_schema: JsonObject
    mutates: bool
    coordinator: str
    recovery: bool
    validator: Any
    ref_arguments: tuple[str, ...] = ()

    @property
    def lane(self) -> str:
        if self.recovery:
            return "recovery"
        if self.coordinator == "dedicated":
            return f"dedicated:{self.name}"
        return "direct"

    def check_arguments(self, arguments: Any) -> tuple[str, str] | None:
        """``(code, message)`` refusing ``arguments`` (REQUEST_TOO_LARGE over 4 MiB of JSON; INVALID_PARAMS
        naming the JSON Pointer under ``/params/arguments``), or None when the inputSchema admits them."""
        try:
            size = jsonio.size_of(arguments)
        except TypeError as exc:
            return "INVALID_PARAMS", f"/params/arguments: not JSON data ({exc})"
        if size > jsonio.MAX_REQUEST_BYTES:
            return (
                "REQUEST_TOO_LARGE",
                f"arguments are {size} bytes; the cap is {jsonio.MAX_REQUEST_BYTES} bytes",
            )
        try:
            error = next(iter(self.validator.iter_errors(arguments)), None)
        except Exception as exc:  # e.g. a $ref that cannot be resolved: the descriptor's fault
            return (
                "INVALID_PARAMS",
                f"/params/arguments: the extension's inputSchema cannot be evaluated ({exc!r:.200})",
            )
        if error is not None:
            return (
                "INVALID_PARAMS",
                f"/params/arguments{_pointer(error.absolute_path)}: {_schema_message(error)[:300]}",
            )
        return None


def _schema_message(error: Any) -> str:
    """A ``jsonschema`` error's message without the client's value in it: jsonschema writes the failing
    instance's ``repr`` first (``'<a bearer token>' does not match '^s…'``); a string, object or array is
    shown only as what it is (``a 43-character string``), and unknown member names only when they look
    like names (issue 27: refusals quote a client string only in the shape they expect)."""
    instance = error.instance
    message = str(error.message)
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        known = set((error.schema or {}).get("properties") or {})
        extra = [k for k in instance if k not in known]
        names = ", ".join(shown(k, "a member name", NAME_SHAPE) for k in extra[:5])
        return f"unknown member(s) {names}"
    if isinstance(instance, str):
        return message.replace(repr(instance), f"a {len(instance)}-character string", 1)
    if isinstance(instance, dict | list):
        what = (
            f"an object of {len(instance)} member(s)"
            if isinstance(instance, dict)
            else f"an array of {len(instance)} item(s)"
        )
        return message.replace(repr(instance), what, 1)
    return message


@dataclass(frozen=True)
class Config:
    """A validated config with every default applied (CONTRACT.md §2)."""

    native_methods: frozenset[str]
    targeting: str
    browser_available: bool
    fixed_reader: bool
    allow_actions: bool
    require_authorization: bool
    realm: str
    pinned_tab: str | None
    extensions: tuple[Extension, ...]
    retirement_grace_ms: int
    include: tuple[str, ...] | None
    exclude: tuple[str, ...]
    observer: bool = False
    """``observer: true`` (CONTRACT.md §2, §9 v1.2): a one-shot observer session. ``allow_actions`` is then
    False whatever the config said; ``tab.snapshot`` reads without a registry and issues no refs."""
    mcp_tools: str = "compact"
    """``mcpTools``: ``compact`` (the four tools, default) or ``full`` (also one MCP tool per admitted
    method and extension, issue 34; docs/mcp.md "The full catalogue")."""

    def filter_admits(self, name: str) -> bool:
        """``extensionFilter``: exclude wins; no include list admits every name (fnmatch globs)."""
        if any(fnmatch.fnmatchcase(name, g) for g in self.exclude):
            return False
        return self.include is None or any(fnmatch.fnmatchcase(name, g) for g in self.include)


_VALIDATOR: Any = None


def _fail(pointer: str, message: str) -> GatewayConfigError:
    return GatewayConfigError(failure(None, "INVALID_REQUEST", f"{pointer or '/'}: {message} (config)"))


def _pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _check_refs(validator: Any, schema: Any) -> None:
    """Resolve every ``$ref`` in ``schema`` (raises when one cannot be resolved or loops forever)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                resolved = validator._resolver.lookup(ref).contents
                validator.evolve(schema=resolved).is_valid({})
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    validator.is_valid({})


_FLAGS: Final = frozenset(
    {"browserAvailable", "fixedReader", "allowActions", "requireAuthorization", "observer"}
)
_KEBAB_SEARCH: Final = _KEBAB_RE.search  # what JSON Schema's "pattern" does: re.search


def _globs_ok(value: Any) -> bool:
    return (
        type(value) is list
        and len(value) <= MAX_LIST
        and all(type(g) is str and 1 <= len(g) <= 128 for g in value)
    )


def plainly_valid(data: dict[str, Any]) -> bool:
    """True only when ``data`` (parsed JSON) certainly satisfies :func:`config_json_schema` and declares no
    extension: the usual config, checked without importing ``jsonschema`` (its import and validator cost
    most of a cold start, issue 16). False means "not decided here": the ``jsonschema`` validator is the
    authority for everything else and words every error. ``tests/engine/test_config.py`` checks with
    Hypothesis that this never accepts what the validator refuses and accepts every valid config
    without extensions."""
    for key, value in data.items():
        if key in _FLAGS:
            if type(value) is not bool:
                return False
        elif key == "nativeMethods":
            if type(value) is not list or len(value) > MAX_LIST:
                return False
            for name in value:
                if type(name) is not str or len(name) > 64 or _KEBAB_SEARCH(name) is None:
                    return False
            if len(set(value)) != len(value):
                return False
        elif key == "targeting":
            if value not in ("direct", "selected") or type(value) is not str:
                return False
        elif key == "realm":
            if value not in ("isolated", "page") or type(value) is not str:
                return False
        elif key == "mcpTools":
            if value not in ("compact", "full") or type(value) is not str:
                return False
        elif key == "pinnedTab":
            if value is not None and (type(value) is not str or not 1 <= len(value) <= 256):
                return False
        elif key == "retirementGraceMs":
            if type(value) is not int or not 0 <= value <= RETIREMENT_GRACE_MAX_MS:
                return False
        elif key == "extensions":
            if value != [] or type(value) is not list:
                return False
        elif key == "extensionFilter":
            if type(value) is not dict:
                return False
            for k, v in value.items():
                if k not in ("include", "exclude") or not _globs_ok(v):
                    return False
        else:
            return False
    return True


def parse_config(raw: Mapping[str, Any] | str | bytes) -> Config:
    """Validate ``raw`` (Mapping or JSON text) and return a :class:`Config`.

    Raises :class:`GatewayConfigError` (envelope code INVALID_JSON, REQUEST_TOO_LARGE or INVALID_REQUEST)."""
    global _VALIDATOR
    if isinstance(raw, str | bytes | bytearray):
        try:
            data = jsonio.loads(raw)
        except jsonio.JsonError as exc:
            raise GatewayConfigError(failure(None, exc.code, f"/: {exc} (config)")) from None
    elif isinstance(raw, Mapping):
        try:
            data = jsonio.loads(jsonio.dumps(dict(raw)))
        except (TypeError, jsonio.JsonError) as exc:
            raise _fail("", f"not JSON data: {exc}") from None
    else:
        raise _fail("", "must be a JSON object")
    if not isinstance(data, dict):
        raise _fail("", "must be a JSON object")
    if not plainly_valid(data):  # jsonschema decides (and words the error): imported only when needed
        if _VALIDATOR is None:
            _VALIDATOR = strict_validator(config_json_schema())
        errors = sorted(
            _VALIDATOR.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.path)))
        )
        if errors:
            err = errors[0]
            raise _fail(_pointer(err.absolute_path), err.message[:300])
    native = data.get("nativeMethods", [])
    for i, name in enumerate(native):  # JSON Schema's "$" (Python re.search) accepts a trailing newline
        if _KEBAB_RE.fullmatch(name) is None:
            raise _fail(f"/nativeMethods/{i}", f"must match {KEBAB_PATTERN}")
    for i, d in enumerate(data.get("extensions", [])):
        if _NAME_RE.fullmatch(d["name"]) is None:
            raise _fail(f"/extensions/{i}/name", f"must match {NAME_PATTERN}")
        if _KEBAB_RE.fullmatch(d["method"]) is None:
            raise _fail(f"/extensions/{i}/method", f"must match {KEBAB_PATTERN}")
    extensions: list[Extension] = []
    seen: set[str] = set()
    for i, d in enumerate(data.get("extensions", [])):
        if d["name"] in seen:
            raise _fail(f"/extensions/{i}/name", f"duplicate extension name {d['name']!r}")
        seen.add(d["name"])
        schema = d["inputSchema"]
        try:
            cls_validator = strict_validator(schema)
            type(cls_validator).check_schema(schema)
        except Exception as exc:
            message = getattr(exc, "message", str(exc))
            raise _fail(f"/extensions/{i}/inputSchema", f"not a valid JSON Schema: {message[:200]}") from None
        try:  # compiled once at create: every $ref must resolve now, not fail at call time
            _check_refs(cls_validator, schema)
        except Exception as exc:
            raise _fail(f"/extensions/{i}/inputSchema", f"cannot be compiled: {exc!r:.200}") from None
        if schema.get("type") != "object":
            raise _fail(
                f"/extensions/{i}/inputSchema/type", 'must be "object" (MCP tool input schemas are objects)'
            )
        if d.get("recovery") and d.get("coordinator") == "dedicated":
            raise _fail(f"/extensions/{i}/coordinator", "a recovery extension runs on the recovery lane")
        ref_arguments = tuple(d.get("refArguments", ()))
        properties = schema.get("properties")
        for j, arg in enumerate(ref_arguments):
            if _ARGUMENT_RE.fullmatch(arg) is None:
                raise _fail(f"/extensions/{i}/refArguments/{j}", f"must match {ARGUMENT_PATTERN}")
            if arg == CAPTURED_FIELD or arg == "tabId":
                raise _fail(f"/extensions/{i}/refArguments/{j}", f"{arg!r} cannot hold a ref")
            declared = properties.get(arg) if isinstance(properties, dict) else None
            if not isinstance(declared, dict) or declared.get("type") != "string":
                raise _fail(
                    f"/extensions/{i}/refArguments/{j}",
                    f"{arg!r} must be declared in inputSchema.properties with type string",
                )
        if ref_arguments and isinstance(properties, dict) and CAPTURED_FIELD in properties:
            raise _fail(
                f"/extensions/{i}/inputSchema/properties/{CAPTURED_FIELD}",
                "is reserved: the gateway adds it to the dispatch params of a ref-bearing extension",
            )
        extensions.append(
            Extension(
                name=d["name"],
                method=d["method"],
                description=d["description"],
                input_schema=schema,
                mutates=d["mutates"],
                coordinator=d.get("coordinator", "direct"),
                recovery=bool(d.get("recovery", False)),
                validator=cls_validator,
                ref_arguments=ref_arguments,
            )
        )
    flt = data.get("extensionFilter", {})
    include = flt.get("include")
    observer = data.get("observer", False)
    return Config(
        native_methods=frozenset(native),
        targeting=data.get("targeting", "direct"),
        browser_available=data.get("browserAvailable", True),
        fixed_reader=data.get("fixedReader", False),
        allow_actions=data.get("allowActions", True) and not observer,
        require_authorization=data.get("requireAuthorization", True),
        realm=data.get("realm", "isolated"),
        pinned_tab=data.get("pinnedTab"),
        extensions=tuple(extensions),
        retirement_grace_ms=data.get("retirementGraceMs", RETIREMENT_GRACE_DEFAULT_MS),
        include=None if include is None else tuple(include),
        exclude=tuple(flt.get("exclude", [])),
        observer=observer,
        mcp_tools=data.get("mcpTools", "compact"),
    )
