"""Shared fixtures: a fresh in-memory Capture per test; nothing global is touched.

Tests of the real recordings in ``../shared`` (beside the repository; not part of it) carry
``@pytest.mark.shared`` (or a module's ``pytestmark``): they are skipped, with the reason, when
``../shared`` is absent (a fresh clone). With ``OTEL_TOOLCHAIN_REQUIRE_SHARED=1`` (``.ci/run`` sets
it), a ``../shared`` that is present but unreadable is a failure, not a skip, so CI never passes
by skipping what it was given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_toolchain.testing import Capture

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REQUIRE_SHARED_ENV = "OTEL_TOOLCHAIN_REQUIRE_SHARED"


def shared_problem() -> str | None:
    """Why the ``shared``-marked tests cannot run here, or None."""
    if not SHARED.exists():
        return f"{SHARED} is absent: the real recordings these tests read live there, outside the repository"
    if not (SHARED.is_dir() and os.access(SHARED, os.R_OK | os.X_OK)):
        return f"{SHARED} is present but not a readable folder"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "shared: reads the real recordings in ../shared (skipped when it is absent)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("shared") is None:
        return
    problem = shared_problem()
    if problem is None:
        return
    if os.environ.get(REQUIRE_SHARED_ENV) == "1" and SHARED.exists():
        pytest.fail(f"{REQUIRE_SHARED_ENV}=1: {problem}", pytrace=False)
    pytest.skip(problem)


@pytest.fixture
def capture() -> Iterator[Capture]:
    cap = Capture()
    yield cap
    cap.shutdown()
