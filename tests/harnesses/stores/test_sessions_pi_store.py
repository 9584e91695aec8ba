"""Pi's session store, v1 and v3: turns, calls that never ran, retries, branches, and the stream's identity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otel_toolchain.harnesses.events import Event, Retry, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.runs import runs_in
from otel_toolchain.harnesses.stores import PiStoreReader

HEADER_V1 = {"type": "session", "id": "ffae836b-0000-4000-8000-000000000001", "timestamp": "2025-12-09T00:00:00.000Z",
             "cwd": "/p", "provider": "anthropic", "modelId": "claude-opus-4-5", "thinkingLevel": "off"}
HEADER_V3 = {"type": "session", "version": 3, "id": "01a0f2c4-0000-4000-8000-000000000003",
             "timestamp": "2026-09-28T12:00:00.000Z", "cwd": "/p"}


class Session:
    def __init__(self, header: dict[str, Any]) -> None:
        self.lines = [json.dumps(header)]
        self.v3 = header.get("version") == 3
        self.second = 0

    def message(self, message: dict[str, Any]) -> Session:
        self.second += 1
        entry: dict[str, Any] = {"type": "message", "timestamp": f"2025-12-09T00:00:{self.second:02d}.000Z"}
        if self.v3:
            entry.update(id=f"{self.second:08x}", parentId=f"{self.second - 1:08x}")
        message.setdefault("timestamp", 1765238400000 + self.second * 1000)
        self.lines.append(json.dumps({**entry, "message": message}))
        return self

    def user(self, text: str) -> Session:
        return self.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def calls(self, *calls: tuple[str, str, dict[str, Any]], stop: str = "toolUse",
              error: str | None = None) -> Session:
        content = [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
                   for call_id, name, arguments in calls]
        message: dict[str, Any] = {"role": "assistant", "content": content, "model": "claude-opus-4-5",
                                   "stopReason": stop, "usage": {"input": 1, "output": 2, "cacheRead": 0,
                                                                 "cacheWrite": 0, "cost": {"total": 0.01}}}
        if error:
            message["errorMessage"] = error
        return self.message(message)

    def result(self, call_id: str, name: str, text: str, error: bool = False) -> Session:
        return self.message({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                             "content": [{"type": "text", "text": text}], "isError": error})


def events(lines: list[str]) -> list[Event]:
    reader = PiStoreReader()
    out: list[Event] = []
    for number, line in enumerate(lines, 1):
        out.extend(reader.feed(line, number, 0))
    return out + reader.close(0)


def test_v1_and_v3_read_alike() -> None:
    def build(header: dict[str, Any]) -> list[tuple[Any, ...]]:
        session = Session(header).user("go").calls(("t1", "bash", {"command": "make"}))
        session.result("t1", "bash", "boom\n\nCommand exited with code 2", error=True)
        session.calls(("t2", "read", {"path": "a"})).result("t2", "read", "text")
        return [(e.call_id, e.tool, e.arguments, e.result, e.failed, e.error_type, e.cwd, e.end_ns - e.start_ns)
                for e in events(session.lines) if isinstance(e, ToolFinished)]

    assert build(HEADER_V1) == build(HEADER_V3) == [
        ("t1", "bash", {'command': 'make'}, "boom\n\nCommand exited with code 2", True, "exit_code_2", "/p", 10**9),
        ("t2", "read", {'path': 'a'}, "text", False, None, None, 10**9)]  # assistant entry to result, 1 s


def test_calls_of_an_aborted_message_never_ran_and_an_unanswered_call_is_interrupted() -> None:
    session = Session(HEADER_V1).user("go").calls(("t1", "read", {"path": "a"}), stop="aborted")
    session.user("no, this").calls(("t2", "read", {"path": "b"}))
    session.user("and that")
    out = events(session.lines)
    finished = [(e.call_id, e.error_type) for e in out if isinstance(e, ToolFinished)]
    assert finished == [("t2", "interrupted")]
    assert [e.is_error for e in out if isinstance(e, TurnEnded)] == [True, True, False]


def test_a_failed_message_followed_by_another_was_retried() -> None:
    session = Session(HEADER_V3).user("go").calls(stop="error", error="overloaded_error")
    session.calls(("t1", "ls", {})).result("t1", "ls", "a b")
    session.message({"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop",
                     "usage": {"input": 1, "output": 1, "cost": {"total": 0.01}}})
    out = events(session.lines)
    assert [(e.attempt, e.reason) for e in out if isinstance(e, Retry)] == [(1, "overloaded_error")]
    (ended,) = [e for e in out if isinstance(e, TurnEnded)]
    assert ended.is_error is False
    assert ended.usage is not None and ended.usage.cost_usd == 0.02  # the failed attempt's usage is dropped


def test_the_users_own_commands_are_not_calls() -> None:
    session = Session(HEADER_V3).user("go")
    session.message({"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0})
    session.calls(("t1", "ls", {})).result("t1", "ls", "a")
    out = events(session.lines)
    assert [e.call_id for e in out if isinstance(e, ToolFinished)] == ["t1"]
    assert sum(isinstance(e, TurnStarted) for e in out) == 1


def test_a_branched_file_leaves_out_its_parents_calls_when_the_parent_is_read(tmp_path: Path) -> None:
    parent = Session(HEADER_V1).user("go").calls(("t1", "ls", {})).result("t1", "ls", "a")
    (tmp_path / "2025-12-08T22-00-00-000Z_aaa.jsonl").write_text("\n".join(parent.lines))
    origin = "/Users/x/.pi/agent/sessions/--p--/2025-12-08T22-00-00-000Z_aaa.jsonl"
    branched = Session({**HEADER_V1, "branchedFrom": origin})
    branched.lines.extend(parent.lines[1:])
    branched.user("more").calls(("t2", "ls", {})).result("t2", "ls", "b")
    (tmp_path / "2025-12-09T00-00-00-000Z_bbb.jsonl").write_text("\n".join(branched.lines))
    calls = [[e.call_id for e in run.open().events if isinstance(e, ToolFinished)] for run in runs_in([tmp_path])]
    assert calls == [["t1"], ["t2"]]


def test_a_stored_call_has_the_identity_the_stream_reader_gives_it() -> None:
    session = Session(HEADER_V3).user("go").calls(("t1", "bash", {"command": "make"}))
    session.result("t1", "bash", "boom\nCommand exited with code 2", error=True)
    stored = [e for e in events(session.lines) if isinstance(e, (ToolStarted, ToolFinished))]
    stream = [json.dumps(HEADER_V3), json.dumps({"type": "agent_start"}),
              json.dumps({"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash",
                          "args": {"command": "make"}}),
              json.dumps({"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "isError": True,
                          "result": {"content": [{"type": "text", "text": "boom\nCommand exited with code 2"}]}}),
              json.dumps({"type": "agent_end", "messages": []})]
    streamed = [e for e in read_stream(stream, "pi") if isinstance(e, (ToolStarted, ToolFinished))]
    assert [(type(e), e.call_id, e.tool, e.arguments) for e in stored] == \
        [(type(e), e.call_id, e.tool, e.arguments) for e in streamed]
    assert [(e.result, e.failed, e.error_type, e.cwd) for e in stored if isinstance(e, ToolFinished)] == \
        [(e.result, e.failed, e.error_type, e.cwd) for e in streamed if isinstance(e, ToolFinished)]


def test_read_stream_tells_a_store_file_from_a_stream_with_the_same_header() -> None:
    session = Session(HEADER_V3).user("go").calls(("t1", "ls", {})).result("t1", "ls", "a")
    kinds = [type(e).__name__ for e in read_stream(session.lines)]
    assert kinds == ["TurnStarted", "ToolStarted", "ToolFinished", "TurnEnded"]
