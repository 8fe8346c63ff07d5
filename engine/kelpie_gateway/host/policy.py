"""The reference host's site policy (ARCHITECTURE.md, "Host rules added in revision 1.1": Site policy).

``serve --allowed-origins LIST --blocked-origins LIST``: comma- (or semicolon-) separated origin patterns.
Default: every http(s) origin is allowed; an explicitly empty ``--allowed-origins ""`` allows none (but the
``--site`` origin). A blocked pattern wins over an allowed one. Patterns:

* ``https://example.com`` — exactly that origin (the scheme's default port);
* ``http://localhost:8080``, ``http://localhost:*`` — a port, or any port;
* ``https://*.example.com`` — ``*``/``?`` globs in the host (``*.example.com`` does not match
  ``example.com`` itself; list both);
* ``example.com``, ``*.example.com`` — no scheme: http and https, any port;
* ``*`` — every http(s) origin.

Where it applies:

1. **The authorize step** (:meth:`SitePolicy.authorize`): ``tab.navigate`` and ``tabs.open`` to a refused
   URL are answered ``NOT_AUTHORIZED`` before anything is dispatched (``mayHaveCompleted:false``, no
   reconcile mark, CONTRACT.md §5).
2. **The browser's request routing** (:meth:`SitePolicy.refusal`, used by the renderer's routing part,
   ``host/browser/routing.py``, through Playwright's ``context.route`` and by :class:`RedirectGuard` through
   CDP ``Fetch``): every request to a
   refused origin is aborted (``net::ERR_BLOCKED_BY_CLIENT``) and logged — subframes, ``window.open``
   popups, subresources, and redirect hops (Playwright's routing never sees a redirect's next hop, so each
   tab also has its own CDP ``Fetch`` interception that does).
3. **Navigation results** (:class:`PolicyRenderer`): a navigation (``navigate``, ``new-tab``, ``go-back``,
   ``go-forward``) that the routing stopped is reported ``NOT_AUTHORIZED`` naming the refused origin; it is
   ``mayHaveCompleted:true`` because the tab left its page (it shows the browser's error page) and the
   allowed first hop was requested.

``about:blank``, ``data:`` and ``blob:`` URLs carry no origin a network server sees and are always allowed;
every other non-http(s) scheme is refused. The host's own ``--site`` origin is allowed unless a blocked
pattern names it (the operator chose to serve it).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, CDPSession, Page

JsonObject = dict[str, Any]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_GLOB = re.compile(r"^[a-z0-9.*?\-_\[\]:]+$")
_ALWAYS = ("about", "data", "blob")
NAVIGATING_METHODS = frozenset({"navigate", "new-tab", "go-back", "go-forward"})
"""Native endpoints whose failure may be a navigation stopped by the routing."""


class PolicyError(ValueError):
    """A pattern that cannot be parsed; the message names it."""


@dataclass(frozen=True)
class OriginPattern:
    """One parsed pattern; ``scheme`` None = http and https; ``port`` None = any port."""

    text: str
    scheme: str | None
    host: str
    port: int | None

    def matches(self, scheme: str, host: str, port: int) -> bool:
        if self.scheme is not None and scheme != self.scheme:
            return False
        if self.port is not None and port != self.port:
            return False
        return fnmatch.fnmatchcase(host, self.host)


def parse_pattern(raw: str) -> OriginPattern:
    """Parse one origin pattern (see the module docstring); raises :class:`PolicyError`."""
    text = raw.strip()
    if not text:
        raise PolicyError("an empty origin pattern")
    if text == "*":
        return OriginPattern(text, None, "*", None)
    scheme: str | None = None
    rest = text
    if "://" in text:
        scheme, rest = text.split("://", 1)
        scheme = scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise PolicyError(f"{raw!r}: only http and https origins can be listed")
    rest = rest.rstrip("/")
    if "/" in rest or "@" in rest or not rest:
        raise PolicyError(f"{raw!r}: an origin is scheme://host[:port], without a path")
    port: int | None
    if rest.startswith("["):  # IPv6 literal
        end = rest.find("]")
        if end < 0:
            raise PolicyError(f"{raw!r}: unterminated IPv6 address")
        host, tail = rest[: end + 1], rest[end + 1 :]
    else:
        host, _, port_text = rest.partition(":")
        tail = f":{port_text}" if port_text or rest.endswith(":") else ""
    host = host.lower()
    if not _HOST_GLOB.fullmatch(host):
        raise PolicyError(f"{raw!r}: {host!r} is not a host name, address or glob")
    if tail:
        port_text = tail[1:]
        if port_text == "*":
            port = None
        elif port_text.isdigit() and 0 < int(port_text) < 65536:
            port = int(port_text)
        else:
            raise PolicyError(f"{raw!r}: the port must be a number 1..65535 or *")
    else:
        port = None if scheme is None else _DEFAULT_PORTS[scheme]
    return OriginPattern(text, scheme, host.strip("[]") if host.startswith("[") else host, port)


def parse_list(raw: str | None) -> tuple[OriginPattern, ...]:
    """A comma- or semicolon-separated list of patterns (None or "" = empty); raises PolicyError."""
    if not raw:
        return ()
    return tuple(parse_pattern(part) for part in re.split(r"[,;]", raw) if part.strip())


def origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL, else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def origin_text(url: str) -> str:
    """The serialised origin of ``url`` for messages and the log (never a path or query: they can carry
    what the agent typed), or the bare scheme."""
    origin = origin_of(url)
    if origin is None:
        return (urlsplit(url).scheme or "?") + ":"
    scheme, host, port = origin
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" if port == _DEFAULT_PORTS[scheme] else f"{scheme}://{shown}:{port}"


@dataclass
class SitePolicy:
    """Allowed/blocked origin patterns; ``allowed`` None = every http(s) origin."""

    allowed: tuple[OriginPattern, ...] | None = None
    blocked: tuple[OriginPattern, ...] = ()
    always: set[tuple[str, str, int]] = field(default_factory=set)

    @classmethod
    def from_flags(cls, allowed: str | None, blocked: str | None) -> SitePolicy:
        """From the ``serve`` flags; raises :class:`PolicyError` for a bad pattern."""
        allow = parse_list(allowed)
        return cls(allowed=allow if allowed is not None else None, blocked=parse_list(blocked))

    @property
    def restrictive(self) -> bool:
        """True when some http(s) origin can be refused (else the routing hooks are not needed)."""
        return self.allowed is not None or bool(self.blocked)

    def describe(self) -> str:
        """One log line: what is allowed and blocked."""
        allowed = (
            "every http(s) origin"
            if self.allowed is None
            else ", ".join(p.text for p in self.allowed) or "none"
        )
        blocked = ", ".join(p.text for p in self.blocked) or "none"
        return f"allowed: {allowed}; blocked: {blocked}"

    def allow_origin_of(self, url: str) -> None:
        """Always allow ``url``'s origin unless a blocked pattern names it (the ``--site`` server)."""
        origin = origin_of(url)
        if origin is not None:
            self.always.add(origin)

    def refusal(self, url: str) -> str | None:
        """None when the browser may request ``url``, else why not (one line, names only the origin)."""
        origin = origin_of(url)
        if origin is None:
            scheme = urlsplit(url).scheme.lower()
            return None if scheme in _ALWAYS else f"{scheme}: URLs are not allowed"
        for pattern in self.blocked:
            if pattern.matches(*origin):
                return f"{origin_text(url)} is blocked by the site policy ({pattern.text})"
        if self.allowed is None or origin in self.always or any(p.matches(*origin) for p in self.allowed):
            return None
        return f"{origin_text(url)} is not in the site policy's allowed origins"

    def authorize(self, step: Mapping[str, Any]) -> JsonObject:
        """The host's decision for an ``authorize`` step (CONTRACT.md §5): navigations and new tabs to a
        refused URL get ``NOT_AUTHORIZED``; everything else is admitted."""
        request = step.get("request")
        params = request.get("params") if isinstance(request, Mapping) else None
        method = request.get("method") if isinstance(request, Mapping) else None
        url = params.get("url") if isinstance(params, Mapping) else None
        if method in ("tab.navigate", "tabs.open") and isinstance(url, str):
            reason = self.refusal(url)
            if reason is not None:
                return {
                    "success": False,
                    "error": {"code": "NOT_AUTHORIZED", "message": f"{method}: {reason}"},
                }
        return {"success": True}


class RedirectGuard:
    """Per-tab CDP ``Fetch`` interception that applies the policy to every request of the tab's target,
    redirect hops included (Playwright's ``route`` does not see them). Attached only when the policy is
    restrictive. Blocked navigations are remembered per page for :class:`PolicyRenderer`."""

    def __init__(self, policy: SitePolicy, log: Callable[[str], None]) -> None:
        self.policy = policy
        self.log = log
        self.blocked: dict[int, tuple[float, str]] = {}
        self._sessions: dict[int, CDPSession] = {}
        self._tasks: set[asyncio.Future[Any]] = set()

    async def attach(self, context: BrowserContext, page: Page, tab_id: str) -> None:
        """Start intercepting ``page``'s requests (called once when the tab is adopted)."""
        session = await context.new_cdp_session(page)
        self._sessions[id(page)] = session
        page.on("close", lambda _page: self._forget(page))
        tree = await session.send("Page.getFrameTree")
        main_frame = str(tree["frameTree"]["frame"]["id"])  # the main frame's id is the target's: stable
        session.on(
            "Fetch.requestPaused",
            lambda event: self._spawn(self._paused(session, page, tab_id, main_frame, event)),
        )
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})

    def _forget(self, page: Page) -> None:
        self._sessions.pop(id(page), None)
        self.blocked.pop(id(page), None)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _paused(
        self, session: CDPSession, page: Page, tab_id: str, main_frame: str, event: Mapping[str, Any]
    ) -> None:
        request_id = event.get("requestId")
        url = str((event.get("request") or {}).get("url", ""))
        reason = self.policy.refusal(url)
        with contextlib.suppress(Exception):  # the tab may be closing: nothing left to decide
            if reason is None:
                await session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            await session.send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
            )
        kind = str(event.get("resourceType") or "request").lower()
        if kind == "document":
            kind += " (main frame)" if event.get("frameId") == main_frame else " (subframe)"
        hop = " redirect" if event.get("redirectedRequestId") else ""
        self.note_blocked(page, tab_id, kind + hop, url, reason or "")

    def note_blocked(self, page: Page, tab_id: str, kind: str, url: str, reason: str) -> None:
        """Log one blocked request (origin only) and remember blocked document loads per page."""
        if kind.startswith("document"):
            self.blocked[id(page)] = (time.monotonic(), origin_text(url))
        self.log(f"site policy: blocked {kind} to {origin_text(url)} in tab {tab_id}: {reason}")

    def recent_block(self, page: Page | None, since: float) -> str | None:
        """The origin of a document load blocked in ``page`` after ``since`` (monotonic s), else None."""
        if page is None:
            return None
        hit = self.blocked.get(id(page))
        return hit[1] if hit is not None and hit[0] >= since else None


class PolicyRenderer:
    """A renderer wrapper: navigations the routing stopped come back ``NOT_AUTHORIZED`` naming the origin
    instead of a bare ``net::ERR_BLOCKED_BY_CLIENT`` (see the module docstring, point 3)."""

    def __init__(self, inner: Any, guard: RedirectGuard) -> None:
        self.inner = inner
        self.guard = guard

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        started = time.monotonic()
        result: JsonObject = await self.inner.call(method, params)
        if result.get("success") is not False or method not in NAVIGATING_METHODS:
            return result
        error = result.get("error") or {}
        if "ERR_BLOCKED_BY_CLIENT" not in str(error.get("message", "")):
            return result
        tab_id = params.get("tabId")
        page = self.inner.page_of(tab_id) if isinstance(tab_id, str) else None
        origin = self.guard.recent_block(page, started) or self.guard.recent_block(
            self.inner.newest_page(), started
        )
        where = f" to {origin}" if origin else ""
        return {
            "success": False,
            "error": {
                "code": "NOT_AUTHORIZED",
                "message": f"the navigation was stopped{where} by the site policy (a redirect or a blocked origin); "
                "the tab shows an error page now",
            },
            "mayHaveCompleted": True,
        }

    async def close(self) -> None:
        await self.inner.close()
