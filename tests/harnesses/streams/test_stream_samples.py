"""Golden tests: each harness's sample stream gives exactly these events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.harnesses.detect import detect_harness
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.streams import Event, Retry, ToolFinished, ToolStarted, TurnEnded, TurnStarted, Usage

SAMPLES = Path(__file__).resolve().parents[3].parent / "shared" / "streams" / "samples"
pytestmark = pytest.mark.shared  # every test here reads ../shared
T = 1_700_000_000_000_000_000
"""The replay clock: one time for every line, so calls without stream times last 0."""


def replay(name: str) -> list[Event]:
    with (SAMPLES / name).open(encoding="utf-8") as lines:
        return list(read_stream(lines, clock=lambda: T))


def canon(value: Any) -> Any:
    return value  # readers hand on the input as parsed


def test_claude_code_sample() -> None:
    sid = "f9324643-dd4c-4173-94e2-c7134bd091bd"
    cwd = "/home/runner/work/agentic-org-v2/agentic-org-v2"
    schema = canon({"file_path": f"{cwd}/product/debate-engine/adversarial/schema.md"})
    status = canon({"file_path": f"{cwd}/lead/tasks/task-018/status.md"})
    glob = {'pattern': 'product/debate-engine/**/*'}
    agent = canon({
        "description": "Locate schema files", "subagent_type": "Explore",
        "prompt": "Find every schema.md under product/ and report the paths.",
    })
    inner = {'pattern': 'product/**/schema.md'}
    mcp = {'issue_number': 18, 'owner': 'acme', 'repo': 'agentic-org'}
    parent = "toolu_01Rk3PjUeq9VxGZbHn6sT2aW"
    missing = f"File does not exist. Note: your current working directory is {cwd}."
    # tokens: each ToolFinished carries the turn's tokens so far (each message once, input with its cache)
    first, second, third = 3 + 5288 + 16048 + 8, 1 + 794 + 21336 + 8, 1 + 348 + 22130 + 42
    assert replay("claude-code.jsonl") == [
        TurnStarted("claude-code", sid, "claude-sonnet-4-6", cwd, T, 1),
        ToolStarted("toolu_017CcPZM45arhgYoTjqjaNju", "Read", schema, None, T, 2),
        ToolFinished("toolu_017CcPZM45arhgYoTjqjaNju", "Read", schema, missing, True, "tool_error",
                     None, T, T, None, 3, first),
        ToolStarted("toolu_01QYPtwExoydFyGEfYiMDZBK", "Read", status, None, T, 4),
        ToolFinished("toolu_01QYPtwExoydFyGEfYiMDZBK", "Read", status,
                     "<tool_use_error>Sibling tool call errored</tool_use_error>", True, "tool_error",
                     None, T, T, None, 5, first),
        ToolStarted("toolu_01BJD68azZ5Xz9vijZtyfDpL", "Glob", glob, None, T, 6),
        ToolFinished("toolu_01BJD68azZ5Xz9vijZtyfDpL", "Glob", glob, "No files found", False, None,
                     None, T, T, None, 7, first + second),
        Retry(1, "rate_limit", None, T, 8),
        ToolStarted(parent, "Agent", agent, None, T, 9),
        ToolStarted("toolu_01Hx8Wc2NqLpYv4TzKs7Jd5E", "Glob", inner, parent, T, 12),
        ToolFinished("toolu_01Hx8Wc2NqLpYv4TzKs7Jd5E", "Glob", inner, "No files found", False, None,
                     parent, T, T, None, 13, first + second + 2 * third),
        ToolFinished(parent, "Agent", agent, "There is no schema.md anywhere under product/.", False, None,
                     None, T, T, None, 14, first + second + 2 * third),
        ToolStarted("toolu_01Vm6QbXr2LhTn9WcPz3Ky8F", "mcp__github__get_issue", mcp, None, T, 15),
        ToolFinished("toolu_01Vm6QbXr2LhTn9WcPz3Ky8F", "mcp__github__get_issue", mcp,
                     "MCP error -32603: Not Found", True, "tool_error", None, T, T, None, 16,
                     first + second + 3 * third),
        TurnEnded(T, 17, False, Usage(77 + 24401 + 493746, 13104, 493746, 24401, 0, 0.72736425),
                  "claude-sonnet-4-6", sid),
    ]


def test_codex_sample() -> None:
    tid = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    ls_, cargo = {'command': 'ls'}, {'command': 'cargo test --quiet'}
    mcp = {'issue_number': 42, 'owner': 'acme', 'repo': 'demo'}
    change = {'changes': [{'kind': 'update', 'path': '/repo/src/lib.rs'}]}
    cargo_out = (
        "error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n"
        "error: could not compile `demo` (lib test) due to 1 previous error\n"
    )
    assert replay("codex.jsonl") == [
        TurnStarted("codex", tid, None, None, T, 2),
        Retry(1, "stream disconnected before completion: error sending request for url "
                 "(https://chatgpt.com/backend-api/codex/responses)", None, T, 3),
        ToolStarted("item_1", "command_execution", ls_, None, T, 5),
        ToolFinished("item_1", "command_execution", ls_, "AGENTS.md\nCargo.toml\nREADME.md\nsrc\n", False, None,
                     None, T, T, None, 6),
        ToolStarted("item_2", "command_execution", cargo, None, T, 7),
        ToolFinished("item_2", "command_execution", cargo, cargo_out, True, "exit_code_101",
                     None, T, T, None, 8),
        ToolStarted("item_3", "mcp__github__get_issue", mcp, None, T, 9),
        ToolFinished("item_3", "mcp__github__get_issue", mcp, "tool call failed: request timed out", True,
                     "tool_error", None, T, T, None, 10),
        ToolStarted("item_4", "file_change", change, None, T, 11),
        ToolFinished("item_4", "file_change", change, "update /repo/src/lib.rs", False, None,
                     None, T, T, None, 12),
        TurnEnded(T, 14, False, Usage(24763, 122, 24448, 0, 64, None), None, tid),
    ]


def test_opencode_sample_uses_the_stream_times() -> None:
    sid = "ses_17991b726ffezSLOoMYnmU961P"
    ms = 1_000_000
    bash = canon({
        "command": "head -5 go.mod 2>/dev/null || cat README.md 2>/dev/null | head -20",
        "description": "Check go version in go.mod",
    })
    read = {'filePath': '/home/user/src/agent-wrapper/go.work'}
    out = "module github.com/AgentDrasil/agent-wrapper\n\ngo 1.26.3\n\nrequire (\n"
    assert replay("opencode.jsonl") == [
        TurnStarted("opencode", sid, None, None, 1780371838546 * ms, 1),
        ToolStarted("call_function_lrjqtlkptlfh_1", "bash", bash, None, 1780371840602 * ms, 2),
        ToolFinished("call_function_lrjqtlkptlfh_1", "bash", bash, out, False, None,
                     None, 1780371840602 * ms, 1780371840616 * ms, None, 2),
        ToolStarted("call_function_lrjqtlkptlfh_2", "read", read, None, 1780371840605 * ms, 3),
        ToolFinished("call_function_lrjqtlkptlfh_2", "read", read,
                     "File not found: /home/user/src/agent-wrapper/go.work", True, "tool_error",
                     None, 1780371840605 * ms, 1780371840631 * ms, None, 3),
        TurnEnded(1780371842970 * ms, 8, False,
                  Usage(14 + 8429 + 51 + 8519, 90 + 21, 8429 + 8519, 0, 0, 0.0), None, sid),
    ]


def test_pi_sample_keeps_the_retry_inside_one_turn() -> None:
    sid = "01a0f2c4-7b3e-7d51-9c2a-4e8f6b1d3a57"
    cwd = "/Users/badlogic/workspaces/pi-mono"
    head = (
        "/**\n * Core modules shared between all run modes.\n */\n\n"
        'export { executeBash, type BashExecutorOptions, type BashResult } from "./bash-executor.js";'
    )
    edit = canon({
        "path": f"{cwd}/packages/coding-agent/src/core/index.ts",
        "oldText": head,
        "newText": head + '\nexport { AgentSession, type AgentSessionConfig } from "./agent-session.js";',
    })
    bash = canon({"command": f"cd {cwd} && git checkout -b refactor"})
    no_match = (
        f"Could not find the exact text in {cwd}/packages/coding-agent/src/core/index.ts. "
        "The old text must match exactly including all whitespace and newlines."
    )
    overloaded = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert replay("pi.jsonl") == [
        TurnStarted("pi", sid, None, cwd, T, 2),
        Retry(1, overloaded, None, T, 10),
        ToolStarted("toolu_01GDop9s8DBp8sZnT9Wpy9Cy", "bash", bash, None, T, 17),
        ToolStarted("toolu_01Kae6sJBexjQUHEpDA9f5Uh", "edit", edit, None, T, 18),
        ToolFinished("toolu_01Kae6sJBexjQUHEpDA9f5Uh", "edit", edit, no_match, True, "tool_error",
                     None, T, T, None, 19, 1 + 83281 + 1094 + 217),
        ToolFinished("toolu_01GDop9s8DBp8sZnT9Wpy9Cy", "bash", bash, "Switched to a new branch 'refactor'\n",
                     False, None, None, T, T, cwd, 20, 1 + 83281 + 1094 + 217),
        TurnEnded(T, 30, False,
                  Usage(1 + 83281 + 1094 + 1 + 84375 + 412, 217 + 58, 83281 + 84375, 1094 + 412, 0,
                        0.053908 + 0.0462175),
                  "claude-opus-4-5", sid),
    ]


@pytest.mark.parametrize(
    ("name", "harness"),
    [("claude-code.jsonl", "claude-code"), ("codex.jsonl", "codex"), ("opencode.jsonl", "opencode"),
     ("pi.jsonl", "pi")],
)
def test_detect_harness_recognises_each_sample(name: str, harness: str) -> None:
    lines = (SAMPLES / name).read_text(encoding="utf-8").splitlines()
    assert detect_harness(lines[:3]) == harness
    assert detect_harness(lines[:1]) == harness


def test_detect_harness_passes_over_noise_and_gives_up_on_strangers() -> None:
    assert detect_harness(["", "not json", '{"type":"thread.started","thread_id":"t"}']) == "codex"
    assert detect_harness(['{"type":"system","subtype":"hook_response","session_id":"s"}']) == "claude-code"
    assert detect_harness(["[1, 2]", '{"no":"type"}', '{"type":"whatever"}']) is None
    assert detect_harness([]) is None
