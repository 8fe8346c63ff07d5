#!/usr/bin/env python3
"""The product and two peer MCP servers side by side, through the same Python MCP SDK client (issue 16).

Usage::

    tools/bench_peers [--reps 3] [--only product,playwright,devtools] [--skip-100k] [--pages small,10k,100k]
                      [--timeout 120] [--small-timeout 60] [--json FILE]

Targets (``--only``; ``product`` means the four product rows):

* ``product-python``: the reference host ``kelpie-gateway serve`` (Python API), MCP over Streamable HTTP
  with a paired bearer; ``product-abi``: the same host with ``--via-abi`` (every transaction through the
  C library); ``product-stdio``: ``kelpie-gateway mcp`` (Python API) over stdio, the peers' transport;
  ``product-direct``: ``serve --direct-cdp`` (fixed scripts over the host's own CDP connection, issue 35).
  All use the tool ``kelpie_browser_control`` (``tab.navigate``, ``tab.snapshot``, ``tab.click``,
  ``tab.type``; refs from the snapshot's ``elements``).
* ``playwright``: Playwright MCP (npm ``@playwright/mcp``, pinned below) over stdio: ``browser_navigate``,
  ``browser_snapshot``, ``browser_click``/``browser_type`` with ``target`` = the snapshot's ``[ref=…]``.
* ``devtools``: Chrome DevTools MCP (npm ``chrome-devtools-mcp``, pinned below) over stdio:
  ``navigate_page``, ``take_snapshot``, ``click``/``fill`` with ``uid`` = the snapshot's ``uid=…``.

Every target runs its own headless Debian Chromium (/usr/bin/chromium) with the project's flags
(``CHROMIUM_FLAGS``), an isolated temporary profile and a 1280x800 viewport; peers keep their defaults
otherwise (Playwright MCP's action answers include its page snapshot, as its users get them). The peers are
installed with npm into ``build/peers`` at the pinned versions when missing.

One loopback HTTP server serves the page set: ``small.html`` (11 controls: 3 links, 7 form controls, one
button; the page says how often the button was clicked and how many characters the name field holds, so a
click and a type are verified without reading a value) and ``big<N>.html`` from
``bench_reader.big_page(N)`` for N = 10,000 and 100,000 (a button at the very end).

Per repetition, target by target (the order rotates each repetition so load hits all alike), all targets
running at once: navigate to the small page; its first snapshot; a repeated snapshot; click the button by
ref; (untimed snapshot: the click took effect, fresh refs); a native click of the same button (the
product's ``click`` extension: hit test, then trusted CDP pointer events; a peer's own click, native
already), verified the same way; type into the name field by ref; (untimed
snapshot: the type took effect). Then, per big page: navigate (timed, shown for information), snapshot
(timed; characters returned = the text blocks of the tool result, what a model reads), and whether the end
button is reachable: for the product in the snapshot's elements or by following ``next`` (continuation
pages, up to ``--max-pages``; "p.K" says on which page), for a peer whether its ref/uid appears.

A call that exceeds its timeout is recorded as ``timeout`` and that target is restarted; a target that
timed out on a measurement is not asked it again in later repetitions (its cell says so). A tool error is
recorded as ``fails``. Nothing here raises for a slow or failing peer.

Prints one Markdown table: medians per target, ratios product/peer (Python API / C ABI), the issue's goal
and whether it is met. A benchmark, not a test: machine load changes absolute figures; compare ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tools"))

import httpx2  # noqa: E402
from bench_reader import big_page  # noqa: E402
from kelpie_gateway.host.browser import CHROMIUM_FLAGS, DEFAULT_CHROMIUM  # noqa: E402
from kelpie_gateway.host.launch import HostProcess  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import REQUEST_TIMEOUT  # noqa: E402

PEER_DIR = ROOT / "build" / "peers"
PEERS = {  # target name: (npm package, pinned version, bin)
    "playwright": ("@playwright/mcp", "0.0.83", "playwright-mcp"),
    "devtools": ("chrome-devtools-mcp", "1.11.0", "chrome-devtools-mcp"),
}
TARGETS = ("product-python", "product-abi", "product-stdio", "product-direct", "playwright", "devtools")
LABELS = {
    "product-python": "product (Python API)",
    "product-abi": "product (--via-abi)",
    "product-stdio": "product (stdio)",
    "product-direct": "product (--direct-cdp)",
    "playwright": f"Playwright MCP {PEERS['playwright'][1]}",
    "devtools": f"DevTools MCP {PEERS['devtools'][1]}",
}
BIG = {"10k": 10_000, "100k": 100_000}
END_BUTTON = "The one button at the end"
VIEWPORT = (1280, 800)
BOUND_CHARS = 64_000  # "bounded": the product's answer stays under this whatever the page size

SMALL_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Contact</title></head><body>
<nav><a href="#home">Home</a> <a href="#products">Products</a> <a href="#about">About</a></nav>
<h1>Contact us</h1>
<p>Write to us and we answer within two working days.</p>
<form onsubmit="return false">
  <p><label>Name <input id="name" name="name"></label></p>
  <p><label>Email <input type="email" name="email"></label></p>
  <p><label>Topic <select name="topic"><option>Sales</option><option>Support</option></select></label></p>
  <p><label>Message <textarea name="message"></textarea></label></p>
  <p><label><input type="checkbox" name="copy"> Send me a copy</label></p>
  <p><label><input type="radio" name="pref" value="mail"> By mail</label>
     <label><input type="radio" name="pref" value="phone"> By phone</label></p>
  <p><button type="button" id="save">Save draft</button></p>
</form>
<p id="status">Draft saved 0 times</p>
<p id="typed">Name holds 0 characters</p>
<p id="hovered">About hovered 0 times</p>
<script>
  let saved = 0;
  document.getElementById('save').addEventListener('click', () => {
    document.getElementById('status').textContent = 'Draft saved ' + (++saved) + ' times';
  });
  let hovered = 0;
  document.querySelector('a[href="#about"]').addEventListener('mouseenter', () => {
    document.getElementById('hovered').textContent = 'About hovered ' + (++hovered) + ' times';
  });
  document.getElementById('name').addEventListener('input', (e) => {
    document.getElementById('typed').textContent = 'Name holds ' + e.target.value.length + ' characters';
  });
</script></body></html>"""
TYPED = "Ada Lovelace"


# ---------------------------------------------------------------------------------------------- pages


class _Pages(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # no 404 noise in the peers' console reports
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_pages(directory: Path, pages: list[str]) -> ThreadingHTTPServer:
    """Write the page set into ``directory`` and serve it on a loopback port (daemon thread)."""
    (directory / "small.html").write_text(SMALL_PAGE, encoding="utf-8")
    for name in pages:
        if name in BIG:
            (directory / f"big{name}.html").write_text(big_page(BIG[name]), encoding="utf-8")
    links = "".join(f'<li><a href="{p.name}">{p.name}</a></li>' for p in sorted(directory.glob("*.html")))
    (directory / "index.html").write_text(
        f"<!doctype html><title>pages</title><ul>{links}</ul>", encoding="utf-8"
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Pages, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---------------------------------------------------------------------------------------------- peers


def peer_bin(name: str) -> Path:
    return PEER_DIR / "node_modules" / ".bin" / PEERS[name][2]


def installed_version(name: str) -> str | None:
    manifest = PEER_DIR / "node_modules" / PEERS[name][0] / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def install_peers(names: list[str]) -> None:
    """``npm install`` the pinned peers into build/peers, skipping those already there at their pin."""
    missing = [n for n in names if installed_version(n) != PEERS[n][1] or not peer_bin(n).exists()]
    if not missing:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("bench_peers: npm is missing (tools/dev setup installs Node.js and npm)")
    PEER_DIR.mkdir(parents=True, exist_ok=True)
    manifest = PEER_DIR / "package.json"
    if not manifest.exists():
        manifest.write_text('{"private": true, "description": "peer MCP servers for tools/bench_peers"}\n')
    specs = [f"{PEERS[n][0]}@{PEERS[n][1]}" for n in missing]
    print(f"bench_peers: npm install {' '.join(specs)} into {PEER_DIR}", file=sys.stderr)
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error", *specs],
        cwd=PEER_DIR,
        check=True,
        stdout=sys.stderr,
    )
    for n in missing:
        if installed_version(n) != PEERS[n][1]:
            raise SystemExit(f"bench_peers: {PEERS[n][0]} is not at {PEERS[n][1]} after npm install")


# ---------------------------------------------------------------------------------------------- targets


class CallTimeout(Exception):
    """A call ran past its timeout (the target is restarted)."""


class CallFailed(Exception):
    """A tool error or an unusable answer; the message says which."""


@dataclass
class Snap:
    text: str  # every text block of the tool result, joined: what a model reads
    result: dict[str, Any] = field(default_factory=dict)  # the product's envelope result

    @property
    def chars(self) -> int:
        return len(self.text)


def _texts(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


class Target:
    """One MCP server and one SDK client on it; subclasses map the four operations onto its tools.

    The client lives in a worker task of its own that runs the calls one by one: a timed-out or broken
    client (and any cancel scope the SDK leaves behind) dies with its worker, never with the run."""

    name = ""

    def __init__(self, work: Path, executable: str) -> None:
        self.work = work
        self.executable = executable
        self.client: Client | None = None
        self.warm_url = ""
        self._jobs: asyncio.Queue[tuple[Callable[[], Any], asyncio.Future[Any]] | None] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    async def open(self, stack: AsyncExitStack) -> Client:
        """Start the server and return a connected client (its contexts entered on ``stack``)."""
        raise NotImplementedError

    async def ready(self) -> None:
        """After connecting: what the target needs before the first measurement (a tab, a page id)."""

    async def after_close(self) -> None:
        """After the worker ended: stop what ``open`` started outside the stack."""

    async def recover(self) -> None:
        """After a failed call, untimed: bring the target back to a usable state."""

    async def start(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._jobs = asyncio.Queue()
        self._worker = asyncio.create_task(self._serve(ready))
        await asyncio.wait({ready, self._worker}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            raise CallFailed(f"{self.name} did not start: {self._worker_error()}")
        ready.result()
        await self.ready()

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                self.client = await self.open(stack)
                ready.set_result(None)
                while (job := await self._jobs.get()) is not None:
                    make, answer = job
                    try:
                        value = await make()
                    except Exception as exc:
                        if not answer.done():
                            answer.set_exception(exc)
                    else:
                        if not answer.done():
                            answer.set_result(value)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise
        finally:
            self.client = None

    def _worker_error(self) -> str:
        worker = self._worker
        if worker is None or not worker.done():
            return "still running"
        if worker.cancelled():
            return "cancelled"
        exc = worker.exception()
        return f"{type(exc).__name__}: {exc}"[:300] if exc else "ended"

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._jobs.put_nowait(None)
            done, _ = await asyncio.wait({worker}, timeout=60)
            if not done:
                worker.cancel()
                await asyncio.wait({worker}, timeout=30)
            if worker.done() and not worker.cancelled():
                worker.exception()  # retrieved: a broken client is expected here
        await self.after_close()

    async def launch(self, warm_url: str) -> None:
        """Start, then one untimed navigation: a server that launches its browser lazily (Playwright MCP
        does, on the first tool call) pays for it here, not in the first measurement."""
        self.warm_url = warm_url
        await self.start()
        await self.navigate(warm_url, 120)

    async def restart(self) -> None:
        await self.close()
        await self.launch(self.warm_url)

    async def raw_call(self, tool: str, args: dict[str, Any], timeout: float) -> Any:
        """``tools/call`` in the worker, with the SDK's own per-request timeout (it sends the courtesy
        cancel and raises cleanly); a worker that does not answer within a minute more counts as timed out."""
        worker, client = self._worker, self.client
        if worker is None or worker.done() or client is None:
            raise CallFailed(f"{tool}: the client is gone ({self._worker_error()})")
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait((lambda: client.call_tool(tool, args, read_timeout_seconds=timeout), answer))
        what = args.get("method", tool)
        await asyncio.wait({answer, worker}, timeout=timeout + 60, return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():
            answer.cancel()
            if worker.done():
                raise CallFailed(f"{what}: the client broke ({self._worker_error()})")
            raise CallTimeout(f"{what} after {timeout:.0f} s (no answer)")
        try:
            return answer.result()
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise CallTimeout(f"{what} after {timeout:.0f} s") from exc
            raise CallFailed(f"{tool}: MCP error {exc.code}: {exc}"[:300]) from exc
        except Exception as exc:  # a transport failure
            raise CallFailed(f"{tool}: {type(exc).__name__}: {exc}"[:300]) from exc

    async def call(self, tool: str, args: dict[str, Any], timeout: float) -> Any:
        result = await self.raw_call(tool, args, timeout)
        if result.is_error:
            raise CallFailed(f"{tool}: {_texts(result)[:300]}")
        return result

    async def navigate(self, url: str, timeout: float) -> None:
        raise NotImplementedError

    async def snapshot(self, timeout: float) -> Snap:
        raise NotImplementedError

    def ref(self, snap: Snap, role: str, label: str) -> str | None:
        raise NotImplementedError

    async def click(self, ref: str, label: str, timeout: float) -> None:
        raise NotImplementedError

    async def type(self, ref: str, label: str, text: str, timeout: float) -> None:
        raise NotImplementedError

    async def native_click(self, ref: str, label: str, timeout: float) -> None:
        """A click of trusted pointer events: the peers' own click is one already."""
        await self.click(ref, label, timeout)

    async def hover(self, ref: str, label: str, timeout: float) -> None:
        """Move the pointer over the element (trusted pointer events): each target's own hover tool."""
        raise NotImplementedError

    async def reach_end(self, snap: Snap, timeout: float, max_pages: int) -> str:
        """Whether the end button can be acted on: "yes", "yes, p.K" (after K-1 continuations) or "no"."""
        return "yes" if self.ref(snap, "button", END_BUTTON) else "no"


class Product(Target):
    """``kelpie-gateway serve`` (Python API, or ``--via-abi``) over MCP Streamable HTTP."""

    def __init__(self, work: Path, executable: str, via_abi: bool, direct: bool = False) -> None:
        super().__init__(work, executable)
        self.via_abi = via_abi
        self.direct = direct
        self.name = "product-abi" if via_abi else "product-direct" if direct else "product-python"
        self.process: HostProcess | None = None
        self.tab = ""

    async def open(self, stack: AsyncExitStack) -> Client:
        state = self.work / f"{self.name}-state"
        state.mkdir(exist_ok=True, mode=0o700)
        args = ["--approve-pairing", "auto", "--pairings", "memory", "--browser-executable", self.executable]
        args += ["--viewport", f"{VIEWPORT[0]}x{VIEWPORT[1]}", "--site", str(self.work / "pages")]
        if self.via_abi:
            args.append("--via-abi")
        if self.direct:
            args.append("--direct-cdp")
        self.process = HostProcess(args, env={"KELPIE_GATEWAY_STATE_DIR": str(state)})
        await asyncio.to_thread(self.process.start)
        token = await asyncio.to_thread(self.process.pair, "bench-peers")
        bearer = {"Authorization": f"Bearer {token}"}
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=bearer, timeout=httpx2.Timeout(30.0, read=600.0))
        )
        transport = streamable_http_client(f"{self.process.url}/mcp", http_client=http)
        return await stack.enter_async_context(Client(transport, read_timeout_seconds=120))

    async def ready(self) -> None:
        """The active tab (or any), else a new one."""
        tabs = (await self.control("tabs.list", {}, 60))["tabs"]
        if tabs:
            self.tab = str(next((t for t in tabs if t.get("active")), tabs[0])["tabId"])
        else:
            self.tab = str((await self.control("tabs.open", {"url": "about:blank"}, 60))["tabId"])

    async def after_close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            await asyncio.to_thread(process.stop)
            with open(self.work / f"{self.name}-host.log", "a", encoding="utf-8") as log:
                log.write("\n".join(process.lines) + "\n")

    async def control(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """``kelpie_browser_control`` ``method``; its result (the envelope's)."""
        return (await self._bc(method, params, timeout)).result

    async def _bc(self, method: str, params: dict[str, Any], timeout: float) -> Snap:
        """One ``kelpie_browser_control`` call; like a careful agent, retries every 0.2 s (within ``timeout``,
        timed with the call) exactly the refusals that are retryable and guarantee nothing happened (BUSY,
        a read discarded because a navigation landed). Returns the text a model reads and the result."""
        deadline = time.monotonic() + timeout
        error: dict[str, Any] = {"code": "none"}
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CallTimeout(f"{method}: still refused ({error['code']}) after {timeout:.0f} s")
            args = {"method": method, "params": params}
            result = await self.raw_call("kelpie_browser_control", args, left)  # errors: envelopes
            envelope = result.structured_content
            if not isinstance(envelope, dict):
                raise CallFailed(f"{method}: no envelope in {_texts(result)[:200]!r}")
            if envelope["success"]:
                return Snap(_texts(result), dict(envelope["result"]))
            error = envelope["error"]
            if not error.get("retryable") or envelope.get("mayHaveCompleted"):
                break
            await asyncio.sleep(0.2)
        raise CallFailed(f"{method}: {error['code']}: {error.get('message', '')}"[:300])

    @staticmethod
    def _ms(timeout: float) -> int:
        return int(min(30_000, max(1_000, timeout * 1000)))

    async def navigate(self, url: str, timeout: float) -> None:
        params = {"tabId": self.tab, "url": url, "timeoutMs": self._ms(timeout)}
        await self.control("tab.navigate", params, timeout)

    async def recover(self) -> None:
        # after a failure (e.g. a TIMEOUT whose overdue script made the host close the page): tabs.list
        # settles RECONCILE_REQUIRED and names the tabs that exist; take one (or open one), as an agent would
        await self.ready()

    async def snapshot(self, timeout: float, cursor: str | None = None) -> Snap:
        params: dict[str, Any] = {"tabId": self.tab, "timeoutMs": self._ms(timeout)}
        if cursor is not None:
            params["cursor"] = cursor
        return await self._bc("tab.snapshot", params, timeout)

    def ref(self, snap: Snap, role: str, label: str) -> str | None:
        for element in snap.result.get("elements", []):
            if element.get("role") == role and str(element.get("label", "")).strip() == label:
                return str(element["ref"])
        return None

    async def click(self, ref: str, label: str, timeout: float) -> None:
        await self.control(
            "tab.click", {"tabId": self.tab, "ref": ref, "timeoutMs": self._ms(timeout)}, timeout
        )

    async def type(self, ref: str, label: str, text: str, timeout: float) -> None:
        params = {"tabId": self.tab, "ref": ref, "text": text, "timeoutMs": self._ms(timeout)}
        await self.control("tab.type", params, timeout)

    async def native_click(self, ref: str, label: str, timeout: float) -> None:
        """The native-input extension ``click`` (hit-tested, trusted CDP pointer events)."""
        await self.extension("click", {"tabId": self.tab, "ref": ref}, timeout)

    async def hover(self, ref: str, label: str, timeout: float) -> None:
        """The native-input extension ``hover`` (hit-tested, trusted CDP pointer events)."""
        await self.extension("hover", {"tabId": self.tab, "ref": ref}, timeout)

    async def extension(self, name: str, arguments: dict[str, Any], timeout: float) -> None:
        """One ``kelpie_extension`` call; a refusal is ``CallFailed``."""
        result = await self.raw_call("kelpie_extension", {"name": name, "arguments": arguments}, timeout)
        envelope = result.structured_content
        if not isinstance(envelope, dict) or not envelope.get("success"):
            raise CallFailed(f"{name}: {_texts(result)[:300]}")

    async def reach_end(self, snap: Snap, timeout: float, max_pages: int) -> str:
        page = 1
        while not self.ref(snap, "button", END_BUTTON):
            cursor = snap.result.get("next")
            if not cursor or page >= max_pages:
                return "no"
            snap = await self.snapshot(timeout, cursor=str(cursor))
            page += 1
        return "yes" if page == 1 else f"yes, p.{page}"


class ProductStdio(Product):
    """``kelpie-gateway mcp`` (Python API) over stdio: the peers' transport, so the MCP transport's own cost
    (HTTP requests, bearer check, SSE framing) is compared like with like. No pairing: the client that
    launched the process owns it."""

    def __init__(self, work: Path, executable: str, via_abi: bool) -> None:
        super().__init__(work, executable, via_abi)
        self.name = "product-stdio"

    async def open(self, stack: AsyncExitStack) -> Client:
        cwd = self.work / self.name
        cwd.mkdir(exist_ok=True, mode=0o700)
        args = ["-m", "kelpie_gateway", "mcp", "--browser-executable", self.executable]
        args += ["--viewport", f"{VIEWPORT[0]}x{VIEWPORT[1]}", "--site", str(self.work / "pages")]
        env = {**os.environ, "KELPIE_GATEWAY_STATE_DIR": str(cwd)}
        params = StdioServerParameters(command=sys.executable, args=args, cwd=cwd, env=env)
        errlog = stack.enter_context(open(cwd / "stderr.log", "a", encoding="utf-8"))  # noqa: SIM115
        return await stack.enter_async_context(
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120)
        )

    async def after_close(self) -> None:
        """Nothing outside the stack: the SDK's stdio client ends the process."""


class Peer(Target):
    """A peer over stdio, its stderr into a log file in the work directory."""

    def args(self) -> list[str]:
        raise NotImplementedError

    async def open(self, stack: AsyncExitStack) -> Client:
        cwd = self.work / self.name
        cwd.mkdir(exist_ok=True)
        # CI=1: DevTools MCP sends no usage statistics
        params = StdioServerParameters(
            command=str(peer_bin(self.name)), args=self.args(), cwd=cwd, env={"CI": "1"}
        )
        errlog = stack.enter_context(open(cwd / "stderr.log", "a", encoding="utf-8"))  # noqa: SIM115
        return await stack.enter_async_context(
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120)
        )


class Playwright(Peer):
    name = "playwright"

    def args(self) -> list[str]:
        config = self.work / self.name / "config.json"
        config.write_text(json.dumps({"browser": {"launchOptions": {"args": list(CHROMIUM_FLAGS)}}}))
        return [
            "--config",
            str(config),
            "--executable-path",
            self.executable,
            "--headless",
            "--isolated",
            "--no-sandbox",
            "--viewport-size",
            f"{VIEWPORT[0]}x{VIEWPORT[1]}",
            "--output-dir",
            str(self.work / self.name / "output"),
        ]

    async def navigate(self, url: str, timeout: float) -> None:
        await self.call("browser_navigate", {"url": url}, timeout)

    async def snapshot(self, timeout: float) -> Snap:
        return Snap(_texts(await self.call("browser_snapshot", {}, timeout)))

    def ref(self, snap: Snap, role: str, label: str) -> str | None:
        found = re.search(rf'- {role} "{re.escape(label)}"[^\n]*?\[ref=([^\]\s]+)\]', snap.text)
        return found.group(1) if found else None

    async def click(self, ref: str, label: str, timeout: float) -> None:
        await self.call("browser_click", {"target": ref, "element": label}, timeout)

    async def type(self, ref: str, label: str, text: str, timeout: float) -> None:
        await self.call("browser_type", {"target": ref, "element": label, "text": text}, timeout)

    async def hover(self, ref: str, label: str, timeout: float) -> None:
        await self.call("browser_hover", {"target": ref, "element": label}, timeout)


class DevTools(Peer):
    name = "devtools"
    page = 1

    def args(self) -> list[str]:
        return [
            "--executablePath",
            self.executable,
            "--headless",
            "--isolated",
            "--viewport",
            f"{VIEWPORT[0]}x{VIEWPORT[1]}",
            "--no-usage-statistics",
            "--no-performance-crux",
            *(f"--chromeArg={flag}" for flag in CHROMIUM_FLAGS),
        ]

    async def ready(self) -> None:
        listed = _texts(await self.call("list_pages", {}, 120))
        found = re.search(r"^(\d+): .*\[selected\]", listed, re.M) or re.search(r"^(\d+):", listed, re.M)
        if not found:
            raise CallFailed(f"list_pages: no page in {listed[:200]!r}")
        self.page = int(found.group(1))

    async def navigate(self, url: str, timeout: float) -> None:
        await self.call("navigate_page", {"pageId": self.page, "type": "url", "url": url}, timeout)

    async def snapshot(self, timeout: float) -> Snap:
        return Snap(_texts(await self.call("take_snapshot", {"pageId": self.page}, timeout)))

    def ref(self, snap: Snap, role: str, label: str) -> str | None:
        found = re.search(rf'uid=(\S+) {role} "{re.escape(label)}"', snap.text)
        return found.group(1) if found else None

    async def click(self, ref: str, label: str, timeout: float) -> None:
        await self.call("click", {"pageId": self.page, "uid": ref}, timeout)

    async def type(self, ref: str, label: str, text: str, timeout: float) -> None:
        await self.call("fill", {"pageId": self.page, "uid": ref, "value": text}, timeout)

    async def hover(self, ref: str, label: str, timeout: float) -> None:
        await self.call("hover", {"pageId": self.page, "uid": ref}, timeout)


def make_target(name: str, work: Path, executable: str) -> Target:
    if name == "playwright":
        return Playwright(work, executable)
    if name == "devtools":
        return DevTools(work, executable)
    if name == "product-stdio":
        return ProductStdio(work, executable, via_abi=False)
    if name == "product-direct":
        return Product(work, executable, via_abi=False, direct=True)
    return Product(work, executable, via_abi=name == "product-abi")


# ---------------------------------------------------------------------------------------------- runs


@dataclass
class Record:
    """Per target and metric, one entry per repetition: seconds (float), or "timeout"/"fails"/"skipped"."""

    times: dict[str, list[float | str]] = field(default_factory=dict)
    chars: dict[str, list[int]] = field(default_factory=dict)
    reach: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    given_up: set[str] = field(default_factory=set)  # metrics that timed out once: not asked again
    dead: bool = False

    def add(self, metric: str, value: float | str) -> None:
        self.times.setdefault(metric, []).append(value)


async def timed(coro: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = await coro
    return value, time.perf_counter() - started


async def step(target: Target, rec: Record, metric: str, make: Callable[[], Any], note: str) -> Any:
    """Run one timed call; a timeout or failure is recorded (and a timed-out target restarted).
    Returns the call's value, or None when it did not succeed."""
    if rec.dead or metric in rec.given_up:
        rec.add(metric, "skipped")
        return None
    try:
        value, seconds = await timed(make())
    except CallTimeout as exc:
        rec.add(metric, "timeout")
        rec.given_up.add(metric)
        rec.notes.append(f"{note}: timeout ({exc})")
        print(f"bench_peers:   {target.name} {metric}: timeout ({exc}); restarting it", file=sys.stderr)
        await _restart(target, rec)
        return None
    except CallFailed as exc:
        rec.add(metric, "fails")
        rec.notes.append(f"{note}: fails ({exc})")
        print(f"bench_peers:   {target.name} {metric}: fails ({exc})", file=sys.stderr)
        try:
            await target.recover()
        except (CallTimeout, CallFailed) as again:
            rec.notes.append(f"{note}: recovering after it: {again}")
        return None
    rec.add(metric, seconds)
    print(f"bench_peers:   {target.name} {metric}: {fmt_seconds(seconds)}", file=sys.stderr)
    return value if value is not None else True


async def _restart(target: Target, rec: Record) -> None:
    try:
        await target.restart()
    except Exception as exc:  # a target that cannot come back is out for the rest of the run
        rec.dead = True
        rec.notes.append(f"restart failed: {type(exc).__name__}: {exc}"[:300])


async def small_round(target: Target, rec: Record, base: str, t: float, rep: int) -> None:
    url = f"{base}/small.html"
    note = f"rep {rep + 1} small"
    if await step(target, rec, "navigate", lambda: target.navigate(url, t), f"{note} navigate") is None:
        return
    first = await step(target, rec, "first", lambda: target.snapshot(t), f"{note} first snapshot")
    if isinstance(first, Snap):
        rec.chars.setdefault("first", []).append(first.chars)
    snap = await step(target, rec, "repeat", lambda: target.snapshot(t), f"{note} repeated snapshot")
    if not isinstance(snap, Snap):
        return
    button = target.ref(snap, "button", "Save draft")
    if button is None:
        rec.add("click", "fails")
        rec.notes.append(f"{note}: no ref for the 'Save draft' button in the snapshot")
    elif await step(target, rec, "click", lambda: target.click(button, "Save draft", t), f"{note} click"):
        await _verify(target, rec, "click", "Draft saved 1 times", t, note)
    native = None
    with contextlib.suppress(CallTimeout, CallFailed):
        native = target.ref(await target.snapshot(t), "button", "Save draft")  # fresh refs after an action
    if native is None:
        rec.add("nclick", "fails")
        rec.notes.append(f"{note}: no ref for the 'Save draft' button before the native click")
    elif await step(
        target, rec, "nclick", lambda: target.native_click(native, "Save draft", t), f"{note} native click"
    ):
        await _verify(target, rec, "nclick", "Draft saved 2 times", t, note)
    link = None
    with contextlib.suppress(CallTimeout, CallFailed):
        link = target.ref(await target.snapshot(t), "link", "About")  # the pointer is on the button now
    if link is None:
        rec.add("hover", "fails")
        rec.notes.append(f"{note}: no ref for the 'About' link before the hover")
    elif await step(target, rec, "hover", lambda: target.hover(link, "About", t), f"{note} hover"):
        await _verify(target, rec, "hover", "About hovered 1 times", t, note)
    field_ref = None
    with contextlib.suppress(CallTimeout, CallFailed):
        snap = await target.snapshot(t)  # refs after an action: a fresh snapshot, for every target alike
        field_ref = target.ref(snap, "textbox", "Name")
    if field_ref is None:
        rec.add("type", "fails")
        rec.notes.append(f"{note}: no ref for the 'Name' text field in the snapshot")
    elif await step(target, rec, "type", lambda: target.type(field_ref, "Name", TYPED, t), f"{note} type"):
        await _verify(target, rec, "type", f"Name holds {len(TYPED)} characters", t, note)


async def _verify(target: Target, rec: Record, metric: str, text: str, t: float, note: str) -> None:
    """An untimed snapshot must show the action's effect, else the timed action is recorded as failing."""
    try:
        shown = (await target.snapshot(t)).text
    except (CallTimeout, CallFailed) as exc:
        shown = str(exc)
    if text not in shown.replace("\\n", " "):
        rec.times[metric][-1] = "fails"
        rec.notes.append(f"{note} {metric}: the page does not show {text!r} afterwards")


async def big_round(
    target: Target, rec: Record, base: str, page: str, t: float, max_pages: int, rep: int
) -> None:
    note = f"rep {rep + 1} {page}"
    if f"nav{page}" in rec.given_up or page in rec.given_up:
        rec.add(f"nav{page}", "skipped")
        rec.add(page, "skipped")
        return
    url = f"{base}/big{page}.html"
    navigated = await step(target, rec, f"nav{page}", lambda: target.navigate(url, t), f"{note} navigate")
    if navigated is None and (rec.dead or rec.times[f"nav{page}"][-1] != "fails"):
        rec.add(page, "skipped")  # timed out (the target was restarted): nothing to read
        return
    # a navigation that failed (e.g. its own load timeout) may still have loaded: read, as an agent would
    snap = await step(target, rec, page, lambda: target.snapshot(t), f"{note} snapshot")
    if not isinstance(snap, Snap):
        return
    rec.chars.setdefault(page, []).append(snap.chars)
    try:
        reach = await target.reach_end(snap, t, max_pages)
    except (CallTimeout, CallFailed) as exc:
        reach = "no"
        rec.notes.append(f"{note}: following continuation pages: {exc}")
    rec.reach.setdefault(page, []).append(reach)


async def run(args: argparse.Namespace) -> tuple[dict[str, Record], dict[str, Any]]:
    names = args.only
    peers = [n for n in names if n in PEERS]
    install_peers(peers)
    records = {n: Record() for n in names}
    meta: dict[str, Any] = {
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        work = Path(tmp)
        (work / "pages").mkdir()
        server = serve_pages(work / "pages", args.pages)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        targets = {n: make_target(n, work, args.executable) for n in names}
        try:
            for n, target in targets.items():
                print(f"bench_peers: starting {LABELS[n]} …", file=sys.stderr)
                try:
                    await target.launch(f"{base}/index.html")
                except Exception as exc:
                    records[n].dead = True
                    records[n].notes.append(f"start failed: {type(exc).__name__}: {exc}"[:300])
            for rep in range(args.reps):
                order = names[rep % len(names) :] + names[: rep % len(names)]
                print(f"bench_peers: repetition {rep + 1}/{args.reps} ({', '.join(order)})", file=sys.stderr)
                if "small" in args.pages:
                    for n in order:
                        await small_round(targets[n], records[n], base, args.small_timeout, rep)
                for page in (p for p in ("10k", "100k") if p in args.pages):
                    for n in order:
                        await big_round(targets[n], records[n], base, page, args.timeout, args.max_pages, rep)
        finally:
            for target in targets.values():
                await target.close()
            server.shutdown()
            server.server_close()
            if args.logs:  # the hosts' output and the peers' stderr, for a failure worth a closer look
                shutil.copytree(
                    work, args.logs, ignore=shutil.ignore_patterns("pages", "*-state"), dirs_exist_ok=True
                )
    meta["load_after"] = os.getloadavg()
    meta["chromium"] = subprocess.run(
        [args.executable, "--version"], capture_output=True, text=True
    ).stdout.strip()
    return records, meta


# ---------------------------------------------------------------------------------------------- table


ROWS = [  # (metric, row label, kind)
    ("navigate", "navigate to the small page", "time"),
    ("first", "small page: first snapshot after loading", "time"),
    ("first", "small page: first snapshot, characters", "chars"),
    ("repeat", "small page: repeated snapshot", "time"),
    ("click", "click by ref", "time"),
    ("nclick", "native click by ref (product: click extension; peers: their click)", "time"),
    ("hover", "native hover by ref (product: hover extension; peers: their hover)", "time"),
    ("type", "type by ref", "time"),
    ("nav10k", "10k page: navigate (information)", "time"),
    ("10k", "10k page: snapshot", "time"),
    ("10k", "10k page: snapshot, characters", "chars"),
    ("10k", "10k page: end button reachable", "reach"),
    ("nav100k", "100k page: navigate (information)", "time"),
    ("100k", "100k page: snapshot", "time"),
    ("100k", "100k page: snapshot, p95 of the repetitions", "p95"),
    ("100k", "100k page: snapshot, characters", "chars"),
    ("100k", "100k page: end button reachable", "reach"),
]
GOALS = {  # (metric, kind): (goal text, peers the ratio must be under, the ratio or absolute bound); issue 35
    ("first", "time"): ("≤ 0.8× the faster peer", ["playwright", "devtools"], 0.8),
    ("click", "time"): ("≤ 0.05× of peers", ["playwright", "devtools"], 0.05),
    ("nclick", "time"): ("≤ 0.2× Playwright", ["playwright"], 0.2),
    ("hover", "time"): ("≤ 0.2× Playwright", ["playwright"], 0.2),
    ("type", "time"): ("≤ 0.05× of peers", ["playwright", "devtools"], 0.05),
    ("10k", "time"): ("≤ 0.08× Playwright", ["playwright"], 0.08),
    ("10k", "chars"): (f"bounded (≤ {BOUND_CHARS // 1000}k chars)", [], BOUND_CHARS),
    ("10k", "reach"): ("end button reachable", [], 0),
    ("100k", "p95"): ("p95 ≤ 1 s (over 10 runs: --reps 10)", [], 1.0),
    ("100k", "chars"): (f"bounded (≤ {BOUND_CHARS // 1000}k chars)", [], BOUND_CHARS),
    ("100k", "reach"): ("end button reachable", [], 0),
}
PRODUCTS = ("product-python", "product-abi", "product-stdio", "product-direct")
SHORT = {"product-python": "py", "product-abi": "abi", "product-stdio": "stdio", "product-direct": "direct"}


def median_time(values: list[float | str]) -> float | None:
    numbers = [v for v in values if isinstance(v, float)]
    return statistics.median(numbers) if numbers else None


def p95_time(values: list[float | str]) -> float | None:
    """The 95th percentile (nearest rank) of the repetitions; a repetition without a figure (timeout, fails)
    counts as slower than every figure, so it is None as soon as it falls at or above that rank."""
    ranked = sorted(v for v in values if isinstance(v, float))
    counted = len([v for v in values if v != "skipped"])
    if not counted:
        return None
    rank = max(1, -(-95 * counted // 100))  # ceil(0.95 n)
    return ranked[rank - 1] if rank <= len(ranked) else None


def fmt_seconds(seconds: float) -> str:
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


def time_cell(values: list[float | str]) -> str:
    if not values:
        return "—"
    med = median_time(values)
    bad = [v for v in values if isinstance(v, str)]
    if med is None:
        return "timeout" if "timeout" in bad else ("fails" if "fails" in bad else "skipped")
    if not bad:
        return fmt_seconds(med)
    kinds = "/".join(sorted({b for b in bad if b != "skipped"} or {"skipped"}))
    return f"{fmt_seconds(med)} ({len(bad)}/{len(values)} {kinds})"


def chars_cell(values: list[int]) -> str:
    if not values:
        return "—"
    med = statistics.median(values)
    return f"{med / 1000:.1f}k" if med >= 1000 else f"{med:.0f}"


def reach_cell(values: list[str]) -> str:
    if not values:
        return "—"
    if len(set(values)) == 1:
        return values[0]
    return ", ".join(values)


def ratio(product: list[float | str], peer: list[float | str], timeout: float) -> str:
    """product/peer of the medians; a peer that only timed out gives an upper bound "<x"."""
    p = median_time(product)
    if p is None or not peer:
        return "—"
    q = median_time(peer)
    if q is None:
        return f"<{p / timeout:.3f}" if "timeout" in peer else "—"
    return f"{p / q:.2f}" if p / q >= 0.01 else f"{p / q:.3f}"


def goal_met(metric: str, kind: str, records: dict[str, Record], timeout: float) -> str:
    goal = GOALS.get((metric, kind))
    products = [n for n in PRODUCTS if n in records]
    if goal is None or not products:
        return ""
    _, peers, bound = goal
    verdicts: list[bool] = []
    for n in products:
        if kind == "reach":
            got = records[n].reach.get(metric, [])
            verdicts.append(bool(got) and all(v.startswith("yes") for v in got))
        elif kind == "chars":
            got_chars = records[n].chars.get(metric, [])
            verdicts.append(bool(got_chars) and max(got_chars) <= bound)
        elif kind == "p95":
            p95 = p95_time(records[n].times.get(metric, []))
            verdicts.append(p95 is not None and p95 <= bound)
        elif not peers:
            med = median_time(records[n].times.get(metric, []))
            verdicts.append(med is not None and med <= bound)
        else:
            for peer in peers:
                if peer not in records:
                    continue
                cell = ratio(records[n].times.get(metric, []), records[peer].times.get(metric, []), timeout)
                if cell == "—":
                    continue
                verdicts.append(float(cell.lstrip("<")) <= bound)
    if not verdicts:
        return "n/a"
    return "yes" if all(verdicts) else "no"


# ---------------------------------------------------------------------------------------------- agents

AGENT_CLIENTS = [1, 4]  # isolated agents at once: the row is 4 against 1


def measure_agents(args: argparse.Namespace) -> dict[str, Any]:
    """The isolated-agents rows (issue 35), with ``tools/bench_isolation``'s own run: one
    ``serve --isolation per-client`` (Python API), its PSS/RSS with 1 and with 1 + ``--agent-extra`` clients,
    the aggregate throughput of 1 and 4 clients (snapshot + click loops), and, when Playwright MCP is among
    the targets, two Playwright MCP processes' trees. Must run outside an event loop (it runs its own)."""
    sys.modules.setdefault("bench_peers", sys.modules[__name__])  # bench_isolation imports this module
    import bench_isolation

    options = argparse.Namespace(
        seconds=args.agent_seconds,
        reps=args.reps,
        clients=AGENT_CLIENTS,
        extra=args.agent_extra,
        no_peer="playwright" not in args.only,
        executable=args.executable,
    )
    print("bench_peers: isolated agents (tools/bench_isolation) …", file=sys.stderr)
    return dict(bench_isolation.run(options))


def agent_rows(figures: dict[str, Any], names: list[str], ratio_peers: list[str]) -> list[str]:
    """Table rows of ``measure_agents``: the product's figures in the Python API column (the host it
    measures), Playwright MCP's in its column; the other columns "—"."""
    product = figures["memory"]["product"]
    peer = figures["memory"].get("playwright")
    products = [n for n in PRODUCTS if n in names]
    rows: list[str] = []

    def row(label: str, product_cell: str, peer_cell: str, ratio_cell: str, goal: str, met: str) -> None:
        cells = [label]
        cells += [
            product_cell if n == "product-python" else peer_cell if n == "playwright" else "—" for n in names
        ]
        for p in ratio_peers:
            ours = [ratio_cell if p == "playwright" and n == "product-python" else "—" for n in products]
            cells.append(" / ".join(ours))
        cells += [goal, met]
        rows.append("| " + " | ".join(cells) + " |")

    for index, what, goal in ((1, "RSS", "≤ 0.3× one more Playwright MCP"), (0, "PSS", "")):
        ours = product["per_client_kib"][index]
        theirs = peer["per_agent_kib"][index] if peer else None
        share = ours / theirs if theirs else None
        met = "" if not goal else ("n/a" if share is None else ("yes" if share <= 0.3 else "no"))
        row(
            f"one more isolated agent: {what} (product: a client context; Playwright MCP: a process + browser)",
            f"{ours / 1024:.0f} MiB",
            f"{theirs / 1024:.0f} MiB" if theirs else "—",
            f"{share:.2f}" if share is not None else "—",
            goal,
            met,
        )
    rates = {int(n): statistics.median(cell["tx_s"]) for n, cell in figures["throughput"].items()}
    gain = rates[4] / rates[1] if rates.get(1) else None
    busy = sum(cell["busy"] for cell in figures["throughput"].values())
    row(
        "4 isolated agents: aggregate throughput ÷ 1 agent (snapshot + click loops)",
        f"{gain:.2f}× ({rates[4]:.1f} / {rates[1]:.1f} tx/s{f'; {busy} BUSY' if busy else ''})"
        if gain is not None
        else "—",
        "—",
        "—",
        "≥ 1.5× one agent",
        "n/a" if gain is None else ("yes" if gain >= 1.5 and not busy else "no"),
    )
    return rows


def table(records: dict[str, Record], args: argparse.Namespace, agents: dict[str, Any] | None = None) -> str:
    names = list(records)
    peers = [n for n in names if n in PEERS]
    products = [n for n in PRODUCTS if n in records]
    head = ["metric", *(LABELS[n] for n in names)]
    ratio_peers = [p for p in peers] if products else []
    head += [
        f"{'/'.join(SHORT[n] for n in products)} ÷ {'Playwright' if p == 'playwright' else 'DevTools'}"
        for p in ratio_peers
    ]
    head += ["goal", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for metric, label, kind in ROWS:
        base_metric = metric.removeprefix("nav")
        if base_metric in BIG and base_metric not in args.pages:
            continue
        if base_metric not in BIG and "small" not in args.pages:
            continue
        cells = [label]
        for n in names:
            rec = records[n]
            if kind == "time":
                cells.append(time_cell(rec.times.get(metric, [])))
            elif kind == "p95":
                values = rec.times.get(metric, [])
                p95 = p95_time(values)
                cells.append(
                    "—" if not values else (fmt_seconds(p95) if p95 is not None else "over (no figure)")
                )
            elif kind == "chars":
                cells.append(chars_cell(rec.chars.get(metric, [])))
            else:
                cells.append(reach_cell(rec.reach.get(metric, [])))
        for p in ratio_peers:
            if kind != "time":
                cells.append("")
                continue
            peer_times = records[p].times.get(metric, [])
            cells.append(
                " / ".join(
                    ratio(records[n].times.get(metric, []), peer_times, args.timeout) for n in products
                )
            )
        goal = GOALS.get((metric, kind))
        cells.append(goal[0] if goal else "")
        cells.append(goal_met(metric, kind, records, args.timeout))
        lines.append("| " + " | ".join(cells) + " |")
    if agents is not None:
        lines += agent_rows(agents, names, ratio_peers)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="repetitions (medians over them; default 3)")
    ap.add_argument(
        "--only",
        default="product,playwright,devtools",
        help="comma-separated targets: product (all four), product-python, product-abi, product-stdio, product-direct, playwright, devtools",
    )
    ap.add_argument(
        "--pages",
        default="small,10k,100k,agents",
        help="comma-separated: small, 10k, 100k, and agents (the isolated-agents rows; needs product-python)",
    )
    ap.add_argument(
        "--agent-seconds", type=float, default=10.0, help="seconds per throughput measurement (default 10)"
    )
    ap.add_argument(
        "--agent-extra", type=int, default=4, help="clients added for the memory figure (default 4)"
    )
    ap.add_argument("--skip-100k", action="store_true", help="leave out the 100,000-item page")
    ap.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per call on the big pages (default 120)"
    )
    ap.add_argument(
        "--small-timeout", type=float, default=60.0, help="seconds per call on the small page (default 60)"
    )
    ap.add_argument(
        "--max-pages",
        type=int,
        default=60,
        help="continuation pages the product may follow to reach the end button (default 60)",
    )
    ap.add_argument("--executable", default=DEFAULT_CHROMIUM, help="the Chromium every target runs")
    ap.add_argument("--json", metavar="FILE", help="also write every raw figure to FILE")
    ap.add_argument("--logs", metavar="DIR", help="keep the hosts' output and the peers' stderr in DIR")
    args = ap.parse_args()
    wanted: list[str] = []
    for item in (s.strip() for s in args.only.split(",") if s.strip()):
        expanded = list(PRODUCTS) if item == "product" else [item]
        for name in expanded:
            if name not in TARGETS:
                ap.error(f"--only: unknown target {name!r} (choose from product, {', '.join(TARGETS)})")
            if name not in wanted:
                wanted.append(name)
    args.only = [n for n in TARGETS if n in wanted]
    args.pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    if args.skip_100k and "100k" in args.pages:
        args.pages.remove("100k")
    if bad := [p for p in args.pages if p not in ("small", *BIG, "agents")]:
        ap.error(f"--pages: unknown page {bad[0]!r} (choose from small, 10k, 100k, agents)")
    if "agents" in args.pages and "product-python" not in args.only:
        print("bench_peers: the agents rows measure the Python API host: skipped", file=sys.stderr)
        args.pages.remove("agents")
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    # SIGTERM unwinds like Ctrl-C, so every host, peer and browser started is stopped on the way out
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        records, meta = asyncio.run(run(args))
        agents = measure_agents(args) if "agents" in args.pages else None
        if agents is not None:
            meta["load_after"] = os.getloadavg()
    except KeyboardInterrupt:
        print("bench_peers: interrupted; every target was stopped", file=sys.stderr)
        raise SystemExit(130) from None
    load = " ".join(f"{x:.1f}" for x in meta["load_before"]), " ".join(f"{x:.1f}" for x in meta["load_after"])
    versions = ", ".join(f"{LABELS[n]}" for n in args.only if n in PEERS)
    print(
        f"bench_peers {meta['started']}: {args.reps} repetition(s), medians; {meta['chromium']}"
        f"{'; ' + versions if versions else ''}; load average before {load[0]}, after {load[1]} "
        f"(1/5/15 min, {os.cpu_count()} cores)"
    )
    print()
    print(table(records, args, agents))
    notes = [f"- {LABELS[n]}: {note}" for n in args.only for note in records[n].notes]
    if notes:
        print("\nnotes:")
        print("\n".join(notes))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "meta": meta,
                    "args": {k: v for k, v in vars(args).items() if k != "json"},
                    "records": {
                        n: {"times": r.times, "chars": r.chars, "reach": r.reach, "notes": r.notes}
                        for n, r in records.items()
                    },
                    "agents": agents,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
