"""``show`` and ``analyze`` of an OTLP JSON traces file with a hostile line: a message naming the file, no traceback.

Real CLI entry point, real files; the hostile lines are appended to a real embedded-default traces file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_toolchain.cli import main
from otel_toolchain.export.pipeline import build_pipeline
from otel_toolchain.recorder import AgentRecorder


def _real_traces(folder: Path) -> str:
    """A traces file the embedded default really wrote: one turn with one call."""
    pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(folder)})
    with AgentRecorder(pipeline.tracer_provider).turn("agent") as turn:
        turn.tool_call("Bash", {"command": "make"}, result="ok")
    pipeline.shutdown()
    return (folder / "traces.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize("hostile", ['{"resourceSpans": ' + "[" * 1000 + "]" * 1000 + "}",
                                     '{"resourceSpans": [{"scopeSpans": 1e400}]}',
                                     '{"resourceSpans": [{"scopeSpans": "x"}]}',
                                     '{"resourceSpans": [NaN]}'])
def test_show_of_a_hostile_traces_line_is_a_message_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: str) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(_real_traces(tmp_path / "real") + hostile + "\n", encoding="utf-8")
    assert main(["show", str(tmp_path / "real")]) == 0
    assert "Bash" in capsys.readouterr().out
    assert main(["show", str(path)]) == 1  # an input that cannot be read (the exit-code table)
    err = capsys.readouterr().err
    assert err.startswith(f"otel-toolchain: {path}:") and err.count("\n") == 1, err
