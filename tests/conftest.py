"""Shared fixtures: a fresh in-memory Capture per test; nothing global is touched.

Tests of the real recordings in ``../shared`` (beside the repository; not part of it) carry
``@pytest.mark.shared`` (or a module's ``pytestmark``): they are skipped, with the reason, when
``../shared`` is absent (a fresh clone). With ``OTEL_TOOLCHAIN_REQUIRE_SHARED=1`` (``.ci/run`` sets
it), a ``../shared`` that is present but unreadable is a failure, not a skip, so CI never passes
by skipping what it was given.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_toolchain.testing import Capture

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REQUIRE_SHARED_ENV = "OTEL_TOOLCHAIN_REQUIRE_SHARED"

# A hook command run by a test would otherwise leave a warm hook server behind for ten minutes: tests
# that want one (tests/hooks/test_warm_server.py, the live Claude Code test) switch it on and end it.
os.environ.setdefault("OTEL_TOOLCHAIN_HOOK_SERVER", "off")


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


RECORDINGS = REPO / "tests" / "data" / "recordings"


@pytest.fixture(scope="session")
def codex_home_with_rollouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``CODEX_HOME`` holding the rollout of every Codex recording that kept one, where Codex puts it
    (``sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``), so its stream is read as on the machine
    that ran it (verdicts.toml: ``read_with_rollout``)."""
    home = tmp_path_factory.mktemp("codex-home")
    folder = home / "sessions" / "2026" / "12" / "02"
    folder.mkdir(parents=True)
    for verdict in tomllib.loads((RECORDINGS / "verdicts.toml").read_text()).values():
        if verdict.get("read_with_rollout"):
            first = json.loads((RECORDINGS / verdict["file"]).read_text().splitlines()[0])
            (folder / f"rollout-2026-12-02T09-00-00-{first['thread_id']}.jsonl").write_bytes(
                (RECORDINGS / verdict["session"]).read_bytes())
    return home
