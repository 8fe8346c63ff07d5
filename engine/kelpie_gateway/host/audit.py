"""The audit trail of the reference host: ``--audit-log FILE`` (issue 17; docs/host.md, "Audit log").

One JSON object per line, appended, for every canonical transaction (a ``complete`` step whose engine
``audit`` carries ``paramsSha256``: every ``/v1/browser-control`` request and every MCP ``tools/call``
that named a canonical method or an extension, refused ones included; MCP protocol chatter such as
``initialize`` or ``tools/list`` is not a transaction and is not logged)::

    {"time": "2026-11-30T18:04:05.123Z", "client": "agent-one", "transport": "http",
     "connection": null, "transaction": "t12", "method": "tab.click", "extension": null,
     "tabId": "t1", "lane": "direct", "outcome": "unknown", "code": "CANCELLED",
     "mayHaveCompleted": true, "mutates": true, "authorized": true, "dispatches": 1,
     "durationMs": 812.4, "paramsSha256": "9f2c…"}

``time`` is the completion time (UTC, milliseconds); ``client`` is the pairing name (HTTP), ``stdio``, or
the tunnel's server id (``tunnel:<id>``); ``transport`` is ``http``, ``mcp-http``, ``stdio`` or ``tunnel``;
``connection`` the tunnel's MCP connection id. Every other field is the engine's ``audit`` object
(docs/engine.md, "The audit record"); ``authorized`` is null for a transaction refused before its
``authorize`` step (BUSY, invalid params, stale ref, RECONCILE_REQUIRED), so
``select(.authorized != null)`` keeps exactly the transactions that reached ``authorize``.

Never in a line: params, typed text, page content, tokens. The params appear only as the SHA-256 of
their canonical JSON; a short typed text can be recovered from its digest by guessing, so the file is
created 0600 and should be kept like the browsing history it describes.

Rotation-safe: each line is one ``write`` on an ``O_APPEND`` descriptor. Before each line the path is
checked: when it no longer names the open file (``logrotate`` renamed or removed it) the host reopens it;
``SIGHUP`` reopens too; when a line would take the file past ``max_bytes`` (default 64 MiB) the host
renames it to ``FILE.1`` (replacing an older ``FILE.1``) and starts a new one. A write that fails is
reported once on the operator log and never fails a transaction (errors are values).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

JsonObject = dict[str, Any]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_ENGINE_FIELDS = (
    "method",
    "extension",
    "tabId",
    "lane",
    "outcome",
    "code",
    "mayHaveCompleted",
    "mutates",
    "authorized",
    "dispatches",
)
_CLIENT_LIMIT = 100


def utc_stamp(seconds: float) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` for a POSIX time."""
    whole = int(seconds)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def audit_line(
    step: Mapping[str, Any],
    *,
    client: str,
    transport: str,
    connection: str | None = None,
    now: float | None = None,
) -> JsonObject | None:
    """The audit record of one ``complete`` step, or None when it is not a canonical transaction (its
    engine ``audit`` has no ``paramsSha256``). Pure: no I/O."""
    audit = step.get("audit")
    if not isinstance(audit, Mapping) or not isinstance(audit.get("paramsSha256"), str):
        return None
    line: JsonObject = {
        "time": utc_stamp(time.time() if now is None else now),
        "client": client[:_CLIENT_LIMIT],
        "transport": transport,
        "connection": connection,
        "transaction": step.get("transaction"),
    }
    for key in _ENGINE_FIELDS:
        line[key] = audit.get(key)
    elapsed = audit.get("elapsedMs")
    line["durationMs"] = elapsed if isinstance(elapsed, int | float) else None
    line["paramsSha256"] = audit["paramsSha256"]
    return line


class AuditLog:
    """Appends :func:`audit_line` records to ``path`` (see the module docstring for the rules).

    ``max_bytes``: size past which the file is rotated to ``FILE.1`` (at least 4096). ``log``: the
    operator log, told once about a failing write (and again once writing works again)."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max(4096, int(max_bytes))
        self._log = log or (lambda _line: None)
        self._fd: int | None = None
        self._failing = False
        self._open()  # fail fast at start-up: an unwritable audit log is a usage error

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        old, self._fd = self._fd, fd
        if old is not None:
            with contextlib.suppress(OSError):
                os.close(old)

    def reopen(self) -> None:
        """Reopen the path (``SIGHUP``: after an external rotation). Errors are reported, not raised."""
        try:
            self._open()
        except OSError as exc:
            self._report(exc)

    def _ensure_current(self, incoming: int) -> int:
        """The descriptor to append ``incoming`` bytes to: reopened when the path moved, rotated when the
        line would pass ``max_bytes``."""
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            on_disk = None
        if self._fd is None:
            self._open()
        assert self._fd is not None
        mine = os.fstat(self._fd)
        if on_disk is None or (on_disk.st_ino, on_disk.st_dev) != (mine.st_ino, mine.st_dev):
            self._open()
            mine = os.fstat(self._fd)
        if mine.st_size > 0 and mine.st_size + incoming > self.max_bytes:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._open()
        assert self._fd is not None
        return self._fd

    def write(self, line: Mapping[str, Any]) -> bool:
        """Append one record; False (reported on the operator log) when it could not be written."""
        data = orjson.dumps(line) + b"\n"
        try:
            fd = self._ensure_current(len(data))
            os.write(fd, data)
        except OSError as exc:
            self._report(exc)
            return False
        if self._failing:
            self._failing = False
            self._log(f"audit log {self.path}: writing again")
        return True

    def record(
        self,
        step: Mapping[str, Any],
        *,
        client: str,
        transport: str,
        connection: str | None = None,
    ) -> JsonObject | None:
        """Write the record of ``step`` if it is a canonical transaction; returns the record (or None)."""
        line = audit_line(step, client=client, transport=transport, connection=connection)
        if line is not None:
            self.write(line)
        return line

    def _report(self, exc: OSError) -> None:
        if not self._failing:
            self._failing = True
            self._log(f"audit log {self.path}: cannot write ({type(exc).__name__}: {exc.strerror})")

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
