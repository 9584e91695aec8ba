"""The Claude Code hook: recorded payloads of the real CLI (tests/data/hooks) through the real command.

The payloads are Claude Code 2.1.332's own; a wedge is the recorded ``PostToolUse`` sent again and
again, as the CLI sends it for each repetition of the same call. The command runs as a subprocess,
one per event, as Claude Code runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hook_exports import tool_stats_reports

from otel_toolchain.chain import Toolchain
from otel_toolchain.hooks import session as hook_session
from otel_toolchain.hooks import settings
from otel_toolchain.hooks.claude_code import READER
from otel_toolchain.hooks.session import HookAnswer, Reporting, trace_id_of
from otel_toolchain.hooks.state import MAX_CALLS, STALE_S, SessionState, locked_session, remove_stale
from otel_toolchain.manifest import Manifest
from otel_toolchain.testing import Capture

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks" / "claude-code"


def handle_event(event: dict[str, Any], manifest: Manifest, root: Path, *,
                 reporting: Reporting | None = None) -> HookAnswer:
    """A Claude Code event through its session's chain, as the hook command runs it."""
    return hook_session.handle_event(event, READER, manifest, root, reporting=reporting)


def payload(name: str, **changes: Any) -> dict[str, Any]:
    return json.loads((DATA / name).read_text()) | changes


def _hook(event: dict[str, Any], state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"OTEL_TOOLCHAIN_HOOK_STATE_DIR": str(state), "OTEL_TOOLCHAIN_OUTPUT_DIR": str(state / "out")}
    return subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code", *extra],
                          input=json.dumps(event), capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.mark.integration  # 27 processes of the real command: slow
def test_a_wedged_session_is_stopped_at_the_25th_call_and_stays_stopped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    wedge = payload("PostToolUseFailure.failing.json")
    answers = [_hook(wedge | {"tool_use_id": f"toolu_{n}"}, state) for n in range(26)]
    assert all(a.returncode == 0 for a in answers)
    assert [a.stdout for a in answers[:24]] == [""] * 24
    stop = json.loads(answers[24].stdout)
    assert stop == {"continue": False, "stopReason": "otel-toolchain: stopped by repeat_guard at call 25: "
                    "the same call (Bash) repeated 25 times in a row with the same results"}
    assert json.loads(answers[25].stdout) == stop
    assert oct((state).stat().st_mode & 0o777) == "0o700"
    traces = (state / "out" / "traces.jsonl").read_text()
    assert '"traceId":"6423284a76e44823bdc8b024a6e70c82"' in traces  # the session id is the trace id
    assert "tool_plugin.repeat_guard" in traces
    assert not (state / "out" / "logs.jsonl").exists()  # nothing reported before the turn closes
    end = _hook(payload("SessionEnd.failing.json"), state)
    assert end.returncode == 0 and end.stdout == ""
    [report] = tool_stats_reports(state / "out" / "logs.jsonl")  # the calls after the stop were not kept
    assert (report["calls"], report["tools"]["Bash"]["failed"], report["longest_fail_streak"]) == (25, 25, 25)
    assert sorted(p.name for p in state.iterdir()) == ["out"]  # the session's state is gone


def test_a_healthy_session_is_not_stopped(tmp_path: Path) -> None:
    base = payload("PostToolUse.healthy.json")
    for n in range(30):  # the output changes every call: progress
        event = base | {"tool_use_id": f"t{n}", "tool_response": base["tool_response"] | {"stdout": str(n)}}
        assert handle_event(event, Manifest.default(), tmp_path).output is None
    assert _hook(base | {"tool_use_id": "last"}, tmp_path).stdout == ""  # the command agrees


def test_the_model_ending_its_turn_starts_a_new_turn(tmp_path: Path) -> None:
    manifest = Manifest.default()
    wedge = payload("PostToolUse.healthy.json")
    for n in range(20):
        assert handle_event(wedge | {"tool_use_id": f"a{n}"}, manifest, tmp_path).output is None
    assert handle_event(payload("Stop.healthy.json"), manifest, tmp_path).output is None
    for n in range(24):
        assert handle_event(wedge | {"tool_use_id": f"b{n}"}, manifest, tmp_path).output is None
    answer = handle_event(wedge | {"tool_use_id": "b24"}, manifest, tmp_path)
    assert answer.output is not None and answer.output["continue"] is False


def test_a_nudge_is_answered_as_additional_context(tmp_path: Path) -> None:
    manifest = Manifest.from_dict({"agent": {"tool_plugins": [{"plugin": "repeat_guard", "limit": 25, "nudge_at": 3}]}})
    wedge = payload("PostToolUse.healthy.json")
    outputs = [handle_event(wedge | {"tool_use_id": f"n{n}"}, manifest, tmp_path).output for n in range(4)]
    assert outputs[:2] == [None, None] and outputs[3] is None
    assert outputs[2] is not None
    context = outputs[2]["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUse"
    assert "repeated" in context["additionalContext"] or "same" in context["additionalContext"]


@pytest.mark.integration  # 25 processes of the real command: slow
def test_parallel_calls_of_one_session_are_all_counted(tmp_path: Path) -> None:
    wedge = payload("PostToolUse.healthy.json")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: _hook(wedge | {"tool_use_id": f"p{n}"}, tmp_path), range(25)))
    assert [json.loads(a.stdout)["continue"] for a in answers if a.stdout] == [False]  # exactly one call was the 25th
    with locked_session(tmp_path, wedge["session_id"]) as (state, _path):
        assert len(state.calls) == 25


def test_a_closed_turn_reports_once_and_only_through_the_wiring(tmp_path: Path) -> None:
    manifest, capture, wired = Manifest.default(), Capture(), []

    def reporting(chain: Toolchain) -> None:
        wired.append(chain)
        chain.install(meter_provider=capture.meter_provider, logger_provider=capture.logger_provider)

    base = payload("PostToolUse.healthy.json")  # duration_ms 39
    for n in range(3):
        event = base | {"tool_use_id": f"t{n}", "tool_response": base["tool_response"] | {"stdout": str(n)}}
        assert handle_event(event, manifest, tmp_path, reporting=reporting).output is None
    assert wired == []  # a call closes no turn: nothing is wired, nothing counted
    with locked_session(tmp_path, base["session_id"]) as (state, _path):
        span_id = state.span_id
    assert handle_event(payload("Stop.healthy.json"), manifest, tmp_path, reporting=reporting).output is None
    assert handle_event(payload("SessionEnd.healthy.json"), manifest, tmp_path, reporting=reporting).output is None
    assert len(wired) == 1  # the SessionEnd after the Stop closed a turn without calls: no second report
    assert capture.events() == [{
        "event_name": "otel_toolchain.tool_stats",
        "body": {"calls": 3, "retries": 0, "longest_fail_streak": 0,
                 "tools": {"Bash": {"calls": 3, "failed": 0, "ms": 117}}, "classes": {"read": 3}},
        "trace_id": trace_id_of(base["session_id"]), "span_id": span_id,  # the turn's own, drawn at its first call
        "attributes": {"otel_toolchain.plugin": "tool_stats"},
    }]
    assert capture.metrics()["otel_toolchain.tool.calls"] == [{
        "attributes": {"gen_ai.tool.name": "Bash", "otel_toolchain.tool.class": "read",
                       "otel_toolchain.tool.failed": "false"},
        "value": 3,
    }]
    capture.shutdown()


def test_sessions_do_not_share_state(tmp_path: Path) -> None:
    manifest = Manifest.default()
    wedge = payload("PostToolUse.healthy.json")
    for n in range(24):
        for session in ("s-one", "s-two"):
            event = wedge | {"session_id": session, "tool_use_id": f"{n}"}
            assert handle_event(event, manifest, tmp_path).output is None
    answer = handle_event(wedge | {"session_id": "s-one", "tool_use_id": "x"}, manifest, tmp_path)
    assert answer.output is not None


def test_state_is_bounded(tmp_path: Path) -> None:
    with locked_session(tmp_path, "big") as (state, _path):
        state.calls = [["Bash", {}, str(n), False, None, None, None, 0, 0] for n in range(MAX_CALLS + 100)]
    with locked_session(tmp_path, "big") as (state, _path):
        assert len(state.calls) == MAX_CALLS
    assert SessionState.from_json("{broken").calls == []


def test_stale_state_is_removed_and_nothing_else(tmp_path: Path) -> None:
    warm = tmp_path / "warm"
    warm.mkdir()
    files = {name: tmp_path / name for name in ("old.json", "old.lock", "new.json")}
    files |= {name: warm / name for name in ("gone.lock", "gone.log", "live.lock", "live.log", "live.sock")}
    for path in files.values():
        path.write_text("")
    long_ago = time.time() - STALE_S - 60
    for name in ("old.json", "old.lock", "gone.lock", "gone.log", "live.lock", "live.log", "live.sock"):
        os.utime(files[name], (long_ago, long_ago))
    os.utime(warm, (long_ago, long_ago))  # a folder, however old, is not state to remove
    assert remove_stale(tmp_path) == 4
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["live.lock", "live.log", "live.sock", "new.json", "warm"]


def test_bad_input_is_reported_and_checks_nothing(tmp_path: Path) -> None:
    answer = subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code"], input="not json",
                            capture_output=True, text=True, timeout=60, check=False,
                            env=os.environ | {"OTEL_TOOLCHAIN_HOOK_STATE_DIR": str(tmp_path)})
    assert answer.returncode == 1 and answer.stdout == ""
    assert "standard input is not JSON" in answer.stderr
    answer = _hook({"hook_event_name": "PostToolUse"}, tmp_path)
    assert answer.returncode == 1 and "no session_id" in answer.stderr


def test_install_and_uninstall_keep_everything_else(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    other = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}
    path.write_text(json.dumps({"model": "x", "permissions": {"allow": ["Bash"]}, "hooks": {"PostToolUse": [other]}}))
    for _ in range(2):  # installing twice replaces, never duplicates
        run = subprocess.run([sys.executable, "-m", "otel_toolchain", "hooks", "install", "claude-code"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    assert "added the hook" in run.stdout
    data = json.loads(path.read_text())
    assert data["model"] == "x" and data["permissions"] == {"allow": ["Bash"]}
    assert data["hooks"]["PostToolUse"][0] == other
    assert [len(data["hooks"][e]) for e in settings.HOOK_EVENTS] == [2, 1, 1, 1]
    ours = data["hooks"]["PostToolUse"][1]
    assert ours["matcher"] == "*" and ours["hooks"][0]["command"].endswith("-m otel_toolchain hook claude-code")
    run = subprocess.run([sys.executable, "-m", "otel_toolchain", "hooks", "uninstall", "claude-code"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    assert "removed the hook" in run.stdout
    assert json.loads(path.read_text()) == {"model": "x", "permissions": {"allow": ["Bash"]},
                                            "hooks": {"PostToolUse": [other]}}


def test_install_refuses_a_settings_file_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    with pytest.raises(Exception, match="not JSON"):
        settings.install(path, "otel-toolchain hook claude-code")
    assert path.read_text() == "{not json"


def test_user_scope_follows_claude_config_dir(tmp_path: Path) -> None:
    assert settings.settings_path("user", tmp_path, tmp_path / "home", None) == tmp_path / "home/.claude/settings.json"
    assert settings.settings_path("user", tmp_path, tmp_path, str(tmp_path / "cfg")) == tmp_path / "cfg/settings.json"
    assert settings.settings_path("project", tmp_path / "p", tmp_path, None) == tmp_path / "p/.claude/settings.json"
