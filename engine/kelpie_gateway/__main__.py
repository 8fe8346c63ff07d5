"""``python -m kelpie_gateway``: the ``kelpie-gateway`` command line (see ``kelpie_gateway.host.cli``).

The CLI module imports only the standard library at load time, so ``--help``, ``--version`` and
``pair list`` work with the engine-only install; ``serve``/``mcp`` say which extra to install."""

import sys

from kelpie_gateway.host.cli import main

if __name__ == "__main__":
    sys.exit(main())
