"""``analyze`` on a corpus with known answers: healthy polls, wedges of period 1, 2 and 3, labels, OTLP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analyze_corpus import LABELS_CSV, claude_stream, healthy_poll, healthy_varied, wedge, write_corpus
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_toolchain.analyze import Labels, RunMeter, TurnFigures, analyze, render_text, to_dict
from otel_toolchain.cli.replay import replay_lines
from otel_toolchain.export.otlp_json import JsonLinesSpanExporter
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.writer import SpanWriter
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.recorder import AgentRecorder


def figures(calls: list[Any], limit: int = 25) -> TurnFigures:
    meter = RunMeter(RepeatGuard(limit=limit), limit=limit, source="t", harness="claude-code")
    (fig,) = list(meter.feed(read_stream(claude_stream([calls]).splitlines())))
    return fig


@pytest.mark.parametrize(("calls", "expected"), [
    (healthy_poll(), {"calls": 49, "by_period": [8, 4, 2], "peak": 8, "peak_period": 1, "stop_at": None,
                      "polling": True, "peak_cycle": "TaskOutput (read)", "longest_fail_streak": 0}),
    (healthy_varied(), {"calls": 20, "by_period": [1, 1, 1], "peak": 1, "stop_at": None, "polling": False,
                        "failed": 3, "longest_fail_streak": 3}),
    (wedge(1, 30), {"calls": 30, "by_period": [30, 15, 10], "peak": 30, "peak_period": 1, "stop_at": 25,
                    "peak_cycle": "Bash (build)", "polling": False, "longest_fail_streak": 30}),
    (wedge(2, 30), {"calls": 60, "by_period": [1, 30, 1], "peak": 30, "peak_period": 2, "stop_at": 50,
                    "peak_cycle": "Bash (build) -> Read (read)", "longest_fail_streak": 1}),
    (wedge(3, 30), {"calls": 90, "by_period": [1, 1, 30], "peak": 30, "peak_period": 3, "stop_at": 75,
                    "peak_cycle": "Bash (build) -> Read (read) -> Edit (write)"}),
    (wedge(2, 12), {"peak": 12, "stop_at": None}),
])
def test_per_turn_figures(calls: list[Any], expected: dict[str, Any]) -> None:
    fig = figures(calls)
    assert {key: getattr(fig, key) for key in expected} == expected


@pytest.mark.parametrize("calls", [wedge(1, 30), wedge(2, 30), wedge(3, 30), healthy_poll() + wedge(2, 26)])
def test_the_stop_call_is_the_one_the_chain_stops_at(calls: list[Any]) -> None:
    """The same turn replayed through spans and the real default chain stops at the same call."""
    provider = TracerProvider()
    chain = Manifest.default().toolchain()
    chain.install(provider)
    (outcome,) = replay_lines(claude_stream([calls]).splitlines(), AgentRecorder(provider, toolchain=chain),
                              source="t")
    fig = figures(calls)
    assert outcome.stopped is not None
    assert (outcome.stopped.at_call, outcome.stopped.period, outcome.stopped.repeats) == (
        fig.stop_at, fig.peak_period, 25)


def test_labelled_corpus_gives_the_range_and_the_suggestion(tmp_path: Path) -> None:
    write_corpus(tmp_path / "runs")
    (tmp_path / "labels.csv").write_text(LABELS_CSV)
    analysis = analyze([tmp_path / "runs"], labels=Labels.load(tmp_path / "labels.csv"))
    data = to_dict(analysis)
    assert (data["runs"], data["turns"], data["calls"]) == (6, 9, 49 * 2 + 20 * 4 + 30 + 60 + 90)
    assert data["labels"] == {"source": "file", "healthy": 5, "wedged": 3, "presumed_healthy": False, "unused": []}
    assert data["separating_range"] == {"low": 9, "high": 30}
    assert data["suggested_limit"] == {"limit": 14, "margin_below": 6, "margin_above": 16, "healthy_peak": 8,
                                       "wedged_floor": 30, "presumed_healthy": False}
    rows = {row["limit"]: row for row in data["candidates"]}
    assert rows[8] == {"limit": 8, "stops": 5, "polling": 2, "healthy": 2, "wedged": 3, "wedged_missed": 0}
    assert rows[14] == {"limit": 14, "stops": 3, "polling": 0, "healthy": 0, "wedged": 3, "wedged_missed": 0}
    assert rows[40]["wedged_missed"] == 3
    assert data["distributions"]["repeats"] == {"p50": 8, "p90": 30, "p99": 30, "max": 30}
    assert data["distributions"]["calls"]["max"] == 90
    assert data["polling"]["groups"] == [{"cycle": "TaskOutput (read)", "turns": 2, "max_repeats": 8,
                                          "stopped_by_chain_limit": 0, "stopped_by_suggested": 0}]
    assert data["stopped_by_manifest"]["turns"] == 3
    assert sorted(turn["stop_at"] for turn in data["stopped_by_manifest"]["examples"]) == [25, 50, 75]
    text = render_text(analysis)
    assert "Suggested limit: 14 (6 above the most repetitive healthy turn's 8, 16 below the mildest wedge's 30)" in text
    assert "◀ suggested 14" in text and "◀ chain limit 25" in text


def test_without_labels_the_turns_to_look_at_are_listed(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    data = to_dict(analyze([tmp_path]))
    assert data["suggested_limit"] is None and data["separating_range"] is None
    assert data["seed_range"]["turns"] == 3
    assert {turn["cycle"] for turn in data["seed_range"]["examples"]} == {
        "Bash (build)", "Bash (build) -> Read (read)", "Bash (build) -> Read (read) -> Edit (write)"}
    text = render_text(analyze([tmp_path]))
    assert "no limit is suggested" in text and "Any limit of 31 or more stops none of these turns." in text


def test_when_no_limit_separates_the_overlap_is_listed(tmp_path: Path) -> None:
    paths = write_corpus(tmp_path / "runs")
    (tmp_path / "labels.csv").write_text("healthy-poll,healthy\nwedge-p2,healthy\nwedge-p3,wedged\n")
    data = to_dict(analyze([tmp_path / "runs"], labels=Labels.load(tmp_path / "labels.csv")))
    assert data["suggested_limit"] is None and data["separating_range"] is None
    assert [turn["turn"] for turn in data["overlap"]["healthy"]] == [f"{paths['wedge-p2']}#1"]
    assert [turn["turn"] for turn in data["overlap"]["wedged"]] == [f"{paths['wedge-p3']}#1"]


def test_a_wedged_run_stands_for_its_most_repetitive_turn(tmp_path: Path) -> None:
    paths = write_corpus(tmp_path / "runs")
    (tmp_path / "labels.csv").write_text(f"wedge-p1,wedged\n{paths['healthy-mixed'].name}#2,healthy\n")
    data = to_dict(analyze([tmp_path / "runs"], labels=Labels.load(tmp_path / "labels.csv")))
    assert (data["labels"]["healthy"], data["labels"]["wedged"]) == (1, 1)
    assert data["suggested_limit"]["limit"] == 14  # healthy peak 8 (the mixed run's poll turn), wedge floor 30


def otlp(tmp_path: Path, turns: list[list[Any]], *, capture: bool) -> Path:
    """The corpus turned into the embedded default's traces file by a real replay under the default chain."""
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    chain = Manifest.default().toolchain()
    chain.install(provider)
    writer = SpanWriter(AgentRecorder(provider, toolchain=chain, capture_content=capture), source="r",
                        harness="claude-code")
    for event in read_stream(claude_stream(turns).splitlines()):
        writer.handle(event)
    writer.close()
    provider.shutdown()
    return path


def test_otlp_traces_with_content_and_the_stops_they_record(tmp_path: Path) -> None:
    path = otlp(tmp_path, [healthy_poll(), healthy_varied(), wedge(2, 30), wedge(1, 27)], capture=True)
    data = to_dict(analyze([path]))
    assert data["inputs"] == {"otlp traces": 1}
    assert [turn["repeats"] for turn in data["top_turns"]] == [30, 27, 8]
    assert data["labels"]["source"] == "recorded stops"
    assert (data["labels"]["wedged"], data["labels"]["presumed_healthy"]) == (2, True)
    assert data["suggested_limit"]["limit"] == 14
    assert not any("upper bounds" in note for note in data["notes"])


def test_otlp_traces_without_content_fall_back_and_say_so(tmp_path: Path) -> None:
    path = otlp(tmp_path, [healthy_varied()], capture=False)
    analysis = analyze([path])
    data = to_dict(analysis)
    # without arguments and results, the 17 reads compare equal: an upper bound, and said to be one
    assert data["distributions"]["identical_in_a_row"]["max"] == 17
    assert any("upper bounds" in note for note in data["notes"])
    assert json.loads(json.dumps(data)) == data
