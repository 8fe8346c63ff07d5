"""Which Chromium or Chrome the host launches: one order, used by ``serve``, ``mcp``, ``demo`` and ``doctor``
alike (issue 34; docs/host.md "Which browser"). A light module: the standard library only, so ``tools/dev``
runs it as a script before any virtualenv exists (``python3 discovery.py`` prints what it found).

The order (the first that answers wins):

1. ``--browser-executable PATH`` — taken as given, never second-guessed;
2. ``$CHROME_PATH`` when set — taken as given too;
3. the Debian/Ubuntu packages: ``/usr/bin/chromium``, ``/usr/bin/chromium-browser``;
4. Ubuntu's snap: ``/snap/bin/chromium``;
5. Google Chrome stable: ``/opt/google/chrome/chrome``, then ``google-chrome-stable`` and ``google-chrome``
   on ``$PATH``;
6. ``chromium`` and ``chromium-browser`` on ``$PATH`` (a build of your own, Homebrew on Linux, Nix …);
7. Playwright's managed browsers (``python -m playwright install chromium``,
   ``kelpie-gateway install-browser``): ``$PLAYWRIGHT_BROWSERS_PATH`` when set (``0``: inside the installed
   ``playwright`` package), else ``$XDG_CACHE_HOME/ms-playwright`` (default ``~/.cache/ms-playwright``);
   ``chromium-REVISION/chrome-linux64/chrome`` (``chrome-linux-arm64``, older ``chrome-linux``), the newest
   revision first; last, its headless-only shell
   (``chromium_headless_shell-REVISION/chrome-headless-shell-linux64/chrome-headless-shell``).

A candidate of 3–7 counts when it is an executable regular file (symlinks followed). The fixed absolute
paths of 3–5 are looked for under ``$KELPIE_GATEWAY_BROWSER_ROOT`` (default ``/``): tests and packagers use it
to show or hide the system's browsers. When nothing is found the host lets Playwright try its own default
and, when that fails too, says where it looked and what to do (:data:`NO_BROWSER_FIX`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CHROMIUM = "/usr/bin/chromium"
ROOT_ENV = "KELPIE_GATEWAY_BROWSER_ROOT"
"""The directory the fixed system paths are looked for under (default ``/``)."""

SYSTEM_PATHS: tuple[tuple[str, str], ...] = (
    ("Debian/Ubuntu package", "/usr/bin/chromium"),
    ("Debian/Ubuntu package", "/usr/bin/chromium-browser"),
    ("snap", "/snap/bin/chromium"),
    ("Google Chrome stable", "/opt/google/chrome/chrome"),
)
PATH_NAMES: tuple[tuple[str, str], ...] = (
    ("Google Chrome stable", "google-chrome-stable"),
    ("Google Chrome stable", "google-chrome"),
    ("PATH", "chromium"),
    ("PATH", "chromium-browser"),
)
PLAYWRIGHT_LAYOUTS = ("chrome-linux64/chrome", "chrome-linux-arm64/chrome", "chrome-linux/chrome")
"""Where a ``chromium-REVISION`` folder of Playwright's keeps the executable (newer layouts first)."""
HEADLESS_SHELL = ("chromium_headless_shell", "chrome-headless-shell-linux64/chrome-headless-shell")
"""Playwright's headless-only build (``playwright install --only-shell``): the last resort, headless only."""

INSTALL_COMMAND = "kelpie-gateway install-browser"
NO_BROWSER_FIX = (
    f"run `{INSTALL_COMMAND}` (as root on Debian/Ubuntu it runs apt-get install chromium; otherwise "
    "Playwright's installer), or point --browser-executable or CHROME_PATH at a Chromium or Chrome binary"
)
"""The one-sentence fix every "no browser" message ends with (MCP error, stderr, ``doctor``)."""


@dataclass(frozen=True)
class Discovery:
    """What :func:`discover` found: ``path`` (None: nothing), ``source`` (how it was found: one of the
    order's labels, e.g. ``"--browser-executable"``, ``"Debian/Ubuntu package"``, ``"Playwright's managed
    browsers"``) and ``looked`` (every place tried before and including the one that answered, in order)."""

    path: str | None
    source: str
    looked: tuple[str, ...] = field(default=())

    def where_looked(self) -> str:
        """``looked`` as one line (for a message)."""
        return ", ".join(self.looked)


def _root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def _system_path(path: str) -> Path:
    return _root() / path.lstrip("/")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _revision(folder: Path, kind: str = "chromium") -> int:
    match = re.fullmatch(rf"{kind}-(\d+)", folder.name)
    return int(match.group(1)) if match else -1


def playwright_browsers_dir() -> Path | None:
    """Where Playwright keeps (and ``playwright install`` puts) its browsers: ``$PLAYWRIGHT_BROWSERS_PATH``
    (``0``: ``.local-browsers`` inside the installed package; None when the package is not installed), else
    ``$XDG_CACHE_HOME/ms-playwright`` (default ``~/.cache/ms-playwright``)."""
    chosen = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    if chosen == "0":
        import importlib.util

        spec = importlib.util.find_spec("playwright")
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).parent / "driver" / "package" / ".local-browsers"
    if chosen:
        return Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ms-playwright"


def playwright_chromium(kind: str = "chromium") -> tuple[str | None, str]:
    """The newest Chromium of Playwright's managed browsers (or None) and the pattern looked for; ``kind``
    ``chromium_headless_shell``: its headless shell instead."""
    base = playwright_browsers_dir()
    if base is None:
        return None, "PLAYWRIGHT_BROWSERS_PATH=0 (playwright not installed)"
    layouts = PLAYWRIGHT_LAYOUTS if kind == "chromium" else HEADLESS_SHELL[1:]
    pattern = f"{base}/{kind}-*/" + (f"{{{','.join(layouts)}}}" if len(layouts) > 1 else layouts[0])
    try:
        found = [p for p in base.glob(f"{kind}-*") if _revision(p, kind) >= 0]
    except OSError:
        return None, pattern
    for folder in sorted(found, key=lambda p: _revision(p, kind), reverse=True):
        for layout in layouts:
            if _executable(folder / layout):
                return str(folder / layout), pattern
    return None, pattern


def discover(explicit: str | None = None) -> Discovery:
    """The browser to launch, by the module docstring's order. Never raises; reads only the environment and
    the file system (no browser is started)."""
    if explicit:
        return Discovery(explicit, "--browser-executable", ("--browser-executable",))
    chrome_path = os.environ.get("CHROME_PATH")
    if chrome_path:
        return Discovery(chrome_path, "CHROME_PATH", ("CHROME_PATH",))
    looked = ["--browser-executable (not given)", "CHROME_PATH (not set)"]
    for source, path in SYSTEM_PATHS:
        full = _system_path(path)
        looked.append(str(full))
        if _executable(full):
            return Discovery(str(full), source, tuple(looked))
    search = os.environ.get("PATH", os.defpath)
    for source, name in PATH_NAMES:
        looked.append(f"{name} on PATH")
        found = shutil.which(name, path=search)
        if found:
            return Discovery(found, source, tuple(looked))
    found_pw, pattern = playwright_chromium()
    looked.append(pattern)
    if found_pw:
        return Discovery(found_pw, "Playwright's managed browsers", tuple(looked))
    shell, pattern = playwright_chromium(HEADLESS_SHELL[0])
    looked.append(pattern)
    if shell:
        return Discovery(shell, "Playwright's headless shell (headless only)", tuple(looked))
    return Discovery(None, "nothing found", tuple(looked))


def find_chromium(explicit: str | None) -> str | None:
    """The executable to launch (:func:`discover`'s ``path``); None: let Playwright try its own default."""
    return discover(explicit).path


def no_browser_message(found: Discovery) -> str:
    """One sentence for "no browser": where the host looked and :data:`NO_BROWSER_FIX`."""
    return f"no Chromium or Chrome found (looked at {found.where_looked()}): {NO_BROWSER_FIX}"


if (
    __name__ == "__main__"
):  # `python3 discovery.py [EXPLICIT]`: print the path (exit 0) or where it looked (1)
    result = discover(sys.argv[1] if len(sys.argv) > 1 else None)
    if result.path is None:
        print(no_browser_message(result), file=sys.stderr)
        sys.exit(1)
    print(result.path)
