"""Session-wide test settings.

* Isolation: hosts started by the tests keep their pairing file (and the CLI its token file) in a temporary
  directory, never in the developer's ``~/.local/state`` / ``~/.config``.
* The Hypothesis profiles (tests/depth.py explains quick and deep) and, in the deep profile, a per-test
  report of examples run, failures and time (tests/deep_report.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.depth import DEEP_EXAMPLES, PROFILE

settings.register_profile("quick")  # Hypothesis defaults; each suite sets its own count
settings.register_profile(
    "deep",
    max_examples=DEEP_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    if PROFILE == "deep":
        from tests import deep_report

        config.pluginmanager.register(deep_report.DeepReport(), "kelpie-deep-report")


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
