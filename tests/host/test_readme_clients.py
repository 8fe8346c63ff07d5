"""The README's "Use it from your MCP client" snippets, launched exactly as written (issue 14).

Each snippet is parsed the way its client reads it (Claude Code's ``claude mcp add … -- COMMAND``, the
``mcpServers`` JSON of Cursor/Windsurf, VS Code's ``servers`` JSON, Codex's TOML) and its command line is
launched by the official Python SDK stdio client, which then lists the tabs of real Chromium. ``PATH``
gets ``.venv/bin`` in front, as an installed ``kelpie-gateway`` would be. The HTTP snippets are pointed at
a host the test runs (its port and a token from pairing replace the README's 7788 and token).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from host_testlib import Host
from kelpie_gateway.host.launch import HostProcess
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from stdio_testlib import ROOT, VENV_BIN, run_async

pytestmark = pytest.mark.timeout(240)

SECTION = "## Use it from your MCP client"


@dataclass(frozen=True)
class Snippet:
    client: str
    lang: str
    text: str


def readme_snippets() -> list[Snippet]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert SECTION in readme, "the README lost its MCP client section"
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    snippets, client = [], ""
    for match in re.finditer(r"^(\*\*[^\n]*)$|^```(\w+)\n(.*?)^```$", section, re.M | re.S):
        if match.group(1):
            client = match.group(1).replace("**", "")
        else:
            snippets.append(Snippet(client, match.group(2), match.group(3)))
    return snippets


@dataclass(frozen=True)
class Launch:
    command: str
    args: list[str]


@dataclass(frozen=True)
class Remote:
    url: str
    headers: dict[str, str]


def configured(snippet: Snippet) -> list[Launch | Remote]:
    """What the client would run or connect to, read from the snippet as that client reads it."""
    found: list[Launch | Remote] = []
    if snippet.lang == "sh":
        for line in snippet.text.splitlines():
            if not line.startswith("claude mcp add"):
                continue
            words = shlex.split(line.replace("$(cat ~/.config/kelpie-gateway/token)", "<token>"))
            if "--" in words:  # claude mcp add NAME -- COMMAND ARGS…
                command = words[words.index("--") + 1 :]
                found.append(Launch(command[0], command[1:]))
            else:  # claude mcp add --transport http NAME URL --header "K: V"
                assert words[words.index("--transport") + 1] == "http", line
                header = words[words.index("--header") + 1]
                key, _, value = header.partition(": ")
                url = next(w for w in words if w.startswith("http://"))
                found.append(Remote(url, {key: value}))
    elif snippet.lang == "json":
        data = json.loads(snippet.text)
        servers = data.get("mcpServers") or data.get("servers")
        for entry in servers.values():
            if "command" in entry:
                assert entry.get("type", "stdio") == "stdio"
                found.append(Launch(entry["command"], list(entry.get("args", []))))
            else:
                found.append(Remote(entry["url"], dict(entry.get("headers", {}))))
    elif snippet.lang == "toml":
        for entry in tomllib.loads(snippet.text)["mcp_servers"].values():
            found.append(Launch(entry["command"], list(entry.get("args", []))))
    return found


SNIPPETS = readme_snippets()
STDIO = [(s.client, c) for s in SNIPPETS for c in configured(s) if isinstance(c, Launch)]
REMOTE = [(s.client, c) for s in SNIPPETS for c in configured(s) if isinstance(c, Remote)]


def test_the_readme_has_a_snippet_for_every_client() -> None:
    clients = " ".join(client for client, _ in STDIO)
    for name in ("Claude Code", "Cursor", "Windsurf", "VS Code", "Codex"):
        assert name in clients, f"no stdio snippet for {name}"
    assert len(REMOTE) >= 2 and all("Bearer" in " ".join(r.headers.values()) for _, r in REMOTE)


async def _tabs(client: Client) -> list[dict[str, Any]]:
    names = [tool.name for tool in (await client.list_tools()).tools]
    assert "kelpie_browser_control" in names
    for _ in range(6):
        result = await client.call_tool("kelpie_browser_control", {"method": "tabs.list", "params": {}})
        envelope = result.structured_content
        assert isinstance(envelope, dict)
        if envelope["success"] or not envelope["error"].get("retryable"):
            break
        await asyncio.sleep(0.2)
    assert envelope["success"], envelope
    return list(envelope["result"]["tabs"])


@pytest.mark.parametrize(
    ("client", "launch"), STDIO, ids=[re.sub(r"\W+", "-", c.split(" (")[0]) for c, _ in STDIO]
)
def test_readme_stdio_snippet_launches_a_working_server(client: str, launch: Launch) -> None:
    path = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"

    async def run() -> list[dict[str, Any]]:
        server = StdioServerParameters(command=launch.command, args=launch.args, env={"PATH": path})
        async with Client(server) as mcp_client:  # mode "auto", as a current client connects
            return await _tabs(mcp_client)

    tabs = run_async(run())
    assert [t["title"] for t in tabs if t["active"]] == ["Kelpie fixture site"]


@pytest.fixture(scope="module")
def http_host() -> Any:
    process = HostProcess(["--approve-pairing", "auto", "--pairings", "memory"])
    process.start()
    try:
        yield Host(process, process.pair("readme"), "python")
    finally:
        process.stop()


@pytest.mark.parametrize(("client", "remote"), REMOTE, ids=[f"http-{i}" for i in range(len(REMOTE))])
def test_readme_http_snippet_reaches_a_paired_host(client: str, remote: Remote, http_host: Host) -> None:
    assert remote.url == "http://127.0.0.1:7788/mcp"  # the documented default port
    url = remote.url.replace(":7788", f":{http_host.port}")
    headers = {k: v.replace("<token>", http_host.token) for k, v in remote.headers.items()}
    assert headers["Authorization"] == f"Bearer {http_host.token}"

    async def run() -> list[dict[str, Any]]:
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
        async with http, Client(streamable_http_client(url, http_client=http)) as mcp_client:
            return await _tabs(mcp_client)

    tabs = run_async(run())
    assert any(t["title"] == "Kelpie fixture site" for t in tabs)
