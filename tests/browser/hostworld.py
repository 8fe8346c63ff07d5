"""Evaluate generated reader scripts exactly as a Kelpie host does (contract §9, HELPERS.md).

The host runs `browser-control-evaluate` params `{script, world:"KelpieBrowserControl"}` like this:
CDP `Page.createIsolatedWorld` on the tab's main frame with worldName "KelpieBrowserControl", then
`Runtime.evaluate` with that `contextId`, `returnByValue: true`, `awaitPromise: true`.

The isolated world is created once per main-frame document (keyed by the frame's loaderId) and reused
for every later call on that document, so a registry stored in the world's global survives from
snapshot to click, exactly as in a long-lived host. A new document (navigation) gets a new world.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import CDPSession, Page

WORLD = "KelpieBrowserControl"


class EvaluationFailed(AssertionError):
    """The script threw or the evaluation itself failed (a host would answer RENDERER_FAILED)."""


class HostWorld:
    """One tab's isolated world, as the reference host keeps it."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.cdp: CDPSession = page.context.new_cdp_session(page)
        self._contexts: dict[str, int] = {}

    def _main_frame(self) -> tuple[str, str]:
        tree = self.cdp.send("Page.getFrameTree")
        frame = tree["frameTree"]["frame"]
        return frame["id"], frame["loaderId"]

    def _context(self, fresh: bool = False) -> int:
        frame_id, loader_id = self._main_frame()
        if fresh or loader_id not in self._contexts:
            created = self.cdp.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD})
            self._contexts[loader_id] = created["executionContextId"]
        return self._contexts[loader_id]

    def evaluate(self, script: str, *, timeout_ms: int = 20000) -> Any:
        """Run `script` (a JavaScript expression) and return its JSON value; raise EvaluationFailed."""
        params: dict[str, Any] = {
            "expression": script,
            "returnByValue": True,
            "awaitPromise": True,
            "timeout": timeout_ms,
        }
        for attempt in range(2):
            params["contextId"] = self._context(fresh=attempt > 0)
            try:
                answer = self.cdp.send("Runtime.evaluate", params)
            except Exception as exc:
                # Only "no such context" is retried: nothing ran, the document changed before the call.
                # A context destroyed *during* evaluation may have run the script: never repeat that.
                if attempt == 0 and "cannot find context" in str(exc).lower():
                    continue
                raise EvaluationFailed(str(exc)) from exc
            if "exceptionDetails" in answer:
                details = answer["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                raise EvaluationFailed(f"script threw: {text}")
            return answer["result"].get("value")
        raise EvaluationFailed("no execution context")
