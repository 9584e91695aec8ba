"""The ``analyze`` subcommand: its options, text, JSON, the PNG plot, the progress bar, this machine's stores."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
from pathlib import Path

import pytest
from analyze_corpus import LABELS_CSV, write_corpus

from otel_toolchain.analyze import LabelError
from otel_toolchain.cli.analyze import register
from otel_toolchain.cli.progress import Progress
from otel_toolchain.errors import ManifestError
from otel_toolchain.harnesses.stores import MissingExtra

SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="otel-toolchain")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["analyze", *argv])
    code: int = args.handler(args)
    return code


def test_json_report_with_labels_and_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(tmp_path / "runs")
    (tmp_path / "labels.csv").write_text(LABELS_CSV)
    (tmp_path / "pack.toml").write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 10\nmax_period = 2\n')
    assert run(["--format", "json", "--labels", str(tmp_path / "labels.csv"), "--manifest",
                str(tmp_path / "pack.toml"), str(tmp_path / "runs")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["chain"]["repeat_guard"] == {"limit": 10, "max_period": 2, "mode": "enforce"}
    assert set(data["distributions"]["repeats_by_period"]) == {"1", "2"}
    # cycles of three calls are not cycles with max_period 2: that wedge never repeats, so nothing separates
    assert data["labels"]["wedged"] == 3 and data["suggested_limit"] is None
    assert [turn["repeats"] for turn in data["overlap"]["wedged"]] == [1]


def test_text_report_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(tmp_path / "runs")
    (tmp_path / "labels.csv").write_text(LABELS_CSV)
    plot = tmp_path / "limits.png"
    assert run(["--labels", str(tmp_path / "labels.csv"), "--plot", str(plot), str(tmp_path / "runs")]) == 0
    text = capsys.readouterr().out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    for expected in ("per turn", "Turns by most repeats of one cycle:", "What each limit would stop:",
                     "Suggested limit: 14", "Polling (benign repetition)", f"plot written to {plot}"):
        assert expected in text


@pytest.mark.shared  # reads ../shared
def test_a_plot_without_labels_or_turns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert run(["--plot", str(tmp_path / "a.png"), str(tmp_path / "empty")]) == 1  # a folder with no runs: exit 1
    assert run(["--plot", str(tmp_path / "b.png"), str(SHARED / "sessions" / "pi")]) == 0
    assert (tmp_path / "a.png").exists() and (tmp_path / "b.png").exists()
    assert "0 runs, 0 turns" in capsys.readouterr().out


@pytest.mark.shared  # reads ../shared
def test_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "labels.csv").write_text("run,label\nx,stuck\n")
    with pytest.raises(LabelError, match=r"labels\.csv:2"):
        run(["--labels", str(tmp_path / "labels.csv"), str(tmp_path)])
    with pytest.raises(ManifestError):
        run(["--manifest", str(tmp_path / "missing.toml"), str(tmp_path)])
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "junk.jsonl").write_text("not json\n")
    shutil.copy(SHARED / "sessions" / "claude-code" / "agentcmd-full-session-five.jsonl", tmp_path / "runs")
    assert run([str(tmp_path / "runs")]) == 1  # a file that could not be read: reported, the rest analysed
    out = capsys.readouterr().out
    assert "junk.jsonl" in out and "error:" in out and "1 runs, 1 turns, 5 calls" in out


@pytest.mark.shared  # reads ../shared
def test_with_no_path_the_stores_on_this_machine_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    projects = home / ".claude" / "projects" / "-Users-pete-tmp"
    shutil.copytree(SHARED / "sessions" / "claude-code" / "session-share", projects)
    rollouts = home / "codex-home" / "sessions" / "2025" / "09" / "25"
    rollouts.mkdir(parents=True)
    for path in sorted((SHARED / "sessions" / "codex").glob("*.jsonl"))[:2]:
        shutil.copy(path, rollouts / path.name.removeprefix("agentcmd-"))
    for name in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PI_CODING_AGENT_DIR",
                 "PI_CODING_AGENT_SESSION_DIR", "OPENCODE_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / "codex-home"))
    monkeypatch.chdir(tmp_path)
    assert run(["--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"] == {"claude-code store": 8, "codex store": 2}
    assert any(note.startswith("claude-code: ") for note in data["notes"])


def test_the_progress_bar_draws_only_on_a_terminal(tmp_path: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    paths = write_corpus(tmp_path)
    assert Progress.maybe(list(paths.values()), io.StringIO(), "analyze") is None
    terminal = Terminal()
    bar = Progress.maybe(list(paths.values()), terminal, "analyze")
    assert bar is not None
    bar.advance(bar.total // 2)
    bar.finish()
    assert "\ranalyze [##############" in terminal.getvalue() and "% of 6 files" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")


@pytest.mark.shared  # reads ../shared
def test_a_plot_without_matplotlib_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtra, match=r"otel-toolchain\[plot\]"):
        run(["--plot", str(tmp_path / "a.png"), str(SHARED / "sessions" / "pi")])
    assert not (tmp_path / "a.png").exists()
