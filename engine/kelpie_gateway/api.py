"""The Python API's :class:`Gateway` (CONTRACT.md §11): the coordinator plus the MCP frontend.

:class:`~kelpie_gateway.gateway.GatewayCore` holds lanes, BUSY and the step protocol and knows no
wire format but canonical JSON; :mod:`kelpie_gateway.mcp` translates JSON-RPC on top of it. This class joins
the two so ``gw.begin_mcp`` exists as the contract names it, without the coordinator importing MCP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from . import mcp
from .errors import JsonObject
from .gateway import Entry, GatewayCore


class Gateway(GatewayCore):
    """A browser-control gateway (CONTRACT.md §11). Mirrors the C ABI one to one.

    ``Gateway(config, *, clock=None)``: ``config`` is a Mapping or JSON text (§2); an invalid one raises
    :class:`~kelpie_gateway.errors.GatewayConfigError`. ``clock``: monotonic seconds (default
    :func:`time.monotonic`) for dispatch deadlines (``next`` marks an overdue dispatch ``"overdue": true``)
    and ``audit.elapsedMs``. Every method but ``close`` returns a step dict and never raises for bad input.
    """

    def begin_mcp(self, message: Mapping[str, Any] | str | bytes) -> JsonObject:
        """Start a transaction from a JSON-RPC 2.0 message (§7); the ``complete`` step carries the
        JSON-RPC response (``null`` with ``httpStatus: 202`` for a notification)."""
        return mcp.begin(self, message)

    _JSON_OPS: ClassVar[dict[str, Entry]] = {
        **GatewayCore._JSON_OPS,
        "begin_mcp": (mcp.FRONTEND.translate, mcp.FRONTEND),
    }
    """:meth:`~GatewayCore.call_json`'s operations, ``begin_mcp`` (the C ABI's) included."""
