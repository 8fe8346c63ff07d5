"""The package version, written once: here (docs/engine.md "The version").

``__version__`` (``"X.Y.Z"``) is a plain literal so that every reader gets it without importing the
engine: ``pyproject.toml`` reads it statically (setuptools ``dynamic = ["version"]``, ``attr:
kelpie_gateway.version.__version__``), ``abi/build_abi.py`` reads this file's text and compiles it into the
C library (``kelpie_browser_gateway_version()``, and the ``.so.X.Y.Z`` name), and the engine imports it
(``kelpie_gateway.VERSION``: ``--version`` and the tunnel's client info; MCP's ``serverInfo.version``).
This module imports nothing, so any engine module may import it without a cycle.
"""

__version__ = "0.1.0"

CONTRACT_REVISION = "1.2"
"""The wire contract's revision this build follows (contract v1; docs/contract.md)."""

CONTRACT_REVISION_COMPLETE = True
"""Whether every addition of :data:`CONTRACT_REVISION` is implemented: False while docs/contract.md's table
"Revision 1.2 in this build" still has a row "planned in revision 1.2" (tests/docs checks the two agree)."""
