"""The aiohttp internals the host's half-close support reads (``host/server.py``, :data:`AIOHTTP_INTERNALS`).

aiohttp has no public hook for "the client closed its side while requests are still queued", so the host
reads three private attributes of its request handler (plus two of its ``Server`` and one ``AppRunner``
method). ``pyproject.toml`` pins aiohttp to the range this was tested on; these tests fail loudly, naming
what is missing, when the installed aiohttp is outside that range or no longer has that state. The
behaviour itself (half-closed clients answered, pipelined requests too, bodies cut by a half-close 400) is
checked end to end in ``test_transport_v11.py``.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import tomllib

import aiohttp
from aiohttp import web
from host_testlib import ROOT
from kelpie_gateway.host.server import AIOHTTP_INTERNALS
from packaging.requirements import Requirement
from packaging.version import Version
from stdio_testlib import run_async


def pinned_range() -> Requirement:
    """The aiohttp requirement of the ``host`` extra in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["optional-dependencies"]["host"]:
        requirement = Requirement(line)
        if requirement.name == "aiohttp":
            return requirement
    raise AssertionError("pyproject.toml's host extra has no aiohttp requirement")


def test_the_pin_has_an_upper_bound_and_the_installed_aiohttp_is_inside_it() -> None:
    pin = pinned_range()
    assert any(spec.operator in ("<", "<=", "~=", "==") for spec in pin.specifier), (
        f"pyproject.toml pins {pin}: without an upper bound a future aiohttp without the private state "
        "host/server.py reads could be installed"
    )
    installed = Version(aiohttp.__version__)
    assert pin.specifier.contains(installed, prereleases=True), (
        f"aiohttp {installed} is installed but pyproject.toml pins {pin} (the range the host's half-close "
        "support was tested on): install a pinned version, or test the new one and widen the pin"
    )


def _resolve(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def test_aiohttp_still_has_the_private_state_the_half_close_support_reads() -> None:
    async def real_objects() -> dict[str, object]:
        async def handler(request: web.BaseRequest) -> web.StreamResponse:
            return web.Response()

        server = web.Server(handler)  # what AppRunner builds; calling it makes a connection's handler
        return {
            "aiohttp.web_protocol.RequestHandler": server(),
            "aiohttp.web_server.Server": server,
            "aiohttp.web_runner.AppRunner": web.AppRunner(web.Application()),
        }

    # On a thread of its own: in the full suite the browser tests' Playwright loop holds this thread.
    objects = run_async(real_objects())
    missing = []
    for path, names in AIOHTTP_INTERNALS.items():
        obj = objects[path]
        assert isinstance(obj, _resolve(path)), (path, obj)
        missing += [f"{path}.{name}" for name in names if not hasattr(obj, name)]
    assert not missing, (
        f"aiohttp {aiohttp.__version__} no longer has {', '.join(missing)}: host/server.py's half-close support "
        f"(_QuietRequestHandler, _QuietServer, QuietAppRunner) reads them. pyproject.toml pins {pinned_range()}; "
        "a release outside that range needs the half-close support reworked before the pin is widened"
    )
    handler = objects["aiohttp.web_protocol.RequestHandler"]
    # The shapes the support relies on: a queue of (message, payload) pairs, no idle waiter before the first
    # request, a request counter, and the Server's loop and RequestHandler keyword arguments.
    assert isinstance(handler._messages, collections.deque) and not handler._messages  # type: ignore[attr-defined]
    assert handler._waiter is None and handler._request_count == 0  # type: ignore[attr-defined]
    server = objects["aiohttp.web_server.Server"]
    assert isinstance(server._loop, asyncio.AbstractEventLoop) and isinstance(server._kwargs, dict)  # type: ignore[attr-defined]
