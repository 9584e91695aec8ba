"""``show`` and ``analyze`` of an OTLP JSON traces file with a hostile line: a message naming the file, no traceback.

Real CLI entry point, real files; the hostile lines are appended to a real embedded-default traces file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_toolchain.cli import main
from otel_toolchain.export.pipeline import build_pipeline
from otel_toolchain.receiver.records import _exit_code
from otel_toolchain.recorder import AgentRecorder


def _real_traces(folder: Path) -> str:
    """A traces file the embedded default really wrote: one turn with one call."""
    pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(folder)})
    with AgentRecorder(pipeline.tracer_provider).turn("agent") as turn:
        turn.tool_call("Bash", {"command": "make"}, result="ok")
    pipeline.shutdown()
    return (folder / "traces.jsonl").read_text(encoding="utf-8")


HOSTILE_LINES = ['{"resourceSpans": ' + "[" * 1000 + "]" * 1000 + "}",
                 '{"resourceSpans": [{"scopeSpans": 1e400}]}',
                 '{"resourceSpans": [{"scopeSpans": "x"}]}',
                 '{"resourceSpans": [NaN]}']


@pytest.mark.parametrize("hostile", HOSTILE_LINES)
def test_a_hostile_traces_line_loses_only_itself_in_show(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          hostile: str) -> None:
    before, after = _real_traces(tmp_path / "one"), _real_traces(tmp_path / "two")  # two turns, two traces
    path = tmp_path / "traces.jsonl"
    path.write_text(before + hostile + "\n" + after, encoding="utf-8")
    assert main(["show", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("1  Bash") == 2  # the turns before and after the bad line
    assert captured.err.startswith(f"otel-toolchain: warning: {path}:2: ") and captured.err.count("\n") == 1
    assert captured.err.endswith("; the line was skipped\n"), captured.err


@pytest.mark.parametrize("hostile", HOSTILE_LINES)
def test_a_hostile_first_line_is_not_a_traces_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    hostile: str) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(hostile + "\n" + _real_traces(tmp_path / "real"), encoding="utf-8")
    assert main(["show", str(path)]) == 1  # an input that cannot be read (the exit-code table)
    err = capsys.readouterr().err
    assert err.startswith(f"otel-toolchain: {path}:1: ") and err.count("\n") == 1, err


def test_analyze_counts_a_hostile_traces_line_as_one_bad_line(tmp_path: Path) -> None:
    from otel_toolchain.analyze import analyze  # noqa: PLC0415 (the analysis is heavy; one test wants it)

    before, after = _real_traces(tmp_path / "one"), _real_traces(tmp_path / "two")
    path = tmp_path / "traces.jsonl"
    path.write_text(before + HOSTILE_LINES[0] + "\n" + after, encoding="utf-8")
    analysis = analyze([path])
    assert (analysis.aggregate.turns, analysis.aggregate.bad_lines) == (2, 1)


DEEP_TEXT = '{"a": ' + "[" * 3000 + "]" * 3000 + "}"
"""JSON nested past the stack, short enough for every size limit: what an agent may put in a call."""


def test_show_of_deeply_nested_tool_arguments_draws_the_call(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    line = json.loads(_real_traces(tmp_path / "real"))
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["name"] == "execute_tool Bash"
    span["attributes"].append({"key": "gen_ai.tool.call.arguments", "value": {"stringValue": DEEP_TEXT}})
    (tmp_path / "traces.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["show", str(tmp_path / "traces.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "1  Bash" in captured.out and captured.err == ""


def test_a_deeply_nested_result_has_no_exit_code_and_raises_nothing() -> None:
    assert _exit_code(DEEP_TEXT) is None
    assert _exit_code('{"exit_code": 3}') == 3


def test_the_hook_answers_deeply_nested_input_with_a_message(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "out")}
    done = subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code"], input=DEEP_TEXT,
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("otel-toolchain hook: standard input is not JSON (nested deeper than 64); "
                           "the call was not checked\n")
