"""Kelpie browser gateway: a sans-I/O browser-control engine (see CONTRACT.md).

Python API (CONTRACT.md §11)::

    from kelpie_gateway import Gateway
    gw = Gateway({"nativeMethods": ["get-tabs"]})
    step = gw.begin({"version": 1, "method": "tabs.list", "params": {}})
"""

from .errors import GatewayConfigError, GatewayPendingError
from .gateway import Gateway

__version__ = "0.1.0"
__all__ = ["Gateway", "GatewayConfigError", "GatewayPendingError", "__version__"]
