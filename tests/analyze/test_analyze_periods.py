"""``analyze`` suggests per-period limits and a poll limit from labelled history, and says what each would stop.

The history is the real recordings of tests/data/recordings (stream files), labelled from verdicts.toml; the
expected figures are derived here from the oracle's numbers in verdicts.toml (count_verdicts.py, which does
not import otel_toolchain): a run of n identical calls holds n // p repetitions of a p-call block; a p-call
wedge repeats its own cycle ``unordered_most_repeated`` times (failures compared with their lines in any order,
as otel_toolchain does). Nothing is faked.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.analyze.suggest import EARLY_LIMITS, POLL_FLOOR
from otel_toolchain.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).resolve().parents[1] / "data" / "recordings"
VERDICTS: dict[str, dict[str, Any]] = tomllib.loads((DATA / "verdicts.toml").read_text())


def analyze(tmp_path: Path, *extra: str) -> str:
    labels = tmp_path / "labels.csv"
    labels.write_text("".join(f"{DATA / v['file']},{v['verdict']}\n" for v in VERDICTS.values()))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        assert main(["analyze", "--labels", str(labels), *extra,
                     *(str(DATA / v["file"]) for v in VERDICTS.values())]) == 0
    return printed.getvalue()


def repeats(verdict: dict[str, Any], period: int) -> int:
    """Most repetitions of a p-call cycle that is no poll, from the oracle's most repeated cycle."""
    if verdict["polls"] == verdict["calls"] or not verdict["calls"]:
        return 0
    most: int = verdict["unordered_most_repeated"]
    its_period: int = verdict["unordered_most_repeated_period"]
    if its_period == 1:
        return most // period
    return most if its_period == period else 0


def expected() -> dict[str, Any]:
    healthy = [v for v in VERDICTS.values() if v["verdict"] == "healthy"]
    wedged = [v for v in VERDICTS.values() if v["verdict"] == "wedged" and v["calls"]]
    limits = {p: max(EARLY_LIMITS[p - 1], max(repeats(v, p) for v in healthy) + 1) for p in (1, 2, 3)}
    poll_peak = max(v["most_repeated"] for v in healthy if v["polls"] == v["calls"])
    poll_limit = max(POLL_FLOOR, poll_peak + 1, *limits.values())
    stops = {str(p): {"healthy": 0, "wedged": sum(repeats(v, p) >= limit for v in wedged), "unlabelled": 0}
             for p, limit in limits.items()}
    stops["poll"] = {"healthy": 0, "wedged": 0, "unlabelled": 0}
    return {"limits": {str(p): limit for p, limit in limits.items()}, "poll_limit": poll_limit,
            "presumed_healthy": False, "stops": stops}


def test_the_suggestion_and_what_each_limit_would_stop(tmp_path: Path, codex_home_with_rollouts: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With the Codex rollouts where Codex keeps them, the history asks for the early chain's own limits."""
    monkeypatch.setenv("CODEX_HOME", str(codex_home_with_rollouts))
    found = json.loads(analyze(tmp_path, "--format", "json"))["suggested_limits"]
    assert found == expected()
    assert found["limits"] == {"1": 4, "2": 3, "3": 3} and found["poll_limit"] == 25


def test_without_codexs_rollouts_its_cd_dirs_stream_asks_for_a_higher_limit(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's cd_dirs stream alone names no folder: six `make check` calls read as one call repeated 6 times
    in a healthy run, so the history asks for 7 repetitions of one call, not 4."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    found = json.loads(analyze(tmp_path, "--format", "json"))["suggested_limits"]
    assert found["limits"] == {"1": 7, "2": 4, "3": 3}


def test_the_text_report_says_it(tmp_path: Path, codex_home_with_rollouts: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(codex_home_with_rollouts))
    lines = analyze(tmp_path).splitlines()
    start = lines.index("Suggested per-period limits: limits = { 1 = 4, 2 = 3, 3 = 3 }, poll_limit = 25")
    assert lines[start + 1:start + 5] == [
        "  period 1 limit 4     would stop 20 turn(s): 20 wedged, 0 healthy, 0 unlabelled",
        "  period 2 limit 3     would stop 24 turn(s): 24 wedged, 0 healthy, 0 unlabelled",
        "  period 3 limit 3     would stop 24 turn(s): 24 wedged, 0 healthy, 0 unlabelled",
        "  poll limit 25        would stop 0 turn(s): 0 wedged, 0 healthy, 0 unlabelled",
    ]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_nothing_is_suggested_without_labels(fmt: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        assert main(["analyze", "--format", fmt, str(DATA / "claude" / "pytest_fail.jsonl")]) == 0
    if fmt == "json":
        assert json.loads(printed.getvalue())["suggested_limits"] is None
    else:
        assert "Suggested per-period limits" not in printed.getvalue()
