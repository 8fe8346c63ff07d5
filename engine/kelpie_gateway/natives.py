"""The native call each canonical method dispatches: endpoint name and exact params (CONTRACT.md §3, §9).
Pure functions: no gateway state, no I/O.

A builder takes what the transaction planned (:class:`~kelpie_gateway.results.Planned`) and a
:class:`Context` (the per-gateway reader key and a ref resolver) and returns ``(endpoint, params)``; it
raises :class:`~kelpie_gateway.errors.Refusal` when a ref cannot be resolved (checked again here because a
switch-tab may have run since admission). The host invokes the endpoint with exactly these params, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from . import reader
from .config import CAPTURED_FIELD
from .errors import JsonObject, Refusal
from .results import Planned

WORLD: Final = reader.WORLD_NAME
"""The isolated world fixed scripts run in (``browser-control-evaluate`` params ``world``)."""


@dataclass(frozen=True, slots=True)
class Context:
    """``key``: the per-gateway reader key (§9); ``resolve(ref, tabId)`` → the renderer handle,
    ``resume(cursor, tabId)`` → the renderer's private continuation position (§3, §9 v1.1), and
    ``since(snapshotId, tabId)`` → the renderer's token of that snapshot's read (§9 v1.2); all raise
    :class:`~kelpie_gateway.refs.RefError`, a :class:`~kelpie_gateway.errors.Refusal`."""

    key: str
    resolve: Callable[[str, str], str]
    resume: Callable[[str, str], Any]
    since: Callable[[str, str], str]


NativeCall = tuple[str, JsonObject]
Builder = Callable[[Planned, Context], NativeCall]


def _evaluate(p: Planned, script: str) -> NativeCall:
    return "browser-control-evaluate", {
        "tabId": p.tab_id,
        "world": WORLD,
        "script": script,
        "timeoutMs": p.params["timeoutMs"],
    }


def _handle(p: Planned, ctx: Context) -> str:
    assert p.tab_id is not None
    return ctx.resolve(p.params["ref"], p.tab_id)  # a RefError is a Refusal


def _acting(p: Planned, ctx: Context, make: Callable[[str], str]) -> NativeCall:
    handle = _handle(p, ctx)
    try:
        script = make(handle)
    except ValueError as exc:  # the renderer's handle for this ref is not a reader handle
        raise Refusal("RENDERER_FAILED", f"cannot act on ref {p.params['ref']!r}: {exc}") from None
    return _evaluate(p, script)


def _extension_call(p: Planned, ctx: Context) -> NativeCall:
    """The arguments unchanged; a ref-bearing extension's also carry ``kelpieCaptured``: the world, the
    reader key and the handle behind each ref argument, for the host's generated scripts (never a client's)."""
    assert p.endpoint is not None
    if not p.handles:
        return p.endpoint, p.params["arguments"]
    captured = {"world": WORLD, "key": ctx.key, "handles": dict(p.handles)}
    return p.endpoint, {**p.params["arguments"], CAPTURED_FIELD: captured}


_NEW_READ_PARAMS: Final = ("scope", "include", "find", "since")
"""``tab.snapshot`` params that say what a new snapshot reads; a ``cursor`` takes none of them (§9 v1.2)."""


class Anchor(NamedTuple):
    """Where a ``tab.snapshot`` starts: the renderer handle of its ``scope``, the private position a
    ``cursor`` continues, the renderer token of the snapshot ``since`` compares with (each None when not
    given)."""

    scope: str | None
    position: Any
    since: str | None


def snapshot_anchor(params: JsonObject, tab_id: str, ctx: Context) -> Anchor:
    """The :class:`Anchor` of a ``tab.snapshot`` (§3, §9 v1.1 and v1.2). Raises :class:`Refusal`:
    ``INVALID_PARAMS`` for a cursor with any of scope, include, find or since, for scope with since, or for
    a cursor or snapshot id never issued; the ref refusals for ``scope``; ``CROSS_TAB_REF``/``STALE_SNAPSHOT``
    for a cursor of another tab, an older or already continued page, or a tab changed since, and for a
    ``since`` of another tab, not the tab's latest snapshot, or of a document the tab no longer shows."""
    if "cursor" in params:
        for name in _NEW_READ_PARAMS:
            if name in params:
                raise Refusal(
                    "INVALID_PARAMS",
                    f"/params/{name}: a cursor continues its own snapshot (its scope, include and find); "
                    "send the cursor alone",
                )
        return Anchor(None, ctx.resume(params["cursor"], tab_id), None)  # a RefError is a Refusal
    if "since" in params:
        if "scope" in params:
            raise Refusal(
                "INVALID_PARAMS",
                "/params/scope: since compares the same part of the page as the snapshot it names; send "
                "either, not both",
            )
        return Anchor(None, None, ctx.since(params["since"], tab_id))
    if "scope" in params:
        return Anchor(ctx.resolve(params["scope"], tab_id), None, None)
    return Anchor(None, None, None)


def _snapshot(p: Planned, ctx: Context) -> NativeCall:
    params = p.params
    assert p.tab_id is not None
    if p.observer:  # no scope, cursor, since, include or find (refused by admission): one read (§9 v1.2)
        return _evaluate(
            p, reader.observer_script(max_chars=params["maxChars"], max_elements=params["maxElements"])
        )
    anchor = snapshot_anchor(params, p.tab_id, ctx)
    try:
        script = reader.snapshot_script(
            ctx.key,
            max_chars=params["maxChars"],
            max_elements=params["maxElements"],
            scope=anchor.scope,
            cursor=anchor.position,
            include=params.get("include"),
            find=params.get("find"),
            since=anchor.since,
        )
    except ValueError as exc:  # the renderer's handle for the scope ref is not a reader handle
        raise Refusal("RENDERER_FAILED", f"cannot read that scope: {exc}") from None
    return _evaluate(p, script)


def _click(p: Planned, ctx: Context) -> NativeCall:
    return _acting(p, ctx, lambda handle: reader.click_script(ctx.key, handle))


def _type(p: Planned, ctx: Context) -> NativeCall:
    return _acting(p, ctx, lambda handle: reader.type_script(ctx.key, handle, p.params["text"]))


def _navigate(p: Planned, _ctx: Context) -> NativeCall:
    return "navigate", {"tabId": p.tab_id, "url": p.params["url"], "timeoutMs": p.params["timeoutMs"]}


def _screenshot(p: Planned, _ctx: Context) -> NativeCall:
    params = p.params
    return "screenshot", {
        "tabId": p.tab_id,
        "format": params["format"],
        "fullPage": params["fullPage"],
        "timeoutMs": params["timeoutMs"],
    }


BUILDERS: Final[dict[str, Builder]] = {
    "tabs.list": lambda _p, _c: ("get-tabs", {}),
    "tabs.select": lambda p, _c: ("switch-tab", {"tabId": p.tab_id}),
    "tabs.open": lambda p, _c: ("new-tab", {"url": p.params["url"]} if "url" in p.params else {}),
    "tabs.close": lambda p, _c: ("close-tab", {"tabId": p.tab_id}),
    "tab.snapshot": _snapshot,
    "tab.click": _click,
    "tab.type": _type,
    "tab.navigate": _navigate,
    "tab.screenshot": _screenshot,
    "extension.call": _extension_call,
}
"""Every dispatched canonical method's native call (the same keys as :data:`results.SHAPERS`):
``BUILDERS[planned.method](planned, ctx)`` is ``(endpoint, params)`` of the main dispatch; raises
:class:`Refusal` for refs. The gateway looks it up itself (no wrapper: one call fewer per transaction)."""
