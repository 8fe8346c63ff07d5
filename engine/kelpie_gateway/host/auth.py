"""Bearer tokens and operator-approved pairing for the reference host (ARCHITECTURE.md, transport rules).

* A token is 256 random bits (``secrets.token_urlsafe(32)``), handed out exactly once by ``POST /v1/pair``.
* The host keeps only the SHA-256 digest of each token; lookups compare the digest of the presented bearer
  against every stored digest with :func:`hmac.compare_digest` (constant time, no early exit).
* Revocation is by token: ``DELETE /v1/pair`` removes exactly the digest of the bearer that asked.
* Tokens live in memory only: restarting the host forgets every pairing (clients pair again).

Pairing: each ``POST /v1/pair`` creates a :class:`PairingRequest` with a short random code that the host
prints; the operator approves it (``kelpie-gateway pair approve CODE``) or denies it, or it times out.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

Decision = Literal["approved", "denied", "timeout"]

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed by a human


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


@dataclass
class _Entry:
    client: str
    issued: float


class TokenStore:
    """SHA-256 digests of the issued bearer tokens, with the client name each was issued to."""

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}

    def issue(self, client: str) -> str:
        """Create a new 256-bit token for ``client``; returns it (the only time it exists in clear)."""
        token = secrets.token_urlsafe(32)
        self._entries[_digest(token)] = _Entry(client, time.time())
        return token

    def lookup(self, token: str | None) -> str | None:
        """Return the client name of a valid bearer, else None. Constant time per stored digest."""
        if not token:
            return None
        presented = _digest(token)
        found: str | None = None
        for stored, entry in list(self._entries.items()):
            if hmac.compare_digest(stored, presented):
                found = entry.client
        return found

    def revoke(self, token: str) -> bool:
        """Forget exactly this token. Returns whether it was valid."""
        presented = _digest(token)
        match: bytes | None = None
        for stored in list(self._entries):
            if hmac.compare_digest(stored, presented):
                match = stored
        if match is None:
            return False
        del self._entries[match]
        return True

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class PairingRequest:
    """One pending ``POST /v1/pair``: ``code`` is shown to the operator, ``client`` is the caller's name."""

    code: str
    client: str
    future: asyncio.Future[Decision] = field(repr=False)


class Pairing:
    """Pending pairing requests keyed by code. Runs on the host's event loop only."""

    def __init__(self, *, auto_approve: bool, timeout_s: float = 120.0) -> None:
        self.auto_approve = auto_approve
        self.timeout_s = timeout_s
        self._pending: dict[str, PairingRequest] = {}

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
        """Register a request; the caller prints its code and awaits :meth:`wait`."""
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

    def pending(self) -> list[tuple[str, str]]:
        """``[(code, client)]`` of the requests still waiting."""
        return [(r.code, r.client) for r in self._pending.values() if not r.future.done()]
