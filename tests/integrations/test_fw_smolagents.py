"""smolagents ToolCallingAgent, under OpenInference, driven offline by a scripted Model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("smolagents")
pytest.importorskip("openinference.instrumentation.smolagents")

from chainkit import Kit, make_kit, stop_events, tool_spans
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry import trace
from smolagents import ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import NOTE_PREFIX
from otel_toolchain.integrations.smolagents import ToolchainStepCallback, run_agent
from otel_toolchain.testing import Capture

pytestmark = pytest.mark.integration


@pytest.fixture
def instrumented(capture: Capture) -> Iterator[None]:
    instr = SmolagentsInstrumentor()
    instr.instrument(tracer_provider=capture.tracer_provider)
    try:
        yield
    finally:
        instr.uninstrument()


class Scripted(Model):
    """Asks for get_weather ``calls`` times, then gives the final answer; remembers what it was sent."""

    def __init__(self, calls: int) -> None:
        super().__init__(model_id="fake-model")
        self.calls = calls
        self.sent: list[list[Any]] = []

    def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self.sent.append(list(messages))
        step = len(self.sent)
        name, args = ("get_weather", {"city": "Paris"}) if step <= self.calls else ("final_answer", {"answer": "done"})
        call = ChatMessageToolCall(id=f"call_{step}", type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=args))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def agent_for(kit: Kit, model: Scripted, ran: list[str], *, healthy: bool) -> ToolCallingAgent:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        ran.append(city)
        return f"{len(ran)}0% cloud" if healthy else "sunny"

    return ToolCallingAgent(tools=[get_weather], model=model, name="smol_weather", max_steps=60, verbosity_level=0,
                            step_callbacks=[ToolchainStepCallback(kit.chain)])


@pytest.mark.usefixtures("instrumented")
def test_wedged_agent_is_stopped_at_exactly_the_limit(capture: Capture) -> None:
    kit, model, ran = make_kit(capture, limit=5), Scripted(50), []
    outer = trace.get_current_span()
    with pytest.raises(TurnStopped) as stopped:
        run_agent(agent_for(kit, model, ran, healthy=False), "weather in Paris?", toolchain=kit.chain)
    assert trace.get_current_span() is outer  # the caller's context is back
    signal = stopped.value.signal
    assert (signal.plugin, signal.repeats, signal.at_call, len(ran), len(model.sent)) == ("repeat_guard", 5, 5, 5, 5)
    (where, _), = stop_events(capture)
    turn = next(s for s in capture.finished_spans() if s["name"] == where)
    assert (where, turn["status"]) == ("smol_weather.run", "ERROR")
    assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 5
    assert [(c["tool"], c["arguments"], c["result"]) for c in kit.seen.calls] == [
        ("get_weather", {"city": "Paris"}, "sunny")] * 5
    assert [(s["calls"], s["classes"]) for s in kit.stats] == [(5, {"network": 5})]


@pytest.mark.usefixtures("instrumented")
def test_healthy_agent_runs_to_the_end(capture: Capture) -> None:
    kit, ran = make_kit(capture, limit=5), []
    assert agent_for(kit, Scripted(8), ran, healthy=True).run("weather?") == "done"
    assert kit.stops == [] and [c["result"] for c in kit.seen.calls] == [f"{i}0% cloud" for i in range(1, 9)]
    assert [(s["calls"], s["classes"]) for s in kit.stats] == [(8, {"network": 8})]  # final_answer not counted


@pytest.mark.usefixtures("instrumented")
def test_nudge_follows_the_step_observations(capture: Capture) -> None:
    kit, model = make_kit(capture, limit=5, nudge_at=3), Scripted(50)
    with pytest.raises(TurnStopped):
        run_agent(agent_for(kit, model, [], healthy=False), "weather?", toolchain=kit.chain)
    observations = [str(m.content) for m in model.sent[3] if m.role == MessageRole.TOOL_RESPONSE]
    assert [NOTE_PREFIX in o for o in observations] == [False, False, True]
    assert observations[2].index("sunny") < observations[2].index(NOTE_PREFIX)
