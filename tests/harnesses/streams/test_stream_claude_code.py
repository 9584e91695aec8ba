"""Claude Code: the 28 real recorded runs, sub-agent nesting, failures, retries and cut streams."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TypeVar

import pytest

from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import (
    BadLine,
    ClaudeCodeReader,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)

E = TypeVar("E")
SHARED = Path(__file__).resolve().parents[3].parent / "shared"
REAL = SHARED / "streams" / "real" / "claude-code"
RECORDINGS = sorted(path.name for path in REAL.glob("*.jsonl"))


def index_rows() -> dict[str, tuple[int, int]]:
    """INDEX.md's table: file -> (lines, tool calls)."""
    rows = {}
    for line in (REAL / "INDEX.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].endswith(".jsonl"):
            rows[cells[0]] = (int(cells[2]), int(cells[3]))
    return rows


def plain_count(path: Path) -> tuple[int, int, Counter[str]]:
    """Independently of the reader: tool_use blocks, is_error results, and the Exit-code failures."""
    calls = failures = 0
    exits: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content", [])
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls += 1
            elif block.get("type") == "tool_result" and block.get("is_error"):
                failures += 1
                text = block["content"] if isinstance(block["content"], str) else ""
                if text.startswith("Exit code "):
                    exits[f"exit_code_{int(text.split()[2])}"] += 1
    return calls, failures, exits


def replay(lines: list[str] | Path, clock: int = 0) -> list[Event]:
    if isinstance(lines, Path):
        lines = lines.read_text(encoding="utf-8").splitlines()
    return list(read_stream(lines, "claude-code", clock=lambda: clock))


def of(kind: type[E], events: list[Event]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


@pytest.mark.shared  # reads ../shared
def test_every_recording_is_indexed() -> None:
    assert len(RECORDINGS) == 28
    assert sorted(index_rows()) == RECORDINGS


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.shared  # reads ../shared
def test_real_recording_replays_cleanly_with_the_independent_counts(name: str) -> None:
    path = REAL / name
    index_lines, index_calls = index_rows()[name]
    calls, failures, exits = plain_count(path)
    assert (len(path.read_text(encoding="utf-8").splitlines()), calls) == (index_lines, index_calls)

    events = replay(path)
    started, finished = of(ToolStarted, events), of(ToolFinished, events)
    assert of(BadLine, events) == []
    assert len(started) == len(finished) == calls
    assert sum(event.failed for event in finished) == failures
    assert not any(event.error_type == "interrupted" for event in finished)
    assert Counter(e.error_type for e in finished if e.error_type and e.error_type.startswith("exit")) == exits
    assert {e.call_id for e in started} == {e.call_id for e in finished}
    assert [type(events[0]), type(events[-1])] == [TurnStarted, TurnEnded]
    assert len(of(TurnStarted, events)) == len(of(TurnEnded, events)) == 1
    end = events[-1]
    assert isinstance(end, TurnEnded) and not end.is_error and end.usage is not None
    assert end.session_id is not None and end.model == "claude-sonnet-4-6"


@pytest.mark.shared  # reads ../shared
def test_bash_calls_carry_the_session_cwd_and_others_do_not() -> None:
    finished = of(ToolFinished, replay(REAL / "lead__tasks__task-018__transcript.jsonl"))
    cwd = "/home/runner/work/agentic-org-v2/agentic-org-v2"
    assert {e.cwd for e in finished if e.tool == "Bash"} == {cwd}
    assert {e.cwd for e in finished if e.tool != "Bash"} == {None}


@pytest.mark.shared  # reads ../shared
def test_sub_agent_calls_nest_under_their_agent_call() -> None:
    path = REAL / "lead__tasks__task-022__transcript.jsonl"
    agent_id = "toolu_01DqhGaAHonLhxmSrMNK8Ufk"
    child_ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "assistant" and record.get("parent_tool_use_id") == agent_id:
            child_ids |= {b["id"] for b in record["message"]["content"] if b["type"] == "tool_use"}
    assert len(child_ids) == 6

    events = replay(path)
    started = {e.call_id: e for e in of(ToolStarted, events)}
    finished = {e.call_id: e for e in of(ToolFinished, events)}
    assert started[agent_id].tool == "Agent" and started[agent_id].parent_call_id is None
    assert {cid for cid, e in started.items() if e.parent_call_id == agent_id} == child_ids
    assert {cid for cid, e in finished.items() if e.parent_call_id == agent_id} == child_ids
    for child in child_ids:
        assert started[agent_id].line_no < started[child].line_no
        assert finished[child].line_no < finished[agent_id].line_no
    assert {e.parent_call_id for cid, e in started.items() if cid not in child_ids} == {None}


@pytest.mark.shared  # reads ../shared
def test_usage_comes_from_result_and_per_message_usage_is_deduplicated_when_cut() -> None:
    path = REAL / "lead__tasks__task-018__transcript.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    result = json.loads(lines[-1])
    end = replay(lines)[-1]
    assert isinstance(end, TurnEnded)
    raw = result["usage"]
    assert end.usage == Usage(
        raw["input_tokens"] + raw["cache_read_input_tokens"] + raw["cache_creation_input_tokens"],
        raw["output_tokens"], raw["cache_read_input_tokens"], raw["cache_creation_input_tokens"], 0,
        result["total_cost_usd"],
    )

    per_message = {}
    for line in lines[:-1]:
        record = json.loads(line)
        if record["type"] == "assistant":
            per_message[record["message"]["id"]] = record["message"]["usage"]
    assert len(per_message) < sum(json.loads(x)["type"] == "assistant" for x in lines)
    cut = replay(lines[:-1])[-1]
    assert isinstance(cut, TurnEnded) and cut.is_error and cut.usage is not None
    assert cut.usage.output_tokens == sum(u["output_tokens"] for u in per_message.values())
    assert cut.usage.cache_read_tokens == sum(u["cache_read_input_tokens"] for u in per_message.values())


@pytest.mark.shared  # reads ../shared
def test_truncated_stream_fails_the_open_call_as_interrupted_and_ends_the_turn() -> None:
    lines = (SHARED / "streams" / "samples" / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
    events = replay(lines[:12], clock=5)
    agent_id = "toolu_01Rk3PjUeq9VxGZbHn6sT2aW"
    agent_args = json.loads(lines[8])["message"]["content"][0]["input"]
    seen = {"msg_01P391kAQuxVQB8DFMNpxNrb": (3, 5288, 16048, 8), "msg_012WUjPFG125KVan33GY58LR": (1, 794, 21336, 8),
            "msg_01Tq7ZcWnD4hLs9YxB2kFe6R": (1, 348, 22130, 42), "msg_01Lw2RkT8vXc5NqHy7ZpJm3D": (1, 348, 22130, 42)}
    usage = Usage(sum(a + b + c for a, b, c, _ in seen.values()), sum(d for *_, d in seen.values()),
                  sum(c for _, _, c, _ in seen.values()), sum(b for _, b, _, _ in seen.values()))
    assert events[-3:] == [
        ToolFinished("toolu_01Hx8Wc2NqLpYv4TzKs7Jd5E", "Glob", {'pattern': 'product/**/schema.md'}, None, True,
                     "interrupted", agent_id, 5, 5, None, 12, usage.input_tokens + usage.output_tokens),
        ToolFinished(agent_id, "Agent", agent_args, None, True, "interrupted", None, 5, 5, None, 12,
                     usage.input_tokens + usage.output_tokens),
        TurnEnded(5, 12, True, usage, "claude-sonnet-4-6", "f9324643-dd4c-4173-94e2-c7134bd091bd"),
    ]
    assert len(of(ToolStarted, events)) == len(of(ToolFinished, events)) == 5


@pytest.mark.shared  # reads ../shared
def test_live_feed_measures_durations_from_arrival_times() -> None:
    reader = ClaudeCodeReader()
    lines = (SHARED / "streams" / "samples" / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
    events: list[Event] = []
    for line_no, line in enumerate(lines, 1):
        events += reader.feed(line, line_no, line_no * 1_000)
    events += reader.close(99_000)
    glob = next(e for e in events if isinstance(e, ToolFinished) and e.call_id == "toolu_01BJD68azZ5Xz9vijZtyfDpL")
    assert (glob.start_ns, glob.end_ns) == (6_000, 7_000)
    assert reader.close(100_000) == []


def bash_line(call_id: str, command: str) -> str:
    block = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
    message = {"id": f"msg_{call_id}", "model": "claude-sonnet-4-6", "content": [block]}
    return json.dumps({"type": "assistant", "message": message, "parent_tool_use_id": None, "session_id": "s"})


def result_line(call_id: str, content: object, is_error: bool) -> str:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}
    return json.dumps({"type": "user", "message": {"role": "user", "content": [block]}, "session_id": "s"})


def test_exit_code_is_parsed_from_the_failed_bash_text_only() -> None:
    events = replay([
        bash_line("a", "false"), result_line("a", "Exit code 2\nboom\nExit code 7", True),
        bash_line("b", "echo"), result_line("b", "Exit code 3 is just output", False),
        bash_line("c", "x"), result_line("c", [{"type": "text", "text": "one"}, {"type": "image"},
                                               {"type": "text", "text": "two"}], True),
    ])
    finished = of(ToolFinished, events)
    assert [(e.failed, e.error_type, e.result) for e in finished] == [
        (True, "exit_code_2", "Exit code 2\nboom\nExit code 7"),
        (False, None, "Exit code 3 is just output"),
        (True, "tool_error", "one\ntwo"),
    ]
    start = events[0]
    assert isinstance(start, TurnStarted) and start.session_id == "s" and start.model == "claude-sonnet-4-6"


def test_api_retries_are_emitted_with_their_attempt_and_error() -> None:
    lines = [
        '{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w"}',
        '{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,'
        '"error_status":529,"error":"overloaded"}',
        '{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1200,'
        '"error_status":null,"error":{"odd":"shape"}}',
        '{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"session_id":"s"}',
    ]
    events = replay(lines, clock=3)
    assert events == [
        TurnStarted("claude-code", "s", "m", "/w", 3, 1),
        Retry(1, "overloaded", None, 3, 2),
        Retry(2, None, None, 3, 3),
        TurnEnded(3, 4, True, None, "m", "s"),
    ]


def test_other_lines_are_tolerated_and_replays_ignored() -> None:
    lines = [
        '{"type":"system","subtype":"hook_response","session_id":"s"}',
        '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"session_id":"s"}',
        '{"type":"stream_event","event":{"type":"content_block_start"},"session_id":"s"}',
        '{"type":"user","isReplay":true,"message":{"content":[{"type":"tool_result","tool_use_id":"old"}]}}',
        '{"type":"user","message":{"role":"user","content":"a plain prompt"},"session_id":"s"}',
        '{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w"}',
    ]
    assert replay(lines, clock=1) == [TurnStarted("claude-code", "s", "m", "/w", 1, 6), TurnEnded(
        1, 6, True, None, "m", "s")]


def test_a_result_without_its_call_finishes_it_as_unknown() -> None:
    events = replay([result_line("ghost", "late", False)], clock=4)
    assert events[1] == ToolFinished("ghost", "unknown", None, "late", False, None, None, 4, 4, None, 1)


def test_malformed_lines_become_bad_lines_and_strict_raises() -> None:
    lines = [
        '{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/w"}',
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","name":"Bash","input":{}}]}}',
        '{"type":"system","subtype":"api_retry","error":"x"}',
        bash_line("a", "ls"),
        result_line("a", "ok", False),
    ]
    events = replay(lines)
    bad = of(BadLine, events)
    assert [(b.line_no, b.reason) for b in bad] == [(2, "assistant: missing field 'id'"),
                                                    (3, "system: missing field 'attempt'")]
    assert [e.call_id for e in of(ToolFinished, events)] == ["a"]
    with pytest.raises(StreamError) as caught:
        list(read_stream(lines, "claude-code", strict=True, source="run.jsonl"))
    assert caught.value.line_no == 2 and str(caught.value).startswith("run.jsonl:2: assistant")
