"""Start ``kelpie-gateway serve`` as a child process (used by ``demo`` and the host tests).

:class:`HostProcess` runs the host with ``--port 0``, waits for its first line
(``listening http://127.0.0.1:PORT``), keeps every later output line in :attr:`HostProcess.lines`
(optionally echoing them) and stops the child with SIGTERM (then SIGKILL) on :meth:`stop`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ENGINE_DIR = Path(__file__).resolve().parents[2]


def terminate(proc: subprocess.Popen[Any], grace_s: float = 15.0) -> int:
    """Stop a child process: SIGTERM, wait up to ``grace_s``, then SIGKILL. Returns its exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return int(proc.returncode)


class HostError(RuntimeError):
    """The host did not start (its output so far is in the message)."""


class HostProcess:
    """A running ``kelpie-gateway serve`` child; ``url`` is set once it listens."""

    def __init__(
        self,
        extra_args: Sequence[str] = (),
        *,
        echo: Callable[[str], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})
        self.echo = echo
        self.url = ""
        self.port = 0
        self.lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._listening = threading.Event()

    def start(self, timeout_s: float = 90.0) -> str:
        """Start the child and return its base URL; raises :class:`HostError` when it does not listen."""
        env = dict(os.environ)
        env.update(self.extra_env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ENGINE_DIR), env.get("PYTHONPATH", "")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [sys.executable, "-m", "kelpie_gateway.host.cli", "serve", "--port", "0", *self.extra_args]
        self._proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout_s
        while not self._listening.wait(0.1):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise HostError("the host did not start:\n" + "\n".join(self.lines[-40:]))
        return self.url

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.rstrip("\n")
            self.lines.append(line)
            if not self._listening.is_set() and line.startswith("listening http://"):
                self.url = line.split(" ", 1)[1].strip()
                self.port = int(self.url.rsplit(":", 1)[1])
                self._listening.set()
            if self.echo is not None:
                self.echo(line)

    def wait_for_line(self, needle: str, timeout_s: float = 10.0) -> str | None:
        """The first output line containing ``needle`` (waiting up to ``timeout_s``), else None."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if needle in line:
                    return line
            time.sleep(0.05)
        return None

    def pair(self, client: str = "kelpie-test") -> str:
        """``POST /v1/pair`` (the host must run with ``--approve-pairing auto``); returns the token."""
        request = urllib.request.Request(
            f"{self.url}/v1/pair",
            data=json.dumps({"client": client}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body: dict[str, Any] = json.loads(response.read())
        return str(body["token"])

    def stop(self) -> int | None:
        """SIGTERM, wait up to 15 s, then SIGKILL. Returns the exit status."""
        proc = self._proc
        if proc is None:
            return None
        terminate(proc)
        if self._reader is not None:
            self._reader.join(5)
        return proc.returncode

    def __enter__(self) -> HostProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
