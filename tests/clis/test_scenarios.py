"""The recording scenarios: their scripts, served by the fake over HTTP, and their workspaces run for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fake_models import fake_model_server, request_turn
from moves import FinalText, ToolCall, Turn
from scenarios import (
    BY_NAME,
    DONE,
    GIVE_UP,
    PI_REPEATS,
    UNCHANGED_POLLS,
    WEDGE_REPEATS,
    finish_build,
    packages,
    poll_log,
    reworded,
)
from test_fake_models import post, sse_data
from workspaces import BUILD_LOG_DONE, FIXING_FILES, PACKAGES, POLL_LOG_FILES

CHAT_BASH = {"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}}
EXEC = {"type": "function", "name": "exec_command", "parameters": {"properties": {"cmd": {}, "workdir": {}}}}


def moves(name: str, turn: Turn, cli: str = "claude", limit: int = 200) -> list[ToolCall | FinalText]:
    """The moves of a scenario's script for ``cli`` after 0, 1, ... results, up to its final text."""
    script = BY_NAME[name].script_for(cli)
    out: list[ToolCall | FinalText] = []
    for results in range(limit):
        move = script(Turn(results, turn.wire, turn.shell_args, turn.last_result))
        out.append(move)
        if isinstance(move, FinalText):
            break
    return out


def calls_of(found: list[ToolCall | FinalText]) -> list[ToolCall]:
    """The tool calls among ``found``."""
    return [move for move in found if isinstance(move, ToolCall)]


def test_rewordings_are_all_different() -> None:
    """40 rewordings, 40 different texts: the annotation never repeats within a wedge."""
    assert len({reworded(i) for i in range(WEDGE_REPEATS)}) == WEDGE_REPEATS
    calls = moves("status_reworded", Turn(0, "anthropic"))
    assert [c.command for c in calls_of(calls)] == ["cat status.txt"] * WEDGE_REPEATS
    assert calls[-1] == FinalText(GIVE_UP)


def test_codex_gets_no_annotation_but_in_the_refusal_scenario() -> None:
    """On Codex's wire a call carries no justification (Codex would refuse it), except on purpose."""
    plain = moves("pytest_fail", Turn(0, "responses"))
    refused = moves("justification_refused", Turn(0, "responses"))
    assert {c.note for c in plain if isinstance(c, ToolCall)} == {None}
    assert [c.note for c in refused if isinstance(c, ToolCall)] == [reworded(i) for i in range(WEDGE_REPEATS)]


def test_pi_wedges_are_shorter() -> None:
    """Pi's stream is ~8 KB a call, so its wedges go round fewer times; the cycle is the same."""
    for name, period in (("pytest_fail", 1), ("cycle2_build_read", 2), ("cycle3_build_read", 3)):
        assert len(moves(name, Turn(0, "chat"), "pi")) - 1 == PI_REPEATS[period] * period
        assert len(moves(name, Turn(0, "chat"), "claude")) - 1 == WEDGE_REPEATS * period


def test_packages_by_shell() -> None:
    """workdir where the tool has one, a cd call before each check for Claude Code, cd && for the rest."""
    with_workdir = moves("cd_dirs", Turn(0, "chat", frozenset({"command", "workdir"})))
    assert [(c.command, c.workdir) for c in calls_of(with_workdir)] == [("make check", p) for p in PACKAGES]
    assert with_workdir[-1] == FinalText(DONE)
    claude = [c.command for c in moves("cd_dirs", Turn(0, "anthropic")) if isinstance(c, ToolCall)]
    assert claude[:4] == ["cd pkg-a", "make check", "cd ../pkg-b", "make check"] and len(claude) == 12
    pi = [c.command for c in moves("cd_dirs", Turn(0, "chat", frozenset({"command"}))) if isinstance(c, ToolCall)]
    assert pi == [f"cd {p} && make check" for p in PACKAGES]
    assert packages(Turn(6, "chat", frozenset({"command"}))) == FinalText(DONE)


def test_poll_ends_when_the_log_says_so(tmp_path: Path) -> None:
    """The log changes once the agent has polled it long enough, once; then the script ends."""
    (tmp_path / "build.log").write_text(POLL_LOG_FILES["build.log"])
    finish_build(UNCHANGED_POLLS - 1, tmp_path)
    assert (tmp_path / "build.log").read_text() == POLL_LOG_FILES["build.log"]
    finish_build(UNCHANGED_POLLS, tmp_path)
    finish_build(UNCHANGED_POLLS + 1, tmp_path)
    assert (tmp_path / "build.log").read_text().count(BUILD_LOG_DONE) == 1
    assert isinstance(poll_log(Turn(3, last_result="running")), ToolCall)
    assert poll_log(Turn(13, last_result=f"x\n{BUILD_LOG_DONE} in 280s")) == FinalText(DONE)


def test_fake_reads_the_last_result_and_the_schema() -> None:
    """Over HTTP: the chat fake ends the poll on the log's last line; the Responses fake sends workdir."""
    with fake_model_server("poll_unchanged_log", delay=0.0) as server:
        done = {"model": "fake-poll_unchanged_log", "stream": True, "tools": [CHAT_BASH],
                "messages": [{"role": "tool", "content": f"[12:04:41] {BUILD_LOG_DONE} in 280s"}]}
        assert DONE in post(f"{server.base_url}/v1/chat/completions", done)[1].decode()
    with fake_model_server("cd_dirs", delay=0.0) as server:
        body = {"model": "gpt-5.5", "stream": True, "tools": [EXEC], "input": [{"type": "function_call_output"}]}
        events = sse_data(post(f"{server.base_url}/v1/responses", body)[1])
        assert json.loads(events[2]["item"]["arguments"]) == {"cmd": "make check", "workdir": PACKAGES[1]}
    turn = request_turn("anthropic", {"tools": [{"name": "Bash", "input_schema": {"properties": {"command": {}}}}],
                                      "messages": [{"role": "user", "content": [
                                          {"type": "tool_result", "content": [{"type": "text", "text": "a"}]},
                                          {"type": "tool_result", "content": "b"}]}]}, 2)
    assert turn == Turn(2, "anthropic", frozenset({"command"}), "b")


def test_fix_next_fixes_one_test_per_run(tmp_path: Path) -> None:
    """The healthy pytest workspace for real: each run of the command has one failure fewer."""
    for rel, content in FIXING_FILES.items():
        (tmp_path / rel).write_text(content)
    summaries = []
    for _ in range(2):
        subprocess.run([sys.executable, "fix_next.py"], cwd=tmp_path, check=True)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        summaries.append(run.stdout.strip().splitlines()[-1])
    assert summaries[0].startswith("7 failed, 1 passed") and summaries[1].startswith("6 failed, 2 passed")
