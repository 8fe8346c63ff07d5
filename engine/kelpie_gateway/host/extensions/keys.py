"""Keys and field content: ``press_key`` (trusted CDP key events, optionally focusing a ref first) and
``fill`` (replace a field's content, verified) — docs/host.md "Rich extensions", docs/contract-notes.md
"press_key targets".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kelpie_gateway import fill_script, focus_script
from kelpie_gateway.host.browser.chromium import endpoint
from kelpie_gateway.host.renderer import JsonObject, fail

from .base import REF, TAB, Extension, no_captured_node, schema

MAX_FILL_CODE_POINTS = 200_000
"""``fill``'s text bound: the same as ``tab.type``'s (CONTRACT.md §3)."""
KEY_PATTERN = (
    r"^(?:(?:Control|Shift|Alt|Meta|ControlOrMeta)\+){0,4}"
    r"(?:Enter|Tab|Escape|Backspace|Delete|Insert|Space|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Home|End|"
    r"PageUp|PageDown|F[1-9]|F1[0-2]|[!-~])$"
)


class Keys(Extension):
    """``press_key`` and ``fill``."""

    @endpoint(
        {
            "name": "press_key",
            "method": "press-key",
            "description": "Press a key in a tab as a user would (trusted key events): Enter, Tab, Escape, "
            "Backspace, Delete, arrows, Home/End, PageUp/PageDown, Space, F1-F12 or one printable character, "
            "optionally with modifiers such as Control+A or Shift+Tab. With ref, that element is focused first.",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "key": {"type": "string", "pattern": KEY_PATTERN, "maxLength": 64},
                    "ref": REF,
                },
                ["tabId", "key"],
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def press_key(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, key, ref?}`` → ``{pressed: key}``."""
        tab_id = self.tab(params).tab_id
        key = str(params.get("key"))
        captured = self.captured(params)
        if params.get("ref") is not None and captured is None:
            return no_captured_node()
        if captured is not None:
            focused = await self.run_script(tab_id, focus_script(*captured))
            if focused.get("success") is not True:
                return focused
        page = self.renderer.page_of(tab_id)
        gone = self.renderer.refusal(tab_id)
        if page is None or gone is not None:  # closed or crashed while focusing: the page's handlers ran
            why = (
                gone["error"]
                if gone is not None
                else {"code": "TAB_NOT_FOUND", "message": f"tab {tab_id!r} closed"}
            )
            return fail(why["code"], why["message"], mayHaveCompleted=captured is not None)
        await page.keyboard.press(key)
        return {"success": True, "pressed": key}

    @endpoint(
        {
            "name": "fill",
            "method": "fill",
            "description": "Replace the whole content of a text field, textarea or editable element with text "
            "(tab.type appends). Number and date/time inputs take text in their own format (42, 2026-11-30, "
            "09:30). Verified: if the page does not keep the text, the outcome is unknown (EFFECT_NOT_OBSERVED).",
            "inputSchema": schema(
                {
                    "tabId": TAB,
                    "ref": REF,
                    "text": {"type": "string", "maxLength": MAX_FILL_CODE_POINTS},
                },
                ["tabId", "ref", "text"],
            ),
            "mutates": True,
            "refArguments": ["ref"],
        }
    )
    async def fill(self, params: Mapping[str, Any]) -> JsonObject:
        """``{tabId, ref, text}`` → ``{filled: <code points now in the field>}``."""
        tab_id = self.tab(params).tab_id
        captured = self.captured(params)
        if captured is None:
            return no_captured_node()
        result = await self.run_script(tab_id, fill_script(*captured, str(params.get("text", ""))))
        if result.get("success") is not True:
            return result
        value = result.get("value")
        filled = value.get("filled") if isinstance(value, dict) else None
        if not isinstance(filled, int):
            return fail("RENDERER_FAILED", "the fill script gave no answer")
        return {"success": True, "filled": filled}
