"""Codex rollouts: output text by version, calls named as the stream names them, turns, forks, .zst."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import zstandard

from otel_toolchain.harnesses.events import Event, ToolFinished, TurnEnded, TurnStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.runs import runs_in
from otel_toolchain.harnesses.stores import CodexStoreReader
from otel_toolchain.harnesses.stores._codex_output import outcome_of

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ROLLOUT = SHARED / "sessions" / "codex" / \
    "agentcmd-rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl"
THREAD = "0199a213-81c0-7800-8aa1-000000000001"


class Rollout:
    def __init__(self, thread: str = THREAD) -> None:
        self.lines: list[str] = []
        self.second = 0
        self.add("session_meta", id=thread, cwd="/repo", cli_version="0.77.0", originator="codex_cli_rs")

    def add(self, line_type: str, **payload: Any) -> Rollout:
        self.second += 1
        stamp = f"2026-02-01T10:00:{self.second:02d}.000Z"
        line = {"timestamp": stamp, "type": line_type, "payload": payload}
        self.lines.append(json.dumps(line, separators=(",", ":")))  # compact, as Codex writes
        return self

    def event(self, event_type: str, **fields: Any) -> Rollout:
        return self.add("event_msg", type=event_type, **fields)

    def call(self, call_id: str, name: str, arguments: dict[str, Any], output: str) -> Rollout:
        self.add("response_item", type="function_call", name=name, arguments=json.dumps(arguments), call_id=call_id)
        return self.add("response_item", type="function_call_output", call_id=call_id, output=output)


def events(lines: list[str], **options: Any) -> list[Event]:
    reader = CodexStoreReader(**options)
    out: list[Event] = []
    for number, line in enumerate(lines, 1):
        out.extend(reader.feed(line, number, 0))
    return out + reader.close(0)


@pytest.mark.parametrize(("output", "result", "failed", "error_type", "seconds"), [
    ('{"output":"a\\n","metadata":{"exit_code":0,"duration_seconds":1.5}}', "a\n", False, None, 1.5),
    ('{"output":"","metadata":{"exit_code":2,"duration_seconds":0.0}}', "", True, "exit_code_2", 0.0),
    ("Exit code: 1\nWall time: 0.4 seconds\nOutput:\nFAILED x", "FAILED x", True, "exit_code_1", 0.4),
    ("Chunk ID: 7f\nWall time: 1.0024 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nok",
     "ok", False, None, 1.0024),
    ("Chunk ID: 80\nWall time: 5.0 seconds\nProcess running with session ID 42\nOriginal token count: 0\nOutput:\n",
     "Process running with session ID 42\n", False, None, 5.0),
    ("failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 2, stdout: ",
     None, True, "exit_code_2", None),
    ("patch rejected by user", "patch rejected by user", True, "declined", None),
    ("execution error: No such file or directory (os error 2)", None, True, "tool_error", None),
    ("Plan updated", "Plan updated", False, None, None),
])
def test_output_text_by_version(output: str, result: str | None, failed: bool, error_type: str | None,
                                seconds: float | None) -> None:
    found = outcome_of(output)
    if result is not None:
        assert found.result == result
    assert (found.failed, found.error_type) == (failed, error_type)
    assert found.duration_ns == (None if seconds is None else int(seconds * 1e9))


def test_two_polls_that_saw_the_same_output_read_the_same() -> None:
    first = outcome_of("Chunk ID: a1\nWall time: 5.0012 seconds\nProcess running with session ID 9\nOutput:\n")
    second = outcome_of("Chunk ID: b2\nWall time: 5.0031 seconds\nProcess running with session ID 9\nOutput:\n")
    assert first.result == second.result


def test_shell_calls_read_as_the_stream_reads_them() -> None:
    rollout = Rollout().event("user_message", message="build it", kind="plain")
    rollout.call("c1", "shell", {"command": ["bash", "-lc", "cargo build"], "workdir": "/repo/sub", "timeout_ms": 1},
                 '{"output":"error[E0432]","metadata":{"exit_code":101,"duration_seconds":2.0}}')
    rollout.call("c2", "exec_command", {"cmd": "cargo build", "yield_time_ms": 1000},
                 "Wall time: 1.0 seconds\nProcess exited with code 101\nOutput:\nerror[E0432]")
    stored = [e for e in events(rollout.lines) if isinstance(e, ToolFinished)]
    assert [(e.tool, e.arguments, e.cwd) for e in stored] == [
        ("command_execution", {"command": "cargo build"}, "/repo/sub"),
        ("command_execution", {"command": "cargo build"}, "/repo")]
    assert stored[0].end_ns - stored[0].start_ns == 2_000_000_000
    stream = [json.dumps({"type": "thread.started", "thread_id": THREAD}), json.dumps({"type": "turn.started"}),
              json.dumps({"type": "item.completed", "item": {
                  "id": "item_0", "type": "command_execution", "command": "/bin/bash -lc 'cargo build'",
                  "aggregated_output": "error[E0432]", "exit_code": 101, "status": "failed"}})]
    (streamed,) = [e for e in read_stream(stream, "codex") if isinstance(e, ToolFinished)]
    for event in stored:
        assert (event.tool, event.arguments, event.result, event.failed, event.error_type) == (
            streamed.tool, streamed.arguments, streamed.result, streamed.failed, streamed.error_type)


def test_turns_follow_user_messages_and_aborts_fail_them() -> None:
    rollout = Rollout().event("task_started").event("user_message", message="one", kind="plain")
    rollout.call("c1", "update_plan", {"plan": []}, "Plan updated").event("task_complete")
    rollout.event("user_message", message="two").add("response_item", type="function_call", name="shell",
                                                     arguments='{"command":["ls"]}', call_id="c2")
    rollout.event("turn_aborted", reason="interrupted")
    rollout.add("response_item", type="function_call_output", call_id="c2", output="aborted late")
    rollout.event("user_message", message="three")
    out = events(rollout.lines)
    assert sum(isinstance(e, TurnStarted) for e in out) == 3
    assert [e.is_error for e in out if isinstance(e, TurnEnded)] == [False, True, False]
    finished = [(e.call_id, e.error_type) for e in out if isinstance(e, ToolFinished)]
    assert finished == [("c1", None), ("c2", "interrupted")]


def test_web_search_and_custom_tools() -> None:
    rollout = Rollout().event("user_message", message="x")
    rollout.add("response_item", type="web_search_call", status="completed", action={"type": "search", "query": "q"})
    rollout.add("response_item", type="custom_tool_call", name="apply_patch", input="*** Begin Patch", call_id="p1")
    rollout.add("response_item", type="custom_tool_call_output", call_id="p1", output="patch rejected by user")
    finished = [e for e in events(rollout.lines) if isinstance(e, ToolFinished)]
    assert [(e.tool, e.failed, e.error_type) for e in finished] == [
        ("web_search", False, None), ("apply_patch", True, "declined")]
    assert finished[0].arguments["query"] == "q"


def test_the_bare_first_era_reads_too() -> None:
    lines = [json.dumps({"id": THREAD, "timestamp": "2025-08-01T10:00:00Z", "instructions": None, "git": {}}),
             json.dumps({"record_type": "state"}),
             json.dumps({"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}),
             json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it"}]}),
             json.dumps({"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c"}),
             json.dumps({"type": "function_call_output", "call_id": "c",
                         "output": '{"output":"x","metadata":{"exit_code":0}}'})]
    out = events(lines)
    assert [type(e).__name__ for e in out] == ["TurnStarted", "ToolStarted", "ToolFinished", "TurnEnded"]
    assert isinstance(out[0], TurnStarted) and out[0].session_id == THREAD


def test_a_fork_leaves_out_the_calls_its_parent_holds(tmp_path: Path) -> None:
    parent_id, child_id = "019a0000-0000-7000-8000-00000000aaaa", "019a0000-0000-7000-8000-00000000bbbb"
    parent = Rollout(parent_id).event("user_message", message="a").call("c1", "shell", {"command": ["ls"]}, "x")
    child = Rollout(child_id)
    child.add("session_meta", id=parent_id, cwd="/repo")
    child.lines.extend(parent.lines[1:])
    child.event("user_message", message="b").call("c2", "shell", {"command": ["pwd"]}, "y")
    (tmp_path / f"rollout-2026-02-01T10-00-00-{parent_id}.jsonl").write_text("\n".join(parent.lines))
    (tmp_path / f"rollout-2026-02-01T11-00-00-{child_id}.jsonl").write_text("\n".join(child.lines))
    calls = {}
    for run in runs_in([tmp_path]):
        calls[Path(run.source).name[:30]] = [e.call_id for e in run.open().events if isinstance(e, ToolFinished)]
    assert calls == {"rollout-2026-02-01T10-00-00-01": ["c1"], "rollout-2026-02-01T11-00-00-01": ["c2"]}
    (alone,) = list(runs_in([tmp_path / f"rollout-2026-02-01T11-00-00-{child_id}.jsonl"]))
    assert [e.call_id for e in alone.open().events if isinstance(e, ToolFinished)] == ["c1", "c2"]


@pytest.mark.shared  # reads ../shared
def test_a_compressed_rollout_reads_as_the_plain_one(tmp_path: Path) -> None:
    packed = tmp_path / "sessions" / "2025" / "09" / "24" / (ROLLOUT.name.removeprefix("agentcmd-") + ".zst")
    packed.parent.mkdir(parents=True)
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(ROLLOUT.read_bytes()))
    (plain,) = list(runs_in([ROLLOUT]))
    (zst,) = list(runs_in([tmp_path / "sessions"]))
    expected = [e for e in plain.open().events if not isinstance(e, TurnStarted)]
    assert [e for e in zst.open().events if not isinstance(e, TurnStarted)] == expected
    assert sum(isinstance(e, ToolFinished) for e in expected) == 16


@pytest.mark.shared  # reads ../shared
def test_the_plain_rollout_wins_over_its_compressed_copy(tmp_path: Path) -> None:
    plain = tmp_path / "rollout-x.jsonl"
    plain.write_bytes(ROLLOUT.read_bytes())
    (tmp_path / "rollout-x.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"not read"))
    assert [Path(run.source).name for run in runs_in([tmp_path])] == ["rollout-x.jsonl"]
