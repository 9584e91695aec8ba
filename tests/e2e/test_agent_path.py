"""End to end through the real Collector running collector-config/otelcol-agent.yaml, into a real Jaeger.

See agent_stack.py for the stack and what the overlay changes. Covered here: a replayed wedged run and a
live ``otel-toolchain run`` are found stopped in Jaeger through its HTTP query API; the tail sampler keeps
exactly the turns its policies name (computed independently in sampling_policy.py), failed tool calls in a
good turn no longer keep it; planted secrets reach none of Jaeger, the Tempo and Loki stand-ins, the
scraped and remote-written metrics; the shipped stop alert fires on the Collector path; and the Collector
logs no warning or error meanwhile.
"""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from .agent_stack import SERVICE, AgentStack
from .backends_stack import CONFIG_DIR
from .e2e_alert_stack import Deadline, api, http_get, wait_for
from .runs import WEDGE, Replayed, agent_turns
from .sampling_policy import expected_keep, old_keep, probabilistic_from
from .secret_agent import SECRETS

pytestmark = pytest.mark.integration

STOP_EXIT = 75  # otel-toolchain run: a plugin stopped the run


def tags(span: dict[str, Any]) -> dict[str, Any]:
    return {t["key"]: t["value"] for t in span.get("tags", [])}


def events(span: dict[str, Any]) -> list[dict[str, Any]]:
    """A Jaeger span's logs as {field: value} dicts (the OTel span events)."""
    return [{f["key"]: f["value"] for f in log["fields"]} for log in span.get("logs", [])]


def traces_of_session(stack: AgentStack, session: str, deadline: Deadline, spans: int) -> list[dict[str, Any]]:
    """The Jaeger traces of one conversation, once one of them has at least ``spans`` spans."""
    def probe() -> list[dict[str, Any]] | None:
        found = stack.jaeger.api("/api/traces", service=SERVICE, limit="20", lookback="1d",
                                 tags=json.dumps({"gen_ai.conversation.id": session}))
        return found if found and max(len(t["spans"]) for t in found) >= spans else None
    return wait_for(f"session {session} in Jaeger", probe, deadline, explain=stack.diagnostics)


def assert_stopped_turn(trace: dict[str, Any], *, min_calls: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The turn span is red with error.type tool_plugin.repeat_guard and the stop event; returns (turn, tools)."""
    [turn] = [s for s in trace["spans"] if s["operationName"].startswith("invoke_agent")]
    t = tags(turn)
    assert t["otel.status_code"] == "ERROR" and t["error"] is True, t
    assert t["error.type"] == "tool_plugin.repeat_guard", t
    [stop] = [e for e in events(turn) if e.get("event") == "otel_toolchain.turn.stop"]
    assert stop["otel_toolchain.plugin"] == "repeat_guard" and stop["otel_toolchain.stop.repeats"] == 25, stop
    assert stop["otel_toolchain.stop.reason"] == "repeated_cycle" and stop["otel_toolchain.stop.period"] == 1, stop
    tools = [s for s in trace["spans"] if s is not turn]
    assert len(tools) >= min_calls, len(tools)
    for span in tools:
        assert span["operationName"] == "execute_tool Bash", span["operationName"]
        assert [r["spanID"] for r in span["references"] if r["refType"] == "CHILD_OF"] == [turn["spanID"]]
        assert "gen_ai.tool.call.arguments" not in tags(span) and "gen_ai.tool.call.result" not in tags(span)
    return turn, tools


def test_wedged_replay_is_in_jaeger_stopped_with_every_tool_span(agent_stack: AgentStack,
                                                                  wedge_replay: dict[str, Any]) -> None:
    assert wedge_replay["calls"] == 30 and wedge_replay["stopped"]["plugin"] == "repeat_guard", wedge_replay
    [trace] = traces_of_session(agent_stack, wedge_replay["session_id"], Deadline(30), spans=31)
    _, tools = assert_stopped_turn(trace, min_calls=30)
    recorded = re.findall(r'"type":\s*"tool_use",\s*"id":\s*"(toolu_\w+)"', WEDGE.read_text())
    assert sorted(tags(s)["gen_ai.tool.call.id"] for s in tools) == sorted(recorded), "every recorded call"
    assert len(trace["spans"]) == 31, "one turn span and 30 tool spans, no duplicates"


def test_live_run_is_stopped_and_its_trace_is_in_jaeger(agent_stack: AgentStack, live_run: dict[str, Any]) -> None:
    assert live_run["returncode"] == STOP_EXIT, live_run["stderr"][-2000:]
    # two varied calls, then the repeated one: repeat_guard stops at its 25th repeat, call 27
    [trace] = traces_of_session(agent_stack, live_run["session"], Deadline(30), spans=28)
    _, tools = assert_stopped_turn(trace, min_calls=27)
    assert all(span["duration"] > 0 for span in tools), "live calls have real durations"


def test_tail_sampling_keeps_exactly_what_the_policies_say(agent_stack: AgentStack, mixed_replay: Replayed) -> None:
    offered = mixed_replay.offered
    assert len(offered) == len(mixed_replay.turns) == 74, (len(offered), len(mixed_replay.turns))
    sampler = probabilistic_from(_agent_tail_sampling())
    expected = {t: expected_keep(spans, sampler) for t, spans in offered.items()}
    kept = {t for t, why in expected.items() if why}
    deadline = Deadline(30)
    for trace_id in sorted(kept):  # each kept turn arrives whole
        trace = wait_for(f"kept trace {trace_id} ({expected[trace_id]})",
                         partial(_whole, agent_stack, trace_id, len(offered[trace_id])), deadline,
                         explain=agent_stack.diagnostics)
        assert len(trace["spans"]) == len(offered[trace_id])
    dropped = [t for t in offered if t not in kept and agent_stack.jaeger.trace(t) is not None]
    assert dropped == [], f"in Jaeger although no policy keeps them: {dropped}"
    assert mixed_replay.decisions == {"true": len(kept), "false": len(offered) - len(kept)}, mixed_replay.decisions
    # Every stopped, shadow-stopped and failed turn is kept; a failed tool call alone keeps nothing.
    reasons = [expected[t] for t in offered]
    assert reasons.count("keep-stopped-turns") == 3 and reasons.count("keep-shadow-stops") == 1
    assert reasons.count("keep-failed-turns") == 6
    toolfail = [t for t, spans in offered.items() if any(s.status_code == 2 for s in spans) and expected[t] is None]
    assert toolfail, "some turns with a failed tool call were dropped (the old keep-failed policy kept them all)"
    assert all(old_keep(offered[t], sampler) == "keep-failed" for t in toolfail)


def _agent_tail_sampling() -> dict[str, Any]:
    cfg = yaml.safe_load((CONFIG_DIR / "otelcol-agent.yaml").read_text())
    return dict(cfg["processors"]["tail_sampling"])


def _whole(stack: AgentStack, trace_id: str, spans: int) -> dict[str, Any] | None:
    trace = stack.jaeger.trace(trace_id)
    return trace if trace is not None and len(trace["spans"]) >= spans else None


def test_secrets_reach_no_backend(agent_stack: AgentStack, mixed_replay: Replayed, live_run: dict[str, Any]) -> None:
    # Positive control: the agent really sent them (tool arguments and results, the cwd) to the Collector.
    sent = b"".join(agent_stack.tap.bodies("/v1/traces"))
    assert all(secret.encode() in sent for secret in SECRETS), "the planted secrets were not even sent"
    received = {
        "Jaeger": agent_stack.jaeger.raw_dump(SERVICE).encode(),
        "Tempo stand-in (otlp_grpc/tempo)": b"".join(agent_stack.tempo.bodies()),
        "Loki stand-in (otlp_http/loki)": b"".join(agent_stack.loki.bodies()),
        "prometheus exporter": http_get(agent_stack.exporter_url)[1],
        "Prometheus (scraped)": json.dumps(api(agent_stack.scrape.base_url, "/api/v1/series",
                                               **{"match[]": '{__name__=~".+"}'})).encode(),
        "Prometheus (remote write, as Mimir)": json.dumps(api(agent_stack.mimir.base_url, "/api/v1/series",
                                                              **{"match[]": '{__name__=~".+"}'})).encode(),
    }
    assert len(received["Tempo stand-in (otlp_grpc/tempo)"]) > 1000 and received["Loki stand-in (otlp_http/loki)"]
    leaks = {where: [s for s in SECRETS if s.encode() in data] for where, data in received.items()}
    assert leaks == {where: [] for where in received}
    cwds = {tags(s).get("otel_toolchain.tool.cwd") for t in agent_stack.jaeger.traces(SERVICE) for s in t["spans"]}
    assert "/home/dev/****/repo" in cwds, cwds  # masked by redaction/secrets, the rest of the path kept


def test_the_stop_alert_fires_on_the_collector_path(agent_stack: AgentStack, live_run: dict[str, Any]) -> None:
    def firing() -> list[dict[str, Any]]:
        alerts = api(agent_stack.scrape.base_url, "/api/v1/alerts")["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "OtelToolchainTurnStopped" and a["state"] == "firing"]
    [alert, *_] = wait_for("OtelToolchainTurnStopped", firing, Deadline(40), explain=agent_stack.diagnostics)
    assert alert["labels"]["job"] == SERVICE and alert["labels"]["otel_toolchain_plugin"] == "repeat_guard"


def test_cli_reports_full_delivery(agent_stack: AgentStack, tmp_path: Path) -> None:
    done = agent_stack.cli(["replay", str(agent_turns(tmp_path / "one.jsonl", ["healthy"]))], agent_stack.cli_env(),
                           turns=1)
    assert done.returncode == 0 and "telemetry exported to OTLP (http/protobuf)" in done.stderr, done.stderr
    assert "NOT fully delivered" not in done.stderr


def test_zz_collector_logged_no_warning_or_error(agent_stack: AgentStack) -> None:
    """Runs last in this file: every setting is valid on the pinned Collector and nothing failed to export."""
    assert agent_stack.collector.log_lines("warn") == []
    assert agent_stack.collector.log_lines("error") == []
