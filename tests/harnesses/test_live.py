"""``otel-toolchain run``: pass-through, live stop with exit 75, escalation, retries, signals, no orphans."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_toolchain.chain import Toolchain
from otel_toolchain.harnesses.live import EXIT_STOPPED, run_harness
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_claude.py"


def recorder_on(capture: Capture, limit: int = 5) -> tuple[AgentRecorder, Toolchain]:
    text = (f'[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = {limit}\n'
            '[[agent.tool_plugins]]\nplugin = "tool_stats"\n')
    chain = capture.install(Manifest.from_text(text).toolchain(strict=True))
    return AgentRecorder(capture.tracer_provider, toolchain=chain), chain


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def test_a_wedge_is_stopped_at_the_limit_with_exit_75(capture: Capture, tmp_path: Path) -> None:
    recorder, _ = recorder_on(capture)
    out = io.BytesIO()
    result = run_harness([sys.executable, str(FAKE), "wedge"], recorder, log_path=tmp_path / "run.log", out=out)
    assert result.exit_code == EXIT_STOPPED
    assert [(s.plugin, s.at_call, s.period, s.repeats) for s in result.stops] == [("repeat_guard", 5, 1, 5)]
    assert [c.call_id for c in result.stops[0].cycle] == ["toolu_4"]
    assert out.getvalue() == (tmp_path / "run.log").read_bytes()  # the log is what passed through
    outcome = result.outcomes[0]
    assert (outcome.calls, outcome.tool_stats and outcome.tool_stats["calls"]) == (5, 5)
    turn = next(s for s in capture.finished_spans() if s["name"] == "invoke_agent claude-code")
    assert turn["status"] == "ERROR" and turn["attributes"]["error.type"] == "tool_plugin.repeat_guard"
    assert len(result.stop_latencies_s) == 1


def test_a_healthy_run_passes_through_untouched_with_its_own_exit_code(capture: Capture) -> None:
    recorder, _ = recorder_on(capture)
    out = io.BytesIO()
    expected = subprocess.run([sys.executable, str(FAKE), "healthy", "12"], capture_output=True, check=True).stdout
    result = run_harness([sys.executable, str(FAKE), "healthy", "12"], recorder, out=out)
    assert result.exit_code == 0 and result.stops == []
    assert out.getvalue() == expected
    assert [o.calls for o in result.outcomes] == [12]
    failing = run_harness([sys.executable, str(FAKE), "exit3"], recorder, out=io.BytesIO())
    assert failing.exit_code == 3


def test_sigterm_is_escalated_to_sigkill_and_no_process_is_left(capture: Capture) -> None:
    recorder, _ = recorder_on(capture)
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        pgids = spying_popen(patch)
        result = run_harness([sys.executable, str(FAKE), "stubborn"], recorder, out=io.BytesIO(), grace_s=0.5)
    assert result.exit_code == EXIT_STOPPED
    assert 0.4 < time.monotonic() - started < 10
    assert group_members(pgids[0]) == []


def test_retries_run_fresh_turns_linked_to_the_attempt_before(capture: Capture) -> None:
    recorder, _ = recorder_on(capture)
    result = run_harness([sys.executable, str(FAKE), "wedge"], recorder, retries=2, out=io.BytesIO())
    assert result.exit_code == EXIT_STOPPED and len(result.stops) == 3
    turns = [s for s in capture.spans.get_finished_spans() if s.name == "invoke_agent claude-code"]
    assert [len(t.links) for t in turns] == [0, 1, 1]
    assert turns[1].links[0].context.span_id == turns[0].context.span_id
    assert turns[2].links[0].context.span_id == turns[1].context.span_id


def test_unknown_output_is_passed_through_without_spans(capture: Capture) -> None:
    recorder, _ = recorder_on(capture)
    out = io.BytesIO()
    result = run_harness([sys.executable, "-c", "print('hello'); print('world')"], recorder, out=out)
    assert (result.exit_code, out.getvalue(), result.outcomes) == (0, b"hello\nworld\n", [])


def test_the_cli_forwards_sigterm_and_exports_the_turn(tmp_path: Path) -> None:
    """SIGTERM to ``otel-toolchain run`` reaches the harness; the turn is closed and written out."""
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    proc = subprocess.Popen([sys.executable, "-m", "otel_toolchain", "run", "--", sys.executable, str(FAKE),
                             "healthy", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    for _ in range(20):  # let a few calls through
        proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    spans = (tmp_path / "traces.jsonl").read_text()
    turn = next(line for line in spans.splitlines() if '"name":"invoke_agent claude-code"' in line)
    assert '"status":{"message":"harness_error","code":2}' in turn  # closed as failed, and exported


def test_cli_run_exit_code_and_stop_line(tmp_path: Path) -> None:
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "otel_toolchain", "run", "--log", str(tmp_path / "log.jsonl"), "--",
                           sys.executable, str(FAKE), "wedge"], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert done.returncode == 75
    stop_line = re.compile(
        r"otel-toolchain: stopped by repeat_guard at call 25: the same call \(Bash\) repeated 25 times in a row "
        r"with the same results; cycle: Bash \[toolu_24\]; loop from call 1: 25 calls, \d+\.\d s")  # wall time
    assert [line for line in done.stderr.splitlines() if stop_line.fullmatch(line)], done.stderr
    replayed = subprocess.run([sys.executable, "-m", "otel_toolchain", "replay", "--format", "json",
                               str(tmp_path / "log.jsonl")], capture_output=True, text=True, env=env, check=False)
    assert replayed.returncode == 75  # the same code for a stopped turn as run's
    assert json.loads(replayed.stdout)["stopped"]["at_call"] == 25  # the log replays to the same verdict


def spying_popen(patch: pytest.MonkeyPatch) -> list[int]:
    """Record the pids (= process group ids) of the harnesses run_harness starts."""
    pgids: list[int] = []
    real_popen = subprocess.Popen

    class Spy(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            pgids.append(self.pid)

    patch.setattr(subprocess, "Popen", Spy)
    return pgids


def test_a_background_child_holding_stdout_is_ended_after_the_harness_exits(capture: Capture) -> None:
    recorder, _ = recorder_on(capture)
    with pytest.MonkeyPatch.context() as patch:
        pgids = spying_popen(patch)
        result = run_harness(["sh", "-c", "echo a; sleep 300 & exit 0"], recorder, out=io.BytesIO(), grace_s=0.3)
    assert result.exit_code == 0
    assert group_members(pgids[0]) == []


def test_a_consumer_that_goes_away_ends_the_harness_and_the_turn_is_exported(tmp_path: Path) -> None:
    """``run … | head``: the harness is ended as SIGPIPE would have, the turn closed and written out."""
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "otel_toolchain", "run", "--", sys.executable, str(FAKE),
                             "healthy", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(10):
        proc.stdout.readline()
    proc.stdout.close()  # the reader goes away
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    proc.stderr.close()
    assert proc.returncode == 128 + signal.SIGTERM, err
    turn = next(line for line in (tmp_path / "traces.jsonl").read_text().splitlines()
                if '"name":"invoke_agent claude-code"' in line)
    assert '"code":2' in turn


def test_an_unwritable_log_is_reported_and_the_watch_goes_on(
    capture: Capture, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder, _ = recorder_on(capture)
    result = run_harness([sys.executable, str(FAKE), "wedge"], recorder, out=io.BytesIO(),
                         log_path=Path("/dev/full"))
    assert result.exit_code == EXIT_STOPPED and result.stops[0].at_call == 5
    assert "otel-toolchain: cannot write the log (No space left on device); still watching" in capsys.readouterr().err


def test_ctrl_c_reaches_the_harness(tmp_path: Path) -> None:
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "otel_toolchain", "run", "--", sys.executable, str(FAKE),
                             "healthy", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    for _ in range(10):
        proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["--retries", "-1", "--", "true"], 2, "argument --retries: must not be negative: -1"),
    (["--grace", "-2", "--", "true"], 2, "argument --grace: must not be negative: -2"),
    (["--", "/nonexistent/harness"], 127,
     "otel-toolchain: cannot run '/nonexistent/harness': No such file or directory"),
    (["--log", "/nonexistent/dir/log", "--", "true"], 0,  # the log is only reported: the run goes on
     "otel-toolchain: warning: cannot open the log '/nonexistent/dir/log': No such file or directory; running "
     "without it"),
])
def test_bad_run_usage(tmp_path: Path, argv: list[str], code: int, message: str) -> None:
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "otel_toolchain", "run", *argv], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == code and message in done.stderr
