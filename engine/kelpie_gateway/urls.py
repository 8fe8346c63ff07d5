"""Secrets in the URLs the gateway reports (docs/contract-notes.md "URLs the gateway reports").

Every URL the gateway reports — a tab's ``url`` in ``tabs.list``, ``tab.navigate``'s ``url``, a snapshot's
``url`` and every link ``url`` of its elements, the history extensions' ``url``, a URL quoted in a
renderer's error message, and the network reads' request URLs — passes :func:`redact_url` first:

* **userinfo** (``https://user:password@host/``) is never shown: ``https://host/``;
* the **value of every credential-named parameter** of the query and of the fragment (OAuth's implicit
  flow answers ``#access_token=…``; an app's hash route ``#/cb?code=…``) becomes :data:`REDACTED`;
  a parameter is credential-named when :func:`is_credential_parameter` says so: its name, percent-decoded,
  lower case, ``-`` read as ``_``, is in :data:`CREDENTIAL_PARAMETERS` or ends with one of
  :data:`CREDENTIAL_SUFFIXES` (``refresh_token``, ``client_secret``, ``X-Amz-Signature``, ``x-api-key`` …).

Everything else is kept byte for byte (the rest of the query, the path, the order of parameters), so a
redacted URL still says where the page is. Pure functions on text, no parsing library: the URLs a browser
reports are already serialised (WHATWG), and a string that is not a URL comes back unchanged.
"""

from __future__ import annotations

import itertools
import re
from typing import Final
from urllib.parse import unquote_plus

REDACTED: Final = "REDACTED"
"""What a credential-named parameter's value becomes."""

CREDENTIAL_PARAMETERS: Final = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "assertion",
        "auth",
        "authorization",
        "bearer",
        "client_assertion",
        "client_secret",
        "code",
        "code_verifier",
        "credential",
        "id_token",
        "jwt",
        "key",
        "oauth_token",
        "oauth_verifier",
        "otp",
        "pass",
        "passwd",
        "password",
        "pwd",
        "refresh_token",
        "samlrequest",
        "samlresponse",
        "secret",
        "session",
        "session_id",
        "sessionid",
        "sid",
        "sig",
        "signature",
        "ticket",
        "token",
    }
)
"""Parameter names (normalised: lower case, ``-`` as ``_``) whose values are credentials. Shared by every
place the gateway reports a URL (the network reads of the reference host included)."""

CREDENTIAL_SUFFIXES: Final = (
    "_key",
    "apikey",
    "credential",
    "passwd",
    "password",
    "secret",
    "signature",
    "token",
)
"""Endings that make a normalised parameter name credential-named (``x_amz_security_token``,
``x_goog_signature``, ``private_key`` …)."""

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_SPECIAL: Final = frozenset({"http:", "https:", "ws:", "wss:", "ftp:", "file:"})
_IN_TEXT: Final = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")
_SEPARATORS: Final = re.compile(r"([&;])")
_suffixes = CREDENTIAL_SUFFIXES
_MAYBE: Final = (
    "code",
    "token",
    "key",
    "pass",
    "pwd",
    "secret",
    "sig",
    "auth",
    "bearer",
    "sess",
    "sid",
    "otp",
    "ticket",
    "jwt",
    "credential",
    "assertion",
    "saml",
    "%",
    "+",
)
"""Parameters (lower case) that hold none of these hold no credential-named one: a cheap gate (``in`` on
text) before splitting them."""


def is_credential_parameter(name: str) -> bool:
    """True when a query or fragment parameter named ``name`` (as written in the URL, percent-encoded or
    not) carries a credential (module docstring)."""
    if "%" in name or "+" in name:
        name = unquote_plus(name)
    normal = name.strip().lower().replace("-", "_")
    return normal in CREDENTIAL_PARAMETERS or normal.endswith(_suffixes)


def _redact_params(params: str) -> str:
    """``a=1&code=x`` with credential-named values replaced (``&`` and ``;`` separate parameters)."""
    if "=" not in params:
        return params
    low = params.lower()
    if not any(k in low for k in _MAYBE):
        return params
    parts = _SEPARATORS.split(params)
    for i in range(0, len(parts), 2):
        name, eq, _value = parts[i].partition("=")
        if eq and is_credential_parameter(name):
            parts[i] = f"{name}={REDACTED}"
    return "".join(parts)


def _redact_fragment(fragment: str) -> str:
    head, query, tail = fragment.partition("?")
    if query:  # a hash route: #/callback?code=…
        return f"{head}?{_redact_params(tail)}"
    return _redact_params(fragment)


def redact_url(url: str) -> str:
    """``url`` without userinfo and with the values of credential-named query and fragment parameters
    replaced by :data:`REDACTED` (module docstring). Any string is accepted: one that is not a URL, or holds
    nothing to redact, comes back unchanged (the same object). Never raises."""
    if "?" not in url and "#" not in url and "@" not in url:
        return url
    scheme = _SCHEME.match(url)
    rest_at = scheme.end() if scheme else 0
    head = url[:rest_at]
    rest = url[rest_at:]
    if scheme and rest.startswith("//"):
        stops = "/?#\\" if head.lower() in _SPECIAL else "/?#"
        end = min((i for i in map(rest.find, stops, itertools.repeat(2)) if i >= 0), default=len(rest))
        authority = rest[2:end]
        head += "//" + authority.rpartition("@")[2]
        rest = rest[end:]
    before_fragment, hash_mark, fragment = rest.partition("#")
    path, question, query = before_fragment.partition("?")
    redacted = head + path
    if question:
        redacted += "?" + _redact_params(query)
    if hash_mark:
        redacted += "#" + _redact_fragment(fragment)
    return url if redacted == url else redacted


def redact_urls_in(text: str) -> str:
    """``text`` (an error message, a log line) with every ``scheme://…`` URL in it passed through
    :func:`redact_url`. Never raises."""
    if "://" not in text:
        return text
    return _IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
