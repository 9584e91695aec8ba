"""Shared fixtures: a fresh in-memory Capture per test; nothing global is touched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_toolchain.testing import Capture

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def capture() -> Iterator[Capture]:
    cap = Capture()
    yield cap
    cap.shutdown()
