"""Remote browsers: the endpoint rules, the ``--browser-header`` values and the secrets they carry
(ARCHITECTURE.md, "Host rules added in revision 1.2": Remote browsers; docs/host.md "Remote browsers").

* ``--browser-endpoint ws(s)://…`` is a Playwright browser server (``playwright run-server``, a grid or a
  cloud service speaking Playwright's ``connect`` protocol); ``--cdp-endpoint`` is a Chromium DevTools
  endpoint, ``http(s)://`` or ``ws(s)://``, on loopback or (given explicitly) anywhere.
* ``--browser-header 'Name: value'`` (repeatable) goes with the connection's opening handshake. The value
  may instead be read from a file (``Name: @file:PATH``, stripped) or an environment variable
  (``Name: @env:VAR``); ``@@…`` is a literal value starting with ``@``.
* **Secrets.** Header values and the credentials inside an endpoint URL (user info, query values) never
  appear in the operator log, ``--version``, an error message or an audit line: the host shows an endpoint
  only as :func:`redact_endpoint` prints it, and every message that comes from Playwright or the network
  (which may quote the URL) passes through :meth:`Secrets.scrub` first.
* :func:`backoff_delay` is the one capped, jittered backoff of the host's reconnects (the tunnel's and a
  remote browser's).

Pure and light: no Playwright, no aiohttp (the CLI and the tunnel import it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
"""An HTTP field name (RFC 9110 §5.1: a token)."""
MAX_HEADER_VALUE = 16 * 1024
"""A header value (literal, file or variable) is at most this many characters."""
MIN_SECRET = 4
"""Shorter pieces are not scrubbed from messages (they would garble every message and protect nothing)."""
REDACTED = "***"
FORBIDDEN_HEADERS = frozenset({"host", "connection", "upgrade", "content-length", "transfer-encoding"})
"""Headers the WebSocket handshake owns; a ``--browser-header`` naming one is refused."""


class RemoteConfigError(ValueError):
    """A remote-browser flag that cannot work; the message names the flag, never a secret."""


def backoff_delay(attempt: int, initial: float, cap: float, rand: Callable[[], float]) -> float:
    """Seconds to wait before reconnect ``attempt`` (0-based): ``min(cap, initial·2^attempt)`` scaled by
    a random factor in [0.5, 1) (jitter, so many hosts do not reconnect in step)."""
    base: float = min(cap, initial * 2.0 ** min(attempt, 30))
    return base * (0.5 + 0.5 * float(rand()))


def redact_endpoint(url: str) -> str:
    """``url`` as the host shows it: scheme, host, port and path; user info replaced by ``***@``, every
    query value by ``***``, no fragment. A URL that cannot be parsed is shown as ``<endpoint>``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<endpoint>"
    if not parts.scheme or not parts.hostname:
        return "<endpoint>"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = (f"{REDACTED}@" if parts.username or parts.password else "") + host
    if port is not None:
        netloc += f":{port}"
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    if parts.query:
        names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
        shown += "?" + "&".join(f"{name}={REDACTED}" for name in names) if names else "?" + REDACTED
    return shown


def url_secrets(url: str) -> list[str]:
    """The pieces of ``url`` that may be credentials: its user name and password, every query value, the
    raw query and the whole URL (for :meth:`Secrets.scrub`)."""
    pieces = [url]
    try:
        parts = urlsplit(url)
    except ValueError:
        return pieces
    pieces += [p for p in (parts.username, parts.password, parts.query, parts.fragment) if p]
    pieces += [value for _name, value in parse_qsl(parts.query, keep_blank_values=True) if value]
    return pieces


@dataclass
class Secrets:
    """Strings that must never be shown: header values and endpoint credentials. :meth:`scrub` replaces
    each in a message (longest first); endpoints are replaced by their :func:`redact_endpoint` form."""

    values: set[str] = field(default_factory=set)
    endpoints: dict[str, str] = field(default_factory=dict)

    def add(self, value: str) -> None:
        if len(value) >= MIN_SECRET:
            self.values.add(value)

    def add_endpoint(self, url: str) -> None:
        self.endpoints[url] = redact_endpoint(url)
        for piece in url_secrets(url):
            if piece != url:
                self.add(piece)

    def scrub(self, text: str) -> str:
        """``text`` with every endpoint shown redacted and every secret replaced by ``***``."""
        for raw, shown in sorted(self.endpoints.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(raw, shown)
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return text


@dataclass(frozen=True)
class BrowserHeader:
    """One ``--browser-header``: its name and value (the value is a secret: ``repr`` withholds it)."""

    name: str
    value: str = field(repr=False)


def parse_header(spec: str, environ: Mapping[str, str] | None = None) -> BrowserHeader:
    """One ``--browser-header`` argument: ``Name: value``, ``Name: @file:PATH`` (the file's content,
    stripped), ``Name: @env:VAR`` or ``Name: @@value`` (a literal ``@value``). Raises
    :class:`RemoteConfigError` (naming the header, never its value)."""
    env = os.environ if environ is None else environ
    name, sep, raw = spec.partition(":")
    name = name.strip()
    if not sep or not HEADER_NAME.fullmatch(name):
        raise RemoteConfigError(
            "--browser-header: expected 'Name: value' (or 'Name: @file:PATH', 'Name: @env:VAR') with an "
            "HTTP header name"
        )
    if name.lower() in FORBIDDEN_HEADERS:
        raise RemoteConfigError(f"--browser-header {name}: the WebSocket handshake sets this header itself")
    raw = raw.strip()
    where = "its value"
    if raw.startswith("@file:"):
        path = Path(raw[len("@file:") :]).expanduser()
        where = f"the file {path}"
        try:
            value = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise RemoteConfigError(f"--browser-header {name}: cannot read {path}: {why}") from None
    elif raw.startswith("@env:"):
        var = raw[len("@env:") :]
        where = f"${var}"
        if var not in env:
            raise RemoteConfigError(f"--browser-header {name}: the environment variable {var} is not set")
        value = env[var].strip()
    elif raw.startswith("@@"):
        value = raw[1:]
    elif raw.startswith("@"):
        raise RemoteConfigError(
            f"--browser-header {name}: a value starting with '@' is '@file:PATH', '@env:VAR' or '@@literal'"
        )
    else:
        value = raw
    if not value:
        raise RemoteConfigError(f"--browser-header {name}: {where} is empty")
    if len(value) > MAX_HEADER_VALUE or any(ch in value for ch in "\r\n\0"):
        raise RemoteConfigError(
            f"--browser-header {name}: {where} must be one line of at most {MAX_HEADER_VALUE} characters"
        )
    return BrowserHeader(name, value)


def parse_headers(specs: Iterable[str], environ: Mapping[str, str] | None = None) -> list[BrowserHeader]:
    """Every ``--browser-header`` (a name given twice is refused: which one would be meant?)."""
    headers = [parse_header(spec, environ) for spec in specs]
    seen: set[str] = set()
    for header in headers:
        if header.name.lower() in seen:
            raise RemoteConfigError(f"--browser-header {header.name}: given twice")
        seen.add(header.name.lower())
    return headers


def is_loopback_host(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``."""
    host = host.lower().strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def check_endpoint(flag: str, url: str, schemes: tuple[str, ...]) -> None:
    """``url`` has one of ``schemes`` and a host; raises :class:`RemoteConfigError` naming ``flag`` and the
    redacted URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises for a port that is not a number
    except ValueError:
        raise RemoteConfigError(f"{flag} {redact_endpoint(url)}: not a URL") from None
    if parts.scheme.lower() not in schemes or not parts.hostname:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise RemoteConfigError(f"{flag} {redact_endpoint(url)}: expected a {allowed} URL with a host")


@dataclass(frozen=True)
class RemoteBrowser:
    """How the host reaches a browser it did not launch: ``cdp`` (DevTools, ``connect_over_cdp``) or
    ``playwright`` (a Playwright browser server, ``connect``), its endpoint and the handshake headers."""

    kind: str
    endpoint: str = field(repr=False)
    headers: tuple[BrowserHeader, ...] = ()

    @property
    def shown(self) -> str:
        """The endpoint as logged (:func:`redact_endpoint`)."""
        return redact_endpoint(self.endpoint)

    @property
    def on_this_machine(self) -> bool:
        """The endpoint's host is loopback: the browser runs on this machine, so it can reach the host's own
        loopback servers (the site policy's proxy; docs/host.md "Site policy", "What holds per browser").
        Through a tunnel (an SSH forward) it may not: then the proxy is unreachable and every request fails
        (fail closed), never bypasses it."""
        return is_loopback_host(urlsplit(self.endpoint).hostname or "")

    def header_dict(self) -> dict[str, str]:
        return {h.name: h.value for h in self.headers}

    def secrets(self) -> Secrets:
        found = Secrets()
        found.add_endpoint(self.endpoint)
        for header in self.headers:
            found.add(header.value)
        return found

    def describe_headers(self) -> str:
        """``; headers A, B (values withheld)`` or ``""``."""
        if not self.headers:
            return ""
        return f"; headers {', '.join(h.name for h in self.headers)} (values withheld)"


def remote_browser(
    *,
    cdp_endpoint: str | None,
    browser_endpoint: str | None,
    headers: Iterable[BrowserHeader] = (),
) -> RemoteBrowser | None:
    """The remote browser the flags name (None: the host launches its own). Raises
    :class:`RemoteConfigError`: both endpoints, a bad scheme, or headers without an endpoint."""
    given = tuple(headers)
    if cdp_endpoint and browser_endpoint:
        raise RemoteConfigError(
            "--cdp-endpoint and --browser-endpoint: give one (the host drives one browser)"
        )
    if browser_endpoint:
        check_endpoint("--browser-endpoint", browser_endpoint, ("ws", "wss"))
        return RemoteBrowser("playwright", browser_endpoint, given)
    if cdp_endpoint:
        check_endpoint("--cdp-endpoint", cdp_endpoint, ("http", "https", "ws", "wss"))
        return RemoteBrowser("cdp", cdp_endpoint, given)
    if given:
        raise RemoteConfigError(
            "--browser-header goes with --browser-endpoint or --cdp-endpoint (the host launches its own browser)"
        )
    return None
