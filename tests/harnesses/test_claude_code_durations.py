"""Claude Code call durations: each call lasts from its use line's ``timestamp`` to its result line's.

The recordings are real Claude Code 2.1.332 runs (tests/data/recordings); their expected ``ms`` per call
in verdicts.toml are counted by count_verdicts.py from the same lines with plain ``datetime``. They are
replayed as ``otel-toolchain replay`` does (replay_path: reader, writer, chain), where every line arrives
at one instant, so any duration seen comes from the lines' own stamps. Hand-made lines check the rest:
lines without stamps (older versions: 0 ms in a replay), a live run's arrival clock, a stamp that goes back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.cli.replay import replay_path
from otel_toolchain.harnesses.events import ToolFinished, TurnEnded, TurnStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.writer import TurnOutcome
from otel_toolchain.manifest import Manifest
from otel_toolchain.outcome import CallRecord
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).resolve().parents[1] / "data" / "recordings"
VERDICTS: dict[str, dict[str, Any]] = tomllib.loads((DATA / "verdicts.toml").read_text())
CLAUDE = sorted(key for key, verdict in VERDICTS.items() if verdict["cli"] == "claude")


def replay(capture: Capture, path: Path) -> list[TurnOutcome]:
    chain = capture.install(Manifest.default().toolchain())
    return replay_path(str(path), AgentRecorder(capture.tracer_provider, toolchain=chain, capture_content=True))


def call_ms(outcomes: list[TurnOutcome]) -> list[int]:
    """The ms of every call of the turns' trees, in call order."""
    records: list[CallRecord] = []

    def walk(nodes: list[CallRecord]) -> None:
        for node in nodes:
            records.append(node)
            walk(node.children)
    for outcome in outcomes:
        walk(outcome.tree)
    return [record.ms for record in sorted(records, key=lambda r: r.index)]


@pytest.mark.parametrize("key", CLAUDE)
def test_stream_replay_times_each_call_by_its_lines(key: str, capture: Capture) -> None:
    outcomes = replay(capture, DATA / VERDICTS[key]["file"])
    ms = call_ms(outcomes)
    assert ms == VERDICTS[key]["ms"], f"{key}: ms per call {ms}, the lines' stamps say {VERDICTS[key]['ms']}"
    assert outcomes[0].tool_stats is not None
    assert outcomes[0].tool_stats["tools"]["Bash"]["ms"] == sum(VERDICTS[key]["ms"])


@pytest.mark.parametrize("key", [key for key in CLAUDE if "session" in VERDICTS[key]])
def test_session_store_times_each_call_by_its_lines(key: str, capture: Capture) -> None:
    """The transcript carries the same stamps as the stream: the same ms per call."""
    assert call_ms(replay(capture, DATA / VERDICTS[key]["session"])) == VERDICTS[key]["ms"]


def test_the_sleep_polls_last_about_a_second() -> None:
    """``sleep 1 && tail``: the stamps measure the sleep (a check that the ms are real, not made up)."""
    assert all(1000 <= ms <= 1100 for ms in VERDICTS["claude/poll_unchanged_log"]["ms"])


def lines(*stamps: str | None) -> list[str]:
    """init, then a use and a result line per call (stamps in pairs; None: no stamp), then result."""
    out = [json.dumps({"type": "system", "subtype": "init", "session_id": "s", "model": "m", "cwd": "/w"})]
    for n, (use, done) in enumerate(zip(stamps[::2], stamps[1::2], strict=True)):
        use_line: dict[str, Any] = {"type": "assistant", "message": {"id": f"m{n}", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}]}}
        done_line: dict[str, Any] = {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]}}
        for line, stamp in ((use_line, use), (done_line, done)):
            if stamp is not None:
                line["timestamp"] = stamp
            out.append(json.dumps(line))
    out.append(json.dumps({"type": "result", "subtype": "success", "is_error": False}))
    return out


def events(text: list[str], clock: list[int] | None = None) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    """((start, end) ns of each call, (turn start, turn end) ns) as the stream reader gives them."""
    ticks = iter(clock) if clock is not None else None
    found = list(read_stream(text, "claude-code", clock=(lambda: next(ticks)) if ticks is not None else None))
    calls = [(e.start_ns, e.end_ns) for e in found if isinstance(e, ToolFinished)]
    turn = next(e.time_ns for e in found if isinstance(e, TurnStarted)), next(
        e.time_ns for e in found if isinstance(e, TurnEnded))
    return calls, turn


def test_lines_without_stamps_last_zero_in_a_replay() -> None:
    calls, _ = events(lines(None, None, None, None))
    assert [end - start for start, end in calls] == [0, 0]


def test_stamps_are_laid_on_the_arrival_clock() -> None:
    """Live: the first stamped line sits at its arrival; later ones as far after it as their stamps say; the
    turn starts at init's arrival and ends no earlier than its last call."""
    text = lines("2026-12-02T10:00:00.000Z", "2026-12-02T10:00:00.250Z", "2026-12-02T10:00:01.000Z",
                 "2026-12-02T10:00:03.500Z")
    base = 5_000_000_000_000
    ms = 1_000_000
    # arrivals: init, use 1, result 1, use 2, result 2, result line, close (a little after each stamp)
    clock = [base, base + 900 * ms, base + 1_160 * ms, base + 1_905 * ms, base + 4_420 * ms, base + 4_430 * ms,
             base + 4_440 * ms]
    calls, turn = events(text, clock)
    first = base + 900 * ms
    assert calls == [(first, first + 250 * ms), (first + 1_000 * ms, first + 3_500 * ms)]
    assert turn == (base, base + 4_430 * ms)


def test_a_result_stamped_before_its_use_lasts_zero() -> None:
    calls, _ = events(lines("2026-12-02T10:00:01.000Z", "2026-12-02T10:00:00.000Z"))
    assert [end - start for start, end in calls] == [0]


def test_a_call_with_one_stamp_missing_is_not_given_a_made_up_time() -> None:
    """Use line stamped, result line not (a copy cut short): the result takes the latest time, never earlier."""
    calls, _ = events(lines("2026-12-02T10:00:00.000Z", None, "2026-12-02T10:00:01.000Z",
                            "2026-12-02T10:00:01.040Z"))
    assert [(end - start) // 1_000_000 for start, end in calls] == [0, 40]
