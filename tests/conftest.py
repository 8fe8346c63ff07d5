"""Session-wide isolation: hosts started by the tests keep their pairing file (and the CLI its token file)
in a temporary directory, never in the developer's ``~/.local/state`` / ``~/.config``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_kelpie_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("kelpie-state")
    saved = {k: os.environ.get(k) for k in ("KELPIE_GATEWAY_PAIRINGS", "XDG_STATE_HOME", "XDG_CONFIG_HOME")}
    os.environ["KELPIE_GATEWAY_PAIRINGS"] = str(base / "pairings.json")
    os.environ["XDG_STATE_HOME"] = str(base / "state")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    try:
        yield base
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
