"""A dispatch that waits for the browser (a relaunch after the browser exited) is still in flight: an MCP
``notifications/cancelled`` for it answers the caller at once and nothing is ever sent to the browser; the
lane is free afterwards. Engine-level (no DOM is touched): the renderer is a stand-in whose relaunch
takes 0.3 s, so the cancel lands inside that wait."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kelpie_gateway.host.driver import Driver  # noqa: E402
from stdio_testlib import run_async  # noqa: E402

from tests.engine.kit import FakeRenderer, make, req, response, run  # noqa: E402


class Relaunching:
    """The browser exited; its relaunch takes 0.3 s and succeeds. Records every native call it gets."""

    def __init__(self) -> None:
        self.fake = FakeRenderer()
        self.calls: list[str] = []
        self.lost = True

    def on_gone(self, listener: Callable[[str | None], None]) -> None:
        pass

    def available(self) -> Awaitable[None] | None:
        if not self.lost:
            return None

        async def back() -> None:
            await asyncio.sleep(0.3)
            self.lost = False

        return back()

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(method)
        return self.fake("x", {"method": method, "params": dict(params)})

    async def close(self) -> None:
        pass


def tools_call(rid: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    arguments = {"method": method, "params": params}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "kelpie_browser_control", "arguments": arguments},
    }


def test_an_mcp_cancel_while_the_browser_relaunches_answers_at_once_and_runs_nothing() -> None:
    async def main() -> tuple[dict[str, Any], float, list[str], dict[str, Any], dict[str, Any]]:
        gateway = make()
        renderer = Relaunching()
        snapshot = response(run(gateway, req("tab.snapshot", tabId="A"), renderer.fake))
        ref = snapshot["result"]["elements"][0]["ref"]
        driver = Driver(gateway, renderer, lambda _line: None)
        loop = asyncio.get_running_loop()
        click = asyncio.ensure_future(driver.mcp(tools_call("c-1", "tab.click", {"tabId": "A", "ref": ref})))
        await asyncio.sleep(0.1)  # the click's dispatch waits for the relaunch
        cancelled_at = loop.time()
        await driver.mcp(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c-1"}}
        )
        answer = await click
        waited = loop.time() - cancelled_at
        await asyncio.sleep(0.4)  # past the relaunch: still nothing may be sent for the cancelled click
        assert renderer.calls == [], f"the cancelled click reached the browser: {renderer.calls}"
        after = await driver.mcp(tools_call("c-2", "tab.snapshot", {"tabId": "A"}))
        return answer, waited, list(renderer.calls), gateway.next(), after

    answer, waited, calls, idle, after = run_async(main())
    result = answer["response"]["result"]
    assert answer["response"]["id"] == "c-1", answer
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "CANCELLED", result
    assert waited < 0.25, f"the cancel was answered only after the relaunch ({waited:.3f} s)"
    assert "browser-control-evaluate" not in calls[:-1], f"the cancelled click reached the browser: {calls}"
    assert idle == {"step": "idle"}, idle
    # The lane is free: the next call on the tab is dispatched to the browser, not refused BUSY.
    assert calls == ["browser-control-evaluate"], calls
    assert after["response"]["result"]["structuredContent"].get("error", {}).get("code") != "BUSY", after
