"""Hostile lines never crash a reader: each is one counted bad line with its number, the rest still read.

Real readers, real recordings from tests/data/recordings; nothing is faked.
"""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest
from hostile_data import DATA, STREAMS, finished, lines_of
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from otel_toolchain._input.lines import MAX_DEPTH, MAX_LINE_BYTES, LongLine, decode_line, split_lines
from otel_toolchain.cli.replay import replay_lines
from otel_toolchain.harnesses.detect import detect_format
from otel_toolchain.harnesses.events import BadLine, ToolStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.runs import runs_in
from otel_toolchain.recorder import AgentRecorder

STORES = {"codex": DATA / "codex" / "pytest_fail.session.jsonl"}
DEEP = "[" * 1000 + "]" * 1000
HOSTILE = [
    '{"type": ' + DEEP + "}",
    '{"type": {}}',
    '{"type": "result", "usage": {"input_tokens": 1e400}}',
    '{"type": "result", "usage": {"input_tokens": NaN}}',
    '{"type": "result", "total_cost_usd": Infinity}',
    '{"type": "x", "n": ' + "9" * 5000 + "}",
    '{"type": "step_finish", "timestamp": 1e300, "part": {"tokens": {"input": 1e300}}}',
    '{"type": "tool_use", "timestamp": "soon", "part": {"tool": {}, "state": []}}',
]


@pytest.mark.parametrize("harness", sorted(STREAMS))
def test_hostile_lines_are_counted_bad_lines_and_the_calls_are_still_read(harness: str) -> None:
    good = lines_of(STREAMS[harness])
    expected = finished(list(read_stream(good)))
    assert expected
    mixed = [*good[:2], *HOSTILE, *good[2:]]
    events = list(read_stream(mixed, harness))
    bad = [e for e in events if isinstance(e, BadLine)]
    assert finished(events) == expected
    hostile_numbers = set(range(3, 3 + len(HOSTILE)))
    assert {b.line_no for b in bad} <= hostile_numbers
    assert {b.line_no for b in bad if b.text.startswith('{"type": [')} == {3}  # the 1,000-deep line


@pytest.mark.parametrize("harness", sorted(STREAMS))
def test_hostile_first_lines_do_not_break_detection(harness: str) -> None:
    good = lines_of(STREAMS[harness])
    assert detect_format(["{", *HOSTILE[:6], *good[:2]])[0] == harness  # type: ignore[index]
    events = list(read_stream([*HOSTILE[:2], *good]))
    assert finished(events) == finished(list(read_stream(good)))
    assert [b.line_no for b in events if isinstance(b, BadLine)] == [1, 2]


def test_deep_nesting_is_a_bad_line_at_the_limit() -> None:
    assert decode_line("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(ValueError, match="nested deeper"):
        decode_line("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(ValueError, match="nested deeper"):
        decode_line(DEEP * 3)


@pytest.mark.parametrize("text", ["[1e400]", "[-1e400]", "[NaN]", "[Infinity]", "[-Infinity]", "[" + "1" * 40 + "]"])
def test_numbers_that_are_not_finite_are_bad_lines(text: str) -> None:
    with pytest.raises(ValueError):
        decode_line(text)


def test_lone_surrogates_are_replaced_so_every_string_is_utf8() -> None:
    value = decode_line('{"a\\udc80": ["x\\ud800y", {"k": "\\uDFFF"}], "ok": "\\ud83d\\ude00"}')
    assert value == {"a\ufffd": ["x\ufffdy", {"k": "\ufffd"}], "ok": "\U0001f600"}
    json.dumps(value).encode("utf-8")
    assert decode_line('"\\ud800"') == "\ufffd"


def test_a_surrogate_in_a_tool_name_reaches_the_events_as_valid_utf8() -> None:
    lines = [line.replace('"name":"Bash"', '"name":"Ba\\udc80sh"') for line in lines_of(STREAMS["claude-code"])]
    tools = {e.tool for e in read_stream(lines) if isinstance(e, ToolStarted)}
    assert "Ba\ufffdsh" in tools
    for tool in tools:
        tool.encode("utf-8")


def test_a_line_longer_than_the_limit_is_one_bad_line_and_the_next_is_read() -> None:
    stream = io.BytesIO(b'{"a":1}\n' + b"x" * 5000 + b'\n{"b":2}\n')
    lines = list(split_lines(stream, limit=1000))
    assert lines[0] == '{"a":1}' and lines[2] == '{"b":2}' and len(lines) == 3
    assert isinstance(lines[1], LongLine) and lines[1].size == 5000 and lines[1] == "x" * 200
    with pytest.raises(ValueError, match="longer than the limit"):
        decode_line(lines[1])


def test_splitting_a_50mb_line_is_linear() -> None:
    """Chunk-by-chunk concatenation made this quadratic (28 s); counted as reads, not timed."""
    reads = []

    class Counting(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            reads.append(len(chunk))
            return chunk

    size = 50 << 20
    lines = list(split_lines(Counting(b"y" * size + b"\nz"), limit=MAX_LINE_BYTES))
    assert [len(line) for line in lines] == [size, 1]
    assert sum(reads) == size + 2


def test_100mb_without_a_newline_is_held_in_bounded_memory() -> None:
    """The stream is generated, never held: a reader that kept the line would hold 100 MB."""
    class Endless(io.RawIOBase):
        left = 100 << 20

        def read(self, size: int = -1) -> bytes:
            n = min(size, self.left)
            self.left -= n
            return b"q" * n

    tracemalloc.start()
    lines = list(split_lines(Endless(), limit=MAX_LINE_BYTES))  # type: ignore[arg-type]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(lines) == 1 and isinstance(lines[0], LongLine) and lines[0].size == 100 << 20
    assert peak < MAX_LINE_BYTES + (8 << 20)


@pytest.mark.parametrize("harness", ["codex", "pi"])
def test_a_bom_on_line_1_keeps_the_session_id(tmp_path: Path, harness: str) -> None:
    good = STREAMS[harness].read_bytes()
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good)
    (tmp_path / "plain.jsonl").write_bytes(good)
    ids = []
    for run in runs_in([tmp_path / "bom.jsonl", tmp_path / "plain.jsonl"]):
        events = list(run.open().events)
        ids.append({getattr(e, "session_id", None) for e in events} - {None})
        assert not [e for e in events if isinstance(e, BadLine)]
    assert ids[0] == ids[1] and ids[0]


def test_the_codex_store_reader_counts_broken_lines(tmp_path: Path) -> None:
    lines = lines_of(STORES["codex"])
    cut = [i for i, line in enumerate(lines) if '"payload":{"type":"reasoning"' in line or '"token_count"' in line]
    assert cut
    broken = list(lines)
    broken[cut[0]] = lines[cut[0]][: len(lines[cut[0]]) // 2]
    (tmp_path / "rollout.jsonl").write_text("\n".join(broken) + "\n", encoding="utf-8")
    (run,) = runs_in([tmp_path / "rollout.jsonl"])
    events = list(run.open().events)
    assert [e.line_no for e in events if isinstance(e, BadLine)] == [cut[0] + 1]
    assert finished(events) == finished(list(next(iter(runs_in([STORES["codex"]]))).open().events))


class _Open(SpanProcessor):
    """Counts spans started and not ended: the leak the test looks for."""

    def __init__(self) -> None:
        self.open: set[int] = set()

    def on_start(self, span: Span, parent_context: object = None) -> None:
        self.open.add(span.get_span_context().span_id)

    def on_end(self, span: ReadableSpan) -> None:
        self.open.discard(span.get_span_context().span_id)  # type: ignore[union-attr]


@pytest.mark.parametrize("harness", ["claude-code", "pi"])
def test_a_duplicated_tool_start_line_leaks_no_span(harness: str) -> None:
    marker = '"tool_use"' if harness == "claude-code" else '"tool_execution_start"'
    lines = lines_of(STREAMS[harness])
    first = next(i for i, line in enumerate(lines) if marker in line)
    doubled = [*lines[: first + 1], lines[first], *lines[first + 1:]]
    provider = TracerProvider()
    spans = _Open()
    provider.add_span_processor(spans)
    outcomes = replay_lines(doubled, AgentRecorder(provider), source="doubled")
    plain = replay_lines(lines, AgentRecorder(TracerProvider()), source="plain")
    assert spans.open == set()
    assert [o.calls for o in outcomes] == [o.calls for o in plain]
