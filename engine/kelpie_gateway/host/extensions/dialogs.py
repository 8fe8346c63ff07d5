"""JavaScript dialogs: kept open per tab and answered by the host's recovery extensions (docs/host.md
"Dialogs: recovery extensions").

A dialog (``alert``, ``confirm``, ``prompt``, ``beforeunload``) blocks the renderer: the click that opened it
stays outstanding. This part listens to ``page.on("dialog")`` on every tab's page, so Playwright never
auto-dismisses, keeps the open dialog (``Tab.dialog``; a wait registered in ``Tab.dialog_waiters`` ends when
one opens) and serves three extensions with ``recovery: true``, reachable while that click is outstanding:

| name | method | mutates | arguments | result |
|---|---|---|---|---|
| ``dialog_observe`` | ``dialog-observe`` | no | ``{tabId?}`` | ``{dialogs: [{tabId, type, message, defaultValue}]}`` |
| ``dialog_accept`` | ``dialog-accept`` | yes | ``{tabId, promptText?}`` | ``{handled: "accepted", tabId, type, message}`` |
| ``dialog_dismiss`` | ``dialog-dismiss`` | yes | ``{tabId}`` | ``{handled: "dismissed", tabId, type, message}`` |

With no dialog open in the tab, accept and dismiss fail ``RENDERER_FAILED`` with ``mayHaveCompleted:false``;
a crashed tab is refused as every endpoint refuses it. A dialog nobody handles is dismissed by the host after
the renderer's ``dialog_timeout_s`` (60 s; logged), so a forgotten dialog cannot wedge the renderer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Dialog

from kelpie_gateway.host.browser.chromium import Part, endpoint
from kelpie_gateway.host.browser.common import Tab, quiet, state_of
from kelpie_gateway.host.renderer import JsonObject, fail

_TAB_ID = {"type": "string", "minLength": 1, "maxLength": 64}


@dataclass
class _Expiry:
    """The timer that dismisses the tab's open dialog when nobody answers it."""

    timer: asyncio.TimerHandle | None = None


class Dialogs(Part):
    """The dialogs of every tab and the recovery extensions that answer them; see the module docstring."""

    # ----------------------------------------------------------------- tab events
    def attached(self, tab: Tab) -> None:
        page = tab.page
        page.on("dialog", lambda dialog: self._opened(tab, dialog) if tab.page is page else None)

    def crashed(self, tab: Tab) -> None:
        self._clear(tab)

    def closed(self, tab: Tab) -> None:
        self._clear(tab)

    def _opened(self, tab: Tab, dialog: Dialog) -> None:
        self._clear(tab)
        tab.dialog = dialog
        self.renderer.log(f"dialog opened in tab {tab.tab_id}: {dialog.type}")
        for waiter in tab.dialog_waiters:  # a dialog blocks the renderer: nothing waits behind it
            if not waiter.done():
                waiter.set_result(None)
        loop = asyncio.get_running_loop()
        timeout_s = self.renderer.dialog_timeout_s
        state_of(tab, _Expiry).timer = loop.call_later(timeout_s, self._expire, tab, dialog)

    def _expire(self, tab: Tab, dialog: Dialog) -> None:
        if tab.dialog is dialog:
            tab.dialog = None
            self.renderer.log(
                f"dialog in tab {tab.tab_id} unhandled for {self.renderer.dialog_timeout_s:g} s: "
                "dismissed by the host"
            )
            self.renderer.spawn(quiet(dialog.dismiss()))

    @staticmethod
    def _clear(tab: Tab) -> None:
        expiry = state_of(tab, _Expiry)
        if expiry.timer is not None:
            expiry.timer.cancel()
            expiry.timer = None
        tab.dialog = None

    # ----------------------------------------------------------------- endpoints
    @endpoint(
        {
            "name": "dialog_observe",
            "method": "dialog-observe",
            "description": "List the JavaScript dialogs (alert, confirm, prompt, beforeunload) open in the "
            "browser, optionally for one tab. Reachable while a click that opened a dialog is still outstanding.",
            "inputSchema": {
                "type": "object",
                "properties": {"tabId": _TAB_ID},
                "additionalProperties": False,
            },
            "mutates": False,
            "recovery": True,
        }
    )
    async def observe(self, params: Mapping[str, Any]) -> JsonObject:
        wanted = params.get("tabId")
        if wanted is not None:
            self.renderer.pages.live(wanted)
        dialogs = [
            {
                "tabId": tab.tab_id,
                "type": tab.dialog.type,
                "message": tab.dialog.message,
                "defaultValue": tab.dialog.default_value,
            }
            for tab in self.renderer.pages
            if tab.dialog is not None and (wanted is None or wanted == tab.tab_id)
        ]
        return {"success": True, "dialogs": dialogs}

    @endpoint(
        {
            "name": "dialog_accept",
            "method": "dialog-accept",
            "description": "Accept (OK) the JavaScript dialog open in a tab; promptText answers a prompt().",
            "inputSchema": {
                "type": "object",
                "properties": {"tabId": _TAB_ID, "promptText": {"type": "string", "maxLength": 10000}},
                "required": ["tabId"],
                "additionalProperties": False,
            },
            "mutates": True,
            "recovery": True,
        }
    )
    async def accept(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._answer(params, accept=True)

    @endpoint(
        {
            "name": "dialog_dismiss",
            "method": "dialog-dismiss",
            "description": "Dismiss (Cancel) the JavaScript dialog open in a tab.",
            "inputSchema": {
                "type": "object",
                "properties": {"tabId": _TAB_ID},
                "required": ["tabId"],
                "additionalProperties": False,
            },
            "mutates": True,
            "recovery": True,
        }
    )
    async def dismiss(self, params: Mapping[str, Any]) -> JsonObject:
        return await self._answer(params, accept=False)

    async def _answer(self, params: Mapping[str, Any], *, accept: bool) -> JsonObject:
        tab = self.renderer.pages.named(params)
        dialog = tab.dialog
        if dialog is None:
            return fail("RENDERER_FAILED", f"no dialog is open in tab {tab.tab_id}", mayHaveCompleted=False)
        self._clear(tab)
        info = {"tabId": tab.tab_id, "type": dialog.type, "message": dialog.message}
        if accept:
            prompt = params.get("promptText")
            await dialog.accept(prompt if isinstance(prompt, str) else None)
        else:
            await dialog.dismiss()
        return {"success": True, "handled": "accepted" if accept else "dismissed", **info}
