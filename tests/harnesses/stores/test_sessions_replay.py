"""``otel-toolchain replay`` takes store files and folders, and ``--harness auto`` tells them from streams."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from otel_toolchain import cli
from otel_toolchain.cli.replay import replay_path
from otel_toolchain.errors import StreamError
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
SESSIONS = SHARED / "sessions"
SESSION_SHARE = SESSIONS / "claude-code" / "session-share"


def recorder(capture: Capture) -> AgentRecorder:
    chain = capture.install(Manifest.default().toolchain())
    return AgentRecorder(capture.tracer_provider, toolchain=chain, capture_content=True)


@pytest.mark.shared  # reads ../shared
def test_a_store_file_replays_into_spans(capture: Capture) -> None:
    outcomes = replay_path(str(SESSIONS / "codex" / "agentcmd-rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-"
                                              "dc4e48c5844a.jsonl"), recorder(capture))
    assert [(o.harness, o.calls, o.failed, o.stopped) for o in outcomes] == [("codex", 84, 4, None)]
    tools = [span for span in capture.finished_spans() if span["attributes"].get("gen_ai.tool.name")]
    assert len(tools) == 84
    assert {span["attributes"]["gen_ai.tool.name"] for span in tools} == {"command_execution", "update_plan"}


@pytest.mark.shared  # reads ../shared
def test_a_folder_replays_every_session_and_its_sub_agents(capture: Capture) -> None:
    outcomes = replay_path(str(SESSION_SHARE), recorder(capture))
    assert {Path(o.source).name for o in outcomes} >= {"0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl",
                                                        "agent-a5bdbc1.jsonl", "agent-a2018e5.jsonl"}
    assert sum(o.calls for o in outcomes) == 7 + 1 + 6  # two sessions and six sub-agents, one call each


@pytest.mark.shared  # reads ../shared
def test_a_folder_passes_over_an_unreadable_file_and_says_so(tmp_path: Path, capture: Capture,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    shutil.copy(SESSIONS / "pi" / "pi-mono-large-session.jsonl", tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text("not json\nstill not\n")
    with caplog.at_level(logging.WARNING, logger="otel_toolchain"):
        outcomes = replay_path(str(tmp_path), recorder(capture))
    assert sum(o.calls for o in outcomes) == 373
    assert "b.jsonl: passed over" in caplog.text
    with pytest.raises(StreamError, match=r"b\.jsonl"):
        replay_path(str(tmp_path), recorder(capture), strict=True)
    with pytest.raises(StreamError, match="not a stream"):
        replay_path(str(tmp_path / "b.jsonl"), recorder(capture))
    with pytest.raises(StreamError, match="cannot read"):
        replay_path(str(tmp_path / "missing.jsonl"), recorder(capture))


def test_an_empty_file_is_no_run(tmp_path: Path, capture: Capture) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert replay_path(str(tmp_path / "empty.jsonl"), recorder(capture)) == []


@pytest.mark.shared  # reads ../shared
def test_the_command_line_replays_store_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path / "out"))
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["replay", "--format", "json", str(SESSIONS / "claude-code" / "agentcmd-full-session-five.jsonl"),
                     str(SESSIONS / "pi")])
    assert code == 0
    turns = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {turn["harness"] for turn in turns} == {"claude-code", "pi"}
    assert sum(turn["calls"] for turn in turns) == 5 + 449 + 373
