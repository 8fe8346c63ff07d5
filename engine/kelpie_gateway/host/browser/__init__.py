"""The reference host's renderer: headless Chromium driven by Playwright, in parts (docs/host.md "Layout of
the host").

``chromium`` (:class:`ChromiumRenderer` and what a part of it is), ``link`` (the host's one browser: launch,
attach, connect, relaunch, reconnect, close), ``lifecycle`` (one browser context on it: made, made again, closed),
``pages`` (tabs: births, adoption, crash, revival, close), ``common`` (``Tab``, what the pieces share),
``world`` (the isolated world: sessions, worlds, ``browser-control-evaluate``), ``endpoints`` (the built-in
endpoints). The list of parts is
``kelpie_gateway.host.parts.PARTS``; the renderer contract is ``kelpie_gateway.host.renderer``.
"""

from kelpie_gateway import WORLD_NAME

from .chromium import ChromiumRenderer
from .lifecycle import ContextOptions, new_context
from .link import CHROMIUM_FLAGS, DEFAULT_CHROMIUM, VIEWPORT, BrowserLink, find_chromium
from .world import PRELOADED

__all__ = [
    "CHROMIUM_FLAGS",
    "DEFAULT_CHROMIUM",
    "PRELOADED",
    "VIEWPORT",
    "WORLD_NAME",
    "BrowserLink",
    "ChromiumRenderer",
    "ContextOptions",
    "find_chromium",
    "new_context",
]
