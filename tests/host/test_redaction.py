"""What the read-only lane never shows (``host/extensions/redaction.py``; docs/host.md "The read-only lane"):
URLs, header values and texts, without a browser; its URLs follow the engine's ``redact_url``. The browser-side journeys are test_read_lane.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kelpie_gateway import is_credential_parameter
from kelpie_gateway.host.extensions.redaction import (
    REDACTED,
    URL_MAX,
    cut_text,
    header_value,
    network_url,
    redact_text,
    redact_url,
    secret_name,
)


@pytest.mark.parametrize(
    ("url", "redacted", "full"),
    [
        ("https://a.example/p?q=cats&page=2#top", "https://a.example/p?q=REDACTED&page=REDACTED#REDACTED",
         "https://a.example/p?q=cats&page=2#top"),
        ("https://user:pw@a.example/x?token=t1&x=1", "https://a.example/x?token=REDACTED&x=REDACTED",
         "https://a.example/x?token=REDACTED&x=1"),
        ("http://h/cb#access_token=abc&state=s", "http://h/cb#REDACTED", "http://h/cb#access_token=REDACTED&state=s"),
        ("http://h/#/route?code=42&tab=1", "http://h/#REDACTED", "http://h/#/route?code=REDACTED&tab=1"),
        ("wss://h/ws?X-Amz-Signature=zz", "wss://h/ws?X-Amz-Signature=REDACTED", "wss://h/ws?X-Amz-Signature=REDACTED"),
        ("http://h/p?flag&k", "http://h/p?flag&k", "http://h/p?flag&k"),
        ("http://h/p?", "http://h/p?", "http://h/p?"),
        ("http://h/p#", "http://h/p#", "http://h/p#"),
        ("data:image/png;base64,iVBORw0KGgo=", "data:image/png;base64,REDACTED", "data:image/png;base64,REDACTED"),
        ("blob:http://h/0e3c", "blob:http://h/0e3c", "blob:http://h/0e3c"),
        ("not a url ?x=1", "not a url ?x=1", "not a url ?x=1"),
    ],
)
def test_network_urls(url: str, redacted: str, full: str) -> None:
    assert network_url(url) == redacted
    assert network_url(url, full=True) == full


def test_credential_names() -> None:
    for name in ("token", "access_token", "X-Api-Key", "client_secret", "password", "sessionid", "sig", "code",
                 "csrf-token", "Authorization", "refresh%5Ftoken"):
        assert secret_name(name), name
    for name in ("q", "page", "lang", "content-type", "accept", "user-agent", "id"):
        assert not secret_name(name), name


def test_header_values() -> None:
    for name in ("Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Session-Token",
                 "X-CSRF-Token", "x-goog-signature"):
        assert header_value(name, "s3cr3t") == REDACTED, name
    assert header_value("Referer", "http://h/p?token=s3cr3t&q=1") == "http://h/p?token=REDACTED&q=REDACTED"
    assert header_value("Location", "http://h/p?q=1", full=True) == "http://h/p?q=1"
    assert header_value("Content-Type", "application/json") == "application/json"
    assert header_value("Link", "<http://h/n?page=2>; rel=next") == "<http://h/n?page=REDACTED>; rel=next"


def test_texts_have_their_urls_redacted() -> None:
    text = "Failed to load http://h/a?token=s3cr3t#f and ws://h/w?key=k; data:text/plain,hello"
    assert redact_text(text) == "Failed to load http://h/a?token=REDACTED#REDACTED and ws://h/w?key=REDACTED; " \
        "data:text/plain,REDACTED"
    assert redact_text("no url here") == "no url here"
    assert redact_text(text, full=True).startswith("Failed to load http://h/a?token=REDACTED#f and")


def test_redact_url_keeps_everything_but_credentials() -> None:
    assert redact_url("https://h/p?q=1&api_key=2#x") == "https://h/p?q=1&api_key=REDACTED#x"
    assert redact_url("https://u@h/") == "https://h/"
    assert redact_url("#section") == "#section" and redact_url("javascript:") == "javascript:"


@settings(max_examples=500, deadline=None)
@given(
    path=st.text(alphabet="abc/-._", max_size=20),
    pairs=st.lists(st.tuples(st.text(alphabet="abtokenkey_", min_size=1, max_size=8),
                             st.text(alphabet="xyz0123456789", min_size=1, max_size=8)), max_size=5),
    fragment=st.text(alphabet="xyz=&", max_size=8),
)
def test_no_query_value_survives_the_default(path: str, pairs: list[tuple[str, str]], fragment: str) -> None:
    """Whatever the parameters, the default network URL holds none of their values and no fragment, and
    the full one holds none of the credential-named values (kelpie_gateway's rule); both stay bounded."""
    query = "&".join(f"{k}=S3{v}" for k, v in pairs)
    url = f"https://h/{path}?{query}#F{fragment}"
    shown = network_url(url)
    assert "S3" not in shown and "#F" not in shown and len(shown) <= URL_MAX
    full = network_url(url, full=True)
    for k, v in pairs:
        if is_credential_parameter(k):  # the engine's rule, every URL the gateway reports
            assert f"{k}=S3{v}" not in full
    assert network_url("https://h/" + "a" * 5000).endswith("\u2026")


def test_the_lane_uses_the_engines_rule_not_a_copy() -> None:
    """Every parameter the engine calls credential-named is hidden by the lane's full URLs and by its header
    and attribute rule, and the lane's redact_url is the engine's own function."""
    import kelpie_gateway
    from kelpie_gateway.host.extensions import redaction

    assert redaction.redact_url is kelpie_gateway.redact_url
    for name in sorted(kelpie_gateway.CREDENTIAL_PARAMETERS) + [f"x_{s}" for s in kelpie_gateway.CREDENTIAL_SUFFIXES]:
        assert network_url(f"https://h/p?{name}=S3&q=1", full=True) == f"https://h/p?{name}=REDACTED&q=1", name
        assert secret_name(name) and header_value(name, "S3") == REDACTED, name


def test_a_cut_never_leaves_half_a_url() -> None:
    """A text cut at its bound: a URL the cut runs through goes whole (its ``@`` or its ``=`` may be past
    the cut, so redaction could no longer see what to hide); text before it and texts within the bound stay."""
    pad = "p" * 90
    secret = f"{pad} see https://admin:s3cr3tPW@db.example/x?token=s3cr3tTOKEN end"
    for limit in range(len(pad) + 6, len(secret) - 4):
        shown = redact_text(cut_text(secret, limit))
        assert "s3c" not in shown and "admin" not in shown, (limit, shown)
        assert shown.startswith(pad + " see") and len(cut_text(secret, limit)) <= limit
    assert cut_text("short https://h/?a=1", 100) == "short https://h/?a=1"
    assert cut_text("x" * 50, 10) == "x" * 10
    assert cut_text("https://u:pw@h/" + "a" * 50, 10) == "\u2026"
    assert cut_text("word data:text/plain,s3cr3t", 20) == "word \u2026"
