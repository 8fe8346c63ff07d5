"""Secrets in the URLs the gateway reports (issue 27): userinfo is never shown and credential-named query and
fragment parameters are redacted — in ``tabs.list``, ``tab.navigate`` and snapshot (page and link) urls —
by one public function and one public list, ``kelpie_gateway.redact_url`` and ``CREDENTIAL_PARAMETERS``."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kelpie_gateway import (
    CREDENTIAL_PARAMETERS,
    CREDENTIAL_SUFFIXES,
    is_credential_parameter,
    redact_url,
    redact_urls_in,
)
from kelpie_gateway.urls import REDACTED

from .kit import FakeRenderer, make, req, response, run


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pass@example.com/x", "https://example.com/x"),
        ("https://TOKEN123@github.com/org/repo.git", "https://github.com/org/repo.git"),
        ("http://a:b@c@127.0.0.1:8080/p?q=1", "http://127.0.0.1:8080/p?q=1"),
        ("https://app.test/cb?code=SPLxlOBeZQ&state=xyz", f"https://app.test/cb?code={REDACTED}&state=xyz"),
        ("https://app.test/cb#access_token=abc.def&token_type=bearer&expires_in=3600",
         f"https://app.test/cb#access_token={REDACTED}&token_type=bearer&expires_in=3600"),
        ("https://app.test/#/callback?id_token=eyJ&x=1", f"https://app.test/#/callback?id_token={REDACTED}&x=1"),
        ("https://s3.test/o?X-Amz-Credential=AKIA&X-Amz-Signature=f00&X-Amz-Expires=60",
         f"https://s3.test/o?X-Amz-Credential={REDACTED}&X-Amz-Signature={REDACTED}&X-Amz-Expires=60"),
        ("https://maps.test/api?key=AIza&callback=init", f"https://maps.test/api?key={REDACTED}&callback=init"),
        ("https://x.test/?CLIENT_SECRET=s&Client-Id=c", f"https://x.test/?CLIENT_SECRET={REDACTED}&Client-Id=c"),
        ("https://x.test/?access%5Ftoken=t", f"https://x.test/?access%5Ftoken={REDACTED}"),
        ("https://x.test/?refresh_token=&api_key", f"https://x.test/?refresh_token={REDACTED}&api_key"),
        ("https://x.test/login?password=hunter2;user=me", f"https://x.test/login?password={REDACTED};user=me"),
        # Nothing to redact: the same string back.
        ("https://example.com/a/b?page=2&sort=asc#top", "https://example.com/a/b?page=2&sort=asc#top"),
        ("https://example.com/@user/status", "https://example.com/@user/status"),
        ("mailto:someone@example.com", "mailto:someone@example.com"),
        ("about:blank", "about:blank"),
        ("not a url?code=1", f"not a url?code={REDACTED}"),
        ("", ""),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_the_list_is_public_and_its_names_are_credentials() -> None:
    for name in ("code", "token", "access_token", "id_token", "client_secret", "password", "key", "api_key",
                 "signature"):
        assert name in CREDENTIAL_PARAMETERS and is_credential_parameter(name)
    assert is_credential_parameter("X-Amz-Security-Token") and is_credential_parameter("private_key")
    assert "token" in CREDENTIAL_SUFFIXES
    for harmless in ("state", "page", "q", "redirect_uri", "client_id", "monkey", "keyboard", "tokenizer"):
        assert not is_credential_parameter(harmless), harmless


def test_urls_in_a_message_are_redacted() -> None:
    message = "net::ERR_CONNECTION_REFUSED at https://u:p@127.0.0.3:9/cb?code=42&x=1 (then gave up)"
    assert redact_urls_in(message) == f"net::ERR_CONNECTION_REFUSED at https://127.0.0.3:9/cb?code={REDACTED}&x=1 (then gave up)"
    assert redact_urls_in("no url here") == "no url here"


_NAME = st.sampled_from([*sorted(CREDENTIAL_PARAMETERS), "state", "page", "q"])
_VALUE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="&;#=%"), min_size=1, max_size=12)


@given(st.lists(st.tuples(_NAME, _VALUE), max_size=6), st.booleans(), st.booleans())
def test_no_credential_value_survives_and_the_rest_is_kept(
    params: list[tuple[str, str]], userinfo: bool, in_fragment: bool
) -> None:
    query = "&".join(f"{n}={quote(v, safe='')}" for n, v in params)
    auth = "alice:s3cr3t@" if userinfo else ""
    url = f"https://{auth}example.test/path?{query}" if not in_fragment else f"https://{auth}example.test/p#{query}"
    shown = redact_url(url)
    assert "s3cr3t" not in shown and "alice" not in shown
    assert redact_url(shown) == shown  # idempotent
    for name, value in params:
        encoded = f"{name}={quote(value, safe='')}"
        if is_credential_parameter(name):
            assert f"{name}={REDACTED}" in shown
        else:
            assert encoded in shown


@given(st.text(max_size=80))
def test_any_text_is_accepted(text: str) -> None:
    assert isinstance(redact_url(text), str) and isinstance(redact_urls_in(text), str)


# ---------------------------------------------------------------------- every URL the gateway reports
SECRET = "https://bob:pw@app.test/cb?code=SECRET&state=s"
SHOWN = f"https://app.test/cb?code={REDACTED}&state=s"


def test_tabs_list_navigate_and_snapshot_urls_are_redacted() -> None:
    gw = make()
    renderer = FakeRenderer()
    renderer.tabs["A"]["url"] = SECRET
    tabs = response(run(gw, req("tabs.list"), renderer))["result"]["tabs"]
    assert tabs[0]["url"] == SHOWN

    navigated = response(run(gw, req("tab.navigate", tabId="A", url=SECRET), renderer))["result"]
    assert navigated["url"] == SHOWN

    base = renderer.snapshot_value

    def with_link(tab: str) -> dict:
        value = base(tab)
        value["elements"].append(
            {"handle": "0123456789abcdef-link", "tag": "a", "role": "link", "label": "Continue",
             "url": "https://u:p@idp.test/authorize?client_secret=zzz&response_type=code"}
        )
        return value

    renderer.snapshot_value = with_link  # type: ignore[method-assign]
    snap = response(run(gw, req("tab.snapshot", tabId="A"), renderer))["result"]
    assert snap["url"] == SHOWN
    link = snap["elements"][-1]["url"]
    assert link == f"https://idp.test/authorize?client_secret={REDACTED}&response_type=code"
    assert "SECRET" not in repr(snap) and "zzz" not in repr(snap) and "pw@" not in repr(snap)
