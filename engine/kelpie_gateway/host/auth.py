"""Bearer tokens and operator-approved pairing for the reference host (ARCHITECTURE.md, transport rules).

* A token is 256 random bits (``secrets.token_urlsafe(32)``), handed out exactly once by ``POST /v1/pair``.
* The host keeps only the SHA-256 digest of each token; lookups compare the digest of the presented bearer
  against every stored digest with :func:`hmac.compare_digest` (constant time, no early exit).
* Revocation is by token: ``DELETE /v1/pair`` removes exactly the digest of the bearer that asked.
* Pairings persist (issue 14): the digests, client names and creation times live in a JSON file (default
  ``$XDG_STATE_HOME/kelpie-gateway/pairings.json``, mode 0600 in a 0700 directory), rewritten atomically
  under an exclusive ``flock`` on every issue or revoke, and re-read when another host changed it. Revoked
  digests stay in the file (the newest :data:`MAX_REVOKED`) so a revoked bearer is still refused after a
  restart and its 401 can say it was revoked. No token is ever written anywhere by the host.

Pairing: each ``POST /v1/pair`` creates a :class:`PairingRequest` with a short random code that the host
prints; the operator approves it (``kelpie-gateway pair approve CODE``) or denies it, or it times out.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Decision = Literal["approved", "denied", "timeout", "shutdown"]
Verdict = Literal["valid", "missing", "unknown", "revoked"]

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed by a human
FILE_VERSION = 1
MAX_REVOKED = 1000
"""Revoked digests kept in the pairing file (oldest dropped first); a bearer revoked longer ago than that
is answered as unknown, which is still a 401."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


def default_pairings_file() -> Path:
    """``$KELPIE_GATEWAY_PAIRINGS``, else ``$XDG_STATE_HOME/kelpie-gateway/pairings.json``
    (``~/.local/state/kelpie-gateway/pairings.json``)."""
    explicit = os.environ.get("KELPIE_GATEWAY_PAIRINGS")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "kelpie-gateway" / "pairings.json"


def state_dir() -> Path:
    """Directory of the admin sockets: ``$KELPIE_GATEWAY_STATE_DIR``, else ``$XDG_RUNTIME_DIR/kelpie-gateway``,
    else ``/tmp/kelpie-gateway-<uid>``. Created with mode 0700."""
    explicit = os.environ.get("KELPIE_GATEWAY_STATE_DIR")
    if explicit:
        path = Path(explicit)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "kelpie-gateway"
    else:
        path = Path(f"/tmp/kelpie-gateway-{os.getuid()}")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeError(
            f"{path} is not a directory owned by this user (someone else may have created it); "
            "set KELPIE_GATEWAY_STATE_DIR to a private directory"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


class PairingFileError(RuntimeError):
    """The pairing file cannot be used (unreadable, not JSON of the expected shape, or not private)."""


@dataclass
class PairingRecord:
    """One issued token as stored: its digest, the client name and the creation time (Unix seconds)."""

    digest: bytes
    client: str
    created: float
    revoked: float | None = None


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _parse_stamp(text: Any) -> float:
    if not isinstance(text, str):
        raise ValueError("time is not a string")
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))


class TokenStore:
    """SHA-256 digests of the issued bearer tokens, with the client name and creation time of each.

    ``path`` None keeps everything in memory (forgotten on restart); otherwise the store is the file
    described in the module docstring. Raises :class:`PairingFileError` at construction when an existing
    file cannot be read or is owned by another user; later I/O failures on issue/revoke raise ``OSError``.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._active: dict[bytes, PairingRecord] = {}
        self._revoked: dict[bytes, PairingRecord] = {}
        self._seen: tuple[int, int, int] | None = None
        if path is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._reload(force=True)

    # ------------------------------------------------------------------ file I/O
    def _signature(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (info.st_ino, info.st_mtime_ns, info.st_size)

    def _reload(self, *, force: bool = False) -> None:
        if self.path is None:
            return
        signature = self._signature()
        if not force and signature == self._seen:
            return
        self._active, self._revoked = self._read()
        self._seen = signature

    def _read(self) -> tuple[dict[bytes, PairingRecord], dict[bytes, PairingRecord]]:
        assert self.path is not None
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}, {}
        except OSError as exc:
            raise PairingFileError(f"cannot open the pairing file {self.path}: {exc}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid != os.getuid():
                raise PairingFileError(f"the pairing file {self.path} is owned by another user")
            if stat.S_IMODE(info.st_mode) & 0o077:
                os.fchmod(handle.fileno(), 0o600)  # never readable by others, whatever created it
            raw = handle.read()
        try:
            data = json.loads(raw) if raw.strip() else {"version": FILE_VERSION}
            if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
                raise ValueError(f"expected an object with version {FILE_VERSION}")
            active = {p.digest: p for p in (self._entry(e, False) for e in data.get("pairings", []))}
            revoked = {p.digest: p for p in (self._entry(e, True) for e in data.get("revoked", []))}
        except (ValueError, TypeError, KeyError) as exc:
            raise PairingFileError(
                f"the pairing file {self.path} is not valid ({exc}); move it away to start with no pairings"
            ) from None
        return active, revoked

    @staticmethod
    def _entry(item: Any, revoked: bool) -> PairingRecord:
        digest = bytes.fromhex(item["sha256"])
        if len(digest) != 32 or not isinstance(item["client"], str):
            raise ValueError("a pairing needs a 64-hex-digit sha256 and a client name")
        return PairingRecord(
            digest,
            item["client"],
            _parse_stamp(item["created"]),
            _parse_stamp(item["revoked"]) if revoked else None,
        )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive ``flock`` on ``<file>.lock`` with the file re-read inside: the read-modify-write of
        two hosts sharing the file never loses an issue or a revocation."""
        if self.path is None:
            yield
            return
        lock = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._reload(force=True)
            yield
            self._write()
        finally:
            os.close(lock)

    def _write(self) -> None:
        assert self.path is not None
        revoked = sorted(self._revoked.values(), key=lambda p: p.revoked or 0.0)[-MAX_REVOKED:]
        self._revoked = {p.digest: p for p in revoked}
        data = {
            "version": FILE_VERSION,
            "comment": "kelpie-gateway pairings: SHA-256 digests of bearer tokens, never the tokens",
            "pairings": [
                {"client": p.client, "created": _stamp(p.created), "sha256": p.digest.hex()}
                for p in sorted(self._active.values(), key=lambda p: p.created)
            ],
            "revoked": [
                {
                    "client": p.client,
                    "created": _stamp(p.created),
                    "revoked": _stamp(p.revoked or 0.0),
                    "sha256": p.digest.hex(),
                }
                for p in revoked
            ],
        }
        fd, tmp = tempfile.mkstemp(prefix=".pairings-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._seen = self._signature()

    # ------------------------------------------------------------------ API
    def issue(self, client: str) -> str:
        """Create a new 256-bit token for ``client``; returns it (the only time it exists in clear).
        The digest is saved before the token is returned, so an issued token survives a restart."""
        token = secrets.token_urlsafe(32)
        with self._locked():
            self._active[_digest(token)] = PairingRecord(_digest(token), client, time.time())
        return token

    def _find(self, table: dict[bytes, PairingRecord], presented: bytes) -> PairingRecord | None:
        found: PairingRecord | None = None
        for stored, entry in list(table.items()):
            if hmac.compare_digest(stored, presented):
                found = entry
        return found

    def check(self, token: str | None) -> tuple[Verdict, PairingRecord | None]:
        """Classify a presented bearer: ``valid`` (with its pairing), ``missing`` (no bearer), ``revoked``
        (with the revoked pairing) or ``unknown``. Constant time per stored digest. Picks up changes
        another host made to the shared file."""
        if not token:
            return "missing", None
        with contextlib.suppress(PairingFileError, OSError):
            self._reload()
        presented = _digest(token)
        active = self._find(self._active, presented)
        if active is not None:
            return "valid", active
        revoked = self._find(self._revoked, presented)
        if revoked is not None:
            return "revoked", revoked
        return "unknown", None

    def active(self, digest_hex: str) -> bool:
        """Whether the pairing whose token digest is ``digest_hex`` (hex SHA-256) is still active — not
        revoked here or by another host sharing the file (re-read when it changed)."""
        with contextlib.suppress(PairingFileError, OSError):
            self._reload()
        try:
            return bytes.fromhex(digest_hex) in self._active
        except ValueError:
            return False

    def lookup(self, token: str | None) -> str | None:
        """Return the client name of a valid bearer, else None."""
        verdict, entry = self.check(token)
        return entry.client if verdict == "valid" and entry is not None else None

    def revoke(self, token: str) -> bool:
        """Forget exactly this token (kept as revoked, persistently). Returns whether it was valid."""
        presented = _digest(token)
        with self._locked():
            match = self._find(self._active, presented)
            if match is None:
                return False
            del self._active[match.digest]
            match.revoked = time.time()
            self._revoked[match.digest] = match
        return True

    def _revoke_where(self, keep: Callable[[PairingRecord], bool]) -> list[PairingRecord]:
        with self._locked():
            now = time.time()
            gone = [p for p in self._active.values() if not keep(p)]
            for match in gone:
                del self._active[match.digest]
                match.revoked = now
                self._revoked[match.digest] = match
        return sorted(gone, key=lambda p: p.created)

    def revoke_client(self, client: str) -> list[PairingRecord]:
        """Operator revocation (``pair revoke --client NAME``): every active pairing whose client name is
        exactly ``client`` is revoked (kept as revoked, persistently; hosts sharing the file notice on their
        next check). Returns the revoked pairings, oldest first (empty when none matched). ``OSError`` /
        :class:`PairingFileError` when the file cannot be rewritten."""
        return self._revoke_where(lambda p: p.client != client)

    def revoke_all(self) -> list[PairingRecord]:
        """Operator revocation of every active pairing (``pair revoke --all``); see :meth:`revoke_client`."""
        return self._revoke_where(lambda p: False)

    def prune(self, older_than_s: float) -> list[PairingRecord]:
        """Revoke every active pairing created more than ``older_than_s`` seconds ago (``pair prune
        --older-than``); see :meth:`revoke_client`. ``older_than_s`` must be positive (``ValueError``)."""
        if not older_than_s > 0:
            raise ValueError("older_than_s must be positive")
        cutoff = time.time() - older_than_s
        return self._revoke_where(lambda p: p.created >= cutoff)

    def pairings(self) -> list[PairingRecord]:
        """The active pairings, oldest first (client names and creation times; digests only)."""
        with contextlib.suppress(PairingFileError, OSError):
            self._reload()
        return sorted(self._active.values(), key=lambda p: p.created)

    def revoked(self) -> list[PairingRecord]:
        """The remembered revoked pairings, oldest revocation first."""
        with contextlib.suppress(PairingFileError, OSError):
            self._reload()
        return sorted(self._revoked.values(), key=lambda p: p.revoked or 0.0)

    def __len__(self) -> int:
        return len(self._active)


REFUSAL_LOG_INTERVAL_S = 60.0
"""At most one refused-bearer log line per reason in this many seconds (:class:`RefusalLog`)."""


class RefusalLog:
    """Rate-limited operator log lines for refused requests (401 missing/unknown/revoked bearer, 403 Host or
    Origin): at most one line per ``reason`` every ``interval_s`` seconds; the next line of that reason says
    how many were left out since the previous one. A line names the HTTP status, the reason and, for a
    revoked bearer, the pairing's client name — never a token or its digest. ``clock``: monotonic seconds
    (tests inject one)."""

    def __init__(
        self,
        log: Callable[[str], None],
        *,
        interval_s: float = REFUSAL_LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self.interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def refused(self, status: int, reason: str, detail: str = "") -> bool:
        """Record one refusal; returns whether a line was logged (False: counted as suppressed)."""
        now = self._clock()
        last = self._last.get(reason)
        if last is not None and now - last < self.interval_s:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1
            return False
        self._last[reason] = now
        left_out = self._suppressed.pop(reason, 0)
        more = (
            f" ({left_out} more of this reason left out of the log in the last {self.interval_s:g} s)"
            if left_out
            else ""
        )
        self._log(f"refused a request ({status} {reason}){': ' + detail if detail else ''}{more}")
        return True


@dataclass
class PairingRequest:
    """One pending ``POST /v1/pair``: ``code`` is shown to the operator, ``client`` is the caller's name."""

    code: str
    client: str
    future: asyncio.Future[Decision] = field(repr=False)


MAX_PENDING_PAIRINGS = 16
"""At most this many pairing requests wait for the operator at once; one more is answered 429 at once
(issue 27: each waiting request holds a connection and a handler for up to ``--pairing-timeout``)."""


class PairingFull(Exception):
    """:meth:`Pairing.open` refused a request: :data:`MAX_PENDING_PAIRINGS` already wait, or the host is
    shutting down (``closing``)."""

    def __init__(self, closing: bool) -> None:
        super().__init__("the host is shutting down" if closing else "too many pairing requests wait")
        self.closing = closing


class Pairing:
    """Pending pairing requests keyed by code. Runs on the host's event loop only.

    At most :data:`MAX_PENDING_PAIRINGS` wait at once (:class:`PairingFull`). :meth:`close` (the host
    shutting down) answers every waiting request ``shutdown`` at once and refuses new ones, so no pairing
    request holds the host's exit for its window (it took 118 s: issue 27)."""

    def __init__(self, *, auto_approve: bool, timeout_s: float = 120.0) -> None:
        self.auto_approve = auto_approve
        self.timeout_s = timeout_s
        self._pending: dict[str, PairingRequest] = {}
        self._closed = False

    @staticmethod
    def _new_code() -> str:
        raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))
        return f"{raw[:4]}-{raw[4:]}"

    @staticmethod
    def normalise(code: str) -> str:
        """Codes compare case-insensitively with or without the dash (``abcd2345`` == ``ABCD-2345``)."""
        raw = "".join(ch for ch in code.upper() if ch.isalnum())
        return f"{raw[:4]}-{raw[4:]}" if len(raw) == 8 else raw

    def open(self, client: str) -> PairingRequest:
        """Register a request; the caller prints its code and awaits :meth:`wait`. Raises
        :class:`PairingFull` when :data:`MAX_PENDING_PAIRINGS` wait already or the host is closing."""
        if self._closed:
            raise PairingFull(closing=True)
        if sum(1 for r in self._pending.values() if not r.future.done()) >= MAX_PENDING_PAIRINGS:
            raise PairingFull(closing=False)
        loop = asyncio.get_running_loop()
        code = self._new_code()
        while code in self._pending:
            code = self._new_code()
        req = PairingRequest(code, client, loop.create_future())
        self._pending[code] = req
        if self.auto_approve:
            req.future.set_result("approved")
        return req

    async def wait(self, req: PairingRequest) -> Decision:
        """Wait for the operator's decision (or ``timeout`` after ``timeout_s`` seconds)."""
        try:
            return await asyncio.wait_for(asyncio.shield(req.future), self.timeout_s)
        except TimeoutError:
            return "timeout"
        finally:
            self._pending.pop(req.code, None)

    def decide(self, code: str, decision: Literal["approved", "denied"]) -> PairingRequest | None:
        """Resolve the pending request with ``code``; returns it, or None when no such request waits."""
        req = self._pending.get(self.normalise(code))
        if req is None or req.future.done():
            return None
        req.future.set_result(decision)
        return req

    def close(self) -> int:
        """The host is shutting down: every waiting request is answered ``shutdown`` now, and later ones are
        refused (:class:`PairingFull`). Returns how many were waiting."""
        self._closed = True
        waiting = [r for r in self._pending.values() if not r.future.done()]
        for req in waiting:
            req.future.set_result("shutdown")
        return len(waiting)

    def pending(self) -> list[tuple[str, str]]:
        """``[(code, client)]`` of the requests still waiting."""
        return [(r.code, r.client) for r in self._pending.values() if not r.future.done()]
