"""What the rich extensions share: the pieces of their input schemas, and :class:`Extension`, the part base
with the helpers every extension uses (the tab it names, the node the gateway captured for its ref, a
generated reader script run in the tab's isolated world).

Refs are the gateway's: a descriptor that declares ``refArguments: ["ref"]`` gets a bad ref refused before
dispatch, and its handler gets only the captured node (``kelpieCaptured``: ``key`` and ``handles``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kelpie_gateway import WORLD_NAME
from kelpie_gateway.host.browser.chromium import Part
from kelpie_gateway.host.browser.common import Tab
from kelpie_gateway.host.renderer import JsonObject, fail

STEP_TIMEOUT_MS = 9_000
"""What a rich extension may spend inside the gateway's 10 s extension deadline (§3's default ``timeoutMs``;
``extension.call`` has no ``timeoutMs`` of its own)."""

TAB = {"type": "string", "minLength": 1, "maxLength": 64, "description": "the tab (tabs.list)"}
REF = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": "an element ref from the latest tab.snapshot",
}


def schema(properties: dict[str, Any], required: list[str], **extra: Any) -> JsonObject:
    """An ``inputSchema``: an object of ``properties`` with ``required`` ones and no others."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


def script_failure(value: Any) -> JsonObject | None:
    """A generated script's ``{error, mayHaveCompleted}`` answer as a native failure result."""
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        err = value["error"]
        return fail(
            str(err.get("code") or "RENDERER_FAILED"),
            str(err.get("message") or "the page refused the action"),
            mayHaveCompleted=value.get("mayHaveCompleted") is not False,
        )
    return None


def no_captured_node() -> JsonObject:
    """The refusal of a ref-bearing call the gateway passed no captured node for (nothing run)."""
    return fail("RENDERER_FAILED", "the gateway passed no captured node for ref", mayHaveCompleted=False)


class Extension(Part):
    """A rich extension's part: its handlers act on the renderer only through its public means."""

    def tab(self, params: Mapping[str, Any]) -> Tab:
        """The live tab ``params["tabId"]`` names; raises ``Refused`` as the built-in natives refuse (an
        unknown tab, or a tab whose renderer crashed: ``RENDERER_FAILED``, ``mayHaveCompleted:false``)."""
        return self.renderer.pages.live(params.get("tabId"))

    @staticmethod
    def captured(params: Mapping[str, Any]) -> tuple[str, str] | None:
        """``(key, handle)`` of the ref the gateway resolved for this call, or None (no ref given)."""
        captured = params.get("kelpieCaptured")
        if not isinstance(captured, Mapping):
            return None
        handle = (captured.get("handles") or {}).get("ref")
        key = captured.get("key")
        return (str(key), str(handle)) if isinstance(handle, str) and isinstance(key, str) else None

    async def evaluate(self, tab_id: str, script: str) -> JsonObject:
        """Run a generated script in the tab's isolated world: ``{success:true, value}`` or a failure."""
        return await self.renderer.call(
            "browser-control-evaluate",
            {"tabId": tab_id, "world": WORLD_NAME, "script": script, "timeoutMs": STEP_TIMEOUT_MS},
        )

    async def run_script(self, tab_id: str, script: str) -> JsonObject:
        """Evaluate and unwrap: ``{success:true, value}`` or the script's own refusal as a failure."""
        result = await self.evaluate(tab_id, script)
        if result.get("success") is not True:
            return result
        failed = script_failure(result.get("value"))
        return failed if failed is not None else result
