"""``kelpie-gateway install-browser``: get a Chromium the host can launch (issue 34; docs/host.md
"install-browser").

What it does, in order:

1. when :func:`~kelpie_gateway.host.discovery.discover` already finds a browser (the order ``serve`` and
   ``mcp`` use), it says which and where, and does nothing (``--force``: install anyway);
2. ``--with auto`` (the default) picks the way: **apt** when running as root on Debian or Ubuntu with
   ``apt-get`` on ``PATH`` (``apt-get update``, then ``apt-get install -y --no-install-recommends chromium``;
   Ubuntu's package is ``chromium-browser``, which installs the snap), else **Playwright's installer**
   (``python -m playwright install chromium`` of this very environment: no root, into
   ``~/.cache/ms-playwright`` or ``$PLAYWRIGHT_BROWSERS_PATH``). Not root on a Debian/Ubuntu machine: it says
   the exact ``sudo apt-get`` command and tries Playwright's installer instead;
3. the installer's output goes to stderr as it comes (its progress is the user's to see);
4. afterwards it looks again and names the browser found; exit 0. When the installer failed or nothing is
   found, one line says why and what to do instead, exit 1. A download that cannot reach Playwright's
   server (no route, DNS failure, refused, a proxy's refusal) is named as such, with the host it tried.

``--dry-run`` prints the commands it would run and runs none (exit 0). Nothing here raises: every failure
is a message and an exit status.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kelpie_gateway.host.discovery import ROOT_ENV, discover, playwright_browsers_dir

Out = Callable[[str], None]

UNREACHABLE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
    r"getaddrinfo|socket hang up|self.signed certificate|407 Proxy"
)
HOSTNAME = re.compile(r"hostname: '([^']+)'|from https?://([^/\s\x1b]+)")


def _root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def os_release() -> dict[str, str]:
    """``/etc/os-release`` (under ``$KELPIE_GATEWAY_BROWSER_ROOT``) as a dict; empty when unreadable."""
    try:
        text = (_root() / "etc" / "os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return fields


def apt_package() -> str | None:
    """The Debian/Ubuntu package that installs Chromium here, or None when this is neither."""
    release = os_release()
    family = {release.get("ID", ""), *release.get("ID_LIKE", "").split()}
    if "ubuntu" in family:
        return "chromium-browser"
    if "debian" in family:
        return "chromium"
    return None


def apt_commands(package: str) -> list[list[str]]:
    return [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", package]]


def playwright_command() -> list[str]:
    return [sys.executable, "-m", "playwright", "install", "chromium"]


def _shown(command: Sequence[str]) -> str:
    return " ".join(command)


def _stream(command: Sequence[str], out: Out, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``command``, each output line to ``out`` as it comes (prefixed), and return (status, output)."""
    try:
        proc = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=env,
        )
    except OSError as exc:
        return 127, f"{type(exc).__name__}: {exc}"
    seen: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        seen.append(line)
        out(f"  | {line}")
    return proc.wait(), "\n".join(seen)


def _playwright_failure(output: str) -> str:
    """Why Playwright's installer failed, in one clause."""
    if UNREACHABLE.search(output):
        hosts = [a or b for a, b in HOSTNAME.findall(output)]
        where = f" ({hosts[0]})" if hosts else ""
        return f"this machine cannot reach Playwright's download server{where}"
    errors = [line.strip() for line in output.splitlines() if line.strip().startswith("Error")]
    return errors[-1][:200] if errors else "it exited with an error (its output is above)"


def run(*, method: str = "auto", dry_run: bool = False, force: bool = False, out: Out | None = None) -> int:
    """``install-browser``: see the module docstring. ``method``: ``auto``, ``apt`` or ``playwright``.
    Returns the exit status (0: a browser is there; 1: none could be installed; 2: ``--with apt`` where apt
    cannot run)."""
    say: Out = out or (lambda text: print(text, file=sys.stderr, flush=True))
    found = discover(None)
    if found.path is not None and not force:
        say(
            f"a browser is already there: {found.path} ({found.source}); nothing to do (--force installs anyway)"
        )
        return 0
    root = os.geteuid() == 0
    package = apt_package()
    apt = shutil.which("apt-get")
    sudo = f"sudo apt-get install chromium{'-browser' if package == 'chromium-browser' else ''}"
    if method == "apt" and not (package and apt and root):
        why = "not root" if package and apt else "this is not Debian or Ubuntu with apt-get"
        say(f"error: --with apt cannot run here ({why}); as root: `{sudo}`, or --with playwright")
        return 2
    use_apt = method == "apt" or (method == "auto" and bool(package and apt and root))
    if method == "auto" and package and apt and not root:
        say(
            f"not root, so no apt-get: as root, `{sudo}` installs Debian's Chromium; trying Playwright's "
            "installer instead (no root needed)"
        )
    if use_apt:
        assert package is not None
        commands = apt_commands(package)
    else:
        commands = [playwright_command()]
    if dry_run:
        for command in commands:
            say(f"would run: {_shown(command)}")
        return 0
    if not use_apt and importlib.util.find_spec("playwright") is None:
        say(
            "error: Playwright is not installed in this environment: pip install 'kelpie-browser-gateway[host]' "
            f"first{f', or as root: `{sudo}`' if package else ''}"
        )
        return 1
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"} if use_apt else None
    for command in commands:
        say(f"running: {_shown(command)}")
        status, output = _stream(command, say, env)
        if status != 0:
            if use_apt:
                say(
                    f"error: `{_shown(command)}` exited {status}; the Chromium of Playwright's installer needs "
                    f"no root: kelpie-gateway install-browser --with playwright"
                )
            else:
                instead = f"as root, `{sudo}`; or " if package else ""
                say(
                    f"error: Playwright's installer failed: {_playwright_failure(output)}; instead: {instead}"
                    "install Chromium or Google Chrome another way and point --browser-executable or "
                    "CHROME_PATH at it"
                )
            return 1
    found = discover(None)
    if found.path is None:
        where = playwright_browsers_dir() if not use_apt else "the system paths"
        say(
            f"error: the installer succeeded but no browser is found (looked at {found.where_looked()}; "
            f"it installed into {where})"
        )
        return 1
    say(f"installed: {found.path} ({found.source}); `kelpie-gateway doctor` checks it starts")
    return 0
