"""JavaScript dialogs and the recovery extensions that answer them (``host/extensions/dialogs.py``;
docs/host.md "Dialogs: recovery extensions"), in real headless Chromium through the MCP Python SDK, the
Python API and the C library: a ``confirm()`` opened by a click is observed and accepted while that click
is still outstanding on the direct lane. (A dialog that opens after ``load`` is ``test_world.py``'s; every
dialog extension on a crashed tab is ``test_pages.py``'s.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from host_testlib import Host
from mcp_testlib import bc, connect, element, ext, mode, ok, open_tab, run

pytestmark = pytest.mark.timeout(120)
__all__ = ["mode"]  # the SDK connection mode fixture, used by name


def test_dialog_opened_by_a_click_is_handled_while_the_click_is_outstanding(
    browser_host: Host, mode: str
) -> None:
    async def body() -> None:
        async with connect(browser_host, mode) as client:
            tab = await open_tab(client, browser_host, "dialog.html")
            button = element(await ok(client, "tab.snapshot", {"tabId": tab}), "button", "confirmation")
            click = asyncio.ensure_future(
                bc(client, "tab.click", {"tabId": tab, "ref": button["ref"], "timeoutMs": 20000})
            )
            dialogs: list[dict[str, Any]] = []
            for _ in range(100):
                observed = await ext(client, "dialog_observe", {"tabId": tab})
                assert observed["success"], observed
                dialogs = observed["result"]["dialogs"]
                if dialogs:
                    break
                await asyncio.sleep(0.1)
            assert dialogs == [
                {
                    "tabId": tab,
                    "type": "confirm",
                    "message": "Proceed with the Kelpie test?",
                    "defaultValue": "",
                }
            ]
            assert not click.done()
            busy = await bc(client, "tabs.list", {})
            assert busy["error"]["code"] == "BUSY"  # the click is still outstanding on the direct lane
            accepted = await ext(client, "dialog_accept", {"tabId": tab})
            assert accepted["success"] and accepted["result"]["handled"] == "accepted"
            clicked = await asyncio.wait_for(click, 10)
            assert clicked["success"] and clicked["result"] == {"clicked": True}
            assert "Answer: confirmed" in (await ok(client, "tab.snapshot", {"tabId": tab}))["text"]

    run(body())
