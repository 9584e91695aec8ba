"""``otel-toolchain check``, ``plugins`` and the text of ``replay``, through main(argv)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from otel_toolchain.cli import main


def test_check_prints_the_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pack.toml"
    path.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 9\n')
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: ok, 1 plugin(s) in this order:\n"
        "  1. repeat_guard (limit=9, max_period=3, limits={}, poll_limit=None, mode='enforce', nudge_at=None, "
        "ignore_args={}, mask_failures=True, unordered_failures=True)\n"
    )


def test_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pack.toml"
    path.write_text("[agent]\ntool_plugins = []\n")
    assert main(["check", "--format", "json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"manifest": str(path), "chain": []}


def test_check_fails_with_exit_2_and_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pack.toml"
    path.write_text('[[agent.tool_plugins]]\nplugin = "nope"\n')
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"otel-toolchain: {path}: agent.tool_plugins[0]: unknown plugin 'nope'")


def test_plugins_lists_the_built_ins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "repeat_guard\totel_toolchain.plugins.repeat_guard:RepeatGuard\t(otel-toolchain)" in lines


def test_replay_with_the_embedded_default_draws_this_run_s_turns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    healthy = str(REPO / "examples" / "streams" / "claude-code-healthy.jsonl")
    assert main(["replay", healthy]) == 0
    assert main(["replay", healthy]) == 0  # the same file again: only this run's turn is drawn
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{healthy} (claude-code) session 313d7db3-cb4b-4a3f-91d1-e286917c53df: 4 calls")
    assert lines[1].startswith("invoke_agent claude-code  trace ") and lines[1].endswith("  4 calls, 0 failed")
    # the times are the stream's own line stamps (use line to result line), 2.1.x writes them
    assert lines[2:6] == ["├─ Bash           read        88 ms", "├─ Bash           read        45 ms",
                          "├─ Bash           read        33 ms", "└─ Bash           read        27 ms"]
    assert len(lines) == 12  # the second run: summary and its own tree, not the first run's again
