"""MCP translation: JSON-RPC 2.0 in, JSON-RPC out, the same transactions underneath (CONTRACT.md §7).

:func:`begin` (what ``Gateway.begin_mcp`` and the C ABI's ``kelpie_browser_gateway_begin_mcp`` call) runs
the translation through :meth:`GatewayCore.begin_with <kelpie_gateway.gateway.GatewayCore.begin_with>`, so the
gateway lock is held and the invalidation queue drained. This package depends on the gateway, never the
reverse. It returns the first step of a transaction whose
``complete`` step carries a JSON-RPC response (or ``null`` with ``"httpStatus": 202`` for anything that
gets no response). Nothing here raises for bad input, and nothing here decides policy: every browser
action goes through the canonical coordinator (:meth:`GatewayCore.begin_parsed`), so authorization, BUSY,
refs, RECONCILE_REQUIRED and extension admission are exactly those of the canonical route. Sans-I/O.

Modules (each imports only those above it; ``tests/engine/test_layering.py`` keeps it so):

================  ==========================================================================================
``protocol``      JSON-RPC shapes, ids, error codes and builders; the eras and revisions; the stateless
                  revision's ``_meta`` envelope and stamp (no gateway)
``http``          the pure HTTP header rules of the stateless revision (:func:`http_refusal`)
``resources``     ``resources/list``, ``resources/read``, ``resources/templates/list``: the host's
                  ``resources-list`` / ``resources-read`` extensions as canonical ``extension.call``
``tools``         ``tools/list``, ``kelpie_browser_control``'s generated schema, the instructions
``translation``   ``tools/call`` to canonical requests and their envelopes back to tool results
``frontend``      :func:`begin`: parse, pick the era, route each method (the table below)
================  ==========================================================================================

This module re-exports the public names of all six, so ``kelpie_gateway.mcp.X`` keeps working.

Message handling (decisions where the contract is silent are in ``docs/mcp.md``):

==============================  =============================================================================
input                           answer
==============================  =============================================================================
over 4 MiB (text)               ``-32600`` (never parsed; canonical code REQUEST_TOO_LARGE)
not JSON / not UTF-8            ``-32700``
an array (batch)                ``-32600``
not an object, ``jsonrpc`` not  ``-32600`` (``id`` echoed when it is a string or number, else ``null``)
"2.0", ``method`` not a string,
``id`` not a string/number,
``params`` not an object, an
unknown top-level member
a notification (no ``id``)      no response (``httpStatus`` 202); notifications are never executed,
                                except ``notifications/cancelled`` ``{requestId}``: the one in-flight
                                ``tools/call`` with that id is cancelled (reason ``cancelled``) and its
                                ``complete`` step rides along as the 202 step's ``cancelled`` member, for
                                the host to hand to the caller still waiting on it
a response (``result``/         no response (202): this server never sends requests, so it has nothing to
``error``, no ``method``)       match them with
``initialize``                  ``protocolVersion`` (the client's when supported, else the newest),
                                ``capabilities.tools``, ``serverInfo``, ``instructions``
``ping``                        ``{}`` (handshake era; ``-32601`` in the stateless one)
``server/discover``             stateless era only: ``supportedVersions``, ``capabilities``, ``serverInfo``,
                                ``instructions``, ``ttlMs``, ``cacheScope``
``tools/list``                  the tools that have something to offer (no cursor: one page)
``tools/call``                  see :data:`TOOL_BROWSER` … and direct extension names
``resources/list``, ``…/read``  the host's ``resources-list`` / ``resources-read`` extensions (``-32601``
``resources/templates/list``    when it has none; ``templates/list`` answers ``[]``): :mod:`.resources`
anything else                   ``-32601``
==============================  =============================================================================

A ``tools/call`` result is ``{content:[{type:"text",text:<envelope JSON>}], structuredContent:<envelope>,
isError:!success}``; a screenshot adds one ``image`` block and its envelope carries ``imageBytes`` instead
of ``data``; refusals that need a different next move (BUSY, stale or foreign refs, RECONCILE_REQUIRED,
unknown outcomes) add a second text block starting ``Next step:``.

**Eras (CONTRACT.md §7 v1.1).** Each request is handled by the revision it names, so handshake and stateless
clients share one gateway with no state between them:

* *stateless* (:data:`MODERN_PROTOCOL_VERSIONS`, ``2026-07-28``): a request whose ``params._meta`` carries
  ``io.modelcontextprotocol/protocolVersion`` or ``…/clientCapabilities``, and every ``server/discover``.
  The envelope is checked first (a missing key or a wrong type ``-32602``; a revision not spoken ``-32022``
  with ``data.supported``). Methods: ``server/discover``, ``tools/list``, ``tools/call``; ``ping`` and
  ``initialize`` are not part of the revision (``-32601``). Every result carries ``resultType:"complete"``
  and the ``io.modelcontextprotocol/serverInfo`` stamp in ``_meta``; ``tools/list`` and ``server/discover``
  carry ``ttlMs``/``cacheScope``. A JSON-RPC error answering a stateless request puts the HTTP status the
  revision asks for on the ``complete`` step (``httpStatus``: 404 for ``-32601``, 400 for the others).
* *handshake* (:data:`PROTOCOL_VERSIONS`): everything else, answered exactly as before the stateless
  revision existed (no ``resultType``, no ``httpStatus`` but the notifications' 202).

:func:`http_refusal` holds the HTTP-only rules (``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` agree
with the body); hosts serving ``/mcp`` call it before :meth:`Gateway.begin_mcp`.
"""

from .frontend import FRONTEND, begin, discover
from .http import http_refusal
from .protocol import (
    CACHE_SCOPE,
    CACHE_TTL_MS,
    HEADER_MISMATCH,
    HTTP_STATUS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSIONS,
    PARSE_ERROR,
    PROTOCOL_VERSIONS,
    SERVER_NAME,
    SERVER_TITLE,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_stateless,
    rpc_error,
    rpc_result,
    server_info,
)
from .resources import LIST_ENDPOINT, READ_ENDPOINT
from .tools import (
    DEFAULT_TOOLS,
    TOOL_BROWSER,
    TOOL_EXTENSION,
    TOOL_EXTENSION_TOOLS,
    TOOL_EXTENSIONS,
    browser_control_schema,
    instructions,
    list_tools,
)
from .translation import NEXT_STEPS, UNKNOWN_OUTCOME_NEXT_STEP, tool_response

__all__ = [
    "CACHE_SCOPE",
    "CACHE_TTL_MS",
    "DEFAULT_TOOLS",
    "FRONTEND",
    "HEADER_MISMATCH",
    "HTTP_STATUS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "LIST_ENDPOINT",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "METHOD_NOT_FOUND",
    "MODERN_PROTOCOL_VERSIONS",
    "NEXT_STEPS",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "READ_ENDPOINT",
    "SERVER_NAME",
    "SERVER_TITLE",
    "SUPPORTED_VERSIONS",
    "TOOL_BROWSER",
    "TOOL_EXTENSION",
    "TOOL_EXTENSIONS",
    "TOOL_EXTENSION_TOOLS",
    "UNKNOWN_OUTCOME_NEXT_STEP",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "begin",
    "browser_control_schema",
    "discover",
    "http_refusal",
    "instructions",
    "is_stateless",
    "list_tools",
    "rpc_error",
    "rpc_result",
    "server_info",
    "tool_response",
]
