"""Claude Code's session store: turn boundaries, sub-agents, copies, retries, and the stream's identity."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from otel_toolchain.harnesses.events import Event, Retry, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.stores import ClaudeStoreReader

SESSION = "9a1c0d3e-0000-4000-8000-000000000001"


class Store:
    """Composes store lines: the envelope every chain line carries, one second apart."""

    def __init__(self, sidechain: bool = False) -> None:
        self.lines: list[str] = []
        self.second = 0
        self.sidechain = sidechain

    def add(self, kind: str, **fields: Any) -> Store:
        self.second += 1
        line = {"parentUuid": None, "isSidechain": self.sidechain, "userType": "external", "cwd": "/w",
                "sessionId": SESSION, "version": "2.1.15", "type": kind, "uuid": f"u{self.second}",
                "timestamp": f"2026-01-22T19:00:{self.second:02d}.000Z", **fields}
        self.lines.append(json.dumps(line, separators=(",", ":")))
        return self

    def prompt(self, text: str, **fields: Any) -> Store:
        return self.add("user", message={"role": "user", "content": text}, **fields)

    def use(self, call_id: str, tool: str = "Bash", command: str = "ls", text: str = "") -> Store:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.append({"type": "tool_use", "id": call_id, "name": tool, "input": {"command": command}})
        return self.add("assistant", message={"model": "claude-opus-4-5", "id": f"msg_{call_id}", "role": "assistant",
                                              "content": content, "usage": {"input_tokens": 5, "output_tokens": 7}})

    def result(self, call_id: str, text: str = "ok", error: bool = False) -> Store:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if error:
            block["is_error"] = True
        return self.add("user", message={"role": "user", "content": [block]})


def events(lines: list[str], **options: Any) -> list[Event]:
    reader = ClaudeStoreReader(**options)
    out: list[Event] = []
    for number, line in enumerate(lines, 1):
        out.extend(reader.feed(line, number, 0))
    return out + reader.close(0)


def turns(out: list[Event]) -> list[list[str]]:
    """The call ids of each turn."""
    found: list[list[str]] = []
    for event in out:
        if isinstance(event, TurnStarted):
            found.append([])
        elif isinstance(event, ToolFinished):
            found[-1].append(event.call_id)
    return found


def test_prompts_open_turns_and_what_is_not_a_prompt_opens_none() -> None:
    store = (Store().add("summary", summary="a title").prompt("fix it").use("t1").result("t1")
             .prompt("Caveat: local commands", isMeta=True).prompt("<local-command-stdout>x</local-command-stdout>")
             .prompt("This session is being continued", isCompactSummary=True).use("t2").result("t2")
             .prompt("and now the tests").use("t3").result("t3"))
    out = events(store.lines)
    assert turns(out) == [["t1", "t2"], ["t3"]]
    assert [e.is_error for e in out if isinstance(e, TurnEnded)] == [False, False]


def test_commands_close_a_turn_and_the_next_activity_opens_one() -> None:
    store = (Store().prompt("one").use("t1").result("t1")
             .prompt("<command-name>/publish</command-name>").prompt("Publish by running x", isMeta=True)
             .use("t2").result("t2"))
    assert turns(events(store.lines)) == [["t1"], ["t2"]]


def test_an_interruption_ends_the_turn_as_an_error_and_a_late_result_is_no_new_call() -> None:
    store = Store().prompt("go").use("t1").prompt("[Request interrupted by user for tool use]").result("t1")
    out = events(store.lines)
    finished = [e for e in out if isinstance(e, ToolFinished)]
    assert [(e.call_id, e.failed, e.error_type) for e in finished] == [("t1", True, "interrupted")]
    assert [e.is_error for e in out if isinstance(e, TurnEnded)] == [True]


def test_turn_duration_ends_the_turn_and_times_come_from_the_lines() -> None:
    store = Store().prompt("go").use("t1").result("t1", "Exit code 2\nboom", error=True)
    store.add("system", subtype="turn_duration", durationMs=3000)
    out = events(store.lines)
    (call,) = [e for e in out if isinstance(e, ToolFinished)]
    assert (call.failed, call.error_type, call.cwd) == (True, "exit_code_2", "/w")
    assert call.end_ns - call.start_ns == 1_000_000_000
    ended = [e for e in out if isinstance(e, TurnEnded)]
    assert len(ended) == 1 and ended[0].line_no == 4


def test_api_errors_are_retries_and_a_synthetic_error_fails_the_turn() -> None:
    store = Store().prompt("go")
    store.add("system", subtype="api_error", level="error", retryAttempt=1, maxRetries=10,
              cause={"code": "FailedToOpenSocket"}, error={"cause": {"code": "FailedToOpenSocket"}})
    store.add("assistant", isApiErrorMessage=True, message={"model": "<synthetic>", "id": "m", "role": "assistant",
                                                           "content": [{"type": "text", "text": "Request timed out"}]})
    out = events(store.lines)
    assert [(e.attempt, e.reason) for e in out if isinstance(e, Retry)] == [(1, "FailedToOpenSocket")]
    assert [e.is_error for e in out if isinstance(e, TurnEnded)] == [True]


def test_a_sub_agent_file_is_one_turn_and_inline_sidechains_stay_in_the_parent_turn() -> None:
    agent = Store(sidechain=True).prompt("search the web").use("a1", "WebSearch").result("a1")
    assert turns(events(agent.lines)) == [["a1"]]
    parent = Store().prompt("spawn").use("p1", "Task")
    parent.add("user", isSidechain=True, message={"role": "user", "content": "sub-agent prompt"})
    parent.use("s1").result("s1").result("p1")
    assert turns(events(parent.lines)) == [["s1", "p1"]]


def test_a_replayed_copy_of_a_call_is_not_a_second_call() -> None:
    store = Store().prompt("go").use("t1").result("t1").use("t1").result("t1").use("t2").result("t2")
    assert turns(events(store.lines)) == [["t1", "t2"]]


def test_calls_only_gives_the_same_calls_without_reading_text_lines() -> None:
    store = Store().prompt("go")
    store.add("assistant", message={"model": "m", "id": "x", "role": "assistant",
                                    "content": [{"type": "thinking", "thinking": "hmm"}]})
    store.use("t1", text="let me look").result("t1").use("t2").result("t2", "no", error=True)
    full, lean = events(store.lines), events(store.lines, calls_only=True)
    # the same calls; only the tokens so far are unknown without usage
    assert [replace(e, tokens=None) for e in full if isinstance(e, ToolFinished)] == [
        e for e in lean if isinstance(e, ToolFinished)]
    assert [e.tokens for e in full if isinstance(e, ToolFinished)] == [12, 24]
    assert [e.usage for e in lean if isinstance(e, TurnEnded)] == [None]
    assert next(e.usage for e in full if isinstance(e, TurnEnded)) is not None


def _as_stream(line: str) -> str:
    """The same message as ``claude -p --output-format stream-json`` writes it."""
    obj = json.loads(line)
    stream = {"type": obj["type"], "message": obj["message"], "session_id": obj["sessionId"]}
    return json.dumps(stream)


def test_a_stored_call_has_the_identity_the_stream_reader_gives_it() -> None:
    store = (Store().prompt("go").use("t1", command="make").result("t1", "Exit code 1\nerr", error=True)
             .use("t2", "Read", "x").result("t2", "text"))
    stored = [e for e in events(store.lines) if isinstance(e, (ToolStarted, ToolFinished))]
    init = json.dumps({"type": "system", "subtype": "init", "session_id": SESSION, "cwd": "/w"})
    lines = [init, *(_as_stream(line) for line in store.lines[1:])]
    streamed = [e for e in read_stream(lines, "claude-code") if isinstance(e, (ToolStarted, ToolFinished))]

    def identity(e: ToolStarted | ToolFinished) -> tuple[Any, ...]:
        if isinstance(e, ToolStarted):
            return ("start", e.call_id, e.tool, e.arguments)
        return ("end", e.call_id, e.tool, e.arguments, e.result, e.failed, e.error_type, e.cwd)

    assert [identity(e) for e in stored] == [identity(e) for e in streamed]


def test_read_stream_recognises_a_store_file_by_itself() -> None:
    store = Store().prompt("go").use("t1").result("t1")
    found = list(read_stream(store.lines))
    assert [type(e).__name__ for e in found] == ["TurnStarted", "ToolStarted", "ToolFinished", "TurnEnded"]
    assert isinstance(found[1], ToolStarted)
    assert found[1].time_ns == 1769108402 * 10**9  # the line's own time, not the replay clock
