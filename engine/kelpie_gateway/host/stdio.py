"""``kelpie-gateway mcp``: MCP over stdio, the way MCP clients launch servers (issue 14; CONTRACT.md §7).

One process holds the browser and the gateway; the parent (the MCP client) owns the pipes:

* **stdin**: newline-delimited JSON-RPC messages (UTF-8, one message per line, no embedded newlines, as
  the MCP stdio transport says). Each line goes to ``Gateway.begin_mcp`` unchanged, so every revision and
  rule the engine speaks (handshake versions, the stateless revision, batches refused ``-32600``, the
  4 MiB cap) applies here exactly as on ``POST /mcp``. A line over 4 MiB is not buffered: its first
  4 MiB + 1 bytes go to the engine, which refuses it unparsed, and the rest of the line is discarded.
  Blank lines are ignored.
* **stdout**: one JSON-RPC response per line, nothing else. At start the process moves its own file
  descriptor 1 to a private descriptor and points fd 1 at stderr, so a stray ``print`` or a child process
  (Playwright's driver, Chromium) can never corrupt the channel; fd 0 becomes ``/dev/null`` likewise.
* **stderr**: the operator log (start-up, one ``tx`` line per transaction).
* Requests run in arrival order (issue 34; docs/host.md "Request order over stdio"): a request enters the
  gateway only after the previous one was answered, so an agent that sends several tool calls at once gets
  them answered one after another instead of ``BUSY`` (the gateway's BUSY rule is unchanged; this is the
  transport's queue, and HTTP has none). Notifications and responses are handled at once, so
  ``notifications/cancelled`` reaches the in-flight ``tools/call`` (answered ``CANCELLED`` by the gateway)
  or removes a queued one (which then gets no answer, as MCP's cancellation rules say). A call of a
  *recovery* extension (``dialog_accept``, …) skips the queue too: it exists to answer while a click waits.
  Lines that are not a JSON object with a ``method`` go to the engine at once (it refuses them).
  Responses are written whole, one per line.
* No pairing and no bearer: whoever holds the pipe is the client the operator launched. In the audit log
  (``--audit-log``) its transactions are ``client: "stdio"``, ``transport: "stdio"``.
* ``--connect URL`` (issue 17, docs/tunnel.md): the same gateway is also served over an outbound WebSocket
  to an agent broker (MCP-over-ACP), so the stdio client and a remote agent share one browser, one set of
  lanes (BUSY across both) and one audit log. The tunnel lives as long as the stdio session.
* When stdin closes (or on SIGTERM/SIGINT), the process stops reading, lets in-flight stdio transactions
  finish (bounded by :data:`DRAIN_S`), closes the tunnel (calls still running on it are abandoned as on
  a drop), closes the browser it launched (an attached one is only disconnected) and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, BinaryIO

import orjson

from kelpie_gateway.host.app import (
    BrowserOptions,
    BrowserStack,
    StartError,
    open_transports,
    start_stack,
    watch_audit,
)
from kelpie_gateway.host.driver import Caller
from kelpie_gateway.host.parts import extension_descriptors
from kelpie_gateway.host.tunnel import Tunnel, TunnelConfigError

REQUEST_ORDER = "arrival"
"""How this transport runs one client's requests: one after another in arrival order (module docstring)."""
MAX_LINE = 4 * 1024 * 1024
"""The request cap of CONTRACT.md §8; the engine refuses anything longer without parsing it."""
DRAIN_S = 15.0
"""How long in-flight transactions may take to finish after stdin closed."""
_CHUNK = 64 * 1024


def stderr_log(message: str) -> None:
    """One operator log line on stderr (stdout belongs to JSON-RPC)."""
    print(message, file=sys.stderr, flush=True)


def take_stdio() -> tuple[int, BinaryIO]:
    """Claim the process's stdin and stdout for JSON-RPC: returns ``(input_fd, output_file)`` on private
    descriptors, with fd 0 re-pointed at ``/dev/null`` and fd 1 at stderr for everything else."""
    rpc_in = os.dup(0)
    rpc_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for fd in (rpc_in, rpc_out):
        os.set_inheritable(fd, False)
    return rpc_in, os.fdopen(rpc_out, "wb", buffering=0)


class LineReader:
    """Reads ``fd`` on a thread and hands complete lines (bytes, without the newline; over-long lines
    cut to ``MAX_LINE + 1`` bytes) to ``deliver`` on the event loop; ``deliver(None)`` at end of input."""

    def __init__(
        self, fd: int, loop: asyncio.AbstractEventLoop, deliver: Callable[[bytes | None], None]
    ) -> None:
        self.fd = fd
        self.loop = loop
        self.deliver = deliver
        self.thread = threading.Thread(target=self._run, name="kelpie-stdin", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _send(self, line: bytes | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the process is exiting
            self.loop.call_soon_threadsafe(self.deliver, line)

    def _run(self) -> None:
        buffer = bytearray()
        overflow = False
        while True:
            try:
                chunk = os.read(self.fd, _CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                piece = chunk[start:] if newline < 0 else chunk[start:newline]
                if not overflow:
                    room = MAX_LINE + 1 - len(buffer)
                    buffer += piece[:room]
                    overflow = len(piece) > room or len(buffer) > MAX_LINE
                if newline < 0:
                    break
                self._send(bytes(buffer))
                buffer.clear()
                overflow = False
                start = newline + 1
        if buffer.strip():
            self._send(bytes(buffer))  # a last message without its newline still counts
        self._send(None)


STDIO_CALLER = Caller(client="stdio", transport="stdio")
"""Who the stdio client is in the audit log: the process that launched this one."""

_RECOVERY: frozenset[str] = frozenset(
    str(d["name"]) for d in extension_descriptors() if d.get("recovery") is True
)
"""The host's recovery extensions: their calls skip the request queue (see the module docstring)."""


def _recovery_call(message: dict[str, Any]) -> bool:
    """Whether ``message`` is a ``tools/call`` of a recovery extension, by any of the three tool shapes
    (``kelpie_extension {name}``, ``kelpie_browser_control {method:"extension.call", params:{name}}`` or
    the extension's own tool name)."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return False
    tool = params.get("name")
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    if tool == "kelpie_extension":
        name = arguments.get("name")
    elif tool == "kelpie_browser_control" and arguments.get("method") == "extension.call":
        inner = arguments.get("params")
        name = inner.get("name") if isinstance(inner, dict) else None
    else:
        name = tool
    return isinstance(name, str) and name in _RECOVERY


def _queued_id(line: bytes) -> tuple[bool, Any]:
    """``(True, id)`` for a request that waits its turn; ``(False, requestId or None)`` for what goes to
    the engine at once (a ``notifications/cancelled`` gives the id it names)."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False, None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return False, None
    if "id" not in message:
        params = message.get("params")
        if message["method"] == "notifications/cancelled" and isinstance(params, dict):
            return False, params.get("requestId")
        return False, None
    if _recovery_call(message):
        return False, None
    return True, message["id"]


class StdioServer:
    """The JSON-RPC loop over one :class:`BrowserStack`; see the module docstring."""

    def __init__(
        self, stack: BrowserStack, rpc_in: int, rpc_out: BinaryIO, log: Callable[[str], None]
    ) -> None:
        self.stack = stack
        self.rpc_in = rpc_in
        self.rpc_out = rpc_out
        self.log = log
        self.closed = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        self.broken = False
        self.queue: list[tuple[Any, bytes]] = []
        """Requests waiting for the one in flight, in arrival order: ``(id, line)``."""
        self.turn: asyncio.Task[None] | None = None
        """The task running the queue's requests one by one (None when the queue is idle)."""

    def _deliver(self, line: bytes | None) -> None:
        if line is None:
            self.closed.set()
            return
        if not line.strip() or self.closed.is_set():
            return
        queued, rid = _queued_id(line)
        if queued:
            self.queue.append((rid, line))
            if self.turn is None:
                self.turn = self._spawn(self._take_turns())
            return
        if rid is not None:
            self._drop_queued(rid)
        self._spawn(self._handle(line))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _drop_queued(self, rid: Any) -> None:
        """A cancellation of a request still waiting its turn: it never enters the gateway."""
        for i, (queued, _line) in enumerate(self.queue):
            if type(queued) is type(rid) and queued == rid:
                del self.queue[i]
                self.log(f"stdio: request {orjson.dumps(rid).decode()[:40]} cancelled while queued: not run")
                return

    async def _take_turns(self) -> None:
        try:
            while self.queue and not self.broken:
                _rid, line = self.queue.pop(0)
                await self._handle(line)
        finally:
            self.turn = None

    async def _handle(self, line: bytes) -> None:
        step = await self.stack.driver.mcp(line, STDIO_CALLER)
        response = step.get("response")
        if response is not None:
            self.write(response)

    def write(self, message: Any) -> None:
        """Write one JSON-RPC message as one line; a closed pipe ends the session (never raises)."""
        if self.broken:
            return
        try:
            self.rpc_out.write(orjson.dumps(message) + b"\n")
        except (BrokenPipeError, OSError, ValueError):
            self.broken = True
            self.closed.set()

    async def run(self) -> None:
        """Serve until stdin closes (or :attr:`closed` is set), then drain in-flight transactions and the
        requests still queued (all bounded by :data:`DRAIN_S`)."""
        LineReader(self.rpc_in, asyncio.get_running_loop(), self._deliver).start()
        await self.closed.wait()
        if self.tasks:
            _done, pending = await asyncio.wait(set(self.tasks), timeout=DRAIN_S)
            if pending:
                self.log(f"{len(pending)} transaction(s) still running after {DRAIN_S:g} s: abandoned")


async def run_stdio(opts: BrowserOptions, rpc_in: int, rpc_out: BinaryIO) -> int:
    """Start the browser stack (and the tunnel with ``--connect``) and serve MCP on the given descriptors
    until end of input. Returns the exit status (0, or 1/2 when the stack cannot start: the reason is on
    stderr)."""
    log = stderr_log
    extras = open_transports(opts, log)
    if isinstance(extras, str):
        log(f"error: {extras}")
        return 2
    audit, tunnel_opts = extras
    try:
        try:
            stack = await start_stack(opts, log, audit=audit, defer_browser=True)
        except StartError as exc:
            log(f"error: kelpie-gateway mcp could not start: {exc}")
            return exc.status
        try:
            tunnel = Tunnel(stack.source(), tunnel_opts, log) if tunnel_opts is not None else None
        except TunnelConfigError as exc:  # the token file went away since the check
            log(f"error: {exc}")
            await stack.close()
            return 2
        return await _serve_stdio(opts, stack, rpc_in, rpc_out, tunnel)
    finally:
        if audit is not None:
            audit.close()


async def _serve_stdio(
    opts: BrowserOptions, stack: BrowserStack, rpc_in: int, rpc_out: BinaryIO, tunnel: Tunnel | None
) -> int:
    log = stderr_log
    server = StdioServer(stack, rpc_in, rpc_out, log)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, server.closed.set)
    watch_audit(stack.driver.audit)
    core = f"C library {getattr(stack.gateway, 'path', '')}" if opts.via_abi else "Python API"
    log(f"kelpie-gateway mcp: MCP over stdio (newline-delimited JSON-RPC); gateway via {core}")
    log(f"site {stack.site_root} at {stack.site_url.rsplit('/', 1)[0]}/")
    log(stack.describe_policy())
    if stack.browser_ready is None:
        log(f"browser {stack.description}")
    else:
        log("browser starting (MCP is answered meanwhile; browser calls wait for it)")
    if stack.files is not None and opts.browser != "none":
        log(stack.files.describe())
    if stack.driver.audit is not None:
        log(f"audit log {stack.driver.audit.path} (one JSON line per transaction; SIGHUP reopens it)")
    if tunnel is not None:
        log(f"connecting {tunnel.describe()} (MCP over an outbound WebSocket as well as stdio)")
        tunnel.start()
    status = 0

    def browser_started(ready: asyncio.Future[None]) -> None:
        nonlocal status
        if ready.cancelled():
            return
        exc = ready.exception()
        if exc is None:
            log(f"browser {stack.description}")
            return
        log(f"error: kelpie-gateway mcp could not start the browser: {exc}")
        status = exc.status if isinstance(exc, StartError) else 1
        server.closed.set()

    if stack.browser_ready is not None:
        stack.browser_ready.add_done_callback(browser_started)
    try:
        await server.run()
    finally:
        log(
            "stdout closed: shutting down"
            if server.broken
            else "shutting down"
            if status
            else "stdin closed: shutting down"
        )
        if tunnel is not None:
            await tunnel.close()
        await stack.close()
    return status


def main_stdio(opts: BrowserOptions) -> int:
    """``kelpie-gateway mcp``: claim stdio, run, exit status."""
    rpc_in, rpc_out = take_stdio()
    try:
        return asyncio.run(run_stdio(opts, rpc_in, rpc_out))
    except KeyboardInterrupt:
        return 130
