"""Which Chromium the host launches (a light module: no Playwright, no reader; ``doctor`` uses it too)."""

from __future__ import annotations

import os
import shutil

DEFAULT_CHROMIUM = "/usr/bin/chromium"


def find_chromium(explicit: str | None) -> str | None:
    """The executable to launch: ``explicit``, else ``$CHROME_PATH`` when set, else ``/usr/bin/chromium`` if
    present, else None (Playwright's managed browser)."""
    if explicit:
        return explicit
    if os.environ.get("CHROME_PATH"):
        return os.environ["CHROME_PATH"]
    if shutil.which(DEFAULT_CHROMIUM):
        return DEFAULT_CHROMIUM
    return None
