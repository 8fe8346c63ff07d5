"""Helpers for the stdio tests: ``kelpie-gateway mcp`` as a child with raw pipes (what an MCP client does).

:class:`StdioHost` writes JSON-RPC lines to the child's stdin and reads its stdout on a thread; every
stdout line must be a JSON object (anything else is recorded in :attr:`StdioHost.garbage`). stderr is kept
in :attr:`StdioHost.log`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kelpie_gateway.host.launch import terminate

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
KELPIE = VENV_BIN / "kelpie-gateway"


def run_async(coro: Any) -> Any:
    """``asyncio.run(coro)`` on a fresh thread: in the full suite the browser tests' Playwright sync API
    holds a running event loop on the main thread, where ``asyncio.run`` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class StdioHost:
    """``[PREFIX…] kelpie-gateway mcp ARGS`` with pipes (``prefix`` e.g. ``xvfb-run -a``); use as a context
    manager (terminates the child on exit)."""

    def __init__(
        self, args: Sequence[str] = (), *, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
    ) -> None:
        self.proc = subprocess.Popen(
            [*prefix, str(KELPIE), "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else dict(os.environ),
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.garbage: list[bytes] = []
        self.log: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if isinstance(message, dict):
                self.messages.put(message)
            else:
                self.garbage.append(line)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = 60.0) -> dict[str, Any]:
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no message within {timeout} s; log:\n" + "\n".join(self.log[-30:])
            ) from None

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = self.recv()
        assert answer.get("id") == rid, answer
        return answer

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        answer = self.request(
            1,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def control(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``tools/call kelpie_browser_control``; returns the envelope (retrying only safe retryables)."""
        for _ in range(6):
            answer = self.request(
                rid,
                "tools/call",
                {"name": "kelpie_browser_control", "arguments": {"method": method, "params": params}},
            )
            envelope: dict[str, Any] = answer["result"]["structuredContent"]
            error = envelope.get("error") or {}
            if envelope["success"] or not error.get("retryable") or envelope.get("mayHaveCompleted"):
                return envelope
            time.sleep(0.2)
        return envelope

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(5)
        return code

    def __enter__(self) -> StdioHost:
        return self

    def __exit__(self, *exc: object) -> None:
        terminate(self.proc)
