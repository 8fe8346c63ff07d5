"""Fixtures for engine tests; the helpers live in tests/engine/kit.py."""

from __future__ import annotations

import pytest

from tests.engine.kit import FakeRenderer


@pytest.fixture
def renderer() -> FakeRenderer:
    return FakeRenderer()
