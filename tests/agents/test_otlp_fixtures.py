"""Self-consistency of the recorded OTLP fixtures (tests/data/otlp): they decode with the real
protobufs, their summaries are what the bodies say, and each agent's per-call records carry the keys,
values and ties the fixtures' README documents. These read committed data only (no agent runs)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from otlp_decode import REQUESTS, dump_summary, summarize
from otlp_fixtures import DATA, DOCUMENTED, ToolRecord, items, load, scenario_dirs, summary_path, tool_records

README = DATA / "README.md"
DIRS = scenario_dirs()
#: The record each agent's per-call facts are read from (the others are cross-checked against it).
PRIMARY = {"vercel-ai": "span ai.toolCall", "opencode": "span ai.toolCall", "claude-code": "span claude_code.tool",
           "codex": "log codex.tool_result"}


def _id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def _run(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "run.json").read_text())
    return data


def _primary(folder: Path) -> list[ToolRecord]:
    return [r for r in tool_records(load(folder)) if r.source == PRIMARY[folder.parent.name]]


def test_every_agent_has_wedge_and_healthy_fixtures() -> None:
    have = {_id(d) for d in DIRS}
    for agent in PRIMARY:
        assert {f"{agent}/wedge", f"{agent}/healthy"} <= have


@pytest.mark.parametrize("folder", DIRS, ids=_id)
def test_bodies_decode_and_summaries_match(folder: Path) -> None:
    requests = load(folder)  # raises when a body is not a valid OTLP request
    rows = (folder / "requests.jsonl").read_text().splitlines()
    assert len(requests) == len(rows) == _run(folder)["requests_captured"] > 0
    for req in requests:
        assert req.row["ok"] and req.row["bytes"] == len(req.body)
        assert isinstance(req.message, REQUESTS[req.signal])
        assert req.message.ByteSize() > 0
        assert summary_path(folder, req.row).read_text() == dump_summary(summarize(req.signal, req.message))
    assert [r["seq"] for r in map(json.loads, rows)] == list(range(1, len(rows) + 1))


@pytest.mark.parametrize("folder", DIRS, ids=_id)
def test_documented_keys_present(folder: Path) -> None:
    agent = folder.parent.name
    found: Counter[str] = Counter()
    for source, item, _ in items(load(folder)):
        if source not in DOCUMENTED.get(agent, {}):
            continue
        found[source] += 1
        always, on_success = DOCUMENTED[agent][source]
        ok = item.get("status") != "ERROR" and item["attributes"].get("success") not in ("false", False)
        missing = [k for k in (*always, *(on_success if ok else ())) if k not in item["attributes"]]
        assert not missing, f"{source} lacks {missing}"
    assert found[PRIMARY[agent]] > 0
    expected = set(DOCUMENTED[agent])
    if agent == "vercel-ai" and folder.name in ("wedge-sigterm", "healthy-stream"):
        expected.discard("span ai.generateText")  # killed before it ended / a streamText run
    assert set(found) == expected


def test_readme_names_every_documented_key() -> None:
    text = README.read_text()
    for agent, sources in DOCUMENTED.items():
        for source, (always, on_success) in sources.items():
            assert f"`{source.split(' ', 1)[1]}`" in text, (agent, source)
            for key in (*always, *on_success):
                assert f"`{key}`" in text, (agent, key)


@pytest.mark.parametrize("folder", DIRS, ids=_id)
def test_one_record_per_call_the_model_saw(folder: Path) -> None:
    run, records = _run(folder), _primary(folder)
    assert len({r.call_id for r in records}) == len(records)
    if run["ended"] == "exited":
        assert len(records) == run["tool_results_seen_by_model"]
    else:  # stopped by us: the calls in flight may be lost, the finished ones arrived
        assert run["tool_results_seen_by_model"] - 1 <= len(records) <= run["tool_results_seen_by_model"] + 1


@pytest.mark.parametrize("folder", [d for d in DIRS if d.name.startswith("wedge")], ids=_id)
def test_wedge_is_the_same_call_with_the_same_result(folder: Path) -> None:
    records = _primary(folder)
    assert len(records) >= (10 if folder.name == "wedge-sigterm" else 30)
    assert len({(r.tool, r.arguments) for r in records}) == 1
    results = {r.result for r in records}
    if folder.parent.name == "codex":
        # Codex's output carries a random chunk id and the wall time: equal only once they are dropped
        assert len(results) == len(records)
        assert len({re.sub(r"(Chunk ID|Wall time): .*\n", "", r or "") for r in results}) == 1
    else:
        assert len(results) == 1 and None not in results


@pytest.mark.parametrize("folder", [d for d in DIRS if d.name.startswith("healthy")], ids=_id)
def test_healthy_results_change(folder: Path) -> None:
    polls = [r for r in _primary(folder) if "date" in (r.arguments or "")]
    assert len(polls) >= 4
    assert len({r.result for r in polls}) == len(polls)  # Claude Code: its tool.output span event
    assert not any(r.failed for r in polls)
    assert _run(folder)["returncode"] == 0


def test_failure_evidence_per_agent() -> None:
    by_agent = {d.parent.name: tool_records(load(d)) for d in DIRS if d.name == "failing"}
    vercel = [r for r in by_agent["vercel-ai"] if r.source == PRIMARY["vercel-ai"]]
    assert {(r.tool, r.failed, r.exit_code) for r in vercel} == {("read_file", True, None), ("run_command", False, 1)}
    claude_spans = [r for r in by_agent["claude-code"] if r.source == "span claude_code.tool"]
    claude_logs = [r for r in by_agent["claude-code"] if r.source == "log tool_result"]
    assert claude_spans and all(r.failed and r.result is None for r in claude_spans)
    assert claude_logs and all(r.failed for r in claude_logs)
    codex = by_agent["codex"]
    assert codex and all(r.failed is False and r.exit_code == 1 for r in codex)  # success says "true"
    opencode = [r for r in by_agent["opencode"] if r.source == PRIMARY["opencode"]]
    assert opencode and all(r.failed is False and r.exit_code == 1 for r in opencode)  # status stays UNSET


@pytest.mark.parametrize("folder", DIRS, ids=_id)
def test_calls_tie_to_one_turn_and_session(folder: Path) -> None:
    records = tool_records(load(folder))
    assert len({r.trace_id for r in records}) == 1
    sessions = {r.session_id for r in records}
    assert len(sessions) == 1
    if folder.parent.name != "vercel-ai":
        assert None not in sessions
    if folder.parent.name == "claude-code":
        spans = {r.call_id for r in records if r.source == "span claude_code.tool"}
        logs = {r.call_id for r in records if r.source == "log tool_result"}
        assert spans == logs


@pytest.mark.parametrize("folder", DIRS, ids=_id)
def test_records_arrive_soon_after_the_call(folder: Path) -> None:
    delays = [r.delay_s for r in tool_records(load(folder))]
    assert delays and min(delays) > 0  # the same clock: nothing arrives before the call ended
    assert max(delays) < 1.0  # 200 ms export intervals everywhere


def test_turn_span_arrives_last_or_never() -> None:
    for folder in DIRS:
        found = [(arrived, item) for source, item, arrived in items(load(folder))
                 if source in ("span ai.generateText", "span ai.streamText", "span claude_code.interaction")
                 and not item["parent_span_id"]]
        if folder.parent.name == "vercel-ai" and folder.name == "wedge-sigterm":
            assert not found, "a killed AI SDK run never sends its root span"
        elif folder.parent.name in ("vercel-ai", "claude-code"):
            assert len(found) == 1, _id(folder)
            last_tool = max(r.arrived for r in _primary(folder))
            assert found[0][0] >= last_tool
