"""``analyze`` on the real recorded runs in ../shared: streams and session stores, all healthy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_toolchain.analyze import Labels, analyze, render_text, to_dict

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
pytestmark = pytest.mark.shared  # every test here reads ../shared
REAL_STREAMS = SHARED / "streams" / "real"
SESSIONS = SHARED / "sessions"


def stream_calls() -> int:
    """tool_use blocks in the real stream files, counted here from the raw lines."""
    total = 0
    for path in sorted(REAL_STREAMS.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line) if line.strip() else {}
            if obj.get("type") == "assistant":
                total += sum(block.get("type") == "tool_use" for block in obj["message"]["content"])
    return total


def test_every_real_file_is_read_and_nothing_repeats() -> None:
    data = to_dict(analyze([REAL_STREAMS, SESSIONS]))
    assert data["errors"] == [] and data["bad_lines"] == 0
    assert data["inputs"] == {"claude-code store": 12, "claude-code stream": 28, "codex store": 5, "pi store": 2}
    session_calls = 152 + 98 + 27 + 5 + (7 + 1 + 6) + (123 + 84 + 57 + 34 + 16) + (449 + 373)
    assert data["calls"] == stream_calls() + session_calls
    # INDEX.md: all healthy, no call repeats with the same result twice in a row
    assert data["distributions"]["identical_in_a_row"]["max"] == 1
    assert data["distributions"]["repeats"]["max"] == 1
    assert data["stopped_by_manifest"]["turns"] == 0
    assert data["suggested_limit"] is None


def test_real_files_labelled_healthy_give_a_floor_and_no_ceiling(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    names = sorted({path.name for path in REAL_STREAMS.rglob("*.jsonl")})
    labels.write_text("".join(f"{name},healthy\n" for name in names))
    data = to_dict(analyze([REAL_STREAMS], labels=Labels.load(labels)))
    assert data["labels"]["healthy"] == data["turns"] and data["labels"]["unused"] == []
    assert data["separating_range"] == {"low": 2, "high": None}
    assert data["suggested_limit"]["limit"] == 8 and data["suggested_limit"]["margin_above"] is None


def test_the_text_report_of_the_real_files() -> None:
    text = render_text(analyze([REAL_STREAMS, SESSIONS]))
    assert text.splitlines()[0].startswith("47 runs, ")
    assert "claude-code stream 28" in text and "pi store 2" in text
    assert "No turn repeats a cycle 15 times" in text
