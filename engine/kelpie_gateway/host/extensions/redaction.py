"""What the read-only lane never shows (docs/host.md "The read-only lane"; ARCHITECTURE.md host rules 1.2): the
secrets in URLs, header values and attribute values, redacted in one place for every read of the lane.

* :func:`redact_url` — a URL without its userinfo and with the value of every credential-named query or
  fragment parameter replaced by :data:`REDACTED`. **A local stand-in** with the signature of the engine's
  public ``kelpie_gateway.redact_url`` (issue 27, built in parallel): once that lands, this function is
  replaced by an import of it and its credential-parameter list, and nothing else here changes.
* :func:`network_url` — the URL a network read reports: by default every query *value* and the whole
  fragment are redacted as well (``?q=REDACTED&page=REDACTED#REDACTED``) and a ``data:`` URL keeps only its
  media type; with the operator's ``--network-urls full`` only :func:`redact_url` applies. At most
  :data:`URL_MAX` characters.
* :func:`redact_text` — a message (console text, an error's message and stack) with every URL in it passed
  through :func:`network_url`.
* :func:`header_value` — a header value as the network read shows it: never the value of
  ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` or of any header whose name says
  token, key, secret, password, auth, session, signature or credential; URL-valued headers (``Referer``,
  ``Location``, ``Origin``, ``Content-Location``) through :func:`network_url`.
* :func:`secret_name` — the name rule those share (and the element read's attributes).

Pure functions on text, never raising.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_plus

REDACTED: Final = "REDACTED"
URL_MAX: Final = 2_000
"""UTF-16-ish bound on a reported URL (characters); longer ones are cut and end with ``…``."""

CREDENTIAL_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
URL_HEADERS: Final = frozenset({"referer", "location", "origin", "content-location"})
SECRET_WORDS: Final = (
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "session",
    "signature",
    "credential",
    "cookie",
    "csrf",
    "xsrf",
)
"""A name (header, parameter, attribute) containing one of these, once lower-cased with ``-`` as ``_``,
carries a secret."""
CREDENTIAL_PARAMETERS: Final = frozenset({"code", "sig", "sid", "jwt", "otp", "pass", "bearer", "ticket"})
"""Short parameter names that are credentials although they contain none of :data:`SECRET_WORDS`."""

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_IN_TEXT: Final = re.compile(r"\b(?:[A-Za-z][A-Za-z0-9+.\-]*://|data:)[^\s\"'<>]+")


def secret_name(name: str) -> bool:
    """True when a header, query parameter or attribute called ``name`` carries a secret (module docstring)."""
    normal = unquote_plus(name).strip().lower().replace("-", "_")
    return normal in CREDENTIAL_PARAMETERS or any(word in normal for word in SECRET_WORDS)


def _split(url: str) -> tuple[str, str, str | None, str | None] | None:
    """``(scheme+authority without userinfo, path, query or None, fragment or None)``; None when ``url``
    has no scheme (it is then not redacted as a URL)."""
    scheme = _SCHEME.match(url)
    if scheme is None:
        return None
    head, rest = url[: scheme.end()], url[scheme.end() :]
    if rest.startswith("//"):
        end = next((i for i, ch in enumerate(rest[2:], 2) if ch in "/?#\\"), len(rest))
        head += "//" + rest[2:end].rpartition("@")[2]
        rest = rest[end:]
    before, hash_mark, fragment = rest.partition("#")
    path, question, query = before.partition("?")
    return head, path, (query if question else None), (fragment if hash_mark else None)


def _params(query: str, redact: bool | None) -> str:
    """``a=1&b=2`` with the values redacted: all of them (``redact`` True) or the credential-named ones."""
    out = []
    for part in re.split(r"([&;])", query):
        name, eq, _value = part.partition("=")
        if part in ("&", ";") or not eq:
            out.append(part)
        elif redact or secret_name(name):
            out.append(f"{name}={REDACTED}")
        else:
            out.append(part)
    return "".join(out)


def _bounded(url: str) -> str:
    return url if len(url) <= URL_MAX else url[: URL_MAX - 1] + "\u2026"


def redact_url(url: str) -> str:
    """``url`` without userinfo, the values of its credential-named query and fragment parameters replaced
    by :data:`REDACTED` (a stand-in for ``kelpie_gateway.redact_url``: module docstring). Never raises."""
    parts = _split(url)
    if parts is None:
        return url
    head, path, query, fragment = parts
    out = head + path
    if query is not None:
        out += "?" + _params(query, None)
    if fragment is not None:
        route, question, tail = fragment.partition("?")
        out += "#" + (f"{route}?{_params(tail, None)}" if question else _params(fragment, None))
    return out


def network_url(url: str, *, full: bool = False) -> str:
    """The URL a network read reports (module docstring): ``full`` is the operator's ``--network-urls
    full``. At most :data:`URL_MAX` characters. Never raises."""
    if url[:5].lower() == "data:":
        media = url[5:].partition(",")[0]
        return _bounded(f"data:{media},{REDACTED}")
    if full:
        return _bounded(redact_url(url))
    parts = _split(url)
    if parts is None:
        return _bounded(url)
    head, path, query, fragment = parts
    out = head + path
    if query is not None:
        out += "?" + _params(query, True)
    if fragment:
        out += "#" + REDACTED
    elif fragment is not None:
        out += "#"
    return _bounded(out)


def redact_text(text: str, *, full: bool = False) -> str:
    """``text`` with every ``scheme://…`` (and ``data:…``) URL in it reported as :func:`network_url` reports
    it. Never raises."""
    if "://" not in text and "data:" not in text:
        return text
    return _IN_TEXT.sub(lambda m: network_url(m.group(0), full=full), text)


def header_value(name: str, value: str, *, full: bool = False) -> str:
    """``value`` of header ``name`` as a network read shows it (module docstring)."""
    lower = name.strip().lower()
    if lower in CREDENTIAL_HEADERS or secret_name(lower):
        return REDACTED
    if lower in URL_HEADERS:
        return network_url(value, full=full)
    return redact_text(value, full=full)[:URL_MAX]
