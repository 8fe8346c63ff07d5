"""The renderer contract of the reference host: what the driver needs from a renderer, and where a renderer
reports what happened in its browser (CONTRACT.md §3 "Native endpoint results", §5; docs/host.md "Layout of
the host").

* :class:`Renderer` — one native endpoint call that never raises (``{"success": true, ...}`` or
  ``{"success": false, "error": {code, message}, ...}``, built with :func:`fail`), the means to end stuck
  work, the browser's availability after it exited, and :meth:`Renderer.listen`.
* :class:`RendererEvents` — the one sink for renderer events. The driver is it (it owns the gateway): refs
  invalidated by a main-frame navigation, a close or a crash; a tab gone for good; a renderer crash or the
  browser's exit. A renderer told nothing yet (before ``listen``) drops its events.
* :class:`NoRenderer` — ``--browser none``. :class:`~kelpie_gateway.host.browser.ChromiumRenderer` is the
  real one.
* :class:`Refused` — raised inside a renderer by a check that refuses a call with nothing run; the
  renderer's ``call`` answers its result (errors are values at the boundary).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

JsonObject = dict[str, Any]
Endpoint = Callable[[Mapping[str, Any]], Awaitable[JsonObject]]
"""A native endpoint's handler: params in, a native result out (it may raise; ``call`` turns exceptions
into ``RENDERER_FAILED`` results and :class:`Refused` into its result)."""


HOST_TAB_ID = re.compile(r"t[1-9][0-9]{0,8}\Z")
"""The reference host's tab ids: ``t1``, ``t2`` … (never reused)."""
LOGGED_TAB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,23}\Z")
"""A tab id the ``tx`` log line shows as it is: the shape the engine quotes a tab id in (any renderer's ids,
``t1`` or a test renderer's ``A``; at most 24 characters, so never a bearer token); anything else is ``?``."""


def shown_tab(value: object) -> str:
    """A tab id a client sent, as a message or log line shows it: quoted when it has the host's tab-id
    shape, else only described (``a 43-character string that is not a tab id``): a bearer token sent as a
    ``tabId`` is never echoed back or logged (issue 27)."""
    if isinstance(value, str):
        return (
            repr(value)
            if HOST_TAB_ID.match(value)
            else f"a {len(value)}-character string that is not a tab id"
        )
    return f"a {type(value).__name__} that is not a tab id"


def fail(code: str, message: str, **extra: Any) -> JsonObject:
    """A native failure result ``{"success": false, "error": {code, message}, ...extra}``."""
    return {"success": False, "error": {"code": code, "message": message}, **extra}


class Refused(Exception):
    """A call refused before anything ran; :attr:`result` is the native failure result to answer (usually
    ``mayHaveCompleted:false``). Raised by a renderer's own checks (an unknown or crashed tab), caught by its
    ``call``: it never leaves the renderer."""

    def __init__(self, result: JsonObject) -> None:
        super().__init__(result["error"]["message"])
        self.result = result


class PageNotMade(Exception):
    """A new page could not be made: each attempt was born with a renderer that died (nothing remains of
    it; docs/host.md "Liveness")."""


class RendererEvents(Protocol):
    """Where a renderer reports browser events, on the event loop, as they happen; none may raise into the
    renderer (a renderer logs and drops a failing listener's exception)."""

    def refs_invalidated(self, tab_id: str) -> None:
        """The tab's refs are void: a main-frame navigation (new document or same-document), its close, or
        its renderer's crash (CONTRACT.md §6)."""
        ...

    def tab_closed(self, tab_id: str) -> None:
        """The tab is gone for good (closed by anyone, or gone with its browser): calls naming it are
        ``TAB_NOT_FOUND`` from now on."""
        ...

    def renderer_gone(self, tab_id: str | None) -> None:
        """The tab's renderer crashed (None: the browser exited): work pending on it is answered at once."""
        ...


class Renderer(Protocol):
    """What the driver needs from a renderer: one native endpoint call that never raises, and the means
    to end stuck work (both return False when there was nothing to act on; neither raises)."""

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject: ...

    async def stop_script(self, tab_id: str | None) -> bool: ...

    async def end_stuck(self, tab_id: str | None) -> bool:
        """The tab's script did not stop: end what holds it without closing the tab (the agent never loses
        a tab it did not close); True when something was ended."""
        ...

    def listen(self, events: RendererEvents) -> None:
        """Report every later event to ``events`` (one sink; a later ``listen`` replaces it)."""
        ...

    def available(self) -> Awaitable[JsonObject | None] | None:
        """None when a browser is there to run a call; else an awaitable that brings one back (a relaunch
        or reattach after the browser exited) and resolves to None once it is back, or to the
        ``BROWSER_UNAVAILABLE`` result (``mayHaveCompleted:false``) when it cannot be. The driver awaits it
        before starting a call, so it knows whether anything could have run (docs/contract-notes.md,
        "Reference host: closed tabs and a missing browser")."""
        ...

    async def close(self) -> None: ...


class NoRenderer:
    """``--browser none``: the no-CEF fallback. The gateway advertises no native endpoint, so this is
    only reached by a bug; it answers ``BROWSER_UNAVAILABLE`` truthfully."""

    description = "none (browserAvailable:false)"

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        return fail(
            "BROWSER_UNAVAILABLE",
            f"this host runs without a browser; {method!r} is not available",
            mayHaveCompleted=False,
        )

    async def stop_script(self, tab_id: str | None) -> bool:
        return False

    async def end_stuck(self, tab_id: str | None) -> bool:
        return False

    def listen(self, events: RendererEvents) -> None:
        return None

    def available(self) -> Awaitable[JsonObject | None] | None:
        return None

    async def close(self) -> None:
        return None
