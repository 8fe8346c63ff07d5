"""Raw HTTP checks of the stateless MCP revision on ``/mcp`` (CONTRACT.md §7 v1.1): every error code it
adds, the header/body agreement, the HTTP status of each refusal, no session ids, and the handshake era
unchanged beside it on the same endpoint (``2025-03-26`` too).

The host runs ``--browser none`` with ``--approve-pairing auto``: nothing here needs a renderer. A refusal
at the transport must run nothing, which the host's operator log shows (one ``tx`` line per transaction).
"""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from host_testlib import Host, start_host

pytestmark = pytest.mark.timeout(120)

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"},
}
CALL = {"name": "kelpie_browser_control", "arguments": {"method": "capabilities", "params": {}}}


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    process = start_host(["--browser", "none", "--approve-pairing", "auto"], "python")
    try:
        yield Host(process, process.pair("stateless-http"), "python")
    finally:
        process.stop()


def rpc(rid: Any, method: str, params: dict[str, Any] | None = None, meta: Any = META) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None or meta is not None:
        body["params"] = {**(params or {}), **({"_meta": meta} if meta is not None else {})}
    return body


def send(
    host: Host,
    body: Any,
    headers: list[tuple[str, str]] | None = None,
    *,
    routing: bool = True,
    verb: str = "POST",
) -> tuple[int, dict[str, str], Any]:
    """One request on its own connection; ``routing`` adds the headers the body implies (version from
    ``_meta``, method, tool name) before ``headers``, which may repeat a name. Returns status, the
    response headers (lower-case names) and the parsed body (None when empty)."""
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    lines = [("Authorization", f"Bearer {host.token}"), ("Content-Type", "application/json")]
    if routing and isinstance(body, dict):
        params = body.get("params") or {}
        version = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
        if version is not None:
            lines.append(("MCP-Protocol-Version", version))
        lines.append(("Mcp-Method", body["method"]))
        if body["method"] == "tools/call":
            lines.append(("Mcp-Name", params["name"]))
    lines += headers or []
    conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=30)
    try:
        conn.putrequest(verb, "/mcp")
        for name, value in lines:
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        response = conn.getresponse()
        raw = response.read()
        got = {name.lower(): value for name, value in response.getheaders()}
        return response.status, got, (json.loads(raw) if raw else None)
    finally:
        conn.close()


def transactions(host: Host, at_least: int = 0) -> int:
    """``tx`` lines in the host's log so far (waiting up to 10 s for ``at_least`` of them: the log is read
    from the host's output by a thread)."""
    deadline = time.monotonic() + 10
    while True:
        count = sum(line.startswith("tx ") or " tx " in line for line in host.process.lines)
        if count >= at_least or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def settled(host: Host) -> int:
    """The ``tx`` line count once every earlier transaction's line is in: a handshake ping is sent and
    the count is read after it grew past the ping and then stayed put for 0.3 s (the log is read by a
    thread, so a line written just before this call can still be on its way)."""
    before = transactions(host)
    assert send(host, rpc("settle", "ping", meta=None), routing=False)[0] == 200
    count = transactions(host, before + 1)
    while True:
        time.sleep(0.3)
        again = transactions(host)
        if again == count:
            return count
        count = again


def nothing_ran_since(host: Host, before: int) -> bool:
    """A handshake ping is one transaction: once its line is in, every earlier line is too."""
    assert send(host, rpc("probe", "ping", meta=None), routing=False)[0] == 200
    return transactions(host, before + 1) == before + 1


def refused(
    host: Host,
    body: Any,
    headers: list[tuple[str, str]] | None = None,
    *,
    at_transport: bool = True,
    **kw: Any,
) -> dict[str, Any]:
    """Send, expect 400 (404 for -32601) with a JSON-RPC error echoing the id and no session id; a refusal
    ``at_transport`` must not reach the gateway at all (no ``tx`` line in the host's log)."""
    before = settled(host) if at_transport else 0
    status, got, answer = send(host, body, headers, **kw)
    assert answer is not None and "error" in answer and "result" not in answer, (status, answer)
    expected = 404 if answer["error"]["code"] == -32601 else 400
    assert status == expected, (status, answer)
    assert answer["id"] == (body.get("id") if isinstance(body, dict) else None)
    assert "mcp-session-id" not in got
    if at_transport:
        assert nothing_ran_since(host, before), "a refused request reached the gateway"
    return dict(answer["error"])


def test_discover_and_tools_list_answer_statelessly(host: Host) -> None:
    status, got, answer = send(host, rpc(1, "server/discover"), [("Mcp-Session-Id", "made-up")])
    assert status == 200 and "mcp-session-id" not in got
    result = answer["result"]
    assert result["resultType"] == "complete"
    assert {MODERN, "2025-11-25", "2025-06-18"} <= set(result["supportedVersions"])
    assert result["supportedVersions"][0] == MODERN
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "kelpie-browser-gateway"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == result["serverInfo"]
    assert (result["ttlMs"], result["cacheScope"]) == (300_000, "private")
    assert "kelpie_browser_control" in result["instructions"]
    status, _, listed = send(host, rpc(2, "tools/list"))
    assert status == 200 and listed["result"]["resultType"] == "complete"
    assert listed["result"]["ttlMs"] == 300_000 and listed["result"]["cacheScope"] == "private"
    assert [t["name"] for t in listed["result"]["tools"]] == ["kelpie_browser_control"]


def test_a_stateless_tool_call_is_the_handshake_result_plus_result_type(host: Host) -> None:
    before = settled(host)
    status, _, modern = send(host, rpc("m", "tools/call", CALL))
    status_legacy, _, legacy = send(host, rpc("m", "tools/call", CALL, meta=None), routing=False)
    assert status == status_legacy == 200
    assert transactions(host, before + 2) == before + 2  # one logged transaction each (what refused() counts)
    result = dict(modern["result"])
    assert result.pop("resultType") == "complete"
    assert result.pop("_meta")["io.modelcontextprotocol/serverInfo"]["name"] == "kelpie-browser-gateway"
    assert result == legacy["result"] and "resultType" not in legacy["result"]
    assert result["structuredContent"]["result"]["browserAvailable"] is False


def test_missing_or_malformed_envelope_is_32602(host: Host) -> None:
    # server/discover exists only in the stateless revision, so it always needs the envelope.
    error = refused(host, rpc(1, "server/discover", meta=None), [("MCP-Protocol-Version", MODERN)])
    assert error["code"] == -32602 and "_meta" in error["message"]
    only_version = {"io.modelcontextprotocol/protocolVersion": MODERN}
    error = refused(host, rpc(2, "tools/list", meta=only_version))
    assert error["code"] == -32602 and "clientCapabilities" in error["message"]
    error = refused(
        host, rpc(3, "tools/list", meta={**META, "io.modelcontextprotocol/clientCapabilities": 1})
    )
    assert error["code"] == -32602
    # A handshake-shaped body sent as 2026-07-28 lacks its envelope too.
    error = refused(
        host,
        rpc(4, "ping", meta=None),
        [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "ping")],
        routing=False,
    )
    assert error["code"] == -32602


def test_a_revision_not_spoken_is_32022_with_the_supported_list(host: Host) -> None:
    old_meta = {**META, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}
    error = refused(host, rpc(1, "tools/call", CALL, meta=old_meta))
    assert error["code"] == -32022
    assert error["data"]["requested"] == "1900-01-01"
    assert {MODERN, "2025-11-25", "2025-06-18"} <= set(error["data"]["supported"])
    # An unknown MCP-Protocol-Version on a handshake-era body names the versions spoken the same way.
    error = refused(host, rpc(2, "ping", meta=None), [("MCP-Protocol-Version", "1999-01-01")], routing=False)
    assert error["code"] == -32022 and error["data"]["requested"] == "1999-01-01"
    # A handshake revision named in the envelope is not served statelessly: the message says what to do.
    error = refused(
        host,
        rpc(3, "server/discover", meta={**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
    )
    assert error["code"] == -32022 and "initialize" in error["message"]


@pytest.mark.parametrize(
    ("headers", "routing", "what"),
    [
        ([("Mcp-Method", "tools/call"), ("Mcp-Name", "kelpie_browser_control")], False, "no version header"),
        ([("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "tools/call")], False, "version differs"),
        (
            [("MCP-Protocol-Version", MODERN), ("Mcp-Name", "kelpie_browser_control")],
            False,
            "no method header",
        ),
        ([("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")], False, "method differs"),
        ([("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call")], False, "no name header"),
        (
            [
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "kelpie_extension"),
            ],
            False,
            "name differs",
        ),
        ([("Mcp-Method", "tools/call")], True, "method header twice"),
        ([("Mcp-Name", "=?base64?!!!?=")], True, "name header twice (one not base64)"),
    ],
)
def test_headers_that_disagree_with_the_body_are_32020(
    host: Host, headers: list[tuple[str, str]], routing: bool, what: str
) -> None:
    error = refused(host, rpc(7, "tools/call", CALL), headers, routing=routing)
    assert error["code"] == -32020, what


def test_a_base64_name_header_that_matches_is_accepted(host: Host) -> None:
    encoded = "=?base64?" + base64.b64encode(b"kelpie_browser_control").decode() + "?="
    lines = [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", encoded)]
    status, _, answer = send(host, rpc(8, "tools/call", CALL), lines, routing=False)
    assert status == 200 and answer["result"]["isError"] is False
    wrong = "=?base64?" + base64.b64encode(b"kelpie_extensions").decode() + "?="
    error = refused(host, rpc(9, "tools/call", CALL), [*lines[:2], ("Mcp-Name", wrong)], routing=False)
    assert error["code"] == -32020


def test_methods_outside_the_revision_are_32601_with_404(host: Host) -> None:
    for method in ("ping", "initialize", "resources/list", "subscriptions/listen"):
        error = refused(host, rpc(5, method), at_transport=False)  # the gateway knows no such method
        assert error["code"] == -32601, method
    # Invalid tool arguments are still -32602 (refused by the gateway before any step), now with 400.
    bad = {"name": "kelpie_browser_control", "arguments": {"method": "capabilities", "extra": 1}}
    assert refused(host, rpc(6, "tools/call", bad), at_transport=False)["code"] == -32602


def test_the_handshake_era_is_unchanged_on_the_same_endpoint(host: Host) -> None:
    for headers in ([], [("MCP-Protocol-Version", "2025-11-25")], [("MCP-Protocol-Version", "2025-06-18")]):
        status, got, answer = send(host, rpc(1, "ping", meta=None), headers, routing=False)
        assert (status, answer) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
        assert "mcp-session-id" not in got
    init = rpc(
        2,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        meta=None,
    )
    status, got, answer = send(host, init, routing=False)
    assert status == 200 and answer["result"]["protocolVersion"] == "2025-06-18"
    assert "resultType" not in answer["result"] and "mcp-session-id" not in got
    # Handshake-era JSON-RPC errors keep HTTP 200, as before.
    status, _, answer = send(host, rpc(3, "resources/list", meta=None), routing=False)
    assert status == 200 and answer["error"]["code"] == -32601


def test_notifications_get_202_and_get_and_delete_stay_405(host: Host) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": META}}
    status, _, answer = send(host, note, [("MCP-Protocol-Version", MODERN)], routing=False)
    assert (status, answer) == (202, None)
    for verb in ("GET", "DELETE"):
        status, got, _ = send(host, b"", [("MCP-Protocol-Version", MODERN)], routing=False, verb=verb)
        assert status == 405 and got.get("allow") == "POST"


def test_mcp_2025_03_26_over_http(host: Host) -> None:
    """The oldest handshake revision a client may still send is served over HTTP beside the others."""
    token = host.pair("old-client")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    status, answer = host.post("/mcp", init, token, {"MCP-Protocol-Version": "2025-03-26"})
    assert status == 200 and answer["result"]["protocolVersion"] == "2025-03-26"
    status, answer = host.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        token,
        {"MCP-Protocol-Version": "2025-03-26"},
    )
    assert status == 200 and any(t["name"] == "kelpie_browser_control" for t in answer["result"]["tools"])
    status, _ = host.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        token,
        {"MCP-Protocol-Version": "2024-11-05"},
    )
    assert status == 400  # a revision the engine does not speak is still refused
