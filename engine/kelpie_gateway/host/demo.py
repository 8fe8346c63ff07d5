"""``kelpie-gateway demo``: the README's main job.

Starts the reference host on the built-in fixture site (``--approve-pairing auto``), pairs, and drives
it with the official MCP Python SDK over Streamable HTTP, printing each step (request, outcome, short
result): connect, tools/list, tabs.list, snapshot, click, type, navigate, stale-ref refusal and
screenshot. Exit status 0 when every step behaved as expected, 1 otherwise.

The client connects in the SDK's default mode (``auto``): it probes ``server/discover`` and, because the
host speaks the stateless revision (CONTRACT.md §7 v1.1), settles on ``2026-07-28`` with no handshake and
no session; the first line says which revision was negotiated and how (docs/mcp.md, "Eras").
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from kelpie_gateway.host.launch import HostError, HostProcess

JsonObject = dict[str, Any]


class JourneyError(AssertionError):
    """A journey step did not behave as the contract says."""


_PRINT_LOCK = threading.Lock()


def _line(text: str, file: Any = None) -> None:
    """Print one whole line: the host echo thread and the journey share stdout (and often one pipe)."""
    with _PRINT_LOCK:
        stream = file if file is not None else sys.stdout
        stream.write(text + "\n")
        stream.flush()


def _short(value: Any, limit: int = 110) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class McpJourney:
    """A connected MCP SDK client plus printing helpers (used by the demo; the tests use their own)."""

    def __init__(self, client: Any, out: Any = None) -> None:
        self.client = client
        self.out = out or sys.stdout

    def say(self, text: str) -> None:
        _line(text, self.out)

    async def call(self, method: str, params: JsonObject, *, expect: str | None = "ok") -> JsonObject:
        """``tools/call kelpie_browser_control {method, params}``; returns the envelope."""
        self.say(f"  → {method} {_short(params, 90)}")
        envelope: JsonObject = {}
        for attempt in range(6):
            result = await self.client.call_tool(
                "kelpie_browser_control", {"method": method, "params": params}
            )
            content = result.structured_content
            if not isinstance(content, dict):
                raise JourneyError(f"{method}: no structuredContent envelope in {result}")
            envelope = content
            error = envelope.get("error") or {}
            # Retry only what the contract says is safe: retryable refusals where nothing happened.
            if envelope.get("success") or not error.get("retryable") or envelope.get("mayHaveCompleted"):
                break
            if attempt == 5 or expect != "ok":
                break
            self.say(f"  ← {error.get('code')} (retryable, nothing happened): trying again")
            await asyncio.sleep(0.2)
        if envelope.get("success"):
            shown = dict(envelope["result"])
            if "elements" in shown:
                self.say(
                    f"  ← ok snapshot {shown.get('snapshot')} of {shown.get('title')!r}: "
                    f"{len(shown['elements'])} elements, {len(shown.get('text', ''))} characters of text"
                )
            else:
                self.say(f"  ← ok {_short(shown)}")
        else:
            error = envelope.get("error", {})
            self.say(
                f"  ← refused {error.get('code')} (mayHaveCompleted: {str(envelope.get('mayHaveCompleted')).lower()})"
                f": {error.get('message')}"
            )
        if expect == "ok" and not envelope.get("success"):
            raise JourneyError(f"{method} failed: {envelope.get('error')}")
        if expect not in (None, "ok") and (
            envelope.get("success") or envelope["error"]["code"] not in expect
        ):
            raise JourneyError(f"{method}: expected refusal {expect}, got {_short(envelope, 300)}")
        return envelope


def _element(snapshot: JsonObject, *, tag: str | None = None, label: str | None = None) -> JsonObject:
    for element in snapshot["result"]["elements"]:
        if tag is not None and element.get("tag") != tag:
            continue
        if label is not None and label.lower() not in str(element.get("label", "")).lower():
            continue
        return dict(element)
    raise JourneyError(f"no element tag={tag} label={label!r} in the snapshot")


async def run_journey(url: str, token: str, *, out: Any = None) -> None:
    """The demo journey against a host at ``url`` with a paired ``token``; raises JourneyError."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out = out or sys.stdout
    _line("MCP client: official Python SDK over Streamable HTTP", out)
    # Public API only: the SDK takes any httpx2.AsyncClient; ours carries the bearer.
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=60.0)
    )
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        j = McpJourney(client, out)
        info = client.server_info
        server = f"{info.name} {info.version}" if info is not None else "?"
        j.say(
            f"1. connect (the SDK picks the newest MCP revision the host serves) → {negotiated(client)}, "
            f"server {server}"
        )
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        j.say(f"2. tools/list → {', '.join(names)}")
        if "kelpie_browser_control" not in names:
            raise JourneyError("kelpie_browser_control is not listed")
        j.say(f"   {TOOL_NOTE}")

        j.say("3. tabs.list")
        tabs = await j.call("tabs.list", {})
        tab = next(t for t in tabs["result"]["tabs"] if t["active"])["tabId"]

        j.say("4. tab.snapshot of the index page")
        index = await j.call("tab.snapshot", {"tabId": tab})
        button = _element(index, tag="button", label="Increment")

        j.say(f"5. tab.click on the Increment button ({button['ref']})")
        await j.call("tab.click", {"tabId": tab, "ref": button["ref"]})
        after = await j.call("tab.snapshot", {"tabId": tab})
        if "Clicked 1 times" not in after["result"]["text"]:
            raise JourneyError("the click had no visible effect")
        j.say("   page effect observed: 'Clicked 1 times'")

        form_url = url_of(after["result"]["url"], "form.html")
        j.say("6. tab.navigate to the form page")
        await j.call("tab.navigate", {"tabId": tab, "url": form_url})

        j.say("7. tab.type into the name field")
        form = await j.call("tab.snapshot", {"tabId": tab})
        field = _element(form, tag="input", label="name")
        secret = "Hello from Kelpie"
        await j.call("tab.type", {"tabId": tab, "ref": field["ref"], "text": secret})
        seen = await j.call("tab.snapshot", {"tabId": tab})
        if f"Name has {len(secret)} characters" not in seen["result"]["text"]:
            raise JourneyError("the page did not see the typed text")
        if secret in json.dumps(seen):
            raise JourneyError("the typed value leaked into the snapshot")
        j.say(f"   the page counted {len(secret)} characters; the value itself is not in the snapshot")

        j.say("8. stale ref: click the index page's button ref after navigating away")
        await j.call(
            "tab.click",
            {"tabId": tab, "ref": button["ref"]},
            expect="STALE_SNAPSHOT REFS_INVALIDATED TAB_STALE",
        )

        j.say("9. tab.screenshot")
        j.say(f"  → tab.screenshot {_short({'tabId': tab}, 90)}")
        shot = await client.call_tool(
            "kelpie_browser_control", {"method": "tab.screenshot", "params": {"tabId": tab}}
        )
        images = [block for block in shot.content if block.type == "image"]
        if len(images) != 1 or images[0].mime_type != "image/png":
            raise JourneyError(f"expected one PNG image block, got {[b.type for b in shot.content]}")
        result = shot.structured_content["result"]
        j.say(
            f"  ← ok one image block: {result.get('width')}x{result.get('height')} PNG, {result.get('imageBytes')} bytes"
        )


TOOL_NOTE = (
    "each step below is one tools/call of kelpie_browser_control {method, params}: "
    "a method such as tabs.list is not a tool of its own"
)


def next_steps(executable: str | None = None) -> list[str]:
    """What the demo prints last: how to run the host for a real client, with this checkout's own
    ``kelpie-gateway`` (after ``tools/dev demo`` it is not on ``PATH``)."""
    if executable is None:
        beside = Path(sys.executable).parent / "kelpie-gateway"
        executable = str(beside) if beside.exists() else "kelpie-gateway"
    return [
        "next: an MCP client over stdio (e.g. Claude Code):",
        f"  claude mcp add kelpie -- {executable} mcp",
        f"  or a host over HTTP with pairing: {executable} serve (README 'Using a running host')",
    ]


def negotiated(client: Any) -> str:
    """How ``client`` (an ``mcp.Client`` that has connected) speaks to the host: the protocol revision and
    its era — stateless (``server/discover`` answered, no handshake, no session) or handshake
    (``initialize``)."""
    version = client.protocol_version
    if client.session.discover_result is not None:
        return f"protocol {version} (stateless: server/discover, no initialize, no session)"
    return f"protocol {version} (handshake: initialize)"


def url_of(base: str, page: str) -> str:
    """``page`` resolved against ``base`` (the fixture site's URL)."""
    from urllib.parse import urljoin

    return urljoin(base, page)


def run_demo(*, via_abi: bool = False, browser_executable: str | None = None) -> int:
    """Run the host and the journey; prints each step. Returns the exit status."""
    # The demo's own pairing is throwaway: kept in memory, never added to the operator's pairing file.
    args = ["--approve-pairing", "auto", "--pairings", "memory"]
    if via_abi:
        args.append("--via-abi")
    if browser_executable:
        args += ["--browser-executable", browser_executable]
    _line("Kelpie demo: starting the reference host on the built-in fixture site …")
    host = HostProcess(args, echo=lambda line: _line(f"    host │ {line}"))
    try:
        url = host.start()
    except HostError as exc:
        _line(f"demo failed: {exc}", sys.stderr)
        return 1
    try:
        _line(f"pairing with {url}/v1/pair (auto-approved for the demo) …")
        token = host.pair("kelpie-demo")
        _line("paired: received a bearer token (not shown)")
        asyncio.run(run_journey(url, token))
    except JourneyError as exc:
        _line(f"demo failed: {exc}", sys.stderr)
        return 1
    except Exception as exc:
        _line(f"demo failed: {type(exc).__name__}: {exc}", sys.stderr)
        return 1
    finally:
        host.stop()
    _line("demo finished: every step behaved as the contract says")
    for line in next_steps():
        _line(line)
    return 0
