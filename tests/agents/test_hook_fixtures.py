"""The recorded Claude Code hook data (tests/data/hooks) says what its README says: the payload keys of
each event, and the measured outcome of each answer. Reads committed data only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hook_probe import BLOCK_REASON, FAIL_TEXT, NUDGE

HOOKS = Path(__file__).resolve().parents[1] / "data" / "hooks"
DATA = HOOKS / "claude-code"
COMMON = {"session_id", "transcript_path", "cwd", "hook_event_name"}
#: Event -> keys its payload must have (besides COMMON), as the README's table lists them.
KEYS = {
    "PostToolUse.healthy": {"tool_name", "tool_input", "tool_response", "tool_use_id", "duration_ms", "prompt_id"},
    "PostToolUseFailure.failing": {"tool_name", "tool_input", "tool_use_id", "error", "is_interrupt", "duration_ms"},
    "PostToolBatch.healthy": {"tool_calls"},
    "PreToolUse.healthy": {"tool_name", "tool_input", "tool_use_id"},
    "Stop.healthy": {"stop_hook_active", "last_assistant_message"},
    "SessionEnd.healthy": {"reason"},
    "SessionStart.healthy": {"source"},
    "UserPromptSubmit.healthy": {"prompt"},
}


def _experiments() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "experiments.json").read_text())
    return data


@pytest.mark.parametrize("name", sorted(KEYS))
def test_payload_has_the_documented_keys(name: str) -> None:
    payload = json.loads((DATA / f"{name}.json").read_text())
    assert payload["hook_event_name"] == name.split(".", maxsplit=1)[0]
    assert COMMON | KEYS[name] <= set(payload)
    readme = (HOOKS / "README.md").read_text()
    assert all(f"`{key}`" in readme for key in KEYS[name])


def test_bash_payload_details() -> None:
    post = json.loads((DATA / "PostToolUse.healthy.json").read_text())
    assert post["tool_name"] == "Bash" and post["tool_input"]["command"] == "date +%s%N"
    assert set(post["tool_response"]) >= {"stdout", "stderr", "interrupted"}
    failure = json.loads((DATA / "PostToolUseFailure.failing.json").read_text())
    assert failure["error"].startswith("Exit code 1\n") and "No such file" in failure["error"]
    batch = json.loads((DATA / "PostToolBatch.healthy.json").read_text())
    assert [c["tool_use_id"] for c in batch["tool_calls"]] == [post["tool_use_id"]]


def test_event_order_of_a_healthy_run() -> None:
    seen = _experiments()["payloads-healthy"]["hook_invocations"]
    assert seen == ["SessionStart", "UserPromptSubmit", *["PreToolUse", "PostToolUse", "PostToolBatch"] * 5,
                    "Stop", "SessionEnd"]
    failing = _experiments()["payloads-failing"]["hook_invocations"]
    assert "PostToolUseFailure" in failing and "PostToolUse" not in failing


def test_continue_false_ends_the_session_cleanly() -> None:
    stop = _experiments()["stop"]
    assert stop["returncode"] == 0 and stop["stopped_by_test"] is None
    assert stop["result_line"]["terminal_reason"] == "hook_stopped"
    assert stop["result_line"]["is_error"] is False
    assert stop["tool_results_seen_by_model"] == 2  # stopped on the 3rd call's hook: no further request
    assert stop["hook_invocations"][-2:] == ["PostToolUse", "SessionEnd"] and "Stop" not in stop["hook_invocations"]


@pytest.mark.parametrize(("name", "text"), [("context", NUDGE), ("block", BLOCK_REASON), ("exit2", FAIL_TEXT)])
def test_text_that_reaches_the_model(name: str, text: str) -> None:
    reached = _experiments()[name]["hook_text_reached_model"]
    assert list(reached) == [text[:40]]
    assert all(path.endswith("(system)") for _, paths in reached[text[:40]] for path in paths)


@pytest.mark.parametrize("name", ["exit1", "garbage", "hang-timeout-2s"])
def test_ignored_answers_let_the_run_go_on(name: str) -> None:
    exp = _experiments()[name]
    assert exp["hook_text_reached_model"] == {} and exp["tool_results_seen_by_model"] >= 3


def test_claude_code_waits_for_a_hook_up_to_its_timeout() -> None:
    exps = _experiments()
    assert all(2.9 < w < 4.0 for w in exps["slow-3s"]["post_tool_use_seconds_to_next_model_request"])
    assert all(1.9 < w < 3.0 for w in exps["hang-timeout-2s"]["post_tool_use_seconds_to_next_model_request"])
    assert exps["hang-default-timeout"]["post_tool_use_seconds_to_next_model_request"][0] > 75
