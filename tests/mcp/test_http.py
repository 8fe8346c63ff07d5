"""``kelpie_gateway.mcp_http_refusal`` (``kelpie_gateway.mcp.http``): the HTTP-only rules of the stateless
revision (CONTRACT.md §7 v1.1), as a pure function — the cases the raw HTTP tests
(tests/host/test_mcp_stateless_http.py) cannot reach through an HTTP client library."""

from __future__ import annotations

import base64
import json
from typing import Any

from kelpie_gateway import mcp_http_refusal

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "page_summary", "_meta": META}}
HEADERS = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call")]


def verdict(body: Any, headers: list[tuple[str, str]]) -> Any:
    return mcp_http_refusal(json.dumps(body).encode() if not isinstance(body, bytes) else body, headers)


def code(body: Any, headers: list[tuple[str, str]]) -> int | None:
    found = verdict(body, headers)
    return None if found is None else int(found["response"]["error"]["code"])


def test_agreeing_headers_pass_and_names_compare_case_insensitively() -> None:
    assert verdict(CALL, [*HEADERS, ("Mcp-Name", "page_summary")]) is None
    lower = [(name.lower(), value) for name, value in [*HEADERS, ("Mcp-Name", "page_summary")]]
    assert verdict(CALL, lower) is None
    # Header values are case-sensitive.
    assert code(CALL, [*HEADERS, ("Mcp-Name", "Page_Summary")]) == -32020


def test_the_base64_sentinel_must_decode_canonically_to_the_name() -> None:
    good = "=?base64?" + base64.b64encode(b"page_summary").decode() + "?="
    assert verdict(CALL, [*HEADERS, ("Mcp-Name", good)]) is None
    for bad in ("=?base64?not base64?=", "=?base64?/w==?=", "page_summary "):
        # not base64; not UTF-8; a plain value is compared verbatim
        assert code(CALL, [*HEADERS, ("Mcp-Name", bad)]) == -32020, bad
    short = {**CALL, "params": {**CALL["params"], "name": "ab"}}
    assert verdict(short, [*HEADERS, ("Mcp-Name", "=?base64?YWI=?=")]) is None
    assert code(short, [*HEADERS, ("Mcp-Name", "=?base64?YWJ=?=")]) == -32020  # non-canonical: stray bits


def test_a_refusal_is_400_with_the_request_id_and_the_canonical_code() -> None:
    found = verdict(CALL, HEADERS)
    assert found is not None and found["httpStatus"] == 400
    assert found["response"]["id"] == 3
    assert found["response"]["error"]["data"] == {"code": "INVALID_REQUEST"}
    assert "Mcp-Name" in found["response"]["error"]["message"]


def test_what_is_left_to_begin_mcp() -> None:
    # Notifications and client responses need no routing headers; malformed JSON is begin_mcp's -32700.
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": META}}
    assert verdict(note, []) is None
    assert verdict({"jsonrpc": "2.0", "id": 1, "result": {}}, []) is None
    assert verdict(b"{not json", HEADERS) is None
    # A handshake-era request is not checked beyond a version header it does not speak.
    assert verdict({"jsonrpc": "2.0", "id": 1, "method": "ping"}, []) is None
    assert verdict({"jsonrpc": "2.0", "id": 1, "method": "ping"}, [("Mcp-Method", "tools/list")]) is None


def test_an_unknown_version_header_is_32022_even_without_a_request() -> None:
    found = verdict(b"[]", [("MCP-Protocol-Version", "2099-01-01")])
    assert found is not None and found["response"]["error"]["code"] == -32022
    assert found["response"]["error"]["data"]["requested"] == "2099-01-01"
    assert found["response"]["error"]["data"]["supported"][0] == "2026-07-28"
