"""OpenCode ``run --format json``: one line per call, stream times, failures and how a stream ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import pytest

from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import (
    BadLine,
    Event,
    OpenCodeReader,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)

E = TypeVar("E")
MS = 1_000_000
SAMPLE = Path(__file__).resolve().parents[3].parent / "shared" / "streams" / "samples" / "opencode.jsonl"


def replay(lines: list[str], clock: int = 0) -> list[Event]:
    return list(read_stream(lines, "opencode", clock=lambda: clock))


def of(kind: type[E], events: list[Event]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def envelope(kind: str, timestamp: int | None = None, **fields: Any) -> str:
    record: dict[str, Any] = {"type": kind, "sessionID": "ses_1", **fields}
    if timestamp is not None:
        record["timestamp"] = timestamp
    return json.dumps(record)


def tool(call_id: str, name: str, state: dict[str, Any], timestamp: int | None = None) -> str:
    part = {"id": f"prt_{call_id}", "type": "tool", "tool": name, "callID": call_id, "state": state}
    return envelope("tool_use", timestamp, part=part)


def step_finish(reason: str, timestamp: int = 500) -> str:
    part = {"id": f"prt_f{timestamp}", "type": "step-finish", "reason": reason,
            "tokens": {"input": 5, "output": 3, "reasoning": 2, "cache": {"read": 10, "write": 1}}, "cost": 0.5}
    return envelope("step_finish", timestamp, part=part)


def test_failures_beyond_status_error() -> None:
    events = replay([
        envelope("step_start", 100, part={"type": "step-start"}),
        tool("c1", "bash", {"status": "completed", "input": {"command": "false"}, "output": "",
                            "metadata": {"exit": 1}, "time": {"start": 110, "end": 120}}, 121),
        tool("c2", "invalid", {"status": "completed", "input": {"tool": "nope", "error": "no such tool"},
                               "output": "The arguments provided to the tool are invalid",
                               "time": {"start": 130, "end": 131}}, 132),
        tool("c3", "bash", {"status": "completed", "input": {"command": "true"}, "output": "ok",
                            "metadata": {"exit": 0}, "time": {"start": 140, "end": 150}}, 151),
    ])
    finished = of(ToolFinished, events)
    assert [(f.call_id, f.failed, f.error_type, f.result, f.start_ns, f.end_ns) for f in finished] == [
        ("c1", True, "exit_code_1", "", 110 * MS, 120 * MS),
        ("c2", True, "invalid_tool", "The arguments provided to the tool are invalid", 130 * MS, 131 * MS),
        ("c3", False, None, "ok", 140 * MS, 150 * MS),
    ]


def test_missing_times_fall_back_to_the_line_timestamp_then_the_last_stream_time() -> None:
    events = replay([
        envelope("step_start", 100, part={"type": "step-start"}),
        tool("a", "read", {"status": "completed", "input": {}, "output": "x", "time": {"start": 101}}, 105),
        tool("b", "read", {"status": "completed", "input": {}, "output": "y"}, 107),
        tool("c", "read", {"status": "error", "input": {}, "error": "gone"}),
    ], clock=999)
    assert [(s.call_id, s.time_ns) for s in of(ToolStarted, events)] == [("a", 101 * MS), ("b", 107 * MS),
                                                                         ("c", 107 * MS)]
    assert [(f.start_ns, f.end_ns) for f in of(ToolFinished, events)] == [(101 * MS, 105 * MS),
                                                                         (107 * MS, 107 * MS),
                                                                         (107 * MS, 107 * MS)]
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.time_ns == 107 * MS


def test_a_stream_without_any_time_uses_arrival_times() -> None:
    reader = OpenCodeReader()
    events = reader.feed(tool("a", "read", {"status": "completed", "input": {}, "output": "x"}), 1, 42)
    events += reader.close(43)
    assert [(f.start_ns, f.end_ns) for f in of(ToolFinished, events)] == [(42, 42)]
    assert events[-1] == TurnEnded(43, 1, True, None, None, "ses_1")


@pytest.mark.parametrize(
    ("tail", "is_error"),
    [
        ([step_finish("stop")], False),
        ([step_finish("tool-calls")], True),
        ([step_finish("stop"), envelope("step_start", 600, part={"type": "step-start"})], True),
        ([envelope("error", 550, error={"name": "UnknownError", "data": {"message": "x"}}), step_finish("stop")],
         True),
    ],
)
def test_end_of_input_without_done_is_clean_only_after_a_stop_step(tail: list[str], is_error: bool) -> None:
    events = replay([envelope("step_start", 100, part={"type": "step-start"}), *tail], clock=1)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.is_error is is_error
    assert end.time_ns == json.loads(tail[-1])["timestamp"] * MS
    assert end.usage is not None and end.usage.input_tokens == 16 and end.usage.output_tokens == 5


def test_a_future_running_line_starts_the_call_and_close_interrupts_it() -> None:
    events = replay([
        envelope("step_start", 100, part={"type": "step-start"}),
        tool("a", "bash", {"status": "running", "input": {"command": "sleep 9"}, "time": {"start": 101}}, 102),
    ], clock=5)
    assert events[1:] == [
        ToolStarted("a", "bash", {'command': 'sleep 9'}, None, 101 * MS, 2),
        ToolFinished("a", "bash", {'command': 'sleep 9'}, None, True, "interrupted", None, 101 * MS, 102 * MS,
                     None, 2),
        TurnEnded(102 * MS, 2, True, None, None, "ses_1"),
    ]


@pytest.mark.shared  # reads ../shared
def test_truncated_sample_and_malformed_lines() -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    mangled = [lines[0], lines[1][:80], '{"type":"tool_use","part":{"tool":"read"}}', "", *lines[2:4]]
    events = replay(mangled)
    assert [(b.line_no, b.reason, len(b.text)) for b in of(BadLine, events)] == [
        (2, "not JSON", 80), (3, "tool_use: missing field 'state'", 42)]
    assert [f.call_id for f in of(ToolFinished, events)] == ["call_function_lrjqtlkptlfh_2"]
    assert isinstance(events[0], TurnStarted)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.is_error and end.line_no == 6
