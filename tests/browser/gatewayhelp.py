"""Drive a real :class:`kelpie_gateway.Gateway` against one Chromium tab, exactly as a host does.

Every `browser-control-evaluate` dispatch runs its script in the tab's isolated world (hostworld.py);
every authorize step is admitted. This is how the v1.1 reader tests see what a client sees: envelopes
with refs, `states`, `next` cursors and the refusals the engine decides before anything is dispatched.
"""

from __future__ import annotations

import itertools
from typing import Any

from conftest import Site
from hostworld import EvaluationFailed, HostWorld
from kelpie_gateway import Gateway
from playwright.sync_api import Page

TAB = "t1"


class GatewayTab:
    """One gateway (direct targeting) whose only tab `t1` is `page`."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.world = HostWorld(page)
        self.gw = Gateway({"nativeMethods": ["browser-control-evaluate"], "fixedReader": True})
        self.ids = itertools.count(1)
        self.dispatches = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """The envelope of one canonical request on tab t1 (authorize admitted, scripts evaluated)."""
        step = self.gw.begin(
            {"version": 1, "id": next(self.ids), "method": method, "params": {"tabId": TAB, **params}}
        )
        while step["step"] != "complete":
            if step["step"] == "authorize":
                result: dict[str, Any] = {"success": True}
            else:
                assert step["step"] == "dispatch" and step["method"] == "browser-control-evaluate", step
                self.dispatches += 1
                try:
                    result = {"success": True, "value": self.world.evaluate(step["params"]["script"])}
                except EvaluationFailed as exc:
                    result = {"success": False, "error": {"code": "RENDERER_FAILED", "message": str(exc)}}
            step = self.gw.advance({"transaction": step["transaction"], "seq": step["seq"], "result": result})
        envelope: dict[str, Any] = step["response"]
        return envelope

    def ok(self, method: str, **params: Any) -> dict[str, Any]:
        env = self.call(method, **params)
        assert env["success"] is True, env
        result: dict[str, Any] = env["result"]
        return result

    def refused(self, code: str, method: str, **params: Any) -> dict[str, Any]:
        """Assert a refusal with nothing done (mayHaveCompleted:false) and return the envelope."""
        env = self.call(method, **params)
        assert env["success"] is False and env["error"]["code"] == code, env
        assert env["mayHaveCompleted"] is False, env
        return env

    def snapshot(self, **params: Any) -> dict[str, Any]:
        return self.ok("tab.snapshot", **params)

    def all_pages(self, **params: Any) -> list[dict[str, Any]]:
        """A snapshot and every page its `next` cursors lead to."""
        pages = [self.snapshot(**params)]
        while "next" in pages[-1]:
            assert pages[-1]["truncated"] is True
            pages.append(self.snapshot(cursor=pages[-1]["next"], **params))
            assert len(pages) < 1000
        return pages


def open_tab(page: Page, site: Site, name: str) -> GatewayTab:
    """Load fixtures/pages/reader/`name` and return a fresh gateway whose tab t1 is `page`."""
    page.goto(site.url(f"reader/{name}"), wait_until="load")
    return GatewayTab(page)


def unknown_outcome(env: dict[str, Any], code: str) -> None:
    """Assert a failure with an unknown outcome: `code`, mayHaveCompleted:true, not retryable."""
    assert env["success"] is False and env["error"]["code"] == code, env
    assert env["mayHaveCompleted"] is True and env["error"]["retryable"] is False, env


def labelled(result: dict[str, Any], label: str, role: str | None = None) -> dict[str, Any]:
    """The one element of a snapshot result with `label` (and `role`)."""
    found = [e for e in result["elements"] if e["label"] == label and (role is None or e["role"] == role)]
    assert len(found) == 1, (label, role, [(e["role"], e["label"]) for e in result["elements"]])
    return found[0]
