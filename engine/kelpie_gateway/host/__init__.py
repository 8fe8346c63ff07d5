"""The reference Linux host: Playwright-driven headless Chromium, a loopback HTTP server
(``/v1/browser-control``, ``/mcp``, pairing) and the ``kelpie-gateway`` command line.

This subpackage imports the engine; the engine never imports it (ARCHITECTURE.md). Modules:
``auth`` (tokens, pairing), ``browser`` (renderer and native endpoints), ``driver`` (the transaction
loop), ``server`` (HTTP routes and status rules), ``abi`` (``--via-abi`` ctypes adapter), ``app``
(``serve``), ``cli``, ``launch`` (child-process helper) and ``demo``.
"""
