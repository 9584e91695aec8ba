"""Every real session-store file in ../shared/sessions, against a count made here independently.

The independent count reads the raw JSON with a few lines per store, written from the format
notes (session-stores.md), not from the readers: calls and failures per file must agree.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.harnesses.detect import detect_format
from otel_toolchain.harnesses.events import BadLine, Event, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.harnesses.runs import runs_in

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
pytestmark = pytest.mark.shared  # every test here reads ../shared
SESSIONS = SHARED / "sessions"
ALL_FILES = sorted(SESSIONS.rglob("*.jsonl"))


def _objects(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw.strip()]


def count_claude(path: Path) -> tuple[int, int]:
    """tool_use blocks of top-level assistant lines (once per id); tool_result blocks with is_error."""
    uses: set[str] = set()
    failed = 0
    for obj in _objects(path):
        content = obj.get("message", {}).get("content") if isinstance(obj.get("message"), dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if obj["type"] == "assistant" and block.get("type") == "tool_use":
                uses.add(block["id"])
            if obj["type"] == "user" and block.get("type") == "tool_result" and block.get("is_error") is True:
                failed += 1
    return len(uses), failed


def count_codex(path: Path) -> tuple[int, int]:
    """Call items; outputs whose JSON exit_code is not 0, or that say the sandbox or the user refused."""
    calls = failed = 0
    for obj in _objects(path):
        payload = obj.get("payload") or {}
        if obj.get("type") != "response_item":
            continue
        if payload.get("type") in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            calls += 1
        if payload.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = payload["output"]
            try:
                code = json.loads(output)["metadata"]["exit_code"]
            except (ValueError, KeyError, TypeError):
                code = None
            refused = output.startswith(("failed in sandbox", "patch rejected", "execution error"))
            failed += (code is not None and code != 0) or refused
    return calls, failed


def count_pi(path: Path) -> tuple[int, int]:
    """toolCall blocks of assistant messages that did not stop aborted or error (those never ran);
    failures: toolResults with isError, plus calls that never got a result (interrupted)."""
    calls: set[str] = set()
    results: set[str] = set()
    failed = 0
    for obj in _objects(path):
        message = obj.get("message") if obj.get("type") == "message" else None
        if not message:
            continue
        if message["role"] == "assistant" and message.get("stopReason") not in ("aborted", "error"):
            calls.update(block["id"] for block in message["content"] if block.get("type") == "toolCall")
        if message["role"] == "toolResult":
            results.add(message["toolCallId"])
            failed += message.get("isError") is True
    return len(calls), failed + len(calls - results)


COUNTERS = {"claude-code": count_claude, "codex": count_codex, "pi": count_pi}


def events_of(path: Path) -> tuple[str, str, list[Event]]:
    (run,) = list(runs_in([path]))
    opened = run.open()
    return opened.harness, opened.kind, list(opened.events)


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(SESSIONS)))
def test_calls_and_failures_agree_with_an_independent_count(path: Path) -> None:
    harness, kind, events = events_of(path)
    assert kind == "store"
    assert harness == path.relative_to(SESSIONS).parts[0]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert (len(finished), sum(e.failed for e in finished)) == COUNTERS[harness](path)
    assert not [e for e in events if isinstance(e, BadLine)]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(SESSIONS)))
def test_events_are_well_formed(path: Path) -> None:
    """Turns open and close in turn; every started call finishes, inside its turn, not before it starts."""
    _, _, events = events_of(path)
    open_turn, open_calls = False, set()
    for event in events:
        if isinstance(event, TurnStarted):
            assert not open_turn
            open_turn = True
        elif isinstance(event, ToolStarted):
            assert open_turn
            open_calls.add(event.call_id)
        elif isinstance(event, ToolFinished):
            assert open_turn
            open_calls.discard(event.call_id)
            assert event.end_ns >= event.start_ns > 0
        elif isinstance(event, TurnEnded):
            assert open_turn and not open_calls
            open_turn = False
    assert not open_turn


def test_the_index_counts() -> None:
    """The tool-call counts INDEX.md gives, and the failures session-stores.md reports."""
    counts = {str(p.relative_to(SESSIONS)): COUNTERS[p.relative_to(SESSIONS).parts[0]](p) for p in ALL_FILES}
    assert counts["claude-code/episodic-large-conversation.jsonl"] == (152, 22)
    assert counts["claude-code/episodic-long-conversation.jsonl"] == (98, 4)
    assert counts["claude-code/agentcmd-full-session-four.jsonl"][0] == 27
    assert counts["claude-code/agentcmd-full-session-five.jsonl"][0] == 5
    codex = {name.split("rollout-")[1][:19]: value for name, value in counts.items() if "codex" in name}
    assert sorted(calls for calls, _ in codex.values()) == [16, 34, 57, 84, 123]
    # 454 toolCall blocks in all, 5 of them in messages that were aborted or failed and never ran
    assert counts["pi/pi-mono-before-compaction.jsonl"] == (449, 13)


def test_turns_per_store_follow_the_prompts() -> None:
    """Turn counts: one per prompt (Codex user_message, Pi user message, Claude prompt lines)."""
    turns: Counter[str] = Counter()
    for path in ALL_FILES:
        _, _, events = events_of(path)
        turns[path.name] = sum(isinstance(e, TurnStarted) for e in events)
    assert turns["agentcmd-rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl"] == 13
    assert turns["pi-mono-before-compaction.jsonl"] == 55
    assert turns["pi-mono-large-session.jsonl"] == 88
    assert turns["agentcmd-full-session-five.jsonl"] == 1
    # a /clear (a command: it opens no turn) and three prompts
    assert turns["agentcmd-full-session-four.jsonl"] == 3
    assert all(turns[p.name] == 1 for p in ALL_FILES if "subagents" in p.parts)


def test_detect_format_tells_every_store_file_from_the_streams() -> None:
    for path in ALL_FILES:
        head = path.read_text(encoding="utf-8").split("\n")[:8]
        assert detect_format(head) == (path.relative_to(SESSIONS).parts[0], "store")
    for path in sorted((SHARED / "streams").rglob("*.jsonl")):
        head = path.read_text(encoding="utf-8").split("\n")[:8]
        found = detect_format(head)
        assert found is not None and found[1] == "stream", path


def test_sub_agent_files_keep_the_parent_session_id() -> None:
    parent = SESSIONS / "claude-code" / "session-share" / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    for agent in sorted(parent.with_suffix("").glob("subagents/agent-*.jsonl")):
        _, _, events = events_of(agent)
        started = [e for e in events if isinstance(e, TurnStarted)]
        assert [e.session_id for e in started] == ["0ccf1a04-1b4c-43b6-8aa5-79e41db43a68"]


def test_claude_calls_take_their_times_from_the_lines() -> None:
    """A call runs from its tool_use line's timestamp to its tool_result line's."""
    path = SESSIONS / "claude-code" / "agentcmd-full-session-five.jsonl"
    stamps: dict[str, list[str]] = {}
    for obj in _objects(path):
        for block in obj.get("message", {}).get("content", []) if obj.get("type") in ("assistant", "user") else []:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result"):
                stamps.setdefault(block.get("id") or block["tool_use_id"], []).append(obj["timestamp"])
    _, _, events = events_of(path)
    for event in (e for e in events if isinstance(e, ToolFinished)):
        start, end = (datetime.fromisoformat(stamp).timestamp() for stamp in stamps[event.call_id])
        assert (event.end_ns - event.start_ns) / 1e9 == pytest.approx(end - start, abs=1e-3)
        assert event.start_ns / 1e9 == pytest.approx(start, abs=1e-3)
