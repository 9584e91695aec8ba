"""The good recordings the hostile tests corrupt, and how they read what a reader made of them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from otel_toolchain.harnesses.events import ToolFinished

DATA = Path(__file__).parents[2] / "data" / "recordings"
STREAMS = {
    "claude-code": DATA / "claude" / "pytest_fail.jsonl",
    "codex": DATA / "codex" / "pytest_fail.jsonl",
    "opencode": DATA / "opencode" / "pytest_fail.jsonl",
    "pi": DATA / "pi" / "pytest_fail.jsonl",
}
"""One recorded stream per harness, with failing and passing tool calls."""


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def finished(events: Sequence[object]) -> list[tuple[str, str]]:
    """(call id, tool) of every finished call, in order."""
    return [(e.call_id, e.tool) for e in events if isinstance(e, ToolFinished)]
