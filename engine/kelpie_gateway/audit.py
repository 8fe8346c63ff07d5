"""The ``audit`` record of every ``complete`` step (issue 17; docs/engine.md, "The audit record").

One builder, :func:`record`, makes every record: a transaction's (from what the gateway decided along the
way) and that of a request refused before it took a lane (:func:`early` works out what the request named,
then calls :func:`record`). A record holds what an audit trail needs and nothing a request carried in
clear: the params appear only as the SHA-256 of their canonical JSON (:func:`params_digest`). Pure: no
gateway state, no clock (the gateway passes ``elapsed_ms``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, NamedTuple, Protocol

import orjson

from .errors import JsonObject
from .schema import METHODS

RAW: Final = object()
"""``normalized`` of :func:`early` before validation: the record hashes the request's own params."""

_DIGESTS: dict[bytes, str] = {}
_DIGEST_MEMO_ENTRIES: Final = 1024
_DIGEST_MEMO_BYTES: Final = 512


def params_digest(params: Any) -> str | None:
    """Hex SHA-256 of ``params`` in canonical form: compact UTF-8 JSON, object keys sorted, no whitespace
    (``orjson`` ``OPT_SORT_KEYS``). None when ``params`` is not a JSON object (nothing canonical to hash)."""
    if not isinstance(params, dict):
        return None
    try:
        text = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None
    # The same few small params come back again and again (tabs.list's defaults, snapshots): remember
    # their digests (bounded: small texts only, cleared when full).
    digest = _DIGESTS.get(text)
    if digest is None:
        digest = hashlib.sha256(text).hexdigest()
        if len(text) <= _DIGEST_MEMO_BYTES:
            if len(_DIGESTS) >= _DIGEST_MEMO_ENTRIES:
                _DIGESTS.clear()
            _DIGESTS[text] = digest
    return digest


class Facts(Protocol):
    """What a record describes: a :class:`~kelpie_gateway.transaction.Transaction`, or :class:`Early`."""

    @property
    def method(self) -> str | None: ...
    @property
    def lane(self) -> str | None: ...
    @property
    def tab_id(self) -> str | None: ...
    @property
    def mutates(self) -> bool: ...
    @property
    def authorized(self) -> bool | None: ...
    @property
    def dispatches(self) -> int: ...
    @property
    def request(self) -> JsonObject: ...


class Early(NamedTuple):
    """The facts of a transaction refused (or answered) before it took a lane: no lane, nothing
    authorized or dispatched; ``request`` holds the params to hash."""

    method: str | None
    tab_id: str | None
    request: JsonObject
    lane: None = None
    mutates: bool = False
    authorized: None = None
    dispatches: int = 0


def record(envelope: JsonObject, facts: Facts, elapsed_ms: float) -> JsonObject:
    """The ``audit`` object of a ``complete`` step answering ``envelope`` (docs/engine.md, "The audit
    record"): ``outcome`` (``success``, ``refused``, or ``unknown`` when ``mayHaveCompleted`` is true),
    ``code`` (null on success), the facts' method, extension name (of an ``extension.call``), lane, tab,
    ``mutates``, ``authorized`` and ``dispatches``, ``elapsed_ms``, and the params only as
    :func:`params_digest`."""
    if envelope.get("success") is True:
        outcome, code, unknown = "success", None, False
    else:
        unknown = envelope.get("mayHaveCompleted") is True
        outcome, code = ("unknown" if unknown else "refused"), envelope["error"]["code"]
    method = facts.method
    params = facts.request["params"]
    extension = None
    if method == "extension.call" and isinstance(params, dict):
        name = params.get("name")
        if isinstance(name, str):
            extension = name
    return {
        "method": method,
        "extension": extension,
        "lane": facts.lane,
        "tabId": facts.tab_id,
        "outcome": outcome,
        "code": code,
        "mayHaveCompleted": unknown,
        "mutates": facts.mutates,
        "authorized": facts.authorized,
        "dispatches": facts.dispatches,
        "elapsedMs": elapsed_ms,
        "paramsSha256": params_digest(params),
    }


def early(envelope: JsonObject, method: str | None, request: Any, normalized: Any = RAW) -> JsonObject:
    """The record of a transaction refused (or answered) before it took a lane (0 ms). ``method``: the name
    to record, else (None or empty) the one ``request`` (the request of the begin in progress, if any)
    named when it is a canonical method; the tab (``params.tabId``, for ``extension.call``
    ``params.arguments.tabId``) and the extension name the request named; its params as a
    digest — ``normalized`` (defaults filled in) once validated, else the request's own (:data:`RAW`)."""
    raw = request.get("params") if isinstance(request, dict) else None
    if not method:  # None, or an empty name from a frontend: the request's own, if canonical
        named = request.get("method") if isinstance(request, dict) else None
        method = named if isinstance(named, str) and named in METHODS else None
    tab = raw.get("tabId") if isinstance(raw, dict) else None
    if tab is None and method == "extension.call" and isinstance(raw, dict):
        arguments = raw.get("arguments")  # an extension's target tab is arguments.tabId
        tab = arguments.get("tabId") if isinstance(arguments, dict) else None
    params = raw if normalized is RAW else normalized
    return record(envelope, Early(method, tab if isinstance(tab, str) else None, {"params": params}), 0.0)
