"""The reference Linux host: Playwright-driven headless Chromium, a loopback HTTP server
(``/v1/browser-control``, ``/mcp``, pairing) and the ``kelpie-gateway`` command line.

This subpackage imports the engine; the engine never imports it (ARCHITECTURE.md). Modules
(docs/host.md "Layout of the host"): ``renderer`` (the renderer contract), ``browser/`` (the Chromium
renderer in parts), ``extensions/`` (the rich extensions), ``parts`` (the list of parts and the gateway
config), ``driver`` (the transaction loop and the renderer's event sink), ``policy`` (site policy),
``server`` / ``stdio`` / ``tunnel`` (transports), ``auth`` (tokens, pairing), ``audit``, ``settings``
(``--config``), ``abi`` (``--via-abi`` ctypes adapter), ``app`` (``serve``), ``cli``, ``launch``
(child-process helper) and ``demo``.
"""
