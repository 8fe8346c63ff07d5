"""Helpers for driving the reference host with the official MCP Python SDK (PyPI ``mcp``) over Streamable
HTTP, in each way a client can connect (CONTRACT.md §7 v1.1): ``mode="legacy"`` (the initialize handshake),
the SDK's default ``mode="auto"`` (probes ``server/discover`` and must settle on the stateless revision) and
pinned to ``"2026-07-28"``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from host_testlib import Host
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODERN = "2026-07-28"


MODES = ["legacy", "auto", MODERN]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """How the SDK client connects: the handshake, its default probe, or pinned to the stateless revision."""
    return str(request.param)


@asynccontextmanager
async def connect(
    host: Host, mode: str, token: str | None = None, seen: list[httpx2.Response] | None = None
) -> AsyncIterator[Client]:
    """An SDK client in ``mode``; with ``seen``, every HTTP response it receives is kept (body read)."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token or host.token}"}, timeout=httpx2.Timeout(30.0, read=60.0)
    )
    if seen is not None:

        async def keep(response: httpx2.Response) -> None:
            await response.aread()
            seen.append(response)

        http.event_hooks["response"].append(keep)
    async with (
        http,
        Client(streamable_http_client(f"{host.url}/mcp", http_client=http), mode=mode) as client,
    ):
        if mode != "legacy":  # auto must settle on the stateless revision, not fall back to the handshake
            assert client.protocol_version == MODERN, (mode, client.protocol_version)
        yield client


async def bc(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``kelpie_browser_control`` and the envelope it carries (structuredContent == text block)."""
    result = await client.call_tool("kelpie_browser_control", {"method": method, "params": params})
    envelope = result.structured_content
    assert isinstance(envelope, dict), result
    texts = [block.text for block in result.content if block.type == "text"]
    assert json.loads(texts[0]) == envelope
    assert bool(result.is_error) == (not envelope["success"])
    return envelope


async def ok(client: Client, method: str, params: dict[str, Any], *, retries: int = 5) -> dict[str, Any]:
    """Call and require success. Like a careful agent, retry (bounded, every 0.2 s) exactly the refusals
    that are retryable and guarantee nothing happened: BUSY, or a read discarded as RENDERER_CHANGED
    because a navigation event landed while it ran. An unknown outcome (mayHaveCompleted) is never
    retried. Two clients sharing the direct lane on purpose wait longer (``retries``)."""
    envelope = await bc(client, method, params)
    for _ in range(retries):
        if envelope["success"] or not envelope["error"]["retryable"] or envelope["mayHaveCompleted"]:
            break
        await asyncio.sleep(0.2)
        envelope = await bc(client, method, params)
    assert envelope["success"], envelope
    return dict(envelope["result"])


async def ext(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool("kelpie_extension", {"name": name, "arguments": arguments})
    envelope = result.structured_content
    assert isinstance(envelope, dict), result
    return envelope


def element(snapshot: dict[str, Any], tag: str, label: str) -> dict[str, Any]:
    for item in snapshot["elements"]:
        if item.get("tag") == tag and label.lower() in str(item.get("label", "")).lower():
            return dict(item)
    raise AssertionError(f"no <{tag}> labelled {label!r} in {snapshot['elements']}")


async def open_tab(client: Client, host: Host, page: str, *, retries: int = 5) -> str:
    opened = await ok(client, "tabs.open", {"url": host.site(page)}, retries=retries)
    return str(opened["tabId"])


def run(coro: Any) -> Any:
    """Run a journey on its own thread: another suite's Playwright sync API may hold a running event
    loop on the main thread for the whole session, where asyncio.run() refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
