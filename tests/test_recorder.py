"""The recorder API: GenAI-shaped spans for agents that are not traced yet."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import TurnStopped
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.recorder import CAPTURE_ENV, AgentRecorder
from otel_toolchain.testing import Capture

TOOL = {"gen_ai.operation.name": "execute_tool"}


def test_spans_follow_the_genai_conventions(capture: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    recorder = AgentRecorder(capture.tracer_provider)
    with recorder.turn("coder", conversation_id="s-1", model="m-1") as turn:
        turn.tool_call("Bash", {"command": "ls"}, result="a\nb", call_id="toolu_1", cwd="/src")
        turn.tool_call("Bash", {"command": "false"}, result="exit 1", failed=True, error_type="exit_code_1",
                       call_id="toolu_2")
    assert capture.finished_spans() == [
        {"name": "execute_tool Bash", "trace_id": 1, "span_id": 2, "parent_id": 1, "status": "UNSET",
         "attributes": {**TOOL, "gen_ai.tool.name": "Bash", "gen_ai.tool.call.id": "toolu_1",
                        "otel_toolchain.tool.cwd": "/src"}, "events": []},
        {"name": "execute_tool Bash", "trace_id": 1, "span_id": 3, "parent_id": 1, "status": "ERROR",
         "attributes": {**TOOL, "gen_ai.tool.name": "Bash", "gen_ai.tool.call.id": "toolu_2",
                        "error.type": "exit_code_1"}, "events": []},
        {"name": "invoke_agent coder", "trace_id": 1, "span_id": 1, "parent_id": None, "status": "UNSET",
         "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "coder",
                        "gen_ai.conversation.id": "s-1", "gen_ai.request.model": "m-1"}, "events": []},
    ]


@pytest.mark.parametrize("value", ["SPAN_ONLY", "span_and_event"])
def test_content_goes_on_spans_only_when_capture_is_on(
    capture: Capture, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, value)
    with AgentRecorder(capture.tracer_provider).turn() as turn:
        turn.tool_call("Read", {"path": "a"}, result="text")
        turn.tool_call("Read", {"path": "b"}, result="gone", failed=True)
    first, second = (s["attributes"] for s in capture.finished_spans()[:2])
    assert first["gen_ai.tool.call.arguments"] == '{"path":"a"}'
    assert first["gen_ai.tool.call.result"] == "text"
    # The conventions record a result only for a call that succeeded.
    assert "gen_ai.tool.call.result" not in second and second["gen_ai.tool.call.arguments"] == '{"path":"b"}'


@pytest.mark.parametrize("value", ["true", "NO_CONTENT", ""])
def test_other_capture_values_keep_content_off(capture: Capture, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(CAPTURE_ENV, value)
    with AgentRecorder(capture.tracer_provider).turn() as turn:
        turn.tool_call("Read", {"path": "a"}, result="text")
    assert "gen_ai.tool.call.arguments" not in capture.finished_spans()[0]["attributes"]


def test_plugins_see_full_content_even_when_capture_is_off(capture: Capture) -> None:
    """Identity needs results: with capture off, a changing result is still progress."""
    chain = capture.install(Toolchain([RepeatGuard(limit=3)], strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain, capture_content=False)
    with recorder.turn() as turn:
        for i in range(5):
            turn.tool_call("Bash", {"command": "poll"}, result=f"{i}%")
    assert turn.stop_signal is None
    with recorder.turn() as turn:
        for _ in range(5):
            turn.tool_call("Bash", {"command": "poll"}, result="0%")
    assert turn.stop_signal is not None and turn.stop_signal.at_call == 3


def test_a_stopped_turn_raises_typed_error_and_is_marked(capture: Capture) -> None:
    chain = capture.install(Toolchain([RepeatGuard(limit=2)], strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    with pytest.raises(TurnStopped) as raised, recorder.turn("a") as turn:
        for _ in range(5):
            turn.tool_call("Read", {"p": 1}, result="same")
            turn.raise_if_stopped()
    assert raised.value.signal.at_call == 2
    turn_span = capture.finished_spans()[-1]
    assert turn_span["status"] == "ERROR"
    assert turn_span["attributes"]["error.type"] == "tool_plugin.repeat_guard"  # not TurnStopped


def test_sub_agent_calls_nest_under_the_calling_tool(capture: Capture) -> None:
    with AgentRecorder(capture.tracer_provider).turn() as turn:
        task = turn.start_tool("Task", {"prompt": "look"}, call_id="t1")
        turn.tool_call("Read", {"p": 1}, parent=task)
        task.finish("done")
    read, task_span, _ = capture.finished_spans()
    assert (read["name"], read["parent_id"]) == ("execute_tool Read", task_span["span_id"])
    assert task_span["parent_id"] == 1


def test_explicit_times_are_kept(capture: Capture) -> None:
    with AgentRecorder(capture.tracer_provider).turn(start_ns=1_000) as turn:
        turn.tool_call("Read", start_ns=2_000, end_ns=5_000)
    spans = capture.spans.get_finished_spans()
    assert (spans[0].start_time, spans[0].end_time) == (2_000, 5_000)


def test_turns_that_are_sampled_out_are_still_guarded_and_leave_nothing_behind() -> None:
    """Sampling decides what is exported, not what is guarded: the chain is not telemetry."""
    provider = TracerProvider(sampler=ALWAYS_OFF)
    chain = Toolchain([RepeatGuard(limit=2)], strict=True).install(provider)
    recorder = AgentRecorder(provider, toolchain=chain)
    for _ in range(50):
        with recorder.turn("a") as turn:
            for _ in range(3):
                turn.tool_call("Read", {"p": 1}, result="same")
        assert turn.stop_signal is not None and turn.stop_signal.at_call == 2
    assert chain.open_turns() == [] and chain.live_spans() == 0
