"""OpenAI Agents SDK, under each OTel bridge, driven offline by a scripted Model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("openinference.instrumentation.openai_agents")
pytest.importorskip("opentelemetry.instrumentation.genai.openai_agents")

import agents
from agents import Agent, RunConfig, Runner, Usage, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from chainkit import Kit, Relay, make_kit, stop_events, tool_spans
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor as OpenInference
from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor as Official
from opentelemetry.sdk.trace import TracerProvider

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import NOTE_PREFIX
from otel_toolchain.integrations.openai_agents import ToolchainInputFilter
from otel_toolchain.testing import Capture

pytestmark = pytest.mark.integration

TURN_SPANS = {"openinference": "demo workflow", "official": "invoke_workflow demo workflow",
              "traceloop": "Agent Workflow"}


class Scripted(Model):
    """Asks for get_weather ``calls`` times, then answers; remembers the input of every call."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        step = len(self.inputs)
        out: list[Any] = [ResponseFunctionToolCall(type="function_call", id=f"fc_{step}", call_id=f"call_{step}",
                                                   name="get_weather", arguments=json.dumps({"city": "Paris"}))]
        if step > self.calls:
            out = [ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text="done",
                                                                     annotations=[])])]
        return ModelResponse(output=out, usage=Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2),
                             response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@pytest.fixture(scope="module")
def traceloop_relay() -> Iterator[tuple[Relay, TracerProvider]]:
    pytest.importorskip("opentelemetry.instrumentation.openai_agents")
    relay, provider = Relay(), TracerProvider()
    provider.add_span_processor(relay)
    yield relay, provider


def instrumentor(name: str, capture: Capture, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    """The bridge and how to instrument it; Traceloop goes through the module's relay provider."""
    if name == "openinference":
        return OpenInference(), {"tracer_provider": capture.tracer_provider}
    if name == "official":
        return Official(), {"tracer_provider": capture.tracer_provider, "disable_openai_trace_export": True}
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Traceloop  # noqa: PLC0415

    relay, provider = request.getfixturevalue("traceloop_relay")
    relay.point_at(capture)
    return Traceloop(), {"tracer_provider": provider}


@pytest.fixture(params=list(TURN_SPANS))
def bridge(request: pytest.FixtureRequest, capture: Capture, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    instr, settings = instrumentor(request.param, capture, request)
    agents.set_trace_processors([])  # no exporter to OpenAI's backend (Traceloop keeps it otherwise)
    instr.instrument(**settings)
    try:
        yield request.param
    finally:
        instr.uninstrument()
        agents.set_trace_processors([])


def run(kit: Kit, model: Scripted, ran: list[str], *, healthy: bool) -> Any:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"{len(ran)}0% cloud" if healthy else "sunny"

    agent = Agent(name="weather_agent", instructions="-", model=model, tools=[get_weather])
    config = RunConfig(workflow_name="demo workflow", group_id="conv-1",
                       call_model_input_filter=ToolchainInputFilter(kit.chain))
    return asyncio.run(Runner.run(agent, "weather in Paris?", run_config=config, max_turns=100))


def test_wedged_agent_is_stopped_at_exactly_the_limit(bridge: str, capture: Capture) -> None:
    kit, model, ran = make_kit(capture, limit=5), Scripted(50), []
    with pytest.raises(TurnStopped) as stopped:
        run(kit, model, ran, healthy=False)
    signal = stopped.value.signal
    assert (signal.plugin, signal.repeats, signal.at_call, len(ran), len(model.inputs)) == ("repeat_guard", 5, 5, 5, 5)
    (where, _), = stop_events(capture)
    assert where == TURN_SPANS[bridge]
    assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 5
    assert [(c["tool"], c["arguments"], c["result"]) for c in kit.seen.calls] == [
        ("get_weather", {"city": "Paris"}, "sunny")] * 5
    assert [(s["calls"], s["classes"]) for s in kit.stats] == [(5, {"network": 5})]


def test_healthy_agent_runs_to_the_end(bridge: str, capture: Capture) -> None:
    kit, ran = make_kit(capture, limit=5), []
    assert run(kit, Scripted(8), ran, healthy=True).final_output == "done"
    assert kit.stops == [] and [c["result"] for c in kit.seen.calls] == [f"{i}0% cloud" for i in range(1, 9)]
    assert [(s["calls"], s["classes"]) for s in kit.stats] == [(8, {"network": 8})]


@pytest.mark.parametrize("bridge", ["openinference"], indirect=True)
def test_nudge_is_an_input_item_after_the_outputs(bridge: str, capture: Capture) -> None:
    kit, model = make_kit(capture, limit=5, nudge_at=3), Scripted(50)
    with pytest.raises(TurnStopped):
        run(kit, model, [], healthy=False)
    fourth = model.inputs[3]
    assert [item.get("type") for item in fourth[-2:]] == ["function_call_output", None]
    assert fourth[-2]["output"] == "sunny"
    assert fourth[-1]["role"] == "user" and fourth[-1]["content"].startswith(NOTE_PREFIX)
    assert not any(NOTE_PREFIX in str(item) for item in model.inputs[2])
