"""Scrolling: ``scroll`` brings a captured element to the viewport's middle, or scrolls the page (its
scrolling box) by 90 % of a screen per page, instantly (docs/host.md "Rich extensions")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kelpie_gateway import scroll_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import REF, TAB, Extension, schema


class Scroll(Extension):
    """``scroll``."""

    @endpoint(
        {
            "name": "scroll",
            "method": "scroll",
            "description": "Scroll an element (ref) into view, or scroll the page by 1-10 screens up or down "
            "(default: one screen down). Lazy-loaded content may appear afterwards: take a new snapshot.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "direction": {"enum": ["up", "down"]},
                    "pages": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                ["tabId"],
                dependentSchemas={"ref": {"properties": {"direction": False, "pages": False}}},
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def scroll(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref}`` → ``{scrolled, inView}``; ``{tabId, direction?, pages?}`` → ``{scrolled, atTop,
        atBottom}``."""
        tab_id = self.tab(params).tab_id
        captured = self.captured(params)
        pages = params.get("pages", 1)
        direction = str(params.get("direction", "down"))
        if captured is not None:
            script = scroll_script(captured[0], captured[1])
        else:
            script = scroll_script(
                None, None, direction=direction, pages=pages if isinstance(pages, int) else 1
            )
        result = await self.run_script(tab_id, script)
        if result.get("success") is not True:
            return result
        value = result.get("value")
        if not isinstance(value, dict) or not isinstance(value.get("scrolled"), bool):
            return fail("RENDERER_FAILED", "the scroll script gave no answer")
        return {"success": True, **{k: v for k, v in value.items() if isinstance(v, bool)}}
