"""The ``otel-toolchain`` command as a person meets it: the real CLI in a subprocess, whole outputs compared.

Nothing is faked: each test runs ``python -m otel_toolchain`` on the repository's own recordings
(examples/streams, tests/data/recordings) with HOME and the embedded default's folder in a temporary
directory, a fixed digest key (``#…`` digests are keyed, randomly per process otherwise) and no
OTLP endpoint. Trace ids are random, so ``trace xxxxxxxx`` is masked before comparing. The golden
trees in tests/data/cli were checked by eye; ``UPDATE_GOLDEN=1`` rewrites them.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from otel_toolchain import __version__
from otel_toolchain.receiver.core import LINGER_S

WEDGE = "examples/streams/claude-code-wedge.jsonl"
HEALTHY = "examples/streams/claude-code-healthy.jsonl"
CYCLE2 = "tests/data/recordings/codex/cycle2_build_read.jsonl"
GOLDEN = REPO / "tests" / "data" / "cli"
FAKE = REPO / "tests" / "fixtures" / "fake_claude.py"
_TRACE = re.compile(r"trace [0-9a-f]{8}")


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OTEL_", "COLUMNS", "NO_COLOR", "FORCE_COLOR", "PYTHONIOENCODING"))}
    env.update(HOME=str(tmp_path / "home"), OTEL_TOOLCHAIN_OUTPUT_DIR=str(tmp_path / "out"),
               OTEL_TOOLCHAIN_DIGEST_KEY="golden", TERM="xterm")
    env.update(extra)
    return env


def cli(tmp_path: Path, *argv: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otel_toolchain", *argv], capture_output=True, text=True,
                          cwd=REPO, env=env_for(tmp_path, **extra), input=stdin, timeout=120, check=False)


def masked(text: str) -> str:
    return _TRACE.sub("trace xxxxxxxx", text)


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("recording", [WEDGE, CYCLE2])
def test_the_tree_folds_the_loop_and_marks_the_stop(tmp_path: Path, columns: int, colour: bool,
                                                      recording: str) -> None:
    extra = {"COLUMNS": str(columns), **({"FORCE_COLOR": "1"} if colour else {})}
    done = cli(tmp_path, "-q", "replay", recording, **extra)
    assert done.returncode == 75 and done.stderr == ""
    name = f"{Path(recording).stem}-{columns}{'-colour' if colour else ''}.txt"
    golden(name, masked(done.stdout))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    tree = plain.split("\ninvoke_agent ", 1)[1].splitlines()
    assert all(len(line) <= columns for line in tree)  # the header no longer wraps at 80 columns
    assert ("\x1b[" in done.stdout) is colour


def test_piped_output_is_plain_and_unlimited_and_no_color_wins(tmp_path: Path) -> None:
    done = cli(tmp_path, "-q", "replay", CYCLE2, FORCE_COLOR="1", NO_COLOR="1")
    assert "\x1b[" not in done.stdout
    assert "  STOPPED by repeat_guard at call 50: the same cycle of 2 calls (command_execution -> " \
           "command_execution) repeated 25 times in a row with the same results\n" in done.stdout


def test_show_reads_the_embedded_default_and_keeps_marked_lines_when_eliding(tmp_path: Path) -> None:
    assert cli(tmp_path, "-q", "replay", HEALTHY, WEDGE).returncode == 75
    done = cli(tmp_path, "show", "--max-calls", "1")
    assert done.returncode == 75, done.stderr  # a stopped turn among those shown, as replay said
    assert masked(done.stdout) == (
        "invoke_agent claude-code  trace xxxxxxxx  session 313d7db3-cb4b-4a3f-91d1-e286917c53df\n"
        "  4 calls, 0 failed\n"
        "├─ 1  Bash  read  88 ms\n"  # the stream's own line times (use line to result line)
        "└─ … 3 more calls …\n"
        "invoke_agent claude-code  trace xxxxxxxx  session cd36c0d6-86e9-4896-9397-4ddcab5bfb3d\n"
        "  30 calls, 0 failed\n"
        "  STOPPED by repeat_guard at call 25: the same call (Bash) repeated 25 times in a row with the same "
        "results\n"
        "├─  1  Bash  read  58 ms  ◀ loop from 1\n"  # no arguments on the spans: calls are not folded
        "├─ … 23 more calls …\n"
        "├─ 25  Bash  read  37 ms  ◀ STOP at 25\n"
        "└─ … 5 more calls …\n")
    as_json = [json.loads(line) for line in cli(tmp_path, "show", "--format", "json").stdout.splitlines()]
    assert [turn["calls"] for turn in as_json] == [4, 30]
    assert as_json[1]["stopped"]["at_call"] == 25 and len(as_json[1]["tree"]) == 30


def test_a_stopped_turn_is_exit_75_in_show_and_in_analyze_with_exit_code(tmp_path: Path) -> None:
    """The exit-code table: 75 wherever a stop is reported; analyze is a report (0) unless asked."""
    assert cli(tmp_path, "-q", "replay", HEALTHY).returncode == 0
    assert cli(tmp_path, "-q", "show").returncode == 0  # only a healthy turn in the embedded default
    assert cli(tmp_path, "-q", "replay", WEDGE).returncode == 75
    assert cli(tmp_path, "-q", "show").returncode == 75
    assert cli(tmp_path, "-q", "show", "--format", "json").returncode == 75
    assert cli(tmp_path, "-q", "analyze", HEALTHY, WEDGE).returncode == 0
    assert cli(tmp_path, "-q", "analyze", "--exit-code", HEALTHY).returncode == 0
    assert cli(tmp_path, "-q", "analyze", "--exit-code", "--format", "json", HEALTHY, WEDGE).returncode == 75
    shadow = tmp_path / "shadow.toml"
    shadow.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\nmode = "shadow"\n')
    assert cli(tmp_path, "-q", "analyze", "--exit-code", "--manifest", str(shadow), WEDGE).returncode == 0
    no_agent = tmp_path / "no-agent.jsonl"  # a valid traces file whose one span is no turn
    no_agent.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "GET /"}]}]}]}) + "\n")
    done = cli(tmp_path, "-q", "show", str(no_agent))
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", f"otel-toolchain: {no_agent}: no turns in it (no invoke_agent span)\n")


def test_a_shadow_stop_and_its_nudge_are_shown_in_text_and_json(tmp_path: Path) -> None:
    pack = tmp_path / "pack.toml"
    pack.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\nmode = "shadow"\nnudge_at = 10\n')
    done = cli(tmp_path, "-q", "replay", "--manifest", str(pack), WEDGE)
    assert done.returncode == 0, done.stderr
    tree = masked(done.stdout.split("\ninvoke_agent ", 1)[1])
    assert tree.splitlines()[2:] == [
        "  SHADOW STOP (not enforced) by repeat_guard at call 25: the same call (Bash) repeated 25 times in a row "
        "with the same results",
        f"  nudged by repeat_guard: {_nudge_message(done.stdout)}",
        "└─ 1-30  Bash  1.7 s  #11e91d7e \u00d730  ◀ loop from 1, shadow stop at 25",
    ]
    data = json.loads(cli(tmp_path, "replay", "--format", "json", "--manifest", str(pack), WEDGE).stdout)
    assert data["stopped"] is None and data["shadow_stopped"]["at_call"] == 25
    assert data["nudges"][0]["plugin"] == "repeat_guard" and data["nudges"][0]["repeats"] == 10


def _nudge_message(stdout: str) -> str:
    line = next(line for line in stdout.splitlines() if line.startswith("  nudged by repeat_guard: "))
    return line.removeprefix("  nudged by repeat_guard: ")


def test_version_help_and_the_exit_code_table(tmp_path: Path) -> None:
    assert cli(tmp_path, "--version").stdout == f"otel-toolchain {__version__}\n"
    top = cli(tmp_path, "--help").stdout
    assert top.startswith("usage: otel-toolchain [-h] [-q] [-v] [--version] COMMAND ...\n\nOpenTelemetry for AI")
    assert "only module" not in top and "exit codes (every command):\n  0    done" in top
    replay = cli(tmp_path, "replay", "--help").stdout
    assert "(default: auto)" in replay and "--format {text,json}" in replay and "75   a plugin stopped" in replay
    assert "(default: 40)" in cli(tmp_path, "show", "--help").stdout
    serve = " ".join(cli(tmp_path, "serve", "--help").stdout.split())
    assert f"overtook (default {LINGER_S:g})" in serve  # written out: --help does not import the receiver


def test_with_content_capture_the_tree_shows_the_command_in_replay_and_in_show(tmp_path: Path) -> None:
    manifest = tmp_path / "capture.toml"
    manifest.write_text("[agent]\ncapture_content = true\n")
    tree_line = "└─ 1-30  Bash  read  1.7 s  cat wedge.txt \u00d730  ◀ loop from 1, STOP at 25"
    replayed = cli(tmp_path, "-q", "replay", "--manifest", str(manifest), WEDGE, COLUMNS="120")
    assert replayed.returncode == 75 and replayed.stdout.splitlines()[-1] == tree_line
    shown = cli(tmp_path, "show", COLUMNS="120")  # the same turn read back from the exported spans
    assert shown.returncode == 75 and shown.stdout.splitlines()[-1] == tree_line
    without = cli(tmp_path, "-q", "replay", WEDGE, COLUMNS="120")  # no capture: the identity's digest instead
    assert "cat wedge.txt" not in without.stdout
    assert re.search("Bash  read  1\\.7 s  #[0-9a-f]{8} \u00d730", without.stdout), without.stdout


@pytest.mark.parametrize("command", ["serve", "hooks"])
def test_every_command_takes_q_and_v_and_shows_defaults_and_exit_codes(tmp_path: Path, command: str) -> None:
    done = cli(tmp_path, command, "-q", "--help")
    assert done.returncode == 0, done.stderr
    assert "-q, --quiet" in done.stdout and "exit codes (every command):" in done.stdout
    assert "(default" in done.stdout and max(len(line) for line in done.stdout.splitlines()) <= 105


def test_the_hooks_help_is_its_own_not_a_module_docstring(tmp_path: Path) -> None:
    for argv in (["hook", "--help"], ["hook", "-q", "--help"]):  # its own quick parser (one process per call)
        done = cli(tmp_path, *argv)
        assert done.returncode == 0 and "``" not in done.stdout and "hooks install" not in done.stdout
        assert done.stdout.startswith("usage: otel-toolchain hook [-h] [-q] [-v] [--manifest MANIFEST] [--no-server]\n"
                                      "                           {claude-code,opencode,pi}")
        assert "exit codes:\n  0    the event was answered" in done.stdout


@pytest.mark.parametrize("argv", [["replay", "missing.jsonl"], ["analyze", "missing.jsonl"],
                                  ["show", "missing.jsonl"]])
def test_a_missing_path_is_one_line_and_exit_1_everywhere(tmp_path: Path, argv: list[str]) -> None:
    done = cli(tmp_path, "-q", *argv)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "otel-toolchain: missing.jsonl: no such file or directory\n")


@pytest.mark.parametrize(("argv", "code", "err"), [
    (["show", "README.md"], 1, "otel-toolchain: README.md:1: not OTLP JSON lines: this line is not JSON\n"),
    (["show", "--max-calls", "0"], 2, "argument --max-calls: must be at least 1: 0\n"),
    (["show", "--max-calls", "-1"], 2, "argument --max-calls: must be at least 1: -1\n"),
    (["serve", "--linger", "-1"], 2, "argument --linger: must not be negative: -1\n"),
    (["serve", "--idle", "nan"], 2, "argument --idle: must not be negative: nan\n"),
    (["analyze", "--plot", "out.svg", "examples/streams"], 2,
     "otel-toolchain: --plot out.svg: the plot is a PNG: name the file *.png\n"),
    (["analyze", "--plot", "/nonexistent/x.png", "examples/streams"], 2,
     "otel-toolchain: --plot /nonexistent/x.png: no such folder: /nonexistent\n"),
    (["replay", "--strict", "--harness", "codex", WEDGE], 2,
     f"otel-toolchain: {WEDGE}:1: --harness codex, but the first lines are a claude-code stream or session file\n"),
])
def test_user_errors_are_one_line_on_stderr(tmp_path: Path, argv: list[str], code: int, err: str) -> None:
    done = cli(tmp_path, "-q", *argv)
    assert done.returncode == code and done.stdout == ""
    assert done.stderr.endswith(err) and "Traceback" not in done.stderr


def test_show_of_a_metrics_file_names_what_it_found(tmp_path: Path) -> None:
    cli(tmp_path, "-q", "replay", HEALTHY)
    done = cli(tmp_path, "show", str(tmp_path / "out" / "metrics.jsonl"))
    assert (done.returncode, done.stderr) == (
        1, f"otel-toolchain: {tmp_path / 'out' / 'metrics.jsonl'}:1: not an OTLP JSON traces file: no "
           "resourceSpans (found resourceMetrics)\n")


@pytest.mark.parametrize("content", ["wedge\n", "run;label\nclaude-code-wedge;wedged\n"])
def test_analyze_rejects_a_label_typo_and_semicolons(tmp_path: Path, content: str) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(content)
    done = cli(tmp_path, "analyze", "--labels", str(labels), "examples/streams")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"otel-toolchain: {labels}:") and done.stderr.count("\n") == 1


def test_a_latin1_terminal_gets_ascii_boxes(tmp_path: Path) -> None:
    done = cli(tmp_path, "-q", "replay", CYCLE2, PYTHONIOENCODING="latin-1")
    assert done.returncode == 75 and "Traceback" not in done.stderr
    assert "`- 1-80  @ cycle of 2 calls x40  < loop from 1, STOP at 50" in done.stdout


@pytest.mark.parametrize(("argv", "code"), [
    (["replay", WEDGE, CYCLE2], 75),  # the stop still decides the exit code: the pipe closing is not a failure
    (["replay", "--format", "json", HEALTHY], 0),
    (["show"], 0),
    (["plugins", "--format", "json"], 0),
])
def test_a_reader_that_goes_away_is_no_traceback_and_keeps_the_exit_code(tmp_path: Path, argv: list[str],
                                                                          code: int) -> None:
    env = env_for(tmp_path)
    assert cli(tmp_path, "-q", "replay", HEALTHY).returncode == 0  # something for show to draw
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first write, as `| head -c0` would be: every write fails
    try:
        done = subprocess.run([sys.executable, "-m", "otel_toolchain", "-q", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, env=env, timeout=120, check=False)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (code, "")


def test_a_wrong_harness_is_loud_in_replay_and_auto_detected_in_run(tmp_path: Path) -> None:
    done = cli(tmp_path, "-q", "replay", "--harness", "codex", WEDGE)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"otel-toolchain: warning: {WEDGE}: --harness codex, but the first lines are a claude-code stream or "
        "session file\n"
        f"otel-toolchain: {WEDGE}: no turn read from it (see the warnings above)\n")
    run = cli(tmp_path, "-q", "run", "--harness", "codex", "--", sys.executable, str(FAKE), "wedge")
    assert run.returncode == 75
    assert run.stderr.startswith(
        "otel-toolchain: warning: --harness codex, but the output is a claude-code stream: reading it as claude-code\n")


def test_a_run_without_tool_events_names_the_likely_cause(tmp_path: Path) -> None:
    only_result = tmp_path / "json-format.jsonl"
    only_result.write_text(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                                       "session_id": "s-9", "num_turns": 7}) + "\n")
    done = cli(tmp_path, "-q", "replay", str(only_result))
    assert done.returncode == 0
    assert done.stderr == (
        f"otel-toolchain: warning: {only_result}: no tool calls in this claude-code run; if the agent used tools, "
        "they are not in the stream: Claude Code writes its tool calls only with `--output-format stream-json "
        "--verbose` (`--output-format json` keeps just the final result)\n")


def test_empty_inputs_and_an_appended_second_run_are_reported(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "nothing").mkdir()
    done = cli(tmp_path, "-q", "replay", str(tmp_path / "empty.jsonl"), str(tmp_path / "nothing"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"otel-toolchain: {tmp_path / 'empty.jsonl'}: empty: no events in it\n"
        f"otel-toolchain: {tmp_path / 'nothing'}: no runs in this folder (looked for *.jsonl, *.jsonl.zst, "
        "OpenCode databases and storage/)\n")
    both = tmp_path / "both.jsonl"
    both.write_text((REPO / WEDGE).read_text() + (REPO / CYCLE2).read_text())
    done = cli(tmp_path, "-q", "replay", str(both))
    assert done.returncode == 75
    assert done.stderr == (f"otel-toolchain: warning: {both}:62: a codex run starts here, inside a claude-code run: "
                           "its calls are not read (one run per file: split it, or replay the part on its own)\n")


@pytest.mark.parametrize("setting", [{"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_SAMPLER": "always_off"},
                                     {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}])
def test_sampling_and_a_disabled_sdk_do_not_disable_the_guard(tmp_path: Path, setting: dict[str, str]) -> None:
    done = cli(tmp_path, "-q", "replay", "--format", "json", WEDGE, **setting)
    assert done.returncode == 75 and json.loads(done.stdout)["stopped"]["at_call"] == 25


def test_otel_exporter_variables_are_honoured(tmp_path: Path) -> None:
    done = cli(tmp_path, "replay", "--format", "json", WEDGE, OTEL_TRACES_EXPORTER="none",
               OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="console")
    assert done.returncode == 75
    assert not (tmp_path / "out").exists()  # none: nothing written to the embedded default
    assert '"body": {' in done.stderr and done.stderr.endswith(
        "otel-toolchain: telemetry exported to the console (standard error)\n")
    bad = cli(tmp_path, "replay", WEDGE, OTEL_TRACES_EXPORTER="zipkin")
    assert (bad.returncode, bad.stderr) == (2, "otel-toolchain: OTEL_TRACES_EXPORTER=zipkin: unknown exporter "
                                               "'zipkin'; use otlp, console, none (comma-separated)\n")


def test_tilde_and_variables_are_expanded_in_output_dir_and_paths(tmp_path: Path) -> None:
    pack = tmp_path / "pack.toml"
    pack.write_text('[export]\noutput_dir = "~/$SUB/state"\n')
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "wedge.jsonl").write_text((REPO / WEDGE).read_text())
    done = cli(tmp_path, "replay", "--manifest", "$PACKS/pack.toml", "~/wedge.jsonl", PACKS=str(tmp_path), SUB="x")
    assert done.returncode == 75, done.stderr
    assert (tmp_path / "home" / "x" / "state" / "traces.jsonl").exists()
    assert not (REPO / "~").exists()


def test_retries_give_each_attempt_its_turn_live_and_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    done = cli(tmp_path, "-q", "run", "--retries", "2", "--log", str(log), "--", sys.executable, str(FAKE), "wedge")
    assert done.returncode == 75
    stops = [line for line in done.stderr.splitlines() if line.startswith("otel-toolchain: stopped")]
    assert [line.split(": the same")[0] for line in stops] == [
        f"otel-toolchain: stopped by repeat_guard at call 25 (attempt {n} of 3)" for n in (1, 2, 3)]
    assert [line for line in masked(done.stderr).splitlines() if line.startswith("  25 calls")] == [
        "  25 calls, 0 failed", "  25 calls, 0 failed, attempt 2", "  25 calls, 0 failed, attempt 3"]
    replayed = [json.loads(line) for line in cli(tmp_path, "replay", "--format", "json", str(log)).stdout.splitlines()]
    # the log also holds what a dying attempt still printed after its stop: the verdicts are the same
    assert [turn["stopped"]["at_call"] for turn in replayed] == [25, 25, 25]
    assert all(turn["calls"] >= 25 for turn in replayed)


def test_check_and_plugins_in_text_and_json(tmp_path: Path) -> None:
    pack = tmp_path / "pack.toml"
    pack.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 9\n')
    done = cli(tmp_path, "check", str(pack))
    assert (done.returncode, done.stdout) == (0, (
        f"{pack}: ok, 1 plugin(s) in this order:\n"
        "  1. repeat_guard (limit = 9, max_period = 3, limits = {}, poll_limit = null, mode = \"enforce\", "
        "nudge_at = null, ignore_args = {}, mask_failures = true, unordered_failures = true)\n"))
    assert json.loads(cli(tmp_path, "check", "--format", "json", str(pack)).stdout)["chain"][0]["limit"] == 9
    listed = json.loads(cli(tmp_path, "plugins", "--format", "json").stdout)
    assert {"name": "repeat_guard", "object": "otel_toolchain.plugins.repeat_guard:RepeatGuard",
            "distribution": "otel-toolchain"} in listed
    assert "repeat_guard\totel_toolchain.plugins.repeat_guard:RepeatGuard\t(otel-toolchain)" in cli(
        tmp_path, "plugins").stdout.splitlines()


def test_replay_draws_its_progress_bar_on_a_terminal_and_nowhere_else(tmp_path: Path) -> None:
    files = [WEDGE, HEALTHY, CYCLE2, "tests/data/recordings/claude/cd_dirs.jsonl"]  # four files: enough for a bar
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "otel_toolchain", "replay", "-q", *files], cwd=REPO,
                              env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=follower, timeout=120, check=False)
        os.close(follower)
        drawn = b""
        while select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all of it was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 75  # the wedge was stopped
    assert b"\rreplay [" in drawn and b" file 1/4" in drawn  # the first file's first line draws at once
    assert drawn.endswith(b"\r")  # and the line is cleared at the end
    assert "replay [" not in cli(tmp_path, "replay", "-q", *files).stderr  # a pipe gets no bar
