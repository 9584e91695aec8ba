"""The real OpenCode and Pi CLIs guarded by the bridge files ``hooks install opencode|pi`` writes.

Faked: only the model API (tests/clis/fake_models.py on 127.0.0.1), so each run is offline and the
wedge is the same call every time. The bridge is installed with the real command into the run's
project folder and loaded by the CLI itself (OpenCode: ``.opencode/plugin/``, Pi:
``.pi/extensions/``); it hands each call to the real ``otel-toolchain hook`` through the warm hook
server it starts, which the test ends.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "clis")]

import fake_models  # noqa: E402
import harness  # noqa: E402
from hook_exports import end_servers, tool_stats_reports  # noqa: E402

pytestmark = pytest.mark.integration

_NAMES = {"opencode": "OpenCode", "pi": "Pi"}
_STOP = "otel-toolchain: stopped by repeat_guard at call 25: the same call (bash) repeated 25 times in a row"


@pytest.fixture(scope="module")
def clis() -> None:
    missing = harness.missing_binaries(harness.cli_dir())
    assert not missing, f"run .ci/install-clis first: {missing}"


@pytest.mark.parametrize("scenario", ["wedge", "healthy"])
@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_the_cli_with_the_installed_bridge(tmp_path: Path, clis: None, cli: str, scenario: str) -> None:
    short = Path(tempfile.mkdtemp(prefix="othbr-", dir="/tmp"))  # room for the warm server's socket name
    try:
        run, seen, bridge = _guarded_run(tmp_path, short, cli, scenario)
        out = short / "otel-toolchain"
        reports = tool_stats_reports(out / "logs.jsonl")  # exported when the turn closed
        assert run.returncode == 0 and run.stopped_by is None, run.stderr[-2000:]
        if scenario == "wedge":
            assert seen == 24  # the 25th call's result never reached the model: the run ended on it
            assert run.stderr.count(_STOP) == 1, run.stderr[-2000:]
            assert "tool_plugin.repeat_guard" in (out / "traces.jsonl").read_text()
            assert [(r["calls"], r["tools"]["bash"]["calls"]) for r in reports] == [(25, 25)]
        else:
            assert seen == 5 and "stopped by" not in run.stderr
            assert [(r["calls"], r["tools"]["bash"]["calls"], r["retries"]) for r in reports] == [(5, 5, 0)]
        assert not list((out / "hook-sessions").glob("*.json"))  # the session ended with the process: state removed
        assert bridge.read_text().startswith(f"// otel-toolchain bridge for {_NAMES[cli]}:")
    finally:
        servers = end_servers(short)
        shutil.rmtree(short, ignore_errors=True)
    assert len(servers) == 1  # started by the first call, alive until the test ended it


def _guarded_run(tmp_path: Path, state: Path, cli: str, scenario: str,
                 scopes: tuple[str, ...] = ("project",)) -> tuple[harness.GroupRun, int, Path]:
    with fake_models.fake_model_server(scenario, delay=0.1, healthy_calls=5) as server:
        launch = harness.launch(cli, harness.cli_dir(), server, tmp_path, scenario)
        launch.env["XDG_STATE_HOME"] = str(state)  # where the hook keeps sessions and writes the embedded default
        for scope in scopes:
            done = subprocess.run([sys.executable, "-m", "otel_toolchain", "hooks", "install", cli, "--scope", scope],
                                  cwd=launch.cwd, check=True, capture_output=True, text=True, timeout=60,
                                  env=launch.env)
        bridge = Path(done.stdout.split(" bridge ", 1)[1].split(": ", 1)[0])
        run = harness.run_group(launch, timeout=240)
        seen = max((r.tool_results for r in server.main_requests()), default=0)
    return run, seen, bridge


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_the_bridge_installed_in_both_scopes_acts_once(tmp_path: Path, clis: None, cli: str) -> None:
    short = Path(tempfile.mkdtemp(prefix="othbr-", dir="/tmp"))
    try:
        run, seen, user_bridge = _guarded_run(tmp_path, short, cli, "wedge", scopes=("project", "user"))
        reports = tool_stats_reports(short / "otel-toolchain" / "logs.jsonl")
        assert str(user_bridge).startswith(str(tmp_path / "config" if cli == "opencode" else tmp_path / "agent"))
        assert (run.returncode, seen, run.stderr.count(_STOP)) == (0, 24, 1), run.stderr[-2000:]
        assert [r["calls"] for r in reports] == [25]  # each call handed over once: the stop came at the 25th
    finally:
        end_servers(short)
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_a_bridge_whose_command_cannot_start_says_so_and_fails_nothing(tmp_path: Path, clis: None, cli: str) -> None:
    from otel_toolchain.hooks import bridges  # noqa: PLC0415

    with fake_models.fake_model_server("healthy", delay=0.1, healthy_calls=3) as server:
        launch = harness.launch(cli, harness.cli_dir(), server, tmp_path, "healthy")
        path = bridges.bridge_path(cli, "project", launch.cwd, tmp_path / "home", launch.env)
        bridges.install(cli, path, [str(tmp_path / "no-such-otel-toolchain"), "hook", cli])
        run = harness.run_group(launch, timeout=240)
        seen = max((r.tool_results for r in server.main_requests()), default=0)
    assert (run.returncode, run.stopped_by, seen) == (0, None, 3)  # the agent went on as if unguarded
    assert f"otel-toolchain: cannot start {tmp_path / 'no-such-otel-toolchain'}" in run.stderr
