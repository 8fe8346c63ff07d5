"""MCP resources and the file-bearing tool results (docs/mcp.md "Resources", "Results";
``kelpie_gateway.mcp.resources``): ``resources/list`` / ``resources/read`` become the canonical
``extension.call`` of the host's ``resources-list`` / ``resources-read`` extensions, in both eras;
downloads become ``resource_link`` blocks, an extension's picture one ``image`` block, a read through a
tool embedded ``resource`` blocks — each file's bytes once in the response."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from kelpie_gateway import Gateway, mcp_http_refusal
from kelpie_gateway.jsonio import dumps
from mcp import types

from tests.mcp.helpers import CORE, browser, call, envelope_of, response, rpc

URI = "kelpie://downloads/d1"
READ = {
    "name": "resources_read",
    "method": "resources-read",
    "description": "read a file the host keeps",
    "inputSchema": {
        "type": "object",
        "properties": {"uri": {"type": "string", "pattern": "^kelpie://downloads/d[0-9]+$"}},
        "required": ["uri"],
        "additionalProperties": False,
    },
    "mutates": False,
    "coordinator": "dedicated",
}
LIST = {
    "name": "resources_list",
    "method": "resources-list",
    "description": "list the files the host keeps",
    "inputSchema": {
        "type": "object",
        "properties": {"cursor": {"type": "string", "maxLength": 64}},
        "additionalProperties": False,
    },
    "mutates": False,
    "coordinator": "dedicated",
}
PICTURE = {
    "name": "screenshot",
    "method": "screenshot-ext",
    "description": "a picture",
    "inputSchema": {
        "type": "object",
        "properties": {"tabId": {"type": "string"}},
        "additionalProperties": False,
    },
    "mutates": False,
}
SERVED: dict[str, Any] = {
    "nativeMethods": [*CORE, "resources-read", "resources-list", "screenshot-ext"],
    "fixedReader": True,
    "extensions": [READ, LIST, PICTURE],
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _advance(gw: Gateway, step: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    if step["step"] == "authorize":
        step = gw.advance(
            {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}}
        )
    assert step["step"] == "dispatch", step
    return gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})


def _dispatched(gw: Gateway, message: dict[str, Any]) -> dict[str, Any]:
    step = gw.begin_mcp(message)
    assert step["step"] == "authorize", step
    assert step["request"]["method"] == "extension.call" and step["mutates"] is False
    step = gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}})
    assert step["step"] == "dispatch", step
    return step


def test_the_resources_capability_is_declared_only_when_the_host_serves_reads() -> None:
    """Guards a client told of resources the host cannot read: ``initialize`` and ``server/discover``
    declare ``resources`` only when an extension serving ``resources-read`` is admitted (the filter and
    ``nativeMethods`` decide, as for any extension)."""
    init = rpc(1, "initialize", {"protocolVersion": "2025-11-25"})
    served = response(Gateway(SERVED).begin_mcp(init))["result"]["capabilities"]
    assert served == {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
    }
    discover = response(Gateway(SERVED).begin_mcp(rpc(2, "server/discover", {"_meta": META})))["result"]
    assert discover["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    filtered = {**SERVED, "extensionFilter": {"exclude": ["resources_*"]}}
    assert "resources" not in response(Gateway(filtered).begin_mcp(init))["result"]["capabilities"]
    bare = {**SERVED, "nativeMethods": CORE}
    assert "resources" not in response(Gateway(bare).begin_mcp(init))["result"]["capabilities"]
    refused = response(Gateway(bare).begin_mcp(rpc(3, "resources/list", {})))
    assert refused["error"]["code"] == -32601


def test_resources_list_is_the_host_extension_call_and_parses_as_the_sdk_type() -> None:
    """``resources/list`` goes through authorize and dispatches the host's ``resources-list`` endpoint once,
    on its own lane; the host's entries come back as ``ListResourcesResult``."""
    gw = Gateway(SERVED)
    step = _dispatched(gw, rpc(4, "resources/list", {"cursor": "o100"}))
    assert step["method"] == "resources-list" and step["params"] == {"cursor": "o100"}
    entry = {"uri": URI, "name": "report.csv", "mimeType": "text/csv", "size": 12}
    done = gw.advance(
        {
            "transaction": step["transaction"],
            "seq": step["seq"],
            "result": {"success": True, "resources": [entry], "nextCursor": "o200"},
        }
    )
    assert (
        done["audit"]["extension"] == "resources_list" and done["audit"]["lane"] == "dedicated:resources_list"
    )
    result = types.ListResourcesResult.model_validate(response(done)["result"])
    assert [str(r.uri) for r in result.resources] == [URI] and result.next_cursor == "o200"
    assert "ttlMs" not in response(done)["result"]  # handshake era: as before the stateless revision


def test_resources_read_returns_the_host_bytes_once_and_unknown_uris_are_invalid_params() -> None:
    """``resources/read`` dispatches ``{uri}``; its blob is the host's, once; an unknown URI the host
    refuses ``INVALID_PARAMS`` is JSON-RPC ``-32602`` with ``data.uri`` (2025-11-25 retired -32002); a URI
    the descriptor's schema refuses never reaches the host."""
    gw = Gateway(SERVED)
    blob = base64.b64encode(os.urandom(50_000)).decode()
    step = _dispatched(gw, rpc(5, "resources/read", {"uri": URI}))
    assert step["method"] == "resources-read" and step["params"] == {"uri": URI}
    content = {"uri": URI, "mimeType": "application/octet-stream", "blob": blob}
    done = _advance(gw, step, {"success": True, "contents": [content]})
    assert dumps(done).count(blob.encode()) == 1
    result = types.ReadResourceResult.model_validate(response(done)["result"])
    assert result.contents[0].blob == blob  # type: ignore[union-attr]

    step = _dispatched(gw, rpc(6, "resources/read", {"uri": "kelpie://downloads/d9"}))
    missing = {"success": False, "error": {"code": "INVALID_PARAMS", "message": "no resource d9"}}
    error = response(_advance(gw, step, missing))["error"]
    assert error["code"] == -32602 and error["data"] == {
        "uri": "kelpie://downloads/d9",
        "code": "INVALID_PARAMS",
    }

    outside = gw.begin_mcp(rpc(7, "resources/read", {"uri": "file:///etc/passwd"}))
    assert outside["step"] == "complete" and response(outside)["error"]["code"] == -32602
    no_uri = response(gw.begin_mcp(rpc(8, "resources/read", {})))
    assert no_uri["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("failure", "code", "kelpie"),
    [
        ({"code": "RESPONSE_TOO_LARGE", "message": "too big"}, -32603, "RESPONSE_TOO_LARGE"),
        ({"code": "RENDERER_FAILED", "message": "disk gone"}, -32603, "RENDERER_FAILED"),
    ],
)
def test_other_read_failures_are_internal_errors_naming_the_canonical_code(
    failure: dict[str, Any], code: int, kelpie: str
) -> None:
    gw = Gateway(SERVED)
    step = _dispatched(gw, rpc(9, "resources/read", {"uri": URI}))
    error = response(_advance(gw, step, {"success": False, "error": failure}))["error"]
    assert error["code"] == code and error["data"]["code"] == kelpie and error["data"]["retryable"] is False


def test_a_second_read_while_one_runs_is_busy_not_queued() -> None:
    """Reads share their extension's lane: a second one while the first is dispatched is refused at once
    (``-32603`` with ``data.code: BUSY``, ``retryable``), and the direct lane stays free meanwhile."""
    gw = Gateway(SERVED)
    _dispatched(gw, rpc(10, "resources/read", {"uri": URI}))
    busy = response(gw.begin_mcp(rpc(11, "resources/read", {"uri": URI})))["error"]
    assert busy["data"] == {"code": "BUSY", "retryable": True} and busy["code"] == -32603
    assert gw.begin_mcp(browser(12, "tabs.list"))["step"] == "authorize"


def test_the_stateless_revision_gets_cache_hints_and_http_statuses_after_the_dispatch() -> None:
    """2026-07-28: results carry ``resultType``, ``ttlMs: 0`` and ``cacheScope``; an error decided by the
    host after the dispatch still carries its HTTP status on the ``complete`` step (400 for -32602)."""
    gw = Gateway(SERVED)
    step = _dispatched(gw, rpc(13, "resources/read", {"uri": URI, "_meta": META}))
    done = _advance(gw, step, {"success": True, "contents": [{"uri": URI, "text": "a,b\n"}]})
    result = response(done)["result"]
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "private"
    assert "httpStatus" not in done
    step = _dispatched(gw, rpc(14, "resources/read", {"uri": URI, "_meta": META}))
    done = _advance(gw, step, {"success": False, "error": {"code": "INVALID_PARAMS", "message": "gone"}})
    assert done["httpStatus"] == 400 and response(done)["error"]["code"] == -32602
    templates = response(gw.begin_mcp(rpc(15, "resources/templates/list", {"_meta": META})))["result"]
    assert templates["resourceTemplates"] == [] and templates["ttlMs"] == 0


def test_the_mcp_name_header_of_a_stateless_read_is_its_uri() -> None:
    body = dumps(rpc(16, "resources/read", {"uri": URI, "_meta": META}))
    headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "resources/read")]
    assert mcp_http_refusal(body, [*headers, ("Mcp-Name", URI)]) is None
    refused = mcp_http_refusal(body, [*headers, ("Mcp-Name", "kelpie://downloads/d2")])
    assert refused is not None and refused["response"]["error"]["code"] == -32020
    assert mcp_http_refusal(body, headers) is not None


def test_a_read_called_as_a_tool_embeds_the_file_once() -> None:
    """The read extension called as a tool (models of clients without resources support): each content is
    one embedded ``resource`` block; the envelope keeps its uri and size, so the base64 travels once."""
    gw = Gateway(SERVED)
    blob = base64.b64encode(os.urandom(40_000)).decode()
    step = gw.begin_mcp(call(17, "resources_read", {"uri": URI}))
    done = _advance(
        gw, step, {"success": True, "contents": [{"uri": URI, "mimeType": "image/gif", "blob": blob}]}
    )
    assert dumps(done).count(blob.encode()) == 1
    result = types.CallToolResult.model_validate(response(done)["result"])
    embedded = [b for b in result.content if b.type == "resource"]
    assert len(embedded) == 1 and embedded[0].resource.blob == blob  # type: ignore[union-attr]
    env = envelope_of(response(done)["result"])
    assert env["result"]["contents"] == [{"uri": URI, "mimeType": "image/gif", "bytes": 40_000}]


def test_an_extension_picture_is_one_image_block_of_its_own_type() -> None:
    """An extension answering a picture (``mimeType`` ``image/…`` + base64 ``data``) gets the image block
    ``tab.screenshot`` gets — here a JPEG — through every tool path, base64 once."""
    jpeg = b"\xff\xd8\xff" + os.urandom(20_000)
    data = base64.b64encode(jpeg).decode()
    picture = {"success": True, "mimeType": "image/jpeg", "data": data, "width": 10, "height": 20}
    for rid, message in (
        (18, call(18, "screenshot", {"tabId": "t1"})),
        (19, call(19, "kelpie_extension", {"name": "screenshot", "arguments": {"tabId": "t1"}})),
        (20, browser(20, "extension.call", {"name": "screenshot", "arguments": {"tabId": "t1"}})),
    ):
        gw = Gateway({**SERVED, "requireAuthorization": False})
        done = _advance(gw, gw.begin_mcp(message), picture)
        assert dumps(done).count(data.encode()) == 1, rid
        result = types.CallToolResult.model_validate(response(done)["result"])
        images = [b for b in result.content if b.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/jpeg", rid
        assert envelope_of(response(done)["result"])["result"]["imageBytes"] == len(jpeg)


def test_downloads_in_results_become_resource_links_and_the_canonical_route_keeps_the_objects() -> None:
    """A click whose native result reports a finished download answers ``{clicked, download}`` on the
    canonical route and adds one ``resource_link`` over MCP; an unfinished one has no link."""
    download = {
        "id": "d1",
        "name": "report.csv",
        "state": "complete",
        "bytes": 12,
        "sha256": "0" * 64,
        "mimeType": "text/csv",
        "resource": URI,
    }
    cfg = {**SERVED, "requireAuthorization": False}
    gw = Gateway(cfg)
    step = gw.begin(
        {"version": 1, "method": "tab.navigate", "params": {"tabId": "t1", "url": "https://a.example/r.csv"}}
    )
    done = gw.advance(
        {
            "transaction": step["transaction"],
            "seq": step["seq"],
            "result": {
                "success": True,
                "tabId": "t1",
                "generation": 0,
                "url": "about:blank",
                "download": download,
            },
        }
    )
    assert done["response"]["result"]["download"] == download
    step = gw.begin_mcp(browser(21, "tab.navigate", {"tabId": "t1", "url": "https://a.example/r.csv"}))
    native = {"success": True, "tabId": "t1", "generation": 0, "url": "about:blank", "download": download}
    result = types.CallToolResult.model_validate(response(_advance(gw, step, native))["result"])
    links = [b for b in result.content if b.type == "resource_link"]
    assert (
        len(links) == 1 and str(links[0].uri) == URI and links[0].size == 12 and links[0].name == "report.csv"
    )
    step = gw.begin_mcp(browser(22, "tab.navigate", {"tabId": "t1", "url": "https://a.example/r.csv"}))
    started = {
        **native,
        "download": {
            "id": "d2",
            "name": "big.iso",
            "state": "in-progress",
            "resource": "kelpie://downloads/d2",
        },
    }
    blocks = response(_advance(gw, step, started))["result"]["content"]
    assert [b["type"] for b in blocks] == ["text"]


def test_a_list_of_downloads_links_its_newest_complete_entries() -> None:
    gw = Gateway(
        {
            **SERVED,
            "nativeMethods": [*SERVED["nativeMethods"], "downloads-list"],
            "requireAuthorization": False,
            "extensions": [
                *SERVED["extensions"],
                {**PICTURE, "name": "downloads_list", "method": "downloads-list"},
            ],
        }
    )
    entries = [
        {
            "id": f"d{i}",
            "name": f"f{i}.bin",
            "state": "complete" if i % 2 else "cancelled",
            "resource": f"kelpie://downloads/d{i}",
            "bytes": i,
        }
        for i in range(1, 60)
    ]
    done = _advance(gw, gw.begin_mcp(call(23, "downloads_list", {})), {"success": True, "downloads": entries})
    links = [b for b in response(done)["result"]["content"] if b["type"] == "resource_link"]
    assert (
        len(links) == 20
        and links[-1]["uri"] == "kelpie://downloads/d59"
        and all(int(link["uri"].rsplit("d", 1)[1]) % 2 for link in links)
    )
