"""Pi ``--mode json``: what a turn is across retries, old and new Pi, failures and cut streams."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import (
    BadLine,
    Event,
    PiReader,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)

E = TypeVar("E")
SESSION = '{"type":"session","version":3,"id":"sid","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}'


def replay(lines: list[str], clock: int = 0) -> list[Event]:
    return list(read_stream(lines, "pi", clock=lambda: clock))


def of(kind: type[E], events: list[Event]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def kinds(events: list[Event]) -> list[tuple[str, int]]:
    return [(type(e).__name__, e.line_no) for e in events]


def assistant(stop: str, output: int = 1) -> str:
    usage = {"input": 2, "output": output, "cacheRead": 10, "cacheWrite": 0, "totalTokens": 13,
             "cost": {"total": 0.25}}
    message = {"role": "assistant", "content": [], "model": "opus", "usage": usage, "stopReason": stop}
    if stop == "error":
        message["errorMessage"] = "529 overloaded"
    return json.dumps({"type": "message_end", "message": message})


def agent_end(**fields: Any) -> str:
    return json.dumps({"type": "agent_end", "messages": [], **fields})


RETRY = '{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 overloaded"}'
START = '{"type":"agent_start"}'


def test_old_pi_retry_without_will_retry_stays_in_one_turn() -> None:
    events = replay([SESSION, START, assistant("error"), agent_end(), RETRY, START, assistant("stop", 7),
                     '{"type":"auto_retry_end","success":true,"attempt":1}', agent_end()], clock=2)
    assert events == [
        TurnStarted("pi", "sid", None, "/w", 2, 2),
        Retry(1, "529 overloaded", None, 2, 5),
        TurnEnded(2, 9, False, Usage(12, 7, 10, 0, 0, 0.25), "opus", "sid"),
    ]


def test_old_pi_failed_run_without_retry_ends_at_its_agent_end() -> None:
    events = replay([SESSION, START, assistant("error"), agent_end()], clock=2)
    assert kinds(events) == [("TurnStarted", 2), ("TurnEnded", 4)]
    assert isinstance(events[-1], TurnEnded) and events[-1].is_error


def test_held_end_is_released_by_the_next_run_which_is_a_new_turn() -> None:
    events = replay([SESSION, START, assistant("error"), agent_end(), START, assistant("stop"), agent_end()])
    assert kinds(events) == [("TurnStarted", 2), ("TurnEnded", 4), ("TurnStarted", 5), ("TurnEnded", 7)]
    assert [e.is_error for e in of(TurnEnded, events)] == [True, False]


def test_new_pi_exhausted_retries_end_the_turn_as_an_error() -> None:
    events = replay([
        SESSION, START, assistant("error"), agent_end(willRetry=True), RETRY, START, assistant("error"),
        agent_end(willRetry=False), '{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"x"}',
        '{"type":"agent_settled"}',
    ])
    assert kinds(events) == [("TurnStarted", 2), ("Retry", 5), ("TurnEnded", 8)]
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.is_error and end.usage == Usage(12, 1, 10, 0, 0, 0.25)


def test_agent_settled_ends_a_turn_whose_agent_end_was_lost() -> None:
    events = replay([SESSION, START, assistant("stop"), '{"type":"agent_settled"}'])
    assert kinds(events) == [("TurnStarted", 2), ("TurnEnded", 4)]


def tool_start(call_id: str, name: str, args: dict[str, Any]) -> str:
    return json.dumps({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})


def tool_end(call_id: str, name: str, text: str, is_error: bool) -> str:
    result = {"content": [{"type": "text", "text": text}], "details": {}}
    return json.dumps({"type": "tool_execution_end", "toolCallId": call_id, "toolName": name, "result": result,
                       "isError": is_error})


def test_exit_code_comes_from_the_bash_suffix() -> None:
    events = replay([
        SESSION, START,
        tool_start("t1", "bash", {"command": "make"}),
        tool_end("t1", "bash", "err\n\nCommand exited with code 2", True),
        tool_start("t2", "read", {"path": "x"}), tool_end("t2", "read", "Command exited with code 9", False),
        tool_start("t3", "bash", {"command": "y"}), tool_end("t3", "bash", "Tool bash not found", True),
    ])
    assert [(f.failed, f.error_type, f.cwd) for f in of(ToolFinished, events)] == [
        (True, "exit_code_2", "/w"), (False, None, None), (True, "tool_error", "/w")]


def test_live_durations_and_a_cut_stream() -> None:
    reader = PiReader()
    lines = [SESSION, START, tool_start("t1", "bash", {"command": "sleep 1"}),
             tool_start("t2", "bash", {"command": "sleep 9"}), tool_end("t1", "bash", "", False)]
    events = [e for n, text in enumerate(lines, 1) for e in reader.feed(text, n, n * 10)]
    events += reader.close(99)
    assert events[-3:] == [
        ToolFinished("t1", "bash", {'command': 'sleep 1'}, "", False, None, None, 30, 50, "/w", 5),
        ToolFinished("t2", "bash", {'command': 'sleep 9'}, None, True, "interrupted", None, 40, 99, "/w", 5),
        TurnEnded(99, 5, True, None, None, "sid"),
    ]
    assert of(ToolStarted, events)[1].time_ns == 40


def test_malformed_lines_and_unknown_types() -> None:
    events = replay([
        SESSION, START, '{"type":"queue_update","steering":[],"followUp":[]}',
        '{"type":"tool_execution_start","toolName":"bash","args":{}}',
        '{"type":"auto_retry_start","attempt":"one"}',
        "\ufeff garbage", agent_end(willRetry=False),
    ])
    assert [(b.line_no, b.reason) for b in of(BadLine, events)] == [
        (4, "tool_execution_start: missing field 'toolCallId'"),
        (5, "auto_retry_start: field 'attempt' is not an integer"),
        (6, "not JSON"),
    ]
    assert kinds([e for e in events if not isinstance(e, BadLine)]) == [("TurnStarted", 2), ("TurnEnded", 7)]


def test_old_pi_overflow_compaction_that_retries_stays_in_one_turn() -> None:
    events = replay([
        SESSION, START, assistant("error"), agent_end(), '{"type":"auto_compaction_start","reason":"overflow"}',
        '{"type":"auto_compaction_end","result":{},"aborted":false,"willRetry":true}', START,
        assistant("stop"), agent_end(),
    ])
    assert kinds(events) == [("TurnStarted", 2), ("TurnEnded", 9)]
    assert isinstance(events[-1], TurnEnded) and not events[-1].is_error
