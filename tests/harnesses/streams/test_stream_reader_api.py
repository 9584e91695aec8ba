"""The reader API across harnesses: choosing a reader, tolerance, strictness and cut streams."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import otel_toolchain.harnesses.streams as streams
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.detect import HARNESSES, detect_harness
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import (
    BadLine,
    ClaudeCodeReader,
    CodexReader,
    Event,
    OpenCodeReader,
    PiReader,
    StreamReader,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    reader_for,
)

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
pytestmark = pytest.mark.shared  # every test here reads ../shared
SAMPLES = {
    "claude-code": SHARED / "streams" / "samples" / "claude-code.jsonl",
    "codex": SHARED / "streams" / "samples" / "codex.jsonl",
    "opencode": SHARED / "streams" / "samples" / "opencode.jsonl",
    "pi": SHARED / "streams" / "samples" / "pi.jsonl",
}
REAL_022 = SHARED / "streams" / "real" / "claude-code" / "lead__tasks__task-022__transcript.jsonl"


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def replay(lines: list[str], harness: str = "auto") -> list[Event]:
    return list(read_stream(lines, harness, clock=lambda: 0))


def test_public_names_are_sorted_and_exported() -> None:
    assert streams.__all__ == sorted(streams.__all__)
    assert all(hasattr(streams, name) for name in streams.__all__)


def test_reader_for_each_name_and_an_unknown_one() -> None:
    classes = {"claude-code": ClaudeCodeReader, "codex": CodexReader, "opencode": OpenCodeReader, "pi": PiReader}
    assert tuple(sorted(classes)) == HARNESSES
    for name, cls in classes.items():
        reader: StreamReader = reader_for(name)
        assert type(reader) is cls and reader.harness == name
    with pytest.raises(ValueError, match=r"'gemini'.*claude-code, codex, opencode, pi"):
        reader_for("gemini")


def test_read_stream_detects_the_harness_or_says_it_cannot() -> None:
    for harness, path in SAMPLES.items():
        first = replay(lines_of(path))[0]
        assert isinstance(first, TurnStarted) and first.harness == harness
    assert replay([]) == [] and replay(["", "  "]) == []
    with pytest.raises(StreamError, match="not a stream of any of"):
        replay(['{"type":"mystery"}'])


def test_default_replay_clock_is_one_time_for_the_whole_stream() -> None:
    events = list(read_stream(lines_of(SAMPLES["codex"])))
    finished = [e for e in events if isinstance(e, ToolFinished)]
    times = {e.time_ns for e in events if isinstance(e, (TurnStarted, ToolStarted, TurnEnded))}
    assert len(times | {e.start_ns for e in finished} | {e.end_ns for e in finished}) == 1


@pytest.mark.parametrize("harness", sorted(SAMPLES))
def test_unknown_event_types_are_skipped(harness: str) -> None:
    lines = lines_of(SAMPLES[harness])
    noisy = [lines[0], '{"type":"brand_new_event","data":{"x":1}}', *lines[1:]]
    shifted = [e.__class__.__name__ for e in replay(noisy, harness)]
    assert shifted == [e.__class__.__name__ for e in replay(lines, harness)]


@pytest.mark.parametrize("harness", sorted(SAMPLES))
def test_a_malformed_line_is_a_bad_line_and_the_rest_still_reads(harness: str) -> None:
    lines = lines_of(SAMPLES[harness])
    broken = [*lines[:2], "x" * 300, "[1, 2]", '{"no_type": true}', *lines[2:]]
    events = replay(broken, harness)
    assert [(b.line_no, b.reason, len(b.text)) for b in events if isinstance(b, BadLine)] == [
        (3, "not JSON", 200), (4, "not a JSON object", 6), (5, "no 'type' field", 17)]
    clean = replay(lines, harness)
    assert Counter(type(e) for e in events if not isinstance(e, BadLine)) == Counter(type(e) for e in clean)


@pytest.mark.parametrize("harness", sorted(SAMPLES))
def test_strict_raises_stream_error_with_source_and_line(harness: str) -> None:
    lines = lines_of(SAMPLES[harness])
    with pytest.raises(StreamError) as caught:
        list(read_stream([*lines[:2], "oops", *lines[2:]], harness, strict=True, source="run.jsonl"))
    assert (caught.value.source, caught.value.line_no) == ("run.jsonl", 3)
    reader = reader_for(harness, strict=True)
    with pytest.raises(StreamError, match="-:7: not JSON"):
        reader.feed("{", 7, 0)


@pytest.mark.parametrize(
    "path", [*SAMPLES.values(), REAL_022], ids=[*SAMPLES, "task-022"],
)
def test_every_cut_of_a_stream_closes_well_formed(path: Path) -> None:
    """Cut after every line: each started call finishes once, and turns are balanced and closed."""
    lines = lines_of(path)
    harness = detect_harness(lines[:5])
    assert harness is not None
    for cut in range(1, len(lines) + 1):
        events = replay(lines[:cut], harness)
        open_calls: set[str] = set()
        depth = 0
        for event in events:
            assert not isinstance(event, BadLine)
            if isinstance(event, TurnStarted):
                assert depth == 0
                depth = 1
            elif isinstance(event, TurnEnded):
                assert depth == 1 and not open_calls
                depth = 0
            elif isinstance(event, ToolStarted):
                assert depth == 1 and event.call_id not in open_calls
                open_calls.add(event.call_id)
            elif isinstance(event, ToolFinished):
                open_calls.remove(event.call_id)
        assert depth == 0 and not open_calls
        ended = [e for e in events if isinstance(e, TurnEnded)]
        interrupted = [e for e in events if isinstance(e, ToolFinished) and e.error_type == "interrupted"]
        if interrupted:
            assert ended and ended[-1].is_error
