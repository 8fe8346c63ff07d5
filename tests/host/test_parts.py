"""The renderer's layout holds (``host/parts.py``, ``host/browser/``; docs/host.md "Layout of the host"),
without a browser: every native endpoint the gateway is told of has exactly one handler among the parts,
every extension descriptor is declared on the handler that serves it, the gateway config is built in one
place, a call naming no live tab is refused before anything runs by every endpoint that takes a tab, and
renderer events reach the gateway through the driver, the one sink."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kelpie_gateway import NATIVE_ENDPOINTS, Gateway
from kelpie_gateway.host.browser import ChromiumRenderer
from kelpie_gateway.host.driver import Driver
from kelpie_gateway.host.parts import PARTS, gateway_config
from stdio_testlib import run_async


def renderer() -> ChromiumRenderer:
    return ChromiumRenderer(executable=None, log=lambda _line: None, parts=PARTS)


def test_every_native_endpoint_has_exactly_one_handler_among_the_parts() -> None:
    handled = Counter(method for part in PARTS for method, _attr in part.handlers)
    assert [method for method, n in handled.items() if n > 1] == []
    config = gateway_config(browser=True)
    assert renderer().methods == list(handled)
    assert sorted(handled) == sorted(config["nativeMethods"])
    assert set(NATIVE_ENDPOINTS) <= set(handled)


def test_each_extension_descriptor_is_declared_on_the_handler_that_serves_it() -> None:
    config = gateway_config(browser=True, upload_dirs=["/srv/uploads"])
    declared = [descriptor for part in PARTS for descriptor in part.descriptors]
    # as declared, except that upload_file's description names the operator's --upload-dir folders
    described = [
        {**d, "description": d["description"].removesuffix(" Allowed folders: /srv/uploads.")}
        for d in config["extensions"]
    ]
    assert described == declared
    assert "Allowed folders: /srv/uploads." in next(
        d["description"] for d in config["extensions"] if d["name"] == "upload_file"
    )
    names = [d["name"] for d in declared]
    assert names == [
        "dialog_observe",
        "dialog_accept",
        "dialog_dismiss",
        "press_key",
        "fill",
        "scroll",
        "go_back",
        "go_forward",
        "wait_for_text",
        "click",
        "hover",
        "drag",
        "type_keys",
        "console_messages",
        "page_errors",
        "network_requests",
        "cookies",
        "storage",
        "links",
        "element",
        "accessibility",
        "downloads_list",
        "resources_list",
        "resources_read",
        "upload_file",
        "screenshot",
        "pdf",
    ]
    for part in PARTS:
        methods = dict(part.handlers)
        for descriptor in part.descriptors:
            assert descriptor["method"] in methods, (part.__name__, descriptor["name"])
    gateway = Gateway(config)  # the engine admits every descriptor as it is
    try:
        step = gateway.begin({"version": 1, "id": 1, "method": "capabilities", "params": {}})
        assert step["step"] == "authorize", step  # the host's config requires authorization
        admitted = {"transaction": step["transaction"], "seq": step["seq"], "result": {"success": True}}
        listed = gateway.advance(admitted)
        assert listed["step"] == "complete", listed
        assert listed["response"]["result"]["extensions"] == names  # in PARTS order
    finally:
        gateway.close()


@pytest.mark.parametrize("browser", [True, False])
def test_the_gateway_config_is_the_base_plus_read_only_and_the_filter(browser: bool) -> None:
    plain = gateway_config(browser=browser)
    assert plain["browserAvailable"] is browser and ("extensions" in plain) is browser
    limited = gateway_config(browser=browser, read_only=True, include=["press_*"], exclude=["fill"])
    assert limited["allowActions"] is False
    assert limited["extensionFilter"] == {"include": ["press_*"], "exclude": ["fill"]}
    assert {k: v for k, v in limited.items() if k not in ("allowActions", "extensionFilter")} == {
        k: v for k, v in plain.items() if k != "allowActions"
    }


def test_every_endpoint_that_takes_a_tab_refuses_an_unknown_one_with_nothing_run() -> None:
    params: dict[str, dict[str, Any]] = {
        "switch-tab": {},
        "close-tab": {},
        "navigate": {"url": "about:blank"},
        "screenshot": {},
        "browser-control-evaluate": {"script": "1"},
        "dialog-observe": {"tabId": "t9"},
        "dialog-accept": {},
        "dialog-dismiss": {},
        "press-key": {"key": "a"},
        "fill": {"text": "x"},
        "scroll": {},
        "go-back": {},
        "go-forward": {},
        "wait-for-text": {"text": "x"},
    }

    async def calls() -> dict[str, Any]:
        chromium = renderer()  # never started: no tab exists, so nothing can run
        return {
            method: await chromium.call(method, {"tabId": "t9", **extra}) for method, extra in params.items()
        }

    for method, answer in run_async(calls()).items():
        assert answer == {
            "success": False,
            "error": {"code": "TAB_NOT_FOUND", "message": "no tab 't9'"},
            "mayHaveCompleted": False,
        }, method


class _Gateway:
    """Records what reaches the gateway."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def invalidate_refs(self, tab_id: str | None = None) -> None:
        self.seen.append(("invalidate_refs", tab_id))

    def advance(self, result: Any) -> dict[str, Any]:
        self.seen.append(("advance", result))
        return {"step": "noted"}


class _Renderer:
    def __init__(self) -> None:
        self.events: Any = None

    def listen(self, events: Any) -> None:
        self.events = events


def test_renderer_events_reach_the_gateway_through_the_driver() -> None:
    gateway, chromium = _Gateway(), _Renderer()
    driver = Driver(gateway, chromium, lambda _line: None)  # type: ignore[arg-type]
    assert chromium.events is driver  # the one sink: the driver owns the gateway
    driver.refs_invalidated("t1")
    driver.tab_closed("t2")
    driver.renderer_gone(None)  # nothing pending: nothing to cancel
    assert gateway.seen == [("invalidate_refs", "t1"), ("advance", {"tabClosed": "t2"})]


def test_the_native_input_vectors_carry_the_hosts_own_descriptors() -> None:
    """The C, Kotlin and Swift replay vectors of native input (fixtures/vectors/mcp-native-input-*.json,
    replayed by every language's tests) use the reference host's click and hover descriptors exactly, so a
    change of either shows in every binding's replay."""
    import json

    from host_testlib import ROOT

    host = {d["name"]: d for d in gateway_config(browser=True)["extensions"]}
    for name in ("mcp-native-input-click", "mcp-native-input-click-filtered", "mcp-native-input-read-only"):
        vector = json.loads((ROOT / "fixtures" / "vectors" / f"{name}.json").read_text(encoding="utf-8"))
        assert vector["config"]["extensions"] == [host["click"], host["hover"]], name
