"""What the read-only lane never shows (docs/host.md "The read-only lane"; ARCHITECTURE.md host rules 1.2): the
secrets in URLs, header values and attribute values, redacted in one place for every read of the lane.

* :func:`redact_url` — the engine's public ``kelpie_gateway.redact_url`` (docs/contract-notes.md "URLs the
  gateway reports"): a URL without its userinfo and with the value of every credential-named query or
  fragment parameter (``kelpie_gateway.CREDENTIAL_PARAMETERS``, ``CREDENTIAL_SUFFIXES``) replaced by
  :data:`REDACTED`; the rule of every URL the gateway reports, re-exported here so the lane has one import.
* :func:`network_url` — the URL a network read reports: by default every query *value* and the whole
  fragment are redacted as well (``?q=REDACTED&page=REDACTED#REDACTED``) and a ``data:`` URL keeps only its
  media type; with the operator's ``--network-urls full`` only :func:`redact_url` applies. At most
  :data:`URL_MAX` characters.
* :func:`redact_text` — a message (console text, an error's message and stack) with every URL in it passed
  through :func:`network_url`.
* :func:`cut_text` — a text cut to a bound without leaving half a URL at the cut: a URL whose end was cut
  off could show part of a userinfo password (its ``@`` cut away) or of a value, so the cut word goes whole.
* :func:`header_value` — a header value as the network read shows it: never the value of
  ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` or of any header whose name says
  token, key, secret, password, auth, session, signature or credential; URL-valued headers (``Referer``,
  ``Location``, ``Origin``, ``Content-Location``) through :func:`network_url`.
* :func:`secret_name` — the name rule those share (and the element read's attributes): the engine's
  credential-parameter rule (``kelpie_gateway.is_credential_parameter``), plus any name containing one of
  :data:`SECRET_WORDS` (a header or attribute name says what it holds more loosely than a parameter).

Pure functions on text, never raising.
"""

from __future__ import annotations

import re
from typing import Final

from kelpie_gateway import is_credential_parameter, redact_url

__all__ = [
    "REDACTED",
    "URL_MAX",
    "cut_text",
    "header_value",
    "network_url",
    "redact_text",
    "redact_url",
    "secret_name",
]

REDACTED: Final = "REDACTED"
"""What a hidden value becomes: the word ``kelpie_gateway.redact_url`` writes."""
URL_MAX: Final = 2_000
"""Bound on a reported URL (characters); longer ones are cut and end with ``…``."""

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
"""A header or attribute name containing one of these, once lower-cased with ``-`` as ``_``, carries a
secret."""

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_IN_TEXT: Final = re.compile(r"\b(?:[A-Za-z][A-Za-z0-9+.\-]*://|data:)[^\s\"'<>]+")
_SEPARATORS: Final = re.compile(r"([&;])")


def secret_name(name: str) -> bool:
    """True when a header, query parameter or attribute called ``name`` carries a secret (module docstring)."""
    if is_credential_parameter(name):
        return True
    normal = name.strip().lower().replace("-", "_")
    return any(word in normal for word in SECRET_WORDS)


def _every_value(query: str) -> str:
    """``a=1&b=2`` with every value redacted (a parameter without ``=`` is a bare name: kept)."""
    parts = _SEPARATORS.split(query)
    for i in range(0, len(parts), 2):
        name, eq, _value = parts[i].partition("=")
        if eq:
            parts[i] = f"{name}={REDACTED}"
    return "".join(parts)


def _bounded(url: str) -> str:
    return url if len(url) <= URL_MAX else url[: URL_MAX - 1] + "\u2026"


def network_url(url: str, *, full: bool = False) -> str:
    """The URL a network read reports (module docstring): ``full`` is the operator's ``--network-urls
    full``. At most :data:`URL_MAX` characters. Never raises."""
    if url[:5].lower() == "data:":
        media = url[5:].partition(",")[0]
        return _bounded(f"data:{media},{REDACTED}")
    shown = redact_url(url)  # userinfo never; credential-named values redacted
    if full or _SCHEME.match(shown) is None:  # not a URL: nothing more to redact
        return _bounded(shown)
    before, hash_mark, fragment = shown.partition("#")
    path, question, query = before.partition("?")
    out = path + ("?" + _every_value(query) if question else "")
    if hash_mark:
        out += "#" + (REDACTED if fragment else "")
    return _bounded(out)


def redact_text(text: str, *, full: bool = False) -> str:
    """``text`` with every ``scheme://…`` (and ``data:…``) URL in it reported as :func:`network_url` reports
    it. Never raises."""
    if "://" not in text and "data:" not in text:
        return text
    return _IN_TEXT.sub(lambda m: network_url(m.group(0), full=full), text)


_WORD_ENDS: Final = (" ", "\t", "\n", "\r", "\f", "\v", '"', "'", "<", ">")


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (``limit`` ≥ 1); when cut, a last word holding a URL
    (``://`` or ``data:``) that the cut runs through is dropped and ``…`` ends the text instead, so no part
    of that URL's userinfo or values survives the redaction that comes later. Never raises."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    start = max(map(head.rfind, _WORD_ENDS)) + 1  # the start of the last word (0 when there is one word)
    tail = head[start:]
    if "://" in tail or "data:" in tail.lower():
        return head[:start] + "\u2026"
    return head


def header_value(name: str, value: str, *, full: bool = False) -> str:
    """``value`` of header ``name`` as a network read shows it (module docstring)."""
    lower = name.strip().lower()
    if lower in CREDENTIAL_HEADERS or secret_name(lower):
        return REDACTED
    if lower in URL_HEADERS:
        return network_url(value, full=full)
    return redact_text(value, full=full)[:URL_MAX]
