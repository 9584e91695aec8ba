"""Eviction keeps meaning: an evicted turn's later calls are evicted calls, never new turns.

Real SDK providers in memory (``Capture``); the calls come through the chain as a span
processor (another instrumentation's spans) and through the recorder API.
"""

from __future__ import annotations

import gc
import weakref

from opentelemetry import trace

from otel_toolchain import semconv
from otel_toolchain.chain import Toolchain
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.plugins.tool_stats import ToolStats
from otel_toolchain.recorder import AgentRecorder, TurnRecording
from otel_toolchain.testing import Capture

AGENT = {semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT}
TOOL = {semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_EXECUTE_TOOL, semconv.GEN_AI_TOOL_NAME: "Bash",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"command": "ls"}', semconv.GEN_AI_TOOL_CALL_RESULT: "same"}


def reports(capture: Capture) -> list[dict[str, object]]:
    return [dict(record.log_record.body) for record in capture.logs.get_finished_logs()  # type: ignore[arg-type]
            if record.log_record.event_name == "otel_toolchain.tool_stats"]


def test_late_spans_of_an_evicted_turn_are_evicted_calls_not_new_turns(capture: Capture) -> None:
    chain = capture.install(Toolchain([RepeatGuard(limit=5), ToolStats()], max_open_turns=2))
    stops: list[object] = []
    chain.on_stop(stops.append)
    tracer = capture.tracer_provider.get_tracer("another-instrumentation")
    evicted = tracer.start_span("invoke_agent a", attributes=AGENT)
    under = trace.set_span_in_context(evicted)
    tracer.start_span("execute_tool Bash", context=under, attributes=TOOL).end()
    live = tracer.start_span("invoke_agent b", attributes=AGENT)
    tracer.start_span("execute_tool Bash", context=trace.set_span_in_context(live), attributes=TOOL).end()
    newest = tracer.start_span("invoke_agent c", attributes=AGENT)  # evicts a
    assert chain.evicted == 1
    for _ in range(30):
        tracer.start_span("execute_tool Bash", context=under, attributes=TOOL).end()
    # no churn: the 30 calls opened no turn, so b (still live) was not evicted by them
    assert [turn.span_id for turn in chain.open_turns()] == [live.get_span_context().span_id,
                                                             newest.get_span_context().span_id]
    assert (chain.evicted, chain.evicted_calls, stops) == (1, 30, [])
    for span in (evicted, live, newest):
        span.end()
    assert [report["calls"] for report in reports(capture)] == [1, 0]  # b's report kept; c's; none for a's calls
    assert capture.metrics()[semconv.METRIC_EVICTED_CALLS] == [{"attributes": {}, "value": 30}]
    assert chain.open_turns() == [] and chain.live_spans() == 0


def test_late_calls_of_an_evicted_recorded_turn_are_evicted_calls(capture: Capture) -> None:
    chain = capture.install(Toolchain([RepeatGuard(limit=5), ToolStats()], max_open_turns=2))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    evicted = recorder.start_turn("a")
    evicted.tool_call("Bash", {"command": "ls"}, result="same")
    others = [recorder.start_turn("b"), recorder.start_turn("c")]
    for _ in range(30):
        evicted.tool_call("Bash", {"command": "ls"}, result="same")
    assert (chain.evicted, chain.evicted_calls, evicted.stop_signal) == (1, 30, None)
    for recording in (evicted, *others):
        recording.end()
    assert [report["calls"] for report in reports(capture)] == [0, 0]


def test_turns_that_never_end_stay_bounded(capture: Capture) -> None:
    """2,000 recorded turns never ended, with a call each: only ``max_open_turns`` of them are kept."""
    chain = capture.install(Toolchain([RepeatGuard(limit=5), ToolStats()], max_open_turns=16))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    recordings: weakref.WeakSet[TurnRecording] = weakref.WeakSet()
    for i in range(2000):
        recording = recorder.start_turn("never-ends")
        recording.tool_call("Bash", {"i": i}, result="r")
        recordings.add(recording)
    del recording
    gc.collect()
    assert len(chain.open_turns()) == 16 and chain.evicted == 2000 - 16
    assert len(recordings) == 16  # nothing else keeps an open turn's recording alive
    assert chain.live_spans() == 16
