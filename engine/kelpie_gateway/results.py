"""Result shaping per method: a native endpoint's result turned into the canonical result (CONTRACT.md §3,
§8, §9). Pure functions: no gateway state, no I/O.

Each shaper takes what the transaction planned (:class:`Planned`) and the host's validated
``{success: true, …}`` result, and returns a :class:`Shaped` — the result object plus the facts the
gateway must record (tab generations seen, tabs observed or closed, refs to invalidate, handles to turn
into refs) — or raises :class:`~kelpie_gateway.errors.Refusal` (a malformed result is ``RENDERER_FAILED``;
an action script's own refusal keeps its code). The gateway applies the facts; shapers never touch the
ref store, so they can be tested with plain dicts.

Adding a method: one entry in :data:`kelpie_gateway.schema.METHODS`, one native call in
:mod:`kelpie_gateway.natives`, one shaper in :data:`SHAPERS`, one host handler, and one reader script if it
reads the DOM.
"""

from __future__ import annotations

import binascii
import itertools
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from . import jsonio
from .errors import JsonObject, Refusal
from .schema import ELEMENT_STATES
from .urls import redact_url

PASSTHROUGH_CODES: Final = frozenset(
    {
        "TAB_NOT_FOUND",
        "TAB_STALE",
        "NODE_REPLACED",
        "NOT_TYPABLE",
        "NOT_ACTIONABLE",
        "EFFECT_NOT_OBSERVED",
        "STALE_SNAPSHOT",
        "OPTION_UNSUPPORTED",
        "TIMEOUT",
        "CANCELLED",
        "RENDERER_CHANGED",
        "RENDERER_FAILED",
        "RESPONSE_TOO_LARGE",
        "NOT_AUTHORIZED",
        "BROWSER_UNAVAILABLE",
        "INVALID_PARAMS",
    }
)
"""Renderer error codes passed through to the client; any other code becomes RENDERER_FAILED."""

_HANDLE_RE: Final = re.compile(r"[0-9A-Za-z_-]{1,64}")
"""Renderer handles are short opaque tokens; anything else in a snapshot is a malformed result."""
_STATES: Final = frozenset(ELEMENT_STATES)
URL_FIELD_MAX: Final = 500
"""A link's ``url`` is at most 500 UTF-16 units, a cut marked with U+2026 (§9 v1.1)."""


def states_ok(states: Any) -> bool:
    """A renderer's ``states``: a sorted array of distinct members of the closed set (§9 v1.1)."""
    return (
        isinstance(states, list)
        and all(isinstance(x, str) and x in _STATES for x in states)
        and all(a < b for a, b in itertools.pairwise(states))
    )


def is_position(rest: Any) -> bool:
    """The renderer's private continuation position ``{snapshot, textAt, elementAt}``."""
    return (
        isinstance(rest, dict)
        and set(rest) == {"snapshot", "textAt", "elementAt"}
        and isinstance(rest["snapshot"], str)
        and _HANDLE_RE.fullmatch(rest["snapshot"]) is not None
        and all(type(rest[k]) is int and 0 <= rest[k] < 2**53 for k in ("textAt", "elementAt"))
    )


class Planned(NamedTuple):
    """What the transaction planned: the canonical ``method`` name, its validated ``params`` (defaults
    applied), the target ``tab_id`` (None for tab-less methods), whether it ``mutates``, and for
    ``extension.call`` the descriptor's native ``endpoint`` and, for a ref-bearing extension
    (``refArguments``), the renderer ``handles`` behind its refs (argument name → handle); ``observer``:
    the gateway is an observer (config ``observer: true``, §9 v1.2), so a ``tab.snapshot`` is a one-shot
    read without refs. Immutable; a named tuple because one is made per transaction (a frozen dataclass
    costs a ``object.__setattr__`` per field)."""

    method: str
    params: JsonObject
    tab_id: str | None
    mutates: bool
    endpoint: str | None = None
    handles: dict[str, str] | None = None
    observer: bool = False


@dataclass(frozen=True, slots=True)
class SinceFacts:
    """What a ``since`` read found (§9 v1.2), in renderer terms: ``was`` — for each changed element (the
    first ``len(was)`` of the answer's elements) the handle it had in the earlier snapshot, or None;
    ``added`` — how many elements follow them, all new; ``removed`` — handles of the earlier snapshot no
    longer listed; the text lines added and removed."""

    was: list[str | None]
    added: int
    removed: list[str]
    text_added: list[str]
    text_removed: list[str]


@dataclass(frozen=True, slots=True)
class SnapshotRefs:
    """A snapshot's renderer handles, in element order, for the gateway to turn into refs of a new snapshot
    of ``tab_id`` — or, when ``cursor`` is set, of the next page of the snapshot that cursor continues;
    ``generation`` is the renderer's, or None (the gateway uses the tab's last known one); ``rest`` is the
    renderer's private position of the page after this one (None: nothing left), kept by the ref store
    behind the ``next`` cursor (§3, §9 v1.1); ``token`` is the renderer's name of the read (kept for a
    later ``since``); ``since`` what a ``since`` read found (its old handles become refs through
    :func:`since_changes`)."""

    tab_id: str
    generation: int | None
    handles: list[str]
    rest: Any = None
    cursor: str | None = None
    token: str | None = None
    since: SinceFacts | None = None


@dataclass(slots=True)
class Shaped:
    """A shaped success. ``result`` is the canonical result object; the other fields are facts to record:

    ``generations``: ``(tabId, generation)`` pairs the renderer reported; ``observed_tabs``: every open
    tab was just listed (others are forgotten, every reconcile mark cleared); ``invalidate``: a tab whose
    refs are now invalid (navigation); ``closed``: a tab that no longer exists; ``snapshot``: handles to
    issue as refs into ``result["elements"][i]["ref"]`` (and ``result["generation"]`` when None)."""

    result: JsonObject
    generations: tuple[tuple[str, int], ...] = ()
    observed_tabs: tuple[str, ...] | None = None
    invalidate: str | None = None
    closed: str | None = None
    snapshot: SnapshotRefs | None = None


Shaper = Callable[[Planned, JsonObject], Shaped]


def failure_of(result: JsonObject) -> tuple[str, str]:
    """``(code, message)`` of a renderer's ``{"success": false, "error": {code, message}}``: a code of
    :data:`PASSTHROUGH_CODES` is kept, any other becomes RENDERER_FAILED (the message then names it)."""
    err = result.get("error")
    code = err.get("code") if isinstance(err, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    text = message if isinstance(message, str) and message else "the renderer reported a failure"
    if not isinstance(code, str) or code not in PASSTHROUGH_CODES:  # (an array is no code: not hashable)
        return "RENDERER_FAILED", f"{text} (renderer code {code!r})" if code is not None else text
    return code, text


def malformed(message: str) -> Refusal:
    """A renderer result that lacks a required field or has the wrong type."""
    return Refusal("RENDERER_FAILED", message, may_have_completed=None)


def field(obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[name]`` when it is of ``kind`` (booleans are not integers); else a malformed-result refusal."""
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise malformed(f"{where}: missing or malformed field {name!r}")
    return value


def cut_utf16(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-16 code units without splitting a surrogate pair (§8)."""
    if len(text) * 2 <= limit:
        return text, False
    units = 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > limit:
            return text[:i], True
    return text, False


_TAB_FIELDS: Final = operator.itemgetter("tabId", "generation", "url", "title", "active")


def parse_tabs(result: JsonObject) -> list[JsonObject]:
    """``get-tabs`` → ``[{tabId, generation, url, title, active, crashed?, popupsClosed?}]`` with lone
    surrogates repaired (``crashed: true`` only when the host says so: CONTRACT.md §5 v1.1, the tab reports
    it crashed; ``popupsClosed``: a positive count of the tab's popups the host closed as they opened, its
    popup cap — docs/contract-notes.md "Popups and kept tabs").

    ``result`` is parsed JSON (the gateway's own copy), so its strings, integers and booleans are of
    exactly those types: one ``type(x) is T`` test each, no ``isinstance``."""
    raw = field(result, "tabs", list, "get-tabs")
    tabs: list[JsonObject] = []
    repair = jsonio.repair_surrogates
    for t in raw:
        if type(t) is not dict:
            raise malformed(f"get-tabs tabs[{len(tabs)}]: not an object")
        try:
            tab_id, gen, url, title, active = _TAB_FIELDS(t)
        except KeyError:
            tab_id = None  # refused just below
        if not (
            type(tab_id) is str
            and type(gen) is int
            and type(url) is str
            and type(title) is str
            and type(active) is bool
        ):
            raise malformed(
                f"get-tabs tabs[{len(tabs)}]: needs tabId (string), generation (integer), url, title "
                "(strings) and active (boolean)"
            )
        entry = {
            "tabId": tab_id,
            "generation": gen,
            "url": redact_url(url if url.isascii() else repair(url)),  # ASCII holds no surrogate
            "title": title if title.isascii() else repair(title),
            "active": active,
        }
        if t.get("crashed") is True:  # the tab's renderer crashed: tab.navigate or tabs.close recovers it
            entry["crashed"] = True
        popups = t.get("popupsClosed")
        if type(popups) is int and popups > 0:  # popups the host closed as they opened (its popup cap)
            entry["popupsClosed"] = popups
        tabs.append(entry)
    return tabs


# ====================================================================== one shaper per method
def _extension_call(_p: Planned, result: JsonObject) -> Shaped:
    out = {k: v for k, v in result.items() if k != "success"}
    return Shaped(jsonio.repair_surrogates(out))


def _tabs_list(_p: Planned, result: JsonObject) -> Shaped:
    tabs = parse_tabs(result)
    return Shaped(
        {"tabs": tabs},
        generations=tuple([(t["tabId"], t["generation"]) for t in tabs]),
        observed_tabs=tuple([t["tabId"] for t in tabs]),
    )


DOWNLOAD_FIELD: Final = "download"
"""The optional member of a native result (``browser-control-evaluate`` of a click, ``navigate``,
``new-tab``) by which a host reports a download the action started (docs/contract-notes.md "Downloads in
results"): an object, passed through to the canonical result (lone surrogates repaired); anything else
there is ignored."""


def with_download(out: JsonObject, result: JsonObject) -> JsonObject:
    """``out`` plus the native result's ``download`` object, when it has one (:data:`DOWNLOAD_FIELD`)."""
    download = result.get(DOWNLOAD_FIELD)
    if type(download) is dict:
        out[DOWNLOAD_FIELD] = jsonio.repair_surrogates(download)
    return out


def _tab_identity(p: Planned, result: JsonObject) -> Shaped:
    """``tabs.select`` and ``tabs.open``: ``{tabId, generation}`` (``tabs.open`` may add ``download``)."""
    tab = field(result, "tabId", str, p.method)
    generation = field(result, "generation", int, p.method)
    out: JsonObject = {"tabId": tab, "generation": generation}
    if p.method == "tabs.open":
        with_download(out, result)
    return Shaped(out, generations=((tab, generation),))


def _tabs_close(p: Planned, _result: JsonObject) -> Shaped:
    return Shaped({"closed": True}, closed=p.tab_id)


def _navigate(_p: Planned, result: JsonObject) -> Shaped:
    """``navigate`` → ``{tabId, generation, url, download?}``: ``download`` (the host's download object,
    :func:`with_download`) when the navigation ended in a download instead of a document (issue 27;
    docs/host.md "Downloads")."""
    tab = field(result, "tabId", str, "navigate")
    generation = field(result, "generation", int, "navigate")
    url = redact_url(field(result, "url", str, "navigate"))
    return Shaped(
        with_download({"tabId": tab, "generation": generation, "url": url}, result),
        generations=((tab, generation),),
        invalidate=tab,
    )


def _screenshot(_p: Planned, result: JsonObject) -> Shaped:
    out = {
        "mimeType": "image/png",
        "data": field(result, "data", str, "screenshot"),
        "width": field(result, "width", int, "screenshot"),
        "height": field(result, "height", int, "screenshot"),
    }
    if field(result, "mimeType", str, "screenshot") != "image/png":
        raise malformed("screenshot: mimeType must be image/png")
    try:
        if not out["data"] or not binascii.a2b_base64(out["data"], strict_mode=True):
            raise ValueError("empty image")
    except (binascii.Error, ValueError):
        raise malformed("screenshot: data is not valid base64") from None
    return Shaped(out)


def _script_value(p: Planned, result: JsonObject) -> Any:
    """A ``browser-control-evaluate`` result's ``value``; a script's own ``{error}`` becomes its refusal
    (a read never has effects; a mutation's refusal is an unknown outcome unless it says otherwise, §4)."""
    value = result.get("value")
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        err = value["error"]
        code = err.get("code") if err.get("code") in PASSTHROUGH_CODES else "RENDERER_FAILED"
        message = err.get("message") if isinstance(err.get("message"), str) else "the page refused the action"
        mhc = p.mutates and value.get("mayHaveCompleted") is not False
        raise Refusal(str(code), message, may_have_completed=mhc)
    return value


VALUE_TEXT_MAX: Final = 200
"""A range value's ``text`` is at most 200 UTF-16 units (§9 v1.2)."""


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def range_value(value: Any, where: str) -> tuple[JsonObject, bool]:
    """A renderer's range ``value`` ``{now, min?, max?, text?}`` (finite numbers; ``text`` cut to 200
    UTF-16 units) and whether it was cut; a malformed one is a malformed-result refusal (§9 v1.2)."""
    if (
        not isinstance(value, dict)
        or not _number(value.get("now"))
        or not set(value) <= {"now", "min", "max", "text"}
    ):
        raise malformed(f"{where}: 'value' must be {{now, min?, max?, text?}} with finite numbers")
    out: JsonObject = {"now": value["now"]}
    for key in ("min", "max"):
        if key in value:
            if not _number(value[key]):
                raise malformed(f"{where}: 'value.{key}' must be a finite number")
            out[key] = value[key]
    cut = False
    if "text" in value:
        if not isinstance(value["text"], str):
            raise malformed(f"{where}: 'value.text' must be a string")
        out["text"], cut = cut_utf16(value["text"], VALUE_TEXT_MAX)
    return out, cut


def _is_handle(h: Any) -> bool:
    return isinstance(h, str) and _HANDLE_RE.fullmatch(h) is not None


def _since_facts(value: Any, count: int) -> SinceFacts:
    """The renderer's ``since`` block, checked against the ``count`` elements it came with."""
    where = "snapshot since"
    if not isinstance(value, dict):
        raise malformed(f"{where}: missing or malformed")
    was = field(value, "changed", list, where)
    added = field(value, "added", int, where)
    removed = field(value, "removed", list, where)
    lines = [field(value, key, list, where) for key in ("textAdded", "textRemoved")]
    if not all(h is None or _is_handle(h) for h in was) or not all(_is_handle(h) for h in removed):
        raise malformed(f"{where}: 'changed' and 'removed' must hold renderer handles")
    if added < 0 or len(was) + added != count:
        raise malformed(f"{where}: 'changed' and 'added' must account for every element")
    if not all(isinstance(line, str) for group in lines for line in group):
        raise malformed(f"{where}: text lines must be strings")
    repair = jsonio.repair_surrogates
    return SinceFacts(list(was), added, list(removed), repair(lines[0]), repair(lines[1]))


def since_changes(
    elements: list[JsonObject], facts: SinceFacts, old_refs: dict[str, str | None]
) -> JsonObject:
    """The ``changes`` of a ``since`` result (§9 v1.2) from its elements (refs already issued: the changed
    ones first, then the added ones), the facts and the earlier snapshot's refs of the old handles:
    ``{added: [elements], removed: [old refs], changed: [{ref, was?, role, label, states, value?}],
    textAdded, textRemoved}``."""
    n = len(facts.was)
    changed = []
    for item, was in zip(elements[:n], facts.was, strict=True):
        entry: JsonObject = {"ref": item["ref"]}
        old = old_refs.get(was) if was is not None else None
        if old is not None:
            entry["was"] = old
        entry["role"] = item["role"]
        entry["label"] = item["label"]
        entry["states"] = item.get("states", [])
        entry["value"] = item.get("value")
        if entry["value"] is None:
            del entry["value"]
        changed.append(entry)
    removed = [r for r in (old_refs.get(h) for h in facts.removed) if r is not None]
    return {
        "added": elements[n:],
        "removed": removed,
        "changed": changed,
        "textAdded": facts.text_added,
        "textRemoved": facts.text_removed,
    }


def _snapshot(p: Planned, result: JsonObject) -> Shaped:
    if p.observer:
        return _observation(p, result)
    value = _script_value(p, result)
    params = p.params
    tab = p.tab_id
    assert tab is not None
    url = redact_url(jsonio.repair_surrogates(field(value, "url", str, "snapshot")))
    title = jsonio.repair_surrogates(field(value, "title", str, "snapshot"))
    text = jsonio.repair_surrogates(field(value, "text", str, "snapshot"))
    truncated = field(value, "truncated", bool, "snapshot")
    raw = field(value, "elements", list, "snapshot")
    rest = value.get("rest")
    if rest is not None and not is_position(rest):
        raise malformed("snapshot: malformed continuation position 'rest'")
    token = value.get("token")
    if token is not None and (not isinstance(token, str) or _HANDLE_RE.fullmatch(token) is None):
        raise malformed("snapshot: malformed 'token'")
    removed = value.get("removed", 0)
    if type(removed) is not int or removed < 0:
        raise malformed("snapshot: 'removed' must be a non-negative integer")
    since_value = value.get("since")
    if ("since" in params) != (since_value is not None):
        raise malformed("snapshot: a since read answers 'since', and only it")
    text, cut = cut_utf16(text, params["maxChars"])
    if len(raw) > params["maxElements"] and since_value is None:
        raw = raw[: params["maxElements"]]
        cut = True
    if cut:  # the renderer overran its page: a continuation could not be exact
        rest = None
    truncated = truncated or cut or rest is not None
    handles = []
    elements = []
    for i, e in enumerate(raw):
        where = f"snapshot elements[{i}]"
        handle = field(e, "handle", str, where)
        if _HANDLE_RE.fullmatch(handle) is None:
            raise malformed(f"{where}: malformed handle")
        handles.append(handle)
        item: JsonObject = {"ref": ""}
        for key, limit in (("tag", 128), ("role", 128), ("label", 500)):
            value_text, cut_field = cut_utf16(field(e, key, str, where), limit)
            item[key] = value_text
            truncated = truncated or cut_field
        states = e.get("states")
        if states is not None and not states_ok(states):
            raise malformed(f"{where}: 'states' must be a sorted array of distinct known states")
        if states:
            item["states"] = states  # an empty array says nothing: left out, as the reader does
        if "value" in e:
            item["value"], cut_value = range_value(e["value"], where)
            truncated = truncated or cut_value
        link = e.get("url")
        if link is not None:
            if not isinstance(link, str):
                raise malformed(f"{where}: 'url' must be a string")
            link, cut_link = cut_utf16(redact_url(link), URL_FIELD_MAX)
            if cut_link:
                link = cut_utf16(link, URL_FIELD_MAX - 1)[0] + "\u2026"
                truncated = True
            item["url"] = link
        for key, v in e.items():
            if key not in item and key not in ("handle", "states", "value"):
                item[key] = v
        elements.append(jsonio.repair_surrogates(item))
    gen = result.get("generation")
    generation = gen if type(gen) is int else None
    since = None if since_value is None else _since_facts(since_value, len(elements))
    out: JsonObject = {
        "tabId": tab,
        "generation": generation,
        "snapshot": "",
        "url": url,
        "title": title,
        "text": text,
        "truncated": truncated,
        "elements": elements,
    }
    if removed:
        out["removed"] = removed
    return Shaped(
        out,
        snapshot=SnapshotRefs(tab, generation, handles, rest, params.get("cursor"), token, since),
    )


_OBSERVED: Final = "o"
"""The stand-in handle an observer's elements are shaped under (never issued, never shown)."""


def _observation(p: Planned, result: JsonObject) -> Shaped:
    """An observer's ``tab.snapshot`` (§9 v1.2): the reader's one-shot answer shaped by the snapshot rules
    (the same bounds, cuts and element fields), without refs, a snapshot id or a ``next`` cursor, and with
    ``observer: true``. Discarded ``RENDERER_CHANGED`` (retryable, nothing had effects) unless the host
    reports the tab's document ``generation`` with the result: the host's renderer identity check, the same
    document before and after the evaluation (docs/contract-notes.md "Observers"). An element carrying a
    ``handle`` — a read that kept nodes — is a malformed result."""
    generation = result.get("generation")
    if type(generation) is not int:
        raise Refusal(
            "RENDERER_CHANGED",
            f"tab {p.tab_id!r}: the host did not confirm that the tab's document stayed the same during the "
            "read; the observation was discarded: read again",
        )
    value = _script_value(p, result)
    raw = field(value, "elements", list, "snapshot")
    if any(not isinstance(e, dict) or "handle" in e for e in raw):
        raise malformed("snapshot: an observer's elements are objects without a handle")
    if value.get("rest") is not None:
        raise malformed("snapshot: an observer's read is one page (no continuation 'rest')")
    stand_in = {**value, "elements": [{**e, "handle": _OBSERVED} for e in raw]}
    shaped = _snapshot(p._replace(observer=False), {**result, "value": stand_in})
    out = shaped.result
    del out["snapshot"]
    out["generation"] = generation
    out["observer"] = True
    for item in out["elements"]:
        del item["ref"]
    return Shaped(out, generations=((out["tabId"], generation),))


def _click(p: Planned, result: JsonObject) -> Shaped:
    value = _script_value(p, result)
    if not isinstance(value, dict) or value.get("clicked") is not True:
        raise malformed("click: the script returned no {clicked:true}")
    return Shaped(with_download({"clicked": True}, result))


def _type(p: Planned, result: JsonObject) -> Shaped:
    value = _script_value(p, result)
    return Shaped({"typed": field(value, "typed", int, "type")})


SHAPERS: Final[dict[str, Shaper]] = {
    "tabs.list": _tabs_list,
    "tabs.select": _tab_identity,
    "tabs.open": _tab_identity,
    "tabs.close": _tabs_close,
    "tab.snapshot": _snapshot,
    "tab.click": _click,
    "tab.type": _type,
    "tab.navigate": _navigate,
    "tab.screenshot": _screenshot,
    "extension.call": _extension_call,
}
"""Every dispatched canonical method's shaper (``documentation`` and ``capabilities`` are answered by the
gateway itself and dispatch nothing): ``SHAPERS[planned.method](planned, result)`` shapes a native
``{success: true, …}`` result into a :class:`Shaped`; raises :class:`Refusal`."""
