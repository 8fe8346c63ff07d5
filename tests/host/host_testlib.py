"""Helpers for the reference-host tests: one host child process per test module (and per gateway mode).

``browser_host`` runs ``kelpie-gateway serve`` with real headless Chromium on the fixture site, once through
the Python API and once through the C library (``--via-abi``); pytest groups the tests by mode so only one
Chromium runs at a time.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))

from kelpie_gateway.host.abi import default_library  # noqa: E402
from kelpie_gateway.host.launch import HostProcess  # noqa: E402


class Host:
    """A running host plus a paired token and small HTTP helpers."""

    def __init__(self, process: HostProcess, token: str, mode: str) -> None:
        self.process = process
        self.url = process.url
        self.port = process.port
        self.token = token
        self.mode = mode

    def pair(self, client: str = "kelpie-test") -> str:
        return self.process.pair(client)

    def post(
        self, path: str, body: Any, token: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        bearer = self.token if token is None else token
        if bearer:
            hdrs["Authorization"] = f"Bearer {bearer}"
        request = urllib.request.Request(self.url + path, data=data, headers=hdrs, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, (json.loads(raw) if raw else None)

    def call(
        self, method: str, params: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        status, envelope = self.post(
            "/v1/browser-control", {"version": 1, "id": 1, "method": method, "params": params or {}}, token
        )
        assert status == 200, (status, envelope)
        return envelope

    def site(self, page: str) -> str:
        """URL of a fixture page: the site's address is printed by the host at start-up."""
        line = self.process.wait_for_line("site ") or ""
        return line.rsplit(" at ", 1)[1].rstrip("/") + "/" + page


def start_host(args: list[str], mode: str) -> HostProcess:
    extra = list(args)
    if mode == "abi":
        lib = default_library()
        assert lib.exists(), f"--via-abi needs the C library at {lib} (tools/dev setup builds it)"
        extra.append("--via-abi")
    process = HostProcess(extra)
    process.start()
    return process
