"""tests/data/recordings is self-consistent: every recording listed, parseable, counted the same twice.

The tool calls are counted here with a minimal walk of each stream (ids of the call-start events),
independent of count_verdicts.py's readers; verdicts.toml must be what count_verdicts.py writes
today. otel_toolchain's own verdicts on these files are tested elsewhere, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).resolve().parents[1] / "data" / "recordings"
CLIS = ("claude", "codex", "opencode", "pi")
SIZE_LIMIT = 400_000
EARLY = {1: 4, 2: 3, 3: 3}


def load_verdicts() -> dict[str, dict[str, Any]]:
    """verdicts.toml, keyed ``<cli>/<scenario>``."""
    return tomllib.loads((DATA / "verdicts.toml").read_text())


def recordings() -> list[str]:
    """``<cli>/<scenario>`` of every stream file in the folder (session files excluded)."""
    return sorted(f"{p.parent.name}/{p.name.removesuffix('.jsonl')}" for p in DATA.glob("*/*.jsonl")
                  if not p.name.endswith(".session.jsonl"))


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of ``path`` as a JSON object (fails the test on any other line)."""
    objects = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        value = json.loads(line)
        assert isinstance(value, dict), f"{path.name}:{number} is not a JSON object"
        objects.append(value)
    return objects


def call_ids(cli: str, objects: list[dict[str, Any]]) -> set[str]:
    """Ids of the tool calls a stream starts (one event per call per CLI)."""
    ids: set[str] = set()
    for obj in objects:
        if cli == "claude" and obj.get("type") == "assistant":
            ids |= {b["id"] for b in obj["message"]["content"] if b.get("type") == "tool_use"}
        elif cli == "codex" and obj.get("type", "").startswith("item.") and obj["item"]["type"] == "command_execution":
            ids.add(obj["item"]["id"])
        elif cli == "opencode" and obj.get("type") == "tool_use":
            ids.add(obj["part"]["callID"])
        elif cli == "pi" and obj.get("type") == "tool_execution_start":
            ids.add(obj["toolCallId"])
    return ids


def session_call_ids(cli: str, objects: list[dict[str, Any]]) -> set[str]:
    """Ids of the tool calls in a session file (Claude Code transcript, Codex rollout, Pi session)."""
    if cli == "claude":
        return call_ids("claude", objects)
    if cli == "pi":
        return {block["id"] for o in objects if o.get("type") == "message" and o["message"].get("role") == "assistant"
                for block in o["message"]["content"] if block.get("type") == "toolCall"}
    return {o["payload"]["call_id"] for o in objects
            if o.get("type") == "response_item" and o["payload"].get("type") == "function_call"}


def test_every_recording_is_listed_once() -> None:
    """The stream files, the manifest and the verdicts name the same recordings; the README lists them all."""
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert recordings() == sorted(load_verdicts()) == sorted(manifest)
    readme = (DATA / "README.md").read_text()
    assert [key for key in recordings() if f"`{key}`" not in readme] == []


@pytest.mark.parametrize("key", recordings())
def test_recording_parses_and_its_calls_match(key: str) -> None:
    """JSON lines only; the calls counted by id equal the verdict's ``calls`` (and its session's)."""
    verdict = load_verdicts()[key]
    path = DATA / f"{key}.jsonl"
    assert path.stat().st_size < SIZE_LIMIT, "keep recordings small"
    assert len(call_ids(verdict["cli"], json_lines(path))) == verdict["calls"]
    if "session" in verdict:
        session = json_lines(DATA / verdict["session"])
        assert len(session_call_ids(verdict["cli"], session)) == verdict["session_calls"]


@pytest.mark.parametrize("key", recordings())
def test_verdict_is_coherent(key: str) -> None:
    """A wedge has a loop start and is stopped after it; a healthy run is stopped by neither chain.

    The exceptions are the named blind spots: runs a stream-only reader cannot judge.
    """
    verdict = load_verdicts()[key]
    assert verdict["verdict"] in ("wedged", "healthy")
    stops = [verdict["default_stop"], verdict["early_stop"]]
    assert all(0 <= stop <= verdict["calls"] for stop in stops)
    if "blind_spot" in verdict:
        assert verdict["session_early_stop"] == (4 if verdict["verdict"] == "wedged" else 0)
    elif verdict["verdict"] == "healthy":
        assert stops == [0, 0] and verdict["loop_start"] == 0
    else:
        # a chain stops at the call that completes limit repetitions of the cycle that began at loop start
        start, period = verdict["early_loop_start"], verdict["early_period"]
        assert 1 <= verdict["loop_start"] == start < verdict["early_stop"] <= verdict["calls"]
        assert verdict["early_stop"] == start + EARLY[period] * period - 1
        if verdict["default_stop"]:
            span = verdict["default_stop"] - verdict["default_loop_start"] + 1
            assert span % 25 == 0 and span // 25 in (1, 2, 3) and verdict["default_stop"] > verdict["early_stop"]


def test_each_cli_has_a_wedge_and_a_healthy_run_and_claude_has_all() -> None:
    """Coverage: every CLI has both kinds; Claude Code has every scenario but the Codex-only one."""
    verdicts = load_verdicts()
    kinds = {cli: {v["verdict"] for v in verdicts.values() if v["cli"] == cli} for cli in CLIS}
    assert kinds == {cli: {"wedged", "healthy"} for cli in CLIS}
    scenarios = {v["scenario"] for v in verdicts.values()}
    claude = {v["scenario"] for v in verdicts.values() if v["cli"] == "claude"}
    assert scenarios - claude == {"justification_refused"}


def test_claude_durations_come_from_the_lines_timestamps() -> None:
    """Claude Code 2.1.x writes a timestamp on each line: every call has a duration; sleep 1 reads >= 1 s."""
    verdicts = load_verdicts()
    claude = [v for v in verdicts.values() if v["cli"] == "claude"]
    assert all(len(v["ms"]) == v["calls"] and min(v["ms"]) >= 0 for v in claude)
    polls = verdicts["claude/poll_unchanged_log"]["ms"]
    assert all(1000 <= ms < 3000 for ms in polls), polls


def test_verdicts_are_what_count_verdicts_writes() -> None:
    """verdicts.toml is up to date with the recordings and count_verdicts.py (``--check``)."""
    run = subprocess.run([sys.executable, str(DATA / "count_verdicts.py"), "--check"], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
