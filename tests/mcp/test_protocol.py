"""MCP's JSON-RPC layer as a client notices it (CONTRACT.md §7; ``kelpie_gateway.mcp.protocol`` and
``.frontend``): message forms and the JSON rules, the official SDK's types, the one version in
``serverInfo``, the public JSON-RPC error builder, a closed gateway. The eras are checked message by
message in test_vectors.py (every vector and its stateless twin) and test_properties.py."""

from __future__ import annotations

import json

from kelpie_gateway import Gateway
from kelpie_gateway.jsonio import MAX_REQUEST_BYTES
from mcp import types

from tests.mcp.helpers import FULL, NOAUTH, response, rpc


def test_initialize_and_errors_parse_with_the_official_sdk_types() -> None:
    """The handshake's answers and a JSON-RPC error are what the official SDK's types accept."""
    gw = Gateway(NOAUTH)
    init = response(gw.begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})))
    types.JSONRPCResponse.model_validate(init)
    parsed = types.InitializeResult.model_validate(init["result"])
    assert parsed.server_info.name == "kelpie-browser-gateway"
    assert parsed.capabilities.tools is not None
    failure = response(gw.begin_mcp(rpc(3, "nope/nope")))
    types.JSONRPCError.model_validate(failure)


def test_mapping_and_text_inputs_give_the_same_answer() -> None:
    """A dict, JSON text and UTF-8 bytes get the same answer; guards the per-gateway tools cache being handed
    out by reference (a caller that changes its answer must not change the next one)."""
    gw = Gateway(FULL)
    message = rpc("x", "tools/list")
    by_dict = response(gw.begin_mcp(message))
    by_text = response(gw.begin_mcp(json.dumps(message)))
    by_bytes = response(gw.begin_mcp(json.dumps(message).encode()))
    assert by_dict == by_text == by_bytes
    # the cached tools list is never shared with the caller
    by_dict["result"]["tools"].clear()
    assert response(gw.begin_mcp(message)) == by_text


def test_mapping_inputs_follow_the_json_rules() -> None:
    """Guards a parsed (Mapping) message skipping the JSON rules the text route applies: a value that is not
    JSON data is ``-32600`` (not an exception), one over 4 MiB is ``REQUEST_TOO_LARGE`` with a ``null`` id, and a
    lone surrogate in the id is repaired as it would be in text."""
    gw = Gateway(FULL)
    bad = response(gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": object()}}))
    assert bad["error"]["code"] == -32600
    huge = response(
        gw.begin_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"p": "x" * MAX_REQUEST_BYTES}})
    )
    assert huge["error"] == {
        "code": -32600,
        "message": huge["error"]["message"],
        "data": {"code": "REQUEST_TOO_LARGE"},
    }
    assert huge["id"] is None
    lone = response(gw.begin_mcp({"jsonrpc": "2.0", "id": "\ud800", "method": "ping"}))
    assert lone["id"] == "\ufffd" and lone["result"] == {}


def test_a_closed_gateway_refuses_requests() -> None:
    """Guards a closed gateway running MCP requests: ``-32600``, nothing begun."""
    gw = Gateway(FULL)
    gw.close()
    assert response(gw.begin_mcp(rpc(1, "ping")))["error"]["code"] == -32600


def test_server_info_reports_the_one_version() -> None:
    """Guards the version written in two places (issue 26: ``__init__`` held it and ``mcp`` imported it
    from the package, an import cycle): ``serverInfo.version`` in both eras is ``kelpie_gateway.VERSION``,
    which is what the installed distribution's metadata says (pyproject.toml reads ``version.py``)."""
    import importlib.metadata

    import kelpie_gateway

    gw = Gateway({})
    init = response(gw.begin_mcp(rpc(1, "initialize", {"protocolVersion": "2025-11-25"})))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    found = response(gw.begin_mcp(rpc(2, "server/discover", {"_meta": meta})))
    stamp = found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    installed = importlib.metadata.version("kelpie-browser-gateway")
    assert init["result"]["serverInfo"]["version"] == found["result"]["serverInfo"]["version"] == installed
    assert stamp["version"] == kelpie_gateway.VERSION == kelpie_gateway.__version__ == installed


def test_the_public_json_rpc_error_builder_is_the_engines() -> None:
    """``kelpie_gateway.jsonrpc_error``, what every host transport answers its own failures with, builds
    what the engine's frontend answers: the same object for the same error, valid for the official SDK
    (a ``null`` id when the request's is not known), ``kelpie`` as ``data.code`` beside ``data``."""
    from kelpie_gateway import jsonrpc_error

    engine = response(Gateway({}).begin_mcp(b"{"))
    assert jsonrpc_error(None, -32700, engine["error"]["message"], "INVALID_JSON") == engine
    plain = jsonrpc_error(None, -32600, "only POST is supported on /mcp")
    assert plain == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": plain["error"]["message"]},
    }
    types.JSONRPCError.model_validate(plain)
    rich = jsonrpc_error(7, -32022, "unsupported", "INVALID_REQUEST", {"supported": ["2026-07-28"]})
    assert rich["id"] == 7
    assert rich["error"]["data"] == {"supported": ["2026-07-28"], "code": "INVALID_REQUEST"}
    types.JSONRPCError.model_validate(rich)
