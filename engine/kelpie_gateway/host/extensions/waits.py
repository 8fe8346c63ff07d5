"""Waits: ``wait_for_text`` polls the tab's value-free page text (script ``find-text``, as ``tab.snapshot``
reads it; field values are never searched) every 100 ms until the text appears or its ``timeoutMs`` passes
(default 5 s, at most 9 s, so it answers ``found:false`` within the gateway's 10 s extension deadline). It
stops waiting at once when its tab closes or its renderer crashes (docs/host.md "Rich extensions")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from kelpie_gateway import find_text_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.renderer import JsonObject

from .base import STEP_TIMEOUT_MS, TAB, Extension, schema

WAIT_DEFAULT_MS = 5_000
WAIT_POLL_S = 0.1


class Waits(Extension):
    """``wait_for_text``: ``{tabId, text, timeoutMs?}`` → ``{found, elapsedMs}`` (read-only)."""

    @endpoint(
        {
            "name": "wait_for_text",
            "method": "wait-for-text",
            "description": "Wait until text appears in the tab's visible page text (as tab.snapshot reads it; "
            "field values are never searched), at most timeoutMs (default 5000, at most 9000). Answers "
            "found:true/false.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "timeoutMs": {"type": "integer", "minimum": 1, "maximum": STEP_TIMEOUT_MS},
                },
                ["tabId", "text"],
            ),
            "mutates": False,
        }
    )
    async def wait_for_text(self, params: Mapping[str, Any]) -> JsonObject:
        tab_id = self.tab(params).tab_id
        timeout_ms = params.get("timeoutMs", WAIT_DEFAULT_MS)
        if not isinstance(timeout_ms, int) or not 1 <= timeout_ms <= STEP_TIMEOUT_MS:
            timeout_ms = WAIT_DEFAULT_MS
        script = find_text_script(str(params.get("text", "")))
        started = time.monotonic()
        deadline = started + timeout_ms / 1000
        while True:
            result = await self.evaluate(tab_id, script)
            if result.get("success") is True:
                value = result.get("value")
                if isinstance(value, dict) and value.get("found") is True:
                    return {
                        "success": True,
                        "found": True,
                        "elapsedMs": round((time.monotonic() - started) * 1000),
                    }
            elif (refused := self.renderer.refusal(tab_id)) is not None:
                return refused  # the tab closed or its renderer crashed: no text will appear
            # Anything else (a document being replaced mid-read, a page still loading) is "not yet".
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {
                    "success": True,
                    "found": False,
                    "elapsedMs": round((time.monotonic() - started) * 1000),
                }
            await asyncio.sleep(min(WAIT_POLL_S, remaining))
