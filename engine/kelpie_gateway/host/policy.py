"""The reference host's site policy: one decision for every request the browser makes (ARCHITECTURE.md,
host rules 1.1 "Site policy" and 1.2 "Site policy is the network's"; docs/host.md "Site policy").

``serve --allowed-origins LIST --blocked-origins LIST``: comma- (or semicolon-) separated origin patterns.
Default: every http(s) origin is allowed; an explicitly empty ``--allowed-origins ""`` allows none (but the
``--site`` origin). A blocked pattern wins over an allowed one. Patterns:

* ``https://example.com`` — exactly that origin (the scheme's default port);
* ``http://localhost:8080``, ``http://localhost:*`` — a port, or any port;
* ``https://*.example.com`` — ``*``/``?`` globs in the host (``*.example.com`` does not match
  ``example.com`` itself; list both);
* ``example.com``, ``*.example.com`` — no scheme: http and https, any port;
* ``*`` — every http(s) origin.

**Canonical origins.** Every URL is parsed as the WHATWG URL Standard says (the ``ada-url`` parser, the
standard Chromium follows), so the gateway reads a URL exactly as the browser does
(``http://127.0.0.2:18082\\@127.0.0.1:18081/`` is an URL of ``127.0.0.2:18082``; ``http://0x7f.1/`` is
``127.0.0.1``). Hosts are then compared in one form: lower case, IDNA, without trailing dots; an
IPv4-mapped IPv6 address (``[::ffff:127.0.0.2]``, ``[::ffff:7f00:2]``) is its IPv4 address; ``localhost``
and every ``*.localhost`` name (which Chromium resolves to loopback itself) are ``localhost``. Patterns are
read the same way. A URL the standard cannot parse is refused naming why (``http://127.0.0.1:18081./x``:
its port is not a number), never as a scheme it is not.

**Tunnels.** The browser reaches ``https:``, ``wss:`` and — Chromium tunnels every WebSocket through a
proxy — ``ws:`` destinations through one ``CONNECT host:port``, so at the network the scheme of such a
destination is not known. :meth:`SitePolicy.tunnel_refusal` therefore decides the endpoint: refused when a
blocked pattern matches ``http://host:port`` or ``https://host:port``; admitted when an allowed pattern
matches either. An ``https:`` URL is decided the same way at ``authorize`` (one decision, as the proxy will
take it); an ``http:`` URL, which the proxy sees whole, by its exact origin.

**Addresses.** When a blocked pattern names an address (an IP literal, or a glob of digits), a host name is
also refused when it resolves to a blocked address (:meth:`SitePolicy.address_refusal`; ``0.0.0.0`` and
``[::]``, which reach this machine, are read as ``127.0.0.1`` and ``[::1]``). The proxy connects to exactly
the address it checked.

Where it applies (docs/host.md "Site policy"):

1. **The authorize step** (:meth:`SitePolicy.authorize`): ``tab.navigate`` and ``tabs.open`` to a refused
   URL are answered ``NOT_AUTHORIZED`` before anything is dispatched (``mayHaveCompleted:false``, no
   reconcile mark, CONTRACT.md §5), addresses included (the host name is resolved first when the policy
   names addresses).
2. **The browser's network** (``host/policy_proxy.py``): with a restrictive policy every request of every
   target goes through a forward proxy on loopback that asks :meth:`SitePolicy.refusal` (plain ``http:``)
   or :meth:`SitePolicy.tunnel_refusal` (``CONNECT``) — pages, popups, out-of-process frames, every kind of
   worker, WebSocket, preconnect and prefetch, each redirect hop. WebRTC's UDP, which no proxy sees, is off.
   A browser on another machine cannot reach that proxy: there the context's request routing applies the
   policy instead (``browser/routing.py``; docs/host.md "What holds per browser").
3. **Navigation results** (:class:`PolicyRenderer`): a navigation the proxy stopped (a redirect to a refused
   origin) is reported ``NOT_AUTHORIZED`` naming the refused origin, ``mayHaveCompleted:true``: the tab left
   its page and shows the refusal.

``about:``, ``data:`` and ``blob:`` URLs carry no origin a network server sees and are always allowed;
every other non-http(s) scheme is refused. The host's own ``--site`` origin is allowed unless a blocked
pattern names it (the operator chose to serve it).
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import re
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import ada_url

JsonObject = dict[str, Any]

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_GLOB = re.compile(r"^[a-z0-9.*?\-_\[\]:]+$")
_ADDRESS_GLOB = re.compile(r"^[0-9a-f.:*?\[\]]+$")
_ALWAYS = ("about", "data", "blob")
TUNNEL_REFUSED = "net::ERR_TUNNEL_CONNECTION_FAILED"
"""What Chromium makes of the proxy's answer to a refused ``CONNECT`` (and an unreachable one: ``502``)."""
ROUTING_REFUSED = "net::ERR_BLOCKED_BY_CLIENT"
"""What a request refused by the context's routing (``browser/routing.py``: a remote browser) fails with."""
STOPPED_ERRORS = (TUNNEL_REFUSED, ROUTING_REFUSED)
NAVIGATING_METHODS = frozenset({"navigate", "new-tab", "go-back", "go-forward"})
"""Native endpoints whose result may be a navigation the proxy stopped."""
RESOLVE_TIMEOUT_S = 2.0
"""How long ``authorize`` waits for a host name's addresses (the proxy decides again, definitively)."""


class PolicyError(ValueError):
    """A pattern that cannot be parsed; the message names it."""


class Origin(NamedTuple):
    """A canonical origin: ``scheme`` ``http``/``https``, ``host`` as :func:`canonical_host` gives it
    (an IPv6 address without brackets), ``port`` always a number."""

    scheme: str
    host: str
    port: int

    def text(self) -> str:
        """The serialised origin (``http://[::1]:8080``; the scheme's default port left out)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{shown}{port}"


def canonical_host(hostname: str) -> str:
    """``hostname`` (a WHATWG-parsed URL's: lower case, IDNA, IPv4 canonical, IPv6 bracketed) in the one
    form origins are compared in: trailing dots removed, an IPv4-mapped IPv6 address as IPv4, any other
    IPv6 address compressed without brackets, ``*.localhost`` as ``localhost``."""
    if hostname.startswith("["):
        address = ipaddress.IPv6Address(hostname[1:-1])
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else str(address)
    host = hostname.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return "localhost"
    return host


class Parsed(NamedTuple):
    """A URL read as the browser reads it: ``scheme`` (without the colon), and for http(s) its canonical
    ``origin`` (else None)."""

    scheme: str
    origin: Origin | None


def parse_url(url: str) -> Parsed | str:
    """``url`` read by the WHATWG URL parser, or — when the standard cannot parse it — why not (one line
    that names no path or query)."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return f"not a valid URL ({_why_invalid(url)}): the browser would not load it"
    scheme = parsed.protocol[:-1]
    if scheme not in DEFAULT_PORTS:
        return Parsed(scheme, None)
    port = int(parsed.port) if parsed.port else DEFAULT_PORTS[scheme]
    return Parsed(scheme, Origin(scheme, canonical_host(parsed.hostname), port))


def _why_invalid(url: str) -> str:
    """A best-effort reason a URL does not parse (for the refusal's message; names no path or query)."""
    _, sep, rest = url.partition("://")
    if not sep:
        return "no scheme://"
    authority = re.split(r"[/?#\\]", rest, maxsplit=1)[0].rpartition("@")[2]
    host, port = authority, ""
    if ":" in authority.rpartition("]")[2]:
        host, _, port = authority.rpartition(":")
    if port:
        if not port.isdigit():
            return "its port is not a number"
        if int(port) > 65535:
            return "its port is over 65535"
    if not (host or authority):
        return "it has no host"
    return "its host is not a valid host name or address"


def address_forms(address: str) -> str:
    """An IP address as the policy compares it: IPv4-mapped IPv6 as IPv4, ``0.0.0.0`` (which reaches this
    machine) as ``127.0.0.1`` and ``::`` as ``::1``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        return "127.0.0.1" if ip.version == 4 else "::1"
    return str(ip)


def is_address(host: str) -> bool:
    """True for an IP literal (canonical form, IPv6 without brackets)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class OriginPattern:
    """One parsed pattern; ``scheme`` None = http and https; ``port`` None = any port."""

    text: str
    scheme: str | None
    host: str
    port: int | None

    def matches(self, origin: Origin) -> bool:
        if self.scheme is not None and origin.scheme != self.scheme:
            return False
        if self.port is not None and origin.port != self.port:
            return False
        return self.host == origin.host or fnmatch.fnmatchcase(origin.host, self.host)

    @property
    def names_addresses(self) -> bool:
        """True when the pattern can match an IP address (an IP literal or a glob of digits)."""
        return is_address(self.host) or _ADDRESS_GLOB.fullmatch(self.host) is not None


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
        if scheme not in DEFAULT_PORTS:
            raise PolicyError(f"{raw!r}: only http and https origins can be listed")
    rest = rest.rstrip("/")
    if "/" in rest or "@" in rest or "\\" in rest or not rest:
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
        port = None if scheme is None else DEFAULT_PORTS[scheme]
    return OriginPattern(text, scheme, _canonical_pattern_host(raw, host), port)


def _canonical_pattern_host(raw: str, host: str) -> str:
    """A pattern's host in the form origins are compared in: a glob keeps its text (lower case, trailing
    dots and a ``.localhost`` suffix folded as in :func:`canonical_host`); a plain host is read by the WHATWG
    parser, as a URL's would be."""
    if any(ch in host for ch in "*?") and not host.startswith("["):
        host = host.rstrip(".")
        return "localhost" if host.endswith(".localhost") else host
    try:
        return canonical_host(ada_url.URL(f"http://{host}/").hostname)
    except ValueError:
        raise PolicyError(f"{raw!r}: {host!r} is not a valid host name or address") from None


def parse_list(raw: str | None) -> tuple[OriginPattern, ...]:
    """A comma- or semicolon-separated list of patterns (None or "" = empty); raises PolicyError."""
    if not raw:
        return ()
    return tuple(parse_pattern(part) for part in re.split(r"[,;]", raw) if part.strip())


def origin_of(url: str) -> Origin | None:
    """The canonical origin of an http(s) URL (WHATWG parsing), else None."""
    parsed = parse_url(url)
    return parsed.origin if isinstance(parsed, Parsed) else None


def origin_text(url: str) -> str:
    """The serialised canonical origin of ``url`` for messages and the log (never a path or query: they can
    carry what the agent typed), or the bare scheme."""
    parsed = parse_url(url)
    if isinstance(parsed, str):
        return "an invalid URL"
    return parsed.origin.text() if parsed.origin is not None else f"{parsed.scheme}:"


def endpoint_text(host: str, port: int) -> str:
    """``host:port`` (an IPv6 address in brackets): a tunnel's endpoint, for messages."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


Resolver = Callable[[str, int], Awaitable[list[str]]]


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the system resolver; an IP literal is itself)."""
    if is_address(host):
        return [host]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class SitePolicy:
    """Allowed/blocked origin patterns; ``allowed`` None = every http(s) origin. The one decision of the
    module docstring: :meth:`refusal` (a URL), :meth:`tunnel_refusal` (a ``CONNECT`` endpoint) and
    :meth:`address_refusal` (a resolved address); :meth:`authorize` applies them at the authorize step."""

    allowed: tuple[OriginPattern, ...] | None = None
    blocked: tuple[OriginPattern, ...] = ()
    always: set[Origin] = field(default_factory=set)
    log: Callable[[str], None] | None = None
    """Where a refusal at the authorize step is logged (one line, origin only)."""
    resolver: Resolver = resolve

    @classmethod
    def from_flags(cls, allowed: str | None, blocked: str | None) -> SitePolicy:
        """From the ``serve`` flags; raises :class:`PolicyError` for a bad pattern."""
        allow = parse_list(allowed)
        return cls(allowed=allow if allowed is not None else None, blocked=parse_list(blocked))

    @property
    def restrictive(self) -> bool:
        """True when some http(s) origin can be refused (else no proxy is needed: nothing to decide)."""
        return self.allowed is not None or bool(self.blocked)

    @property
    def names_addresses(self) -> bool:
        """True when a blocked pattern can match an address: host names are then resolved and checked."""
        return any(p.names_addresses for p in self.blocked)

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

    # ------------------------------------------------------------------ the decision
    def _blocked_by(self, origins: Iterable[Origin], shown: str) -> str | None:
        for origin in origins:
            for pattern in self.blocked:
                if pattern.matches(origin):
                    return f"{shown} is blocked by the site policy ({pattern.text})"
        return None

    def _allows(self, origins: Iterable[Origin]) -> bool:
        if self.allowed is None:
            return True
        return any(o in self.always or any(p.matches(o) for p in self.allowed) for o in origins)

    def origin_refusal(self, origin: Origin) -> str | None:
        """None when the browser may request ``origin`` (a plain ``http:`` request the proxy sees whole);
        else why not (one line, names only the origin)."""
        if origin.scheme == "https":
            return self.tunnel_refusal(origin.host, origin.port, shown=origin.text())
        blocked = self._blocked_by((origin,), origin.text())
        if blocked is not None:
            return blocked
        return (
            None
            if self._allows((origin,))
            else f"{origin.text()} is not in the site policy's allowed origins"
        )

    def tunnel_refusal(self, host: str, port: int, *, shown: str | None = None) -> str | None:
        """None when the browser may open a tunnel (``CONNECT``: https, wss or ws) to ``host:port``
        (canonical host); else why not. Both schemes' origins at that endpoint are asked (module docstring,
        "Tunnels")."""
        both = (Origin("https", host, port), Origin("http", host, port))
        shown = shown or endpoint_text(host, port)
        blocked = self._blocked_by(both, shown)
        if blocked is not None:
            return blocked
        if self._allows(both):
            return None
        return f"{shown} is not in the site policy's allowed origins"

    def address_refusal(
        self, scheme: str, addresses: Iterable[str], port: int, *, tunnel: bool
    ) -> str | None:
        """None unless one of ``addresses`` (what the host name resolved to) is blocked at ``port``; a
        ``tunnel`` asks both schemes."""
        schemes = ("https", "http") if tunnel or scheme == "https" else (scheme,)
        for address in addresses:
            origins = [Origin(s, address_forms(address), port) for s in schemes]
            blocked = self._blocked_by(origins, f"its address {endpoint_text(origins[0].host, port)}")
            if blocked is not None:
                return blocked
        return None

    def refusal(self, url: str) -> str | None:
        """None when the browser may load ``url``, else why not (one line, names only the origin)."""
        parsed = parse_url(url)
        if isinstance(parsed, str):
            return parsed
        if parsed.origin is None:
            return None if parsed.scheme in _ALWAYS else f"{parsed.scheme}: URLs are not allowed"
        return self.origin_refusal(parsed.origin)

    async def resolved_refusal(self, origin: Origin) -> str | None:
        """:meth:`address_refusal` for ``origin``'s host name, resolved within :data:`RESOLVE_TIMEOUT_S`
        (None when it does not resolve in time or at all: the proxy, which connects, decides then)."""
        if not self.names_addresses or is_address(origin.host):
            if is_address(origin.host):
                return self.address_refusal(origin.scheme, [origin.host], origin.port, tunnel=False)
            return None
        try:
            addresses = await asyncio.wait_for(self.resolver(origin.host, origin.port), RESOLVE_TIMEOUT_S)
        except (OSError, TimeoutError, UnicodeError):
            return None
        return self.address_refusal(origin.scheme, addresses, origin.port, tunnel=False)

    def authorize(self, step: Mapping[str, Any]) -> JsonObject | Awaitable[JsonObject]:
        """The host's decision for an ``authorize`` step (CONTRACT.md §5): navigations and new tabs to a
        refused URL get ``NOT_AUTHORIZED`` (logged, origin only); everything else is admitted. Answers at
        once, or — when the policy names addresses and the URL's host is a name — an awaitable that
        resolves it first."""
        request = step.get("request")
        params = request.get("params") if isinstance(request, Mapping) else None
        method = request.get("method") if isinstance(request, Mapping) else None
        url = params.get("url") if isinstance(params, Mapping) else None
        if method not in ("tab.navigate", "tabs.open") or not isinstance(url, str):
            return {"success": True}
        reason = self.refusal(url)
        if reason is not None:
            return self._refused(str(method), url, reason)
        origin = origin_of(url)
        if origin is None or not self.names_addresses:
            return {"success": True}
        return self._authorize_resolved(str(method), url, origin)

    async def _authorize_resolved(self, method: str, url: str, origin: Origin) -> JsonObject:
        reason = await self.resolved_refusal(origin)
        return (
            {"success": True} if reason is None else self._refused(method, url, f"{origin.text()}: {reason}")
        )

    def _refused(self, method: str, url: str, reason: str) -> JsonObject:
        if self.log is not None:
            self.log(f"site policy: refused {method} to {origin_text(url)} before dispatch: {reason}")
        return {"success": False, "error": {"code": "NOT_AUTHORIZED", "message": f"{method}: {reason}"}}


class PolicyRenderer:
    """A renderer wrapper: a navigation the proxy stopped comes back ``NOT_AUTHORIZED`` naming the refused
    origin (module docstring, point 3), ``mayHaveCompleted:true`` (the tab left its page). Stopped is: after
    a navigating endpoint that succeeded, the tab's URL — after one that failed, the URL it failed at (the
    renderer's ``failed_since``: a refused tunnel commits only the browser's error page, which the answer
    waits for, bounded, so the next navigation is not interrupted by it) — is one the proxy refused
    meanwhile (``refused_since``, the proxy's record) or one the policy refuses."""

    def __init__(
        self, inner: Any, policy: SitePolicy, refused_since: Callable[[str, float], str | None]
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.refused_since = refused_since

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _stopped(self, url: Any, since: float) -> str | None:
        if not isinstance(url, str):
            return None
        by_proxy = self.refused_since(url, since)
        if by_proxy is not None:
            return by_proxy
        return (
            origin_text(url) if origin_of(url) is not None and self.policy.refusal(url) is not None else None
        )

    async def call(self, method: str, params: Mapping[str, Any]) -> JsonObject:
        started = time.monotonic()
        result: JsonObject = await self.inner.call(method, params)
        if method not in NAVIGATING_METHODS:
            return result
        tab_id = result.get("tabId") if result.get("success") else None
        tab_id = tab_id if isinstance(tab_id, str) else params.get("tabId")
        tab_id = tab_id if isinstance(tab_id, str) else None
        origin = None
        if result.get("success"):  # committed: the tab's URL is where it went
            page = self.inner.page_of(tab_id) if tab_id is not None else self.inner.newest_page()
            origin = self._stopped(getattr(page, "url", None), started)
        elif any(why in str((result.get("error") or {}).get("message", "")) for why in STOPPED_ERRORS):
            # failed at a tunnel the proxy answered 403 (or, routed, a request the context's routing
            # refused): the URL it failed at (it commits an error page)
            origin = self._stopped(self.inner.failed_since(tab_id, started), started)
            if origin is not None:
                await self.inner.error_page_shown(tab_id)
        if origin is None:
            return result
        return {
            "success": False,
            "error": {
                "code": "NOT_AUTHORIZED",
                "message": f"the navigation was stopped at {origin} by the site policy (a redirect to a refused "
                "origin); the tab shows the refusal now",
            },
            "mayHaveCompleted": True,
        }

    async def close(self) -> None:
        await self.inner.close()
