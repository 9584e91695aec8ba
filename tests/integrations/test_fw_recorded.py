"""Recognition of five more frameworks, from their real spans: every framework x instrumentation pair.

The spans are the ones Strands, LlamaIndex, CrewAI, Agno and Google ADK exported for real
(``tests/data/frameworks``, written by ``tests/frameworks/capture_*.py``), replayed through a real
SDK provider with the chain on it (``fwreplay``: what is faked is only the timing). Each fixture's
spans set their own final status as the framework did, OK included, so the turn span's ERROR
after a stop is tested against the framework's own ``set_status(OK)`` at its end.
"""

from __future__ import annotations

import logging

import pytest
from chainkit import Kit, make_kit, stop_events, tool_spans
from fwreplay import load, replay

from otel_toolchain.testing import Capture

WITH_CONTENT = [
    "strands-native", "strands-native-latest", "strands-openinference",
    "llamaindex-native", "llamaindex-openinference", "llamaindex-traceloop", "llamaindex-genai",
    "crewai-native", "crewai-openinference",
    "agno-openinference", "agno-traceloop", "agno-genai",
    "adk-native-content", "adk-native-legacy", "adk-openinference",
]
TURN_SPANS = {
    "strands": "invoke_agent weather_agent", "llamaindex-native": "FunctionAgent.run",
    "llamaindex-openinference": "FunctionAgent.run", "llamaindex-traceloop": "FunctionAgent.workflow",
    "llamaindex-genai": "invoke_agent weather_agent", "crewai-native": "execute crew",
    "crewai-openinference": "weather reporter._execute_core", "agno-openinference": "weather_agent.run",
    "agno-traceloop": "weather_agent.agent", "agno-genai": "invoke_agent weather_agent",
    "adk-native-content": "invoke_workflow weather_agent", "adk-native-legacy": "invoke_agent weather_agent",
    "adk-openinference": "invoke_workflow weather_agent", "adk-native": "invoke_workflow weather_agent",
}
LIMIT = 25


def run(pair: str, scenario: str) -> tuple[Kit, Capture]:
    capture = Capture()
    kit = make_kit(capture, limit=LIMIT)
    replay(capture.tracer_provider, load(f"{pair}-{scenario}"))
    return kit, capture


def turn_name(pair: str) -> str:
    return TURN_SPANS.get(pair) or TURN_SPANS[pair.split("-", maxsplit=1)[0]]


def stats_of(kit: Kit, calls: int, failed: int = 0) -> None:
    (stats,) = kit.stats
    assert (stats["calls"], stats["classes"]) == (calls, {"network": calls})
    assert {k: v["calls"] for k, v in stats["tools"].items()} == {"get_weather": calls}
    assert stats["tools"]["get_weather"]["failed"] == failed


@pytest.mark.parametrize("pair", WITH_CONTENT)
def test_wedged_run_is_stopped_when_the_25th_call_ends(pair: str) -> None:
    kit, capture = run(pair, "wedged")
    calls = kit.seen.calls
    assert len(calls) == 40 and {c["turn"] for c in calls} == {calls[0]["turn"]}
    assert [(c["tool"], c["arguments"], c["result"], c["failed"]) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "Paris: sunny, 20C", False)] * 40
    assert [c["call_id"] for c in calls] in ([f"call_{i}" for i in range(1, 41)], [None] * 40)
    (signal,) = kit.stops
    assert (signal.plugin, signal.at_call, signal.repeats) == ("repeat_guard", LIMIT, LIMIT)
    ((where, event),) = stop_events(capture)
    assert where == turn_name(pair) and event["otel_toolchain.stop.at_call"] == LIMIT
    turn = next(s for s in capture.finished_spans() if s["name"] == where)
    assert (turn["status"], turn["attributes"]["error.type"]) == ("ERROR", "tool_plugin.repeat_guard")
    assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 40
    stats_of(kit, 40)


@pytest.mark.parametrize("pair", WITH_CONTENT)
def test_healthy_run_is_not_stopped(pair: str) -> None:
    kit, capture = run(pair, "healthy")
    assert kit.stops == [] and stop_events(capture) == []
    assert [c["result"] for c in kit.seen.calls] == [f"Paris: reading {i}, {2 * i}% cloud" for i in range(1, 41)]
    assert all(c["arguments"] == {"city": "Paris"} for c in kit.seen.calls)
    stats_of(kit, 40)


FAILED_RESULTS = {  # what each pair shows of the failure as the call's result
    "strands-native": "Error: no weather station in Paris",
    "strands-openinference": "Error: no weather station in Paris",
    "llamaindex-native": "no weather station in Paris", "llamaindex-traceloop": "no weather station in Paris",
    "llamaindex-genai": "no weather station in Paris", "agno-openinference": "no weather station in Paris",
    "agno-traceloop": "no weather station in Paris", "adk-native-legacy": "<not specified>",
}


@pytest.mark.parametrize("pair", WITH_CONTENT)
def test_failing_calls_are_failures(pair: str) -> None:
    kit, _ = run(pair, "failing")
    calls = kit.seen.calls
    expected = 1 if pair.startswith("adk") else 2  # ADK ends the run at the tool's exception
    assert len(calls) == expected and all(c["failed"] for c in calls)
    assert {c["result"] for c in calls} == {FAILED_RESULTS.get(pair)}
    stats_of(kit, expected, failed=expected)


def test_adk_without_content_is_not_stopped_and_names_adks_setting(caplog: pytest.LogCaptureFixture) -> None:
    """ADK 2.x records no tool content by default: no stop on names alone, and the hint says how."""
    with caplog.at_level(logging.WARNING, logger="otel_toolchain"):
        kit, capture = run("adk-native", "wedged")
    assert len(kit.seen.calls) == 40 and kit.stops == []
    turn = next(s for s in capture.finished_spans() if s["name"] == turn_name("adk-native"))
    assert turn["attributes"]["otel_toolchain.turn.content_capture"] == "off"
    (record,) = [r for r in caplog.records if "content capture is off" in r.getMessage()]
    assert "'gcp.vertex.agent'" in record.getMessage()
    assert "Google ADK: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in record.getMessage()


@pytest.mark.parametrize("scenario", ["wedged", "healthy", "failing"])
def test_crewai_under_traceloop_shows_no_tool_span(scenario: str) -> None:
    """Traceloop's CrewAI instrumentation records workflow, task and agent only: nothing to read."""
    kit, capture = run("crewai-traceloop", scenario)
    assert kit.seen.calls == [] and kit.stops == []
    assert sorted(s["name"] for s in capture.finished_spans()) == [
        "What is the weather in Paris?.task", "crewai.workflow", "weather reporter.agent"]



@pytest.mark.parametrize("pair", ["llamaindex-native", "llamaindex-openinference", "llamaindex-traceloop",
                                  "crewai-native", "crewai-openinference"])
def test_two_runs_under_one_application_span_are_two_turns(pair: str) -> None:
    """The turn rule for frameworks without an agent span: each run entry (``FunctionAgent.run``) is one."""
    capture = Capture()
    kit = make_kit(capture, limit=LIMIT)
    with capture.tracer_provider.get_tracer("app").start_as_current_span("application"):
        replay(capture.tracer_provider, load(f"{pair}-wedged"))
        replay(capture.tracer_provider, load(f"{pair}-wedged"))
    turns = [c["turn"] for c in kit.seen.calls]
    assert len(turns) == 80 and turns[:40] == [turns[0]] * 40 and turns[40:] == [turns[40]] * 40
    assert turns[0] != turns[40]
    assert [(s.at_call, s.span_id) for s in kit.stops] == [(LIMIT, turns[0]), (LIMIT, turns[40])]
    assert [s["calls"] for s in kit.stats] == [40, 40]
    assert [where for where, _ in stop_events(capture)] == [turn_name(pair)] * 2
