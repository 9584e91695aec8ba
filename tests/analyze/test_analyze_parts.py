"""The parts of ``analyze``: histograms, bounded lists, labels, polls, the suggestion rule, the chart."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from analyze_corpus import claude_stream, healthy_poll, healthy_varied, wedge
from hypothesis import given
from hypothesis import strategies as st

from otel_toolchain.analyze import LabelError, Labels, TurnFigures, analyze
from otel_toolchain.analyze.chart import render_chart
from otel_toolchain.analyze.labels import RunLabeller
from otel_toolchain.analyze.stats import Aggregate, Histogram, TopTurns
from otel_toolchain.analyze.suggest import separate
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugins._polls import is_poll


def fig(peak: int, turn: int = 1, source: str = "r.jsonl", recorded_stop: bool = False) -> TurnFigures:
    return TurnFigures(source, turn, "claude-code", peak=peak, calls=peak, by_period=[peak, 1, 1],
                       recorded_stop=recorded_stop)


@given(st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=300))
def test_histogram_percentiles_are_nearest_rank(values: list[int]) -> None:
    histogram = Histogram()
    for value in values:
        histogram.add(value)
    ordered = sorted(values)
    for share in (0.5, 0.9, 0.99):
        rank = max(1, -(-int(share * 1000) * len(values) // 1000))
        assert histogram.percentile(share) == ordered[rank - 1]
    assert histogram.max == max(values) and histogram.at_least(7) == sum(v >= 7 for v in values)


def test_top_turns_keeps_the_extremes_first_seen_first() -> None:
    top, low = TopTurns(2), TopTurns(2, lowest=True)
    for number, peak in enumerate([3, 9, 1, 9, 4], 1):
        top.add(fig(peak, number))
        low.add(fig(peak, number))
    assert [(f.peak, f.turn) for f in top.turns()] == [(9, 2), (9, 4)]
    assert [(f.peak, f.turn) for f in low.turns()] == [(1, 3), (3, 1)]


def test_labels_file_rows_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("run,label\n# a comment\n\nruns/a.jsonl,Wedged\nb,healthy\nses_1#2, wedged\n")
    labels = Labels.load(path)
    assert labels.rows == {"runs/a.jsonl": "wedged", "b": "healthy", "ses_1#2": "wedged"}
    assert labels.of_run("runs/a.jsonl", None) == "wedged"
    assert labels.of_run("/elsewhere/b.jsonl", None) == "healthy"  # by file name without .jsonl
    assert labels.of_turn(fig(3, 2, "/db/opencode.db#ses_1")) == "wedged"
    assert labels.unused == []
    path.write_text("a,wedged\nb,maybe\n")
    with pytest.raises(LabelError, match=r"labels.csv:2: .*'maybe'"):
        Labels.load(path)
    with pytest.raises(LabelError, match="cannot read"):
        Labels.load(tmp_path / "missing.csv")


def test_a_wedged_run_labels_its_most_repetitive_turn_when_the_run_ends(tmp_path: Path) -> None:
    (tmp_path / "l.csv").write_text("r,wedged\n")
    labeller = RunLabeller(Labels.load(tmp_path / "l.csv"))
    first, second, third = fig(2, 1), fig(40, 2), fig(3, 3)
    assert labeller.label(first) == []
    assert labeller.label(second) == [(first, None)]
    assert labeller.label(third) == [(third, None)]
    assert labeller.finish() == [(second, "wedged")]
    recorded = RunLabeller(None)
    assert recorded.label(fig(30, recorded_stop=True)) == [(fig(30, recorded_stop=True), "wedged")]


@pytest.mark.parametrize(("tool", "arguments", "poll"), [
    ("TaskOutput", {"task_id": "b1", "block": False}, True),
    ("BashOutput", {"bash_id": "1"}, True),
    ("write_stdin", {"session_id": 42, "chars": ""}, True),
    ("write_stdin", {"session_id": 42, "chars": "y\n"}, False),
    ("Bash", {"command": "sleep 30 && tail -n 5 build.log"}, True),
    ("bash", {"command": "gh run view 1; sleep 10"}, True),
    ("command_execution", {"command": "sleep 5s; kubectl get pods"}, True),
    ("Bash", {"command": "echo sleep 5"}, False),
    ("Bash", {"command": "make build"}, False),
    ("Read", {"file_path": "sleep 5"}, False),
])
def test_what_is_a_poll(tool: str, arguments: dict[str, object], poll: bool) -> None:
    assert is_poll(tool, arguments) is poll


def aggregate_of(healthy: list[int], wedged: list[int], unlabelled: list[int] = ()) -> Aggregate:  # type: ignore[assignment]
    aggregate = Aggregate(3)
    for peaks, label in ((healthy, "healthy"), (wedged, "wedged"), (unlabelled, None)):
        for number, peak in enumerate(peaks, 1):
            turn = fig(peak, number)
            aggregate.add(turn)
            aggregate.label(turn, label)
    return aggregate


@pytest.mark.parametrize(("healthy", "wedged", "unlabelled", "expected"), [
    ([1] * 985 + [5, 14], [549, 746], [], (15, 549, 25, 11, 524)),  # the seed's figures give the seed's 25
    ([1, 8], [30], [], (9, 30, 14, 6, 16)),
    ([1, 20], [22], [], (21, 22, 22, 2, 0)),  # headroom capped by the mildest wedge
    ([3], [], [], (4, None, 8, 5, None)),  # the floor
    ([1, 2], [5], [], (3, 5, 5, 3, 0)),  # the floor yields to the mildest wedge
    ([], [40], [2, 5], (6, 40, 9, 4, 31)),  # unlabelled turns presumed healthy
])
def test_the_suggestion_rule(healthy: list[int], wedged: list[int], unlabelled: list[int],
                             expected: tuple[int | None, ...]) -> None:
    found = separate(aggregate_of(healthy, wedged, unlabelled))
    assert (found.low, found.high, found.suggested, found.margin_below, found.margin_above) == expected
    assert found.presumed_healthy is (not healthy)


def test_no_suggestion_without_labels_or_separation() -> None:
    assert separate(aggregate_of([], [], [1, 30])).suggested is None
    found = separate(aggregate_of([1, 30], [20]))
    assert (found.separable, found.suggested) == (False, None)
    assert [f.peak for f in found.overlap_healthy] == [30] and [f.peak for f in found.overlap_wedged] == [20]


def test_the_terminal_chart() -> None:
    repeats, healthy, wedged, polling = Histogram(), Histogram(), Histogram(), Histogram()
    for value, count in ((0, 2), (1, 900), (2, 40), (8, 3), (549, 1)):
        repeats.add(value, count)
    healthy.add(8, 3)
    wedged.add(549)
    polling.add(8, 2)
    lines = render_chart(repeats, healthy=healthy, wedged=wedged, polling=polling,
                         marks={"chain limit": 25, "suggested": 14})
    assert lines[0] == "  repeats   turns"
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["0"].endswith(" 2") and rows["1"].count("█") == 24
    assert rows["7-9"].endswith("3  healthy 3, polling 2")
    assert rows["10-14"].endswith("◀ suggested 14") and rows["25-39"].endswith("◀ chain limit 25")
    assert "wedged 1" in rows["500-999"] and 0 < rows["500-999"].count("█") < 5


def test_memory_stays_flat_as_turns_grow(tmp_path: Path) -> None:
    """tracemalloc's peak for 10 N turns is about the peak for N: nothing is kept per turn."""
    manifest = Manifest.default()
    turns = [healthy_varied(), healthy_poll(), wedge(2, 26)]
    peaks = []
    warm = tmp_path / "warm.jsonl"
    warm.write_text(claude_stream(turns * 20))
    analyze([warm], manifest=manifest)  # the bounded caches (parsed arguments, masks) filled before measuring
    for count in (60, 600):  # over a megabyte already at N, so the read buffer is full at both sizes
        path = tmp_path / f"{count}.jsonl"
        path.write_text(claude_stream((turns * count)[:count]))
        gc.collect()  # the cyclic garbage of the run before is not counted against this one
        tracemalloc.start()
        analysis = analyze([path], manifest=manifest)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert analysis.aggregate.turns == count
    # The peaks differ by when the collector happens to run (up to ~1.3x measured, 150-190 KB); a ToolCall
    # kept per turn (over 1 KB) would add more than half a megabyte across the 540 extra turns.
    assert peaks[1] < 1.5 * peaks[0], peaks
