"""Widgets written by others, driven over MCP as an agent would (issue 28; docs/host.md "Native input").

Each page of ``fixtures/widgets/`` puts one widget of a real npm library on a page (jQuery UI autocomplete,
datepicker, tabs and sortable; Select2; Tom Select; Choices.js; flatpickr; SortableJS; noUiSlider; Tippy).
The libraries are the ``tools/node`` dev dependencies, copied into a temporary site at test time
(``widgets_testlib.py``). One host (Python API) serves the module; the official MCP Python SDK client reads
the page, learns the native-input tools from ``kelpie_extension_tools`` and acts through
``kelpie_extension``, and the plan of each widget ends on a page effect the widget itself writes (never a
field's value). ``KELPIE_WIDGET_RUNS`` (default 1) repeats each plan; the figures (which extensions did it,
successes per run) go to ``build/widget-figures.json``.

The W3C ARIA Authoring Practices examples are not among them: no package of a registry this project can use
serves them (docs/host.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from host_testlib import ROOT, Host, start_host
from mcp import Client
from mcp_testlib import bc, connect, run
from mcp_testlib import ext as raw_ext
from mcp_testlib import ok as bc_ok
from widgets_testlib import build_site

pytestmark = pytest.mark.timeout(300)
RUNS = int(os.environ.get("KELPIE_WIDGET_RUNS", "1"))
FIGURES: dict[str, dict[str, Any]] = {}
NATIVE = ("click", "hover", "drag", "type_keys")


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    site = build_site(tmp_path_factory.mktemp("widgets") / "site")
    process = start_host(["--approve-pairing", "auto", "--site", str(site)], "python")
    try:
        yield Host(process, process.pair("widgets"), "python")
    finally:
        process.stop()
        if FIGURES:
            out = ROOT / "build" / "widget-figures.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(FIGURES, indent=1, sort_keys=True) + "\n")
        if os.environ.get("KELPIE_HOST_LOG"):
            print("\n".join(process.lines))


class Agent:
    """One MCP client on one tab, with the moves an agent makes: read, find, act, check; it records which
    extensions it used."""

    def __init__(self, client: Client, tab: str) -> None:
        self.client = client
        self.tab = tab
        self.used: list[str] = []
        self.elements: list[dict[str, Any]] = []
        self.text = ""

    async def read(self) -> list[dict[str, Any]]:
        snap = await bc_ok(self.client, "tab.snapshot", {"tabId": self.tab})
        self.elements, self.text = list(snap["elements"]), str(snap["text"])
        return self.elements

    async def find(self, role: str, name: str, nth: int = 0, fresh: bool = True) -> str:
        """The ref of the ``nth`` element of ``role`` whose label (or visible text) is ``name`` ("" = any),
        from a fresh read (or the last one: two refs of one snapshot)."""
        if fresh:
            await self.read()
        hits = [
            e
            for e in self.elements
            if e["role"] == role and (not name or name == (e.get("label") or e.get("text", "")).strip())
        ]
        assert len(hits) > nth, f"no {role} {name!r} (#{nth}) in {self.elements}"
        return str(hits[nth]["ref"])

    async def act(self, name: str, **arguments: Any) -> dict[str, Any]:
        envelope = await raw_ext(self.client, name, {"tabId": self.tab, **arguments})
        assert envelope["success"], (name, envelope)
        if name not in self.used:
            self.used.append(name)
        return dict(envelope["result"])

    async def sees(self, line: str) -> bool:
        await self.read()
        return line in self.text


Plan = Callable[[Agent], Awaitable[bool]]


async def jqui_autocomplete(agent: Agent) -> bool:
    """Keys make jQuery UI search (it listens to keydown); the menu is then walked with the arrow keys."""
    await agent.act("type_keys", ref=await agent.find("textbox", "Language"), text="Ja")
    if not await agent.sees("JavaScript"):
        return False
    await agent.act("press_key", key="ArrowDown")
    await agent.act("press_key", key="Enter")
    return await agent.sees("Chosen: Java")


async def jqui_datepicker(agent: Agent) -> bool:
    """The calendar opens when the field takes focus (a hand's click gives it); a day is a link."""
    await agent.act("click", ref=await agent.find("textbox", "Delivery date"))
    await agent.act("click", ref=await agent.find("link", "15"))
    return await agent.sees("Picked: 01/15/2026")


async def jqui_tabs(agent: Agent) -> bool:
    """The tab role is on the <li>, the handler on the link inside: a click at the tab's point reaches it."""
    await agent.act("click", ref=await agent.find("tab", "Specs"))
    return await agent.sees("Specs: 42 widgets per box")


async def jqui_sortable(agent: Agent) -> bool:
    """jQuery UI marks each item ui-sortable-handle (listed as a drag source); it sorts on mouse events."""
    apples = await agent.find("listitem", "Apples")
    cherries = await agent.find("listitem", "Cherries", fresh=False)
    await agent.act("drag", ref=apples, toRef=cherries)
    return await agent.sees("Order: Bananas, ")  # dropped on Cherries' middle: before or after it


async def select2(agent: Agent) -> bool:
    """Select2 opens on mousedown and chooses on mouseup."""
    # Select2's own <select> (aria-hidden, clipped to 1 px) is not listed (§9 v1.2): the combobox is Select2's
    await agent.act("click", ref=await agent.find("combobox", ""))
    await agent.act("click", ref=await agent.find("option", "Cherry"))
    return await agent.sees("Chose: cherry")


async def tom_select(agent: Agent) -> bool:
    """Tom Select filters on keys typed into its combobox; an option is chosen by a click."""
    await agent.act("type_keys", ref=await agent.find("combobox", "City"), text="Ber")
    await agent.act("click", ref=await agent.find("option", "Bern"))
    return await agent.sees("City: Bern")


async def choices(agent: Agent) -> bool:
    """Choices.js opens on a click of its box and chooses on mousedown."""
    await agent.act("click", ref=await agent.find("listbox", "Planet"))
    await agent.act("click", ref=await agent.find("option", "Mars", nth=1))
    return await agent.sees("Planet: mars")


async def flatpickr(agent: Agent) -> bool:
    """flatpickr (allowInput) opens on a click and takes a typed date on Enter; its day cells (spans with
    script listeners and a pointer cursor, no role) are listed by the pointer-clickable rule (issue 29) with
    their text, so the day is then clicked: the month shown is the current one."""
    await agent.act("click", ref=await agent.find("textbox", "Arrival"))
    await agent.act("type_keys", text="2026-03-14")
    await agent.act("press_key", key="Enter")
    if not await agent.sees("Arrival: 2026-03-14"):
        return False
    await agent.act("click", ref=await agent.find("textbox", "Arrival"))
    await asyncio.sleep(0.5)  # flatpickr animates the calendar in (a moving cell is refused, rightly)
    await agent.act("click", ref=await agent.find("", "20"))  # a day of March 2026, the month now shown
    return await agent.sees("Arrival: 2026-03-20")


async def sortablejs(agent: Agent) -> bool:
    """SortableJS sorts by HTML5 drag and drop from its handles (class "handle": listed as drag sources)."""
    first = await agent.find("", "", nth=0)  # a generic element is reported with role "" (§9)
    last = await agent.find("", "", nth=2, fresh=False)
    result = await agent.act("drag", ref=first, toRef=last)
    return result.get("via") == "html5" and await agent.sees("Order: Fry, Serve, Chop")


async def nouislider(agent: Agent) -> bool:
    """noUiSlider's handle (role slider) follows pointer events: 120 px of a 400 px track is 30."""
    await agent.act("drag", ref=await agent.find("slider", "Budget"), by={"x": 120, "y": 0})
    return await agent.sees("Budget: 50")


async def tippy(agent: Agent) -> bool:
    """Tippy shows its tooltip on mouseenter."""
    await agent.act("hover", ref=await agent.find("button", "Shipping info"))
    return await agent.sees("Ships within 2 days")


PLANS: dict[str, Plan] = {
    "jqui-autocomplete": jqui_autocomplete,
    "jqui-datepicker": jqui_datepicker,
    "jqui-tabs": jqui_tabs,
    "jqui-sortable": jqui_sortable,
    "select2": select2,
    "tom-select": tom_select,
    "choices": choices,
    "flatpickr": flatpickr,
    "sortablejs": sortablejs,
    "nouislider": nouislider,
    "tippy": tippy,
}


def test_every_widget_page_has_a_plan() -> None:
    assert sorted(PLANS) == sorted(p.stem for p in (ROOT / "fixtures" / "widgets").glob("*.html"))


def test_the_native_input_tools_are_learned_from_kelpie_extension_tools(host: Host) -> None:
    """What an agent reads before its first native action: the four schemas, mutating."""

    async def journey() -> list[dict[str, Any]]:
        async with connect(host, "auto") as client:
            listed = await client.call_tool("kelpie_extensions", {})
            assert set(NATIVE) <= set(listed.structured_content["result"]["extensions"]), listed
            tools = await client.call_tool("kelpie_extension_tools", {"names": list(NATIVE)})
            return list(tools.structured_content["result"]["tools"])

    tools = run(journey())
    assert [t["name"] for t in tools] == list(NATIVE)
    by_name = {t["name"]: t for t in tools}
    assert all(t["mutates"] is True for t in tools)
    assert by_name["click"]["inputSchema"]["properties"]["button"] == {
        "enum": ["left", "right", "middle"],
        "description": "default left",
    }
    assert by_name["drag"]["inputSchema"]["required"] == ["tabId", "ref"]
    assert by_name["type_keys"]["inputSchema"]["properties"]["text"]["maxLength"] == 2000


@pytest.mark.parametrize("page", sorted(PLANS))
def test_a_widget_written_by_others_is_driven_through_mcp(host: Host, page: str) -> None:
    async def journey() -> tuple[list[bool], list[str]]:
        outcomes: list[bool] = []
        used: list[str] = []
        async with connect(host, "auto") as client:
            for _ in range(RUNS):
                opened = await bc_ok(client, "tabs.open", {"url": host.site(f"{page}.html")})
                agent = Agent(client, str(opened["tabId"]))
                outcomes.append(await PLANS[page](agent))
                used = agent.used
                await bc(client, "tabs.close", {"tabId": agent.tab})
        return outcomes, used

    outcomes, used = run(journey())
    FIGURES[page] = {"extensions": used, "runs": len(outcomes), "succeeded": sum(outcomes)}
    assert all(outcomes), (page, outcomes, used)
    assert any(name in NATIVE for name in used), used
