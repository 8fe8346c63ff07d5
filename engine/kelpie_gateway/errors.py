"""Error codes, envelopes and the two exceptions of the Python API (CONTRACT.md §4, §11).

The error-code set is closed: every code a user can see is listed in :data:`ERROR_CODES` with the
default message, whether a caller may simply try again (``retryable``), and a one-line doc that the
generated reference in ``docs/`` prints. Add a code only with a doc line and a test.

Envelope shapes (CONTRACT.md §4)::

    {"version": 1, "id": ..., "success": true, "result": {...}}
    {"version": 1, "id": ..., "success": false,
     "error": {"code": str, "message": str, "retryable": bool}, "mayHaveCompleted": bool}
"""

from __future__ import annotations

import re
from typing import Any, Final

JsonObject = dict[str, Any]

#: code -> (retryable, meaning). The meaning is shown in the generated contract reference.
ERROR_CODES: Final[dict[str, tuple[bool, str]]] = {
    "INVALID_JSON": (False, "The input is not well-formed UTF-8 JSON (or nests deeper than 1,000 levels)."),
    "INVALID_REQUEST": (
        False,
        "The JSON is not a canonical request: wrong version, unknown field, wrong type.",
    ),
    "INVALID_PARAMS": (
        False,
        "The method exists but its params are wrong; the message names the JSON Pointer.",
    ),
    "UNSUPPORTED_METHOD": (False, "The method is unknown or not implemented by this host."),
    "ACTIONS_DISABLED": (False, "The method mutates and this gateway was created with allowActions:false."),
    "BROWSER_UNAVAILABLE": (
        False,
        "The method needs a renderer and this gateway has none (browserAvailable:false).",
    ),
    "BUSY": (True, "Another transaction is active on this lane; nothing was dispatched. Try again later."),
    "NOT_AUTHORIZED": (False, "The host's policy refused the transaction at its authorize step."),
    "TAB_REQUIRED": (False, "Direct targeting: this method needs params.tabId; get one from tabs.list."),
    "TAB_NOT_FOUND": (False, "No such tab."),
    "TAB_STALE": (
        False,
        "The ref's snapshot was taken of an older document of that tab; take a new snapshot.",
    ),
    "TAB_NOT_SELECTED": (False, "Selected targeting: the named tab is not the selected tab."),
    "TAB_PINNED": (False, "This gateway is pinned to one tab; other tabs and tab switching are refused."),
    "UNKNOWN_REF": (False, "The ref was never issued by this gateway (or names no element of its snapshot)."),
    "STALE_SNAPSHOT": (
        False,
        "The ref (or cursor) belongs to an older snapshot of its tab, or the document changed since the "
        "cursor's snapshot; use the latest snapshot.",
    ),
    "CROSS_TAB_REF": (False, "The ref belongs to another tab's snapshot."),
    "REFS_INVALIDATED": (
        False,
        "The tab's refs were invalidated (navigation, mutation, renderer change); snapshot again.",
    ),
    "NODE_REPLACED": (
        False,
        "The element behind the ref was removed or replaced in the page; snapshot again.",
    ),
    "NOT_TYPABLE": (
        False,
        "The element does not accept typed text (number, file, date, checkbox, radio, ...).",
    ),
    "NOT_ACTIONABLE": (
        False,
        "The target is disabled or inert (or an optgroup label); refused before any event (v1.1).",
    ),
    "EFFECT_NOT_OBSERVED": (
        False,
        "The action ran but the element does not show its effect afterwards (the page reverted, filtered "
        "or transformed it); observe before acting (v1.1).",
    ),
    "OPTION_UNSUPPORTED": (False, "The option value is not supported by this host (e.g. fullPage:true)."),
    "TIMEOUT": (
        True,
        "The renderer did not answer within timeoutMs. Retryable only for a read: a mutation's outcome is "
        "unknown (mayHaveCompleted:true, never retryable).",
    ),
    "CANCELLED": (
        True,
        "The host (or the MCP client) cancelled the transaction. Retryable only if nothing was dispatched or "
        "it was read-only.",
    ),
    "RENDERER_CHANGED": (
        True,
        "The renderer or tab changed while a read was in flight; its result was discarded.",
    ),
    "RENDERER_FAILED": (False, "The renderer reported a failure or returned a malformed result."),
    "REQUEST_TOO_LARGE": (False, "The request JSON is over 4 MiB; it was not parsed."),
    "RESPONSE_TOO_LARGE": (False, "The renderer's result JSON is over 32 MiB; it was discarded."),
    "RECONCILE_REQUIRED": (
        False,
        "An earlier mutation on this tab has an unknown outcome; observe the tab (tab.snapshot or "
        "tabs.list) before mutating it again.",
    ),
    "EXTENSION_NOT_ADMITTED": (
        False,
        "No admitted extension has that name (unknown, filtered or not implemented).",
    ),
    "STALE_STEP": (False, "The advance/cancel does not match the pending step (late, duplicated or forged)."),
    "INTERNAL": (False, "A bug in the gateway; the gateway stays usable. Please report it."),
}

UNKNOWN_OUTCOME_HINT: Final = " The action may have taken effect: observe the tab (tab.snapshot) before acting again; do not repeat it blindly."


class GatewayConfigError(ValueError):
    """Raised by ``Gateway(config)`` for an invalid config (CONTRACT.md §2, §11).

    ``.envelope`` is the same failure envelope the C ABI returns through ``error_json_out``:
    ``{"version":1,"id":null,"success":false,"error":{"code":"INVALID_REQUEST",...},"mayHaveCompleted":false}``
    whose message starts with the JSON Pointer of the bad field (e.g. ``/extensions/0/name: …``).
    """

    def __init__(self, envelope: JsonObject) -> None:
        super().__init__(envelope["error"]["message"])
        self.envelope = envelope


class GatewayPendingError(RuntimeError):
    """Raised by ``Gateway.close()`` while a renderer callback is pending (CONTRACT.md §10, §11).

    The gateway stays intact and usable; close again after the callback retires.
    """


class Refusal(Exception):
    """A refusal decided inside the engine while planning a dispatch or shaping its result (never raised
    out of a public method: the gateway turns it into a failure envelope).

    ``may_have_completed``: True/False as decided where it was raised, or None for "a failed dispatch":
    the gateway then applies the §4 rule (unknown outcome for a dispatched mutation)."""

    def __init__(self, code: str, message: str, *, may_have_completed: bool | None = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.may_have_completed = may_have_completed


def error_body(code: str, message: str | None = None) -> JsonObject:
    """``{"code","message","retryable"}`` for a code of the closed set (unknown codes become INTERNAL)."""
    entry = ERROR_CODES.get(code)
    if entry is None:
        return {
            "code": "INTERNAL",
            "message": f"unknown error code {code!r}: {message or ''}",
            "retryable": False,
        }
    return {"code": code, "message": message if message else entry[1], "retryable": entry[0]}


def failure(
    request_id: Any, code: str, message: str | None = None, *, may_have_completed: bool = False
) -> JsonObject:
    """A failure envelope (CONTRACT.md §4). Unknown outcomes get the observe-before-acting hint appended
    and are never ``retryable`` (§4, v1.1: an unknown outcome is not an invitation to resend), whatever
    the code's default."""
    body = error_body(code, message)
    if may_have_completed:
        body["retryable"] = False
        if not body["message"].endswith(UNKNOWN_OUTCOME_HINT):
            body["message"] += UNKNOWN_OUTCOME_HINT
    return {
        "version": 1,
        "id": request_id,
        "success": False,
        "error": body,
        "mayHaveCompleted": may_have_completed,
    }


def success(request_id: Any, result: JsonObject) -> JsonObject:
    """A success envelope (CONTRACT.md §4)."""
    return {"version": 1, "id": request_id, "success": True, "result": result}


def rejected(code: str, message: str) -> JsonObject:
    """A ``rejected`` step (CONTRACT.md §5): the advance/cancel changed nothing."""
    return {"step": "rejected", "error": error_body(code, message)}


# ---------------------------------------------------------------------- quoting what a client sent
REF_SHAPE: Final = re.compile(r"s[1-9][0-9]{0,17}e[1-9][0-9]{0,6}\Z")
"""A ref as the gateway issues them (``s<n>e<i>``, CONTRACT.md §6)."""
CURSOR_SHAPE: Final = re.compile(r"s[1-9][0-9]{0,17}p[1-9][0-9]{0,5}\Z")
"""A continuation cursor as the gateway issues them (``s<n>p<k>``)."""
TAB_ID_SHAPE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,23}\Z")
"""What a host's tab id looks like (``t3``, ``A``, ``tab-12``, a short UUID-free id): at most 24
characters. A bearer token (43 characters) never fits, nor does a sentence or a URL."""
VERSION_SHAPE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
"""An MCP protocol revision (``2025-06-18``)."""
NAME_SHAPE: Final = re.compile(r"[A-Za-z_$@][A-Za-z0-9_$@.:/-]{0,39}\Z")
"""A member, method, tool or extension name: an identifier-like word of at most 40 characters."""


def shown(value: Any, what: str, shape: re.Pattern[str]) -> str:
    """How a refusal message shows a string the client sent where ``what`` was expected (issue 27: a
    message quoted a bearer token sent as a ref back to the client and into logs): quoted (``'s3e2'``)
    when it has ``shape``, else only described — its length and that it is not ``what``
    (``a 43-character string that is not a ref``). Never raises; any other type is described too."""
    if isinstance(value, str):
        if shape.match(value):
            return repr(value)
        return f"a {len(value)}-character string that is not {what}"
    return f"a {type(value).__name__} that is not {what}"
