"""Kelpie browser gateway: a sans-I/O browser-control engine (see CONTRACT.md).

Python API (CONTRACT.md §11)::

    from kelpie_gateway import Gateway
    gw = Gateway({"nativeMethods": ["get-tabs"]})
    step = gw.begin({"version": 1, "method": "tabs.list", "params": {}})

The public API is exactly :data:`__all__`. Hosts (the reference host in ``kelpie_gateway.host`` included,
enforced by ``tests/engine/test_layering.py``) use only these names and the C ABI; every other module is
the engine's own and may change.
"""

from .api import Gateway
from .errors import GatewayConfigError, GatewayPendingError
from .jsonio import DuplicateMember, JsonError, dumps, loads
from .mcp import MODERN_PROTOCOL_VERSIONS as MCP_STATELESS_VERSIONS
from .mcp import PROTOCOL_VERSIONS as MCP_PROTOCOL_VERSIONS
from .mcp import http_refusal as mcp_http_refusal
from .mcp import rpc_error as jsonrpc_error
from .reader import (
    FRAME_TAG_FUNCTION,
    FRAME_WANTS,
    WORLD_NAME,
    bundle_missing,
    bundle_slot,
    bundles_status,
    click_script,
    element_box_script,
    element_node_script,
    element_script,
    fill_script,
    find_text_script,
    focus_script,
    frame_compose_script,
    frame_part_script,
    kept_script,
    links_script,
    new_document_script,
    pointer_aim_script,
    pointer_frame_script,
    pointer_report_script,
    preload_script,
    script_parameters,
    scroll_script,
    storage_script,
    upload_files_script,
    upload_target_script,
)
from .schema import NATIVE_ENDPOINTS
from .urls import (
    CREDENTIAL_PARAMETERS,
    CREDENTIAL_SUFFIXES,
    is_credential_parameter,
    redact_url,
    redact_urls_in,
)
from .version import CONTRACT_REVISION, CONTRACT_REVISION_COMPLETE, __version__
from .version import __version__ as VERSION

__all__ = [
    "CONTRACT_REVISION",
    "CONTRACT_REVISION_COMPLETE",
    "CREDENTIAL_PARAMETERS",
    "CREDENTIAL_SUFFIXES",
    "FRAME_TAG_FUNCTION",
    "FRAME_WANTS",
    "MCP_PROTOCOL_VERSIONS",
    "MCP_STATELESS_VERSIONS",
    "NATIVE_ENDPOINTS",
    "VERSION",
    "WORLD_NAME",
    "DuplicateMember",
    "Gateway",
    "GatewayConfigError",
    "GatewayPendingError",
    "JsonError",
    "__version__",
    "bundle_missing",
    "bundle_slot",
    "bundles_status",
    "click_script",
    "dumps",
    "element_box_script",
    "element_node_script",
    "element_script",
    "fill_script",
    "find_text_script",
    "focus_script",
    "frame_compose_script",
    "frame_part_script",
    "is_credential_parameter",
    "jsonrpc_error",
    "kept_script",
    "links_script",
    "loads",
    "mcp_http_refusal",
    "new_document_script",
    "pointer_aim_script",
    "pointer_frame_script",
    "pointer_report_script",
    "preload_script",
    "redact_url",
    "redact_urls_in",
    "script_parameters",
    "scroll_script",
    "storage_script",
    "upload_files_script",
    "upload_target_script",
]
"""``NATIVE_ENDPOINTS``: every native endpoint a core method can need (a host implementing all of them
gets every core method advertised). ``dumps(value) -> bytes``: compact UTF-8 JSON, lone surrogates
repaired (the engine's own serialiser, e.g. for a host that passes results to the C ABI as text).
``loads(data, *, cap=4 MiB)``: the engine's own parser for what a host's transport reads from a client
(the gateway reads ``begin``/``begin_mcp`` text the same way): raises ``JsonError`` (``.code``
``INVALID_JSON`` or ``REQUEST_TOO_LARGE``), and ``DuplicateMember`` (a ``JsonError``) for an object that
repeats a member name at any depth — where a transport parses a message itself (the tunnel's frames, the
pairing body), a repeated name is refused there too instead of the last one winning (issue 27).
``MCP_PROTOCOL_VERSIONS``: the MCP handshake revisions ``begin_mcp`` speaks, oldest first (CONTRACT.md §7),
e.g. for a host's ``MCP-Protocol-Version`` header check. ``MCP_STATELESS_VERSIONS``: the stateless revisions
(``2026-07-28``) it speaks besides, decided per request by ``params._meta`` (docs/mcp.md).
``focus_script``, ``fill_script``, ``scroll_script``, ``find_text_script``, ``click_script``,
``upload_target_script``, ``upload_files_script``, ``element_box_script`` and ``WORLD_NAME``: generated
reader scripts for a host's own extensions — all but ``find_text_script`` act on the captured node the
gateway hands a ref-bearing extension in ``kelpieCaptured`` (``key``, ``handles``); run them in the
``WORLD_NAME`` world.
``pointer_aim_script`` / ``pointer_report_script``: the same for native input (trusted CDP pointer and key
events a host sends itself): before any event, one run checks the captured node (live, enabled, in view,
a non-empty box that is not moving, and the hit test at the point) and answers the point in top-level
viewport CSS pixels; the report says where the watched events landed (docs/host.md "Native input").
``links_script``, ``element_script``, ``element_node_script`` and ``storage_script``: the read-only lane's
reader scripts (the links of a tab; one captured element's facts, or the element itself for a host that needs
its DOM node; storage keys and value sizes, never values), docs/host.md "The read-only lane".
``preload_script()``: optional, for a host that wants a new document's first reader call to find its
bundle already compiled: run it in the document's ``WORLD_NAME`` world ahead of time (CONTRACT.md §9; every
script also installs its own bundle when the world lacks it, so skipping it changes only speed).
``new_document_script()``: the same for a host that registers it once per tab to run in the ``WORLD_NAME``
world of every new top-level document as it is created (CDP ``Page.addScriptToEvaluateOnNewDocument``).
``bundle_slot(name)``: the world's global under which a script keeps bundle ``name`` of this build.
``kept_script(script) -> (slot, expression) | None`` and ``bundle_missing(value, slot)``: the short form of a
generated script for a world that already holds its bundle — the same function run with the same parameters,
without shipping the bundle again; where the world does not hold it, nothing runs and ``bundle_missing`` is
true of its value, and the host evaluates the whole script instead (docs/reader.md "Loading the bundles").
``FRAME_TAG_FUNCTION``, ``FRAME_WANTS``, ``frame_part_script``, ``frame_compose_script`` and
``script_parameters(script) -> (bundle, params) | None``: for a host that reads every frame in its own world
(CONTRACT.md §9 v1.2 "Frames"; docs/reader.md "Frames", docs/host.md "Frames"): tag a document's frames in
its world, read the frames a snapshot wants as parts, give the outcomes back, and route a script to the
world its handle's registry lives in.
``mcp_http_refusal(body, headers)``: the HTTP-only MCP rules (``MCP-Protocol-Version``, ``Mcp-Method`` and
``Mcp-Name`` agree with the body, CONTRACT.md §7 v1.1) a host serving ``/mcp`` checks before ``begin_mcp``:
``None``, or ``{"httpStatus", "response"}`` to send instead.
``jsonrpc_error(id, code, message, kelpie=None, data=None)``: the JSON-RPC error response
``{"jsonrpc":"2.0","id":id,"error":{"code","message","data"?}}`` — the one builder the engine's MCP frontend
and every host transport (HTTP ``/mcp``, stdio, the tunnel) use for the errors they decide themselves
(``-32700`` unparseable, ``-32600`` refused by the transport, ``-32603`` a host failure, …); ``kelpie``, a
canonical error code, becomes ``data.code``, beside the members of ``data``. ``id``: the request's id, or
``None`` when it is not known.
``VERSION`` (``__version__``, the same string): the package version, written once in
``kelpie_gateway/version.py``; the C library's ``kelpie_browser_gateway_version()``, ``--version`` and MCP's
``serverInfo.version`` all report it (docs/engine.md "The version").
``redact_url(url) -> str``: ``url`` without userinfo and with the values of credential-named query and
fragment parameters replaced by ``REDACTED`` — what the gateway does to every URL it reports (``tabs.list``,
``tab.navigate``, snapshot and link urls), for a host's own results (a history extension, a network read);
``redact_urls_in(text)`` does it to every ``scheme://`` URL in a message. ``CREDENTIAL_PARAMETERS`` (exact
names) and ``CREDENTIAL_SUFFIXES`` (endings), normalised lower case with ``-`` as ``_``, say which
parameters are credential-named; ``is_credential_parameter(name)`` applies them (docs/contract-notes.md
"URLs the gateway reports")."""
