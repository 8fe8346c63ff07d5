"""A dispatch that waits for the browser (a relaunch after the browser exited) is still in flight: an MCP
``notifications/cancelled`` for it answers the caller at once and nothing is ever sent to the browser; the
lane is free afterwards. Engine-level (no DOM is touched): the renderer is a stand-in whose relaunch
takes 0.3 s, so the cancel lands inside that wait. A call that waits for the browser's first start
(``mcp``) is admitted only once it is up: its deadline, and its retirement grace, start then."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
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

    def listen(self, events: Any) -> None:
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


class Starting:
    """A browser still starting (``mcp``): up after ``start_s``. Each call takes ``call_s``; records every
    native call and every attempt to end stuck work (stop_script, end_stuck)."""

    def __init__(self, call_s: float) -> None:
        self.fake = FakeRenderer()
        self.call_s = call_s
        self.calls: list[str] = []
        self.ended: list[str] = []

    def listen(self, events: Any) -> None:
        pass

    def available(self) -> Awaitable[None] | None:
        return None

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(method)
        await asyncio.sleep(self.call_s)
        return self.fake("tab.snapshot", {"method": method, "params": dict(params)})

    async def stop_script(self, tab_id: str | None) -> bool:
        self.ended.append(f"stop {tab_id}")
        return True

    async def end_stuck(self, tab_id: str | None) -> bool:
        self.ended.append(f"end {tab_id}")
        return True

    async def close(self) -> None:
        pass


def _starting_driver(call_s: float, start_s: float) -> tuple[Any, Starting, Driver]:
    gateway = make(retirementGraceMs=500)
    renderer = Starting(call_s)
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_later(start_s, ready.set_result, None)
    return gateway, renderer, Driver(gateway, renderer, lambda _line: None, ready=ready)


def test_a_call_that_waited_for_the_first_start_gets_its_full_retirement_grace() -> None:
    """Stop 22's note: under ``mcp`` a call that waited for the browser's first start and then timed out
    was overdue for the engine at once (its deadline ran from the dispatch, before the start), so the host
    stopped the page's script (and would close its tab) instead of letting the late reply retire it within
    the grace. The start is 1.2 s; the read times out at 300 ms and its reply comes 200 ms later, well
    within the 500 ms grace: it retires by itself, nothing is stopped, and the lane is free."""

    async def main() -> tuple[dict[str, Any], Starting, dict[str, Any]]:
        gateway, renderer, driver = _starting_driver(call_s=0.5, start_s=1.2)
        answer = await driver.canonical(req("tab.snapshot", tabId="A", timeoutMs=300))
        await asyncio.sleep(1.0)  # past the late reply and past the grace
        return answer, renderer, gateway.next()

    answer, renderer, idle = run_async(main())
    assert response(answer)["error"]["code"] == "TIMEOUT" and response(answer)["mayHaveCompleted"] is False
    assert renderer.calls == ["browser-control-evaluate"], renderer.calls
    assert renderer.ended == [], f"the host ended work that retired within its grace: {renderer.ended}"
    assert idle == {"step": "idle"}, idle


def test_an_mcp_cancel_while_the_browser_first_starts_is_a_refusal_and_runs_nothing() -> None:
    """The call waiting for the first start is cancelled before anything was dispatched: CANCELLED with
    mayHaveCompleted:false (it used to say true: the engine had issued the dispatch), never run later."""

    async def main() -> tuple[dict[str, Any], float, Starting, dict[str, Any]]:
        gateway, renderer, driver = _starting_driver(call_s=0.0, start_s=0.6)
        loop = asyncio.get_running_loop()
        click = asyncio.ensure_future(driver.mcp(tools_call("c-1", "tab.navigate", {
            "tabId": "A", "url": "https://x.test/"})))
        await asyncio.sleep(0.1)
        cancelled_at = loop.time()
        await driver.mcp({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c-1"}})
        answer = await click
        waited = loop.time() - cancelled_at
        await asyncio.sleep(0.8)  # past the start: nothing may be sent for the cancelled call
        return answer, waited, renderer, gateway.next()

    answer, waited, renderer, idle = run_async(main())
    envelope = answer["response"]["result"]["structuredContent"]
    assert envelope["error"]["code"] == "CANCELLED" and envelope["mayHaveCompleted"] is False, envelope
    assert waited < 0.25, f"the cancel was answered only after the start ({waited:.3f} s)"
    assert renderer.calls == [] and idle == {"step": "idle"}, (renderer.calls, idle)
