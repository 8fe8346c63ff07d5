"""``kelpie-gateway doctor``: is this machine ready to run the host? (issue 34; docs/host.md "doctor").

One line per check — ``ok``, ``FAIL`` or ``warn`` — and, for each that is not ``ok``, the one thing to do.
Checks: the Python version, the browser the host would launch (the same order as ``serve`` and ``mcp``:
:mod:`kelpie_gateway.host.discovery`), started once with ``--version``, named with where it was found (or
every place looked at); the reader bundles (built and current, or assembled from the
packaged sources); the C library (``warn`` only: just ``--via-abi`` and the bindings need it); the pairing
file (readable, private, valid). Exit status 1 when a check failed, else 0.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kelpie_gateway.host.discovery import NO_BROWSER_FIX

Status = Literal["ok", "FAIL", "warn"]

MIN_PYTHON = (3, 11)
BROWSER_PROBE_S = 30.0
"""How long the browser may take to answer ``--version``."""

INSTALL_BROWSER = NO_BROWSER_FIX


@dataclass(frozen=True)
class Check:
    """One line of the report: ``name``, ``status``, what was found (``detail``) and, unless ``ok``, ``fix``."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:4} {self.name}: {self.detail}"
        return f"{text}\n     fix: {self.fix}" if self.fix and self.status != "ok" else text


def check_python() -> Check:
    version = ".".join(str(part) for part in sys.version_info[:3])
    if sys.version_info[:2] < MIN_PYTHON:
        return Check("python", "FAIL", f"{version} at {sys.executable}", "use Python 3.11 or newer")
    return Check("python", "ok", f"{version} at {sys.executable}")


def check_browser(explicit: str | None) -> Check:
    """The browser ``serve`` would launch (:func:`~kelpie_gateway.host.discovery.discover`: the same order),
    started once with ``--version``; the line names where it was found, or every place looked at."""
    from kelpie_gateway.host.discovery import discover

    found = discover(explicit)
    path, where = found.path, found.source
    if path is None:
        return Check(
            "browser",
            "FAIL",
            f"no Chromium or Chrome found; looked at {found.where_looked()}",
            INSTALL_BROWSER,
        )
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return Check("browser", "FAIL", f"{path} ({where}) is not an executable file", INSTALL_BROWSER)
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=BROWSER_PROBE_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("browser", "FAIL", f"{path} ({where}) did not start: {exc}", INSTALL_BROWSER)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return Check(
            "browser", "FAIL", f"{path} ({where}) exited {done.returncode}: {said[0][:200]}", INSTALL_BROWSER
        )
    return Check("browser", "ok", f"{done.stdout.strip()[:100]} at {path} ({where})")


def check_reader() -> Check:
    from kelpie_gateway import bundles_status

    try:
        count, built = bundles_status()
    except (OSError, KeyError, ValueError) as exc:
        return Check(
            "reader bundles",
            "FAIL",
            f"cannot assemble the reader scripts: {exc}",
            "reinstall the package (its js/ sources are incomplete), or run `tools/dev setup` in a checkout",
        )
    how = "built and current" if built == count else f"assembled from the packaged sources ({built} built)"
    return Check("reader bundles", "ok", f"{count} bundles, {how}")


def check_library() -> Check:
    from kelpie_gateway.host.abi import default_library

    path = default_library()
    fix = (
        "only --via-abi and the C/Kotlin/Swift bindings need it: build it with `kelpie-gateway build-abi "
        "--prefix DIR` (or `tools/dev setup` in a checkout) and set KELPIE_GATEWAY_LIBRARY=DIR/lib/"
        "libkelpie_browser_gateway.so"
    )
    if not path.exists():
        return Check("C library", "warn", f"{path} does not exist", fix)
    try:
        ctypes.CDLL(str(path))
    except OSError as exc:
        return Check("C library", "warn", f"{path} does not load: {exc}", fix)
    return Check("C library", "ok", f"{path} loads")


def check_pairings(path: Path | None) -> Check:
    from kelpie_gateway.host.auth import PairingFileError, TokenStore, default_pairings_file

    target = path or default_pairings_file()
    if not target.exists():
        return Check("pairing file", "ok", f"{target} does not exist yet (made at the first pairing)")
    try:
        count = len(TokenStore(target))
    except (PairingFileError, OSError) as exc:
        return Check(
            "pairing file",
            "FAIL",
            str(exc),
            f"move {target} away (pairings start empty) or pass --pairings FILE",
        )
    return Check("pairing file", "ok", f"{target}: {count} active pairing(s)")


def run(explicit_browser: str | None, pairings: Path | None, out: Callable[[str], None] = print) -> int:
    """Run every check, print one line each (and the fix of each failure); 1 when one FAILed, else 0."""
    checks = [
        check_python(),
        check_browser(explicit_browser),
        check_reader(),
        check_library(),
        check_pairings(pairings),
    ]
    for check in checks:
        out(check.line())
    failed = [c.name for c in checks if c.status == "FAIL"]
    out(
        f"{len(failed)} problem(s): {', '.join(failed)}"
        if failed
        else "ready: kelpie-gateway serve / mcp can start"
    )
    return 1 if failed else 0
