"""``otel-toolchain run`` around the four real CLIs, against the scripted fake model on 127.0.0.1.

For each CLI: a wedge (same command, same output) and a failing loop are stopped at the limit with
exit code 75, the right cycle and no process left behind; a healthy run (the output changes every
time) runs to its end untouched; the ``--log`` replays to the same verdict. For Claude Code, an
HTTP 529 from the provider shows as a counted retry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_models import fake_model_server
from harness import CLIS, launch
from record import write_login_profile, write_workspace
from scenarios import BY_NAME
from test_cli_offline import require_clis

pytestmark = pytest.mark.integration

LIMIT = 5
HARNESS = {"claude": "claude-code", "codex": "codex", "pi": "pi", "opencode": "opencode"}
SHELL_TOOL = {"claude": "Bash", "codex": "command_execution", "pi": "bash", "opencode": "bash"}


def left_behind(tmp_path: Path) -> list[int]:
    """Processes whose working directory is inside this test's folder (the CLI runs there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd.startswith(str(tmp_path)):
                found.append(int(entry.name))
    return found


def run_wrapped(cli: str, scenario: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    root = require_clis()
    manifest = tmp_path / "pack.toml"
    manifest.write_text(f'[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = {LIMIT}\n'
                        '[[agent.tool_plugins]]\nplugin = "classify"\n[[agent.tool_plugins]]\nplugin = "tool_stats"\n')
    with fake_model_server(scenario) as server:
        spec = launch(cli, root, server, tmp_path, scenario)
        env = {**spec.env, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "otel")}
        done = subprocess.run(
            [sys.executable, "-m", "otel_toolchain", "run", "--manifest", str(manifest), "--grace", "2",
             "--log", str(tmp_path / "run.log"), "--", *spec.argv],
            cwd=spec.cwd, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, check=False,
        )
    replayed = subprocess.run([sys.executable, "-m", "otel_toolchain", "replay", "--manifest", str(manifest),
                               "--format", "json", str(tmp_path / "run.log")],
                              env=env, capture_output=True, text=True, check=False)
    assert replayed.returncode in (0, 75), replayed.stderr  # 75: the replayed turn was stopped, as live
    turns = [json.loads(line) for line in replayed.stdout.splitlines()]
    return done, turns[0]


@pytest.mark.parametrize("scenario", ["wedge", "failing"])
@pytest.mark.parametrize("cli", CLIS)
def test_a_looping_cli_is_stopped_at_the_limit(cli: str, scenario: str, tmp_path: Path) -> None:
    done, replayed = run_wrapped(cli, scenario, tmp_path)
    assert done.returncode == 75, done.stderr
    stop_lines = [line for line in done.stderr.splitlines() if line.startswith("otel-toolchain: stopped by")]
    stopped = replayed["stopped"]
    assert len(stop_lines) == 1, done.stderr
    # The stop line names the cycle, then its evidence; the seconds are the live clock's, so only they vary.
    assert re.fullmatch(
        re.escape(f"otel-toolchain: stopped by repeat_guard at call {LIMIT}: the same call ({SHELL_TOOL[cli]}) "
                  f"repeated {LIMIT} times in a row with the same results; cycle: {SHELL_TOOL[cli]} "
                  f"[{stopped['cycle'][0]['call_id']}]; loop from call {stopped['loop_start']}: "
                  f"{stopped['loop_calls']} calls, ") + r"\d+\.\d s(, \d+ tokens)?(; (ignored|masked) .+)*",
        stop_lines[0]), stop_lines[0]
    assert replayed["harness"] == HARNESS[cli]
    assert replayed["stopped"]["at_call"] == LIMIT  # the log replays to the verdict the live run reached
    stats = replayed["tool_stats"]
    if scenario == "failing":
        assert stats["tools"][SHELL_TOOL[cli]]["failed"] == stats["tools"][SHELL_TOOL[cli]]["calls"] >= LIMIT
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("cli", CLIS)
def test_a_healthy_cli_runs_to_its_end(cli: str, tmp_path: Path) -> None:
    done, replayed = run_wrapped(cli, "healthy", tmp_path)
    assert done.returncode == 0, done.stderr
    assert replayed["stopped"] is None and replayed["calls"] == 3
    assert replayed["tool_stats"]["classes"] == {"read": 3}


def test_claude_code_provider_error_is_a_counted_retry(tmp_path: Path) -> None:
    done, replayed = run_wrapped("claude", "retry", tmp_path)
    assert done.returncode == 0, done.stderr
    assert replayed["tool_stats"]["retries"] == 1 and replayed["stopped"] is None


EARLY = ('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\nlimits = { 1 = 4, 2 = 3, 3 = 3 }\n'
         'poll_limit = 25\n')


@pytest.mark.parametrize(("scenario", "stop_at"), [("cd_dirs", None), ("status_reworded", 4)])
def test_codex_under_run_knows_where_each_command_ran_from_its_rollout(scenario: str, stop_at: int | None,
                                                                       tmp_path: Path) -> None:
    """The real Codex under ``run`` with the early limits: the same ``make check`` in six folders is six
    calls (its stream names no folder; its rollout, followed live, does), while the same ``cat`` in one
    folder is still stopped at call 4. The ``--log`` replays to the same verdict on the same machine."""
    root = require_clis()
    manifest = tmp_path / "early.toml"
    manifest.write_text(EARLY)
    plan = BY_NAME[scenario]
    with fake_model_server(scenario, scripts={scenario: plan.script_for("codex")}) as server:
        spec = launch("codex", root, server, tmp_path, scenario)
        write_workspace(plan, spec.cwd)
        write_login_profile(spec)
        env = {**spec.env, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "otel")}
        done = subprocess.run(
            [sys.executable, "-m", "otel_toolchain", "run", "--manifest", str(manifest), "--grace", "2",
             "--log", str(tmp_path / "run.log"), "--", *spec.argv],
            cwd=spec.cwd, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, check=False,
        )
    assert done.returncode == (0 if stop_at is None else 75), done.stderr
    replayed = subprocess.run([sys.executable, "-m", "otel_toolchain", "replay", "--manifest", str(manifest),
                               "--format", "json", str(tmp_path / "run.log")],
                              env=env, capture_output=True, text=True, check=False)
    turn = json.loads(replayed.stdout.splitlines()[0])
    if stop_at is None:
        assert turn["stopped"] is None and turn["shadow_stopped"] is None and turn["calls"] == 6, turn
    else:
        assert turn["stopped"]["at_call"] == stop_at, turn
    assert left_behind(tmp_path) == []
