"""Codex ``exec --json``: retries, failures, commands, completed-only items, cut and malformed streams."""

from __future__ import annotations

import json
from typing import Any, TypeVar

import pytest

from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import (
    BadLine,
    CodexReader,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from otel_toolchain.harnesses.streams.codex import command_text

E = TypeVar("E")
HEAD = ['{"type":"thread.started","thread_id":"th"}', '{"type":"turn.started"}']


def replay(lines: list[str], clock: int = 0) -> list[Event]:
    return list(read_stream(lines, "codex", clock=lambda: clock))


def of(kind: type[E], events: list[Event]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def item(kind: str, status: str, **fields: Any) -> dict[str, Any]:
    return {"id": fields.pop("id", "item_1"), "type": kind, "status": status, **fields}


def line(event: str, item_: dict[str, Any]) -> str:
    return json.dumps({"type": event, "item": item_})


def test_reconnecting_errors_are_retries_and_other_errors_wait_for_turn_failed() -> None:
    events = replay([
        *HEAD,
        '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 500: boom)"}',
        '{"type":"error","message":"Reconnecting... 2/5"}',
        '{"type":"error","message":"Reconnecting... x/5 (odd)"}',
        '{"type":"error","message":"exceeded retry limit, last status: 500"}',
        '{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 500"}}',
    ], clock=7)
    assert events == [
        TurnStarted("codex", "th", None, None, 7, 2),
        Retry(1, "unexpected status 500: boom", None, 7, 3),
        Retry(2, None, None, 7, 4),
        Retry(3, "odd", None, 7, 5),
        TurnEnded(7, 7, True, None, None, "th"),
    ]


@pytest.mark.parametrize(
    ("fields", "failed", "error_type"),
    [
        ({"exit_code": 0}, False, None),
        ({"exit_code": 3, "status": "failed"}, True, "exit_code_3"),
        ({"exit_code": 1, "status": "completed"}, True, "exit_code_1"),
        ({"exit_code": None, "status": "declined"}, True, "declined"),
        ({"exit_code": None, "status": "failed"}, True, "tool_error"),
        ({"exit_code": None}, False, None),
    ],
)
def test_command_failure_comes_from_status_and_exit_code(
    fields: dict[str, Any], failed: bool, error_type: str | None,
) -> None:
    status = fields.pop("status", "completed")
    done = item("command_execution", status, command="bash -lc 'make'", aggregated_output="out", **fields)
    finished = of(ToolFinished, replay([*HEAD, line("item.completed", done)]))
    assert [(e.failed, e.error_type, e.result) for e in finished] == [(failed, error_type, "out")]


@pytest.mark.parametrize(
    ("command", "text"),
    [
        ("/bin/bash -lc 'cargo test --quiet'", "cargo test --quiet"),
        ("bash -c \"echo 'hi there' && ls\"", "echo 'hi there' && ls"),
        ("/usr/bin/zsh -lc ls", "ls"),
        ("/bin/bash -lc 'unbalanced", "/bin/bash -lc 'unbalanced"),
        ("bash -x -c ls", "bash -x -c ls"),
        ("python3 -c 'print(1)'", "python3 -c 'print(1)'"),
        (["bash", "-lc", "git status"], "git status"),
        (["rg", "-n", "two words"], "rg -n 'two words'"),
    ],
)
def test_command_argv_loses_only_a_plain_shell_wrapper(command: Any, text: str) -> None:
    assert command_text(command) == text


def test_completed_only_items_start_and_end_together_and_arguments_come_from_completion() -> None:
    change = item("file_change", "completed", id="item_5", changes=[{"path": "/r/a.py", "kind": "add"},
                                                                    {"path": "/r/b.py", "kind": "delete"}])
    search_start = item("web_search", "in_progress", id="item_6", query="")
    search_done = item("web_search", "completed", id="item_6", query="otel genai",
                       action={"type": "search", "query": "otel genai"})
    events = replay([
        *HEAD, line("item.completed", change), line("item.started", search_start),
        line("item.completed", search_done),
        line("item.completed", {"id": "item_7", "type": "agent_message", "text": "done"}),
        line("item.started", {"id": "item_8", "type": "todo_list", "items": []}),
        line("item.completed", {"id": "item_9", "type": "error", "message": "Falling back from WebSockets"}),
        '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2}}',
    ], clock=9)
    started, finished = of(ToolStarted, events), of(ToolFinished, events)
    assert [s.call_id for s in started] == ["item_6"]
    assert [(f.call_id, f.tool, f.result, f.start_ns, f.end_ns) for f in finished] == [
        ("item_5", "file_change", "add /r/a.py\ndelete /r/b.py", 9, 9),
        ("item_6", "web_search", None, 9, 9),
    ]
    assert started[0].arguments == {'query': ''}
    assert finished[1].arguments == {'action': {'query': 'otel genai', 'type': 'search'}, 'query': 'otel genai'}
    assert finished[0].arguments == {"changes": [{"kind": "add", "path": "/r/a.py"},
                                                 {"kind": "delete", "path": "/r/b.py"}]}


def test_mcp_results_and_item_cwd() -> None:
    ok = item("mcp_tool_call", "completed", server="docs", tool="search", arguments={"q": "x"},
              result={"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, error=None)
    shell = item("command_execution", "completed", id="item_2", command="ls", aggregated_output="",
                 exit_code=0, cwd="/repo")
    finished = of(ToolFinished, replay([*HEAD, line("item.completed", ok), line("item.completed", shell)]))
    assert [(f.tool, f.arguments, f.result, f.failed, f.cwd) for f in finished] == [
        ("mcp__docs__search", {'q': 'x'}, "a\nb", False, None),
        ("command_execution", {'command': 'ls'}, "", False, "/repo"),
    ]


def test_sigint_mid_command_closes_with_the_call_interrupted() -> None:
    running = item("command_execution", "in_progress", command="/bin/bash -lc 'sleep 100'",
                   aggregated_output="", exit_code=None)
    reader = CodexReader()
    events = [e for n, text in enumerate([*HEAD, line("item.started", running)], 1) for e in reader.feed(text, n, n)]
    events += reader.close(50)
    assert events[-2:] == [
        ToolFinished("item_1", "command_execution", {'command': 'sleep 100'}, None, True, "interrupted",
                     None, 3, 50, None, 3),
        TurnEnded(50, 3, True, None, None, "th"),
    ]


def test_malformed_and_unknown_lines() -> None:
    lines = [
        *HEAD,
        '{"type":"item.plan.delta","item_id":"item_0","delta":"x"}',
        '{"type":"item.started","item":{"type":"command_execution","command":"ls"}}',
        '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":7}}',
        "{not json",
        line("item.completed", item("command_execution", "completed", command="ls", exit_code=0)),
        '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}',
    ]
    events = replay(lines)
    assert [(b.line_no, b.reason) for b in of(BadLine, events)] == [
        (4, "item.started: missing field 'id'"),
        (5, "item.started: field 'command' is neither a string nor a list of strings"),
        (6, "not JSON"),
    ]
    assert [f.call_id for f in of(ToolFinished, events)] == ["item_1"]
    assert isinstance(events[-1], TurnEnded) and not events[-1].is_error
    with pytest.raises(StreamError, match=r"^-:4: item.started"):
        list(read_stream(lines, "codex", strict=True))


def test_first_new_format_releases_named_the_item_type_item_type() -> None:
    early = {"id": "item_1", "item_type": "command_execution", "command": "bash -lc ls", "status": "completed",
             "aggregated_output": "a\n", "exit_code": 0}
    finished = of(ToolFinished, replay([*HEAD, json.dumps({"type": "item.completed", "item": early})]))
    assert [(f.tool, f.arguments, f.result) for f in finished] == [("command_execution", {'command': 'ls'}, "a\n")]
