"""One-shot observers for grounding (CONTRACT.md §9 v1.2 "Observers"; docs/host.md "Observers").

:func:`observe` reads one tab once through the fixed reader **without a registry**: it makes a gateway of its
own with ``observer: true`` (so ``allowActions:false``; nothing of it can act), runs one ``tab.snapshot``
through it on the given renderer and throws the gateway away. The read installs nothing in the page (no
listener, no MutationObserver, no registry), its elements carry no ``ref``, it is one page (at most 12,000
characters and 200 elements), and it is discarded ``RENDERER_CHANGED`` when the tab's document or renderer
changed between its start and its end: the renderer reports the tab's document generation only when it was
the same before and after the evaluation (``browser/world.py``), and — with ``main``, the renderer's own
driver — every refs invalidation during the read reaches the observer's gateway too.

A native app grounds a chat turn on the visible tab this way; the reference host offers it as
``POST /v1/observe`` (``kelpie-gateway observe``) beside its ordinary gateway, whose refs it never touches.
Without a ``tabId`` the observer reads the host's selected tab (selected targeting).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kelpie_gateway.host.driver import Caller, Driver, GatewayLike
from kelpie_gateway.host.renderer import Renderer

JsonObject = dict[str, Any]

OBSERVER_CONFIG: JsonObject = {
    "nativeMethods": ["get-tabs", "browser-control-evaluate"],
    "fixedReader": True,
    "observer": True,
    "requireAuthorization": False,
    "realm": "isolated",
}
"""The one-shot gateway's config (``targeting`` is added per read: ``direct`` with a tab, else ``selected``)."""

_CLOSING: set[asyncio.Future[Any]] = set()


def observer_config(tab_id: str | None) -> JsonObject:
    """The config of the gateway that reads ``tab_id`` once (None: the selected tab)."""
    return {**OBSERVER_CONFIG, "targeting": "direct" if tab_id is not None else "selected"}


async def observe(
    renderer: Renderer,
    params: Mapping[str, Any] | None = None,
    *,
    log: Callable[[str], None] = lambda _line: None,
    main: Driver | None = None,
    caller: Caller | None = None,
    make_gateway: Callable[[JsonObject], GatewayLike] | None = None,
) -> JsonObject:
    """One observer read; returns the ``complete`` step (its ``response`` is the envelope).

    ``params``: ``tab.snapshot``'s params (CONTRACT.md §3) — ``tabId`` (absent: the renderer's selected tab),
    ``maxChars`` (≤ 12,000), ``maxElements`` (≤ 200), ``timeoutMs``; ``scope`` and ``cursor`` are refused
    ``INVALID_PARAMS`` (an observer has no refs), other fields as the schema says. ``main``: the driver that
    owns the renderer's events (its invalidations reach the observer during the read); ``caller``: for the
    audit trail of ``main`` (the read is recorded there as a ``tab.snapshot``). ``make_gateway``: how the
    gateway is made from its config (default: the Python API; the host passes its ``--via-abi`` choice).
    Never raises: errors are envelopes."""
    wanted = dict(params or {})
    tab = wanted.get("tabId")
    config = observer_config(tab if isinstance(tab, str) else None)
    try:
        gateway = (make_gateway or _like(main))(config)
    except Exception as exc:  # the C library missing or refusing: errors are values
        message = f"the observer's gateway could not be made: {type(exc).__name__}: {exc}"[:500]
        error = {"code": "INTERNAL", "message": message, "retryable": False}
        response = {"version": 1, "id": None, "success": False, "error": error, "mayHaveCompleted": False}
        return {"step": "complete", "response": response, "audit": {}}
    driver = Driver(gateway, renderer, log, audit=main.audit if main is not None else None, listen=False)
    request = {"version": 1, "id": None, "method": "tab.snapshot", "params": wanted}
    try:
        with main.observing(gateway) if main is not None else contextlib.nullcontext():
            step = await driver.canonical(request, caller or Caller(transport="observe"))
    finally:
        _close_later(driver, gateway)
    return step


def _like(main: Driver | None) -> Callable[[JsonObject], GatewayLike]:
    """Gateways made the way ``main``'s was: through the C library when it is an ``AbiGateway``
    (``--via-abi``), else through the Python API."""
    from kelpie_gateway.host.abi import AbiGateway

    if main is not None and isinstance(main.gateway, AbiGateway):
        library = main.gateway.library
        return lambda config: AbiGateway(config, library=library)
    from kelpie_gateway import Gateway

    return Gateway


def _close_later(driver: Driver, gateway: GatewayLike) -> None:
    """Close the one-shot gateway once its renderer callback (if a timed-out one is still out) retired."""

    async def close() -> None:
        await driver.drain(15.0)
        with contextlib.suppress(Exception):
            gateway.close()

    task = asyncio.ensure_future(close())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)
