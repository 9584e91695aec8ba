"""LangChain create_agent (LangGraph), under each LangChain instrumentation, driven offline by a fake model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("openinference.instrumentation.langchain")
pytest.importorskip("opentelemetry.instrumentation.genai.langchain")

from chainkit import Kit, Relay, make_kit, stop_events, tool_spans
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from openinference.instrumentation.langchain import LangChainInstrumentor as OpenInference
from opentelemetry import context as otel_context
from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor as Official
from opentelemetry.sdk.trace import TracerProvider

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import NOTE_PREFIX
from otel_toolchain.integrations.langchain import ToolchainMiddleware
from otel_toolchain.testing import Capture

pytestmark = pytest.mark.integration

TURN_SPANS = {"openinference": "weather_agent", "official": "invoke_agent weather_agent",
              "traceloop": "invoke_agent weather_agent"}


def instrumentor(name: str) -> Any:
    if name == "openinference":
        return OpenInference()
    if name == "official":
        return Official()
    return pytest.importorskip("opentelemetry.instrumentation.langchain").LangchainInstrumentor()


@pytest.fixture(scope="module", params=list(TURN_SPANS))
def instrumentation(request: pytest.FixtureRequest) -> Iterator[tuple[str, Relay]]:
    """One instrumentation at a time, on a relay provider, so tests run grouped by instrumentation.

    Traceloop's handler outlives ``uninstrument()`` (it keeps its first provider and keeps attaching
    its span contexts), so it comes last and each test points the relay at its own provider.
    """
    relay, provider = Relay(), TracerProvider()
    provider.add_span_processor(relay)
    instr = instrumentor(request.param)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
        instr.instrument(tracer_provider=provider)
        yield request.param, relay
    instr.uninstrument()


@pytest.fixture
def instrumented(instrumentation: tuple[str, Relay], capture: Capture) -> Iterator[str]:
    name, relay = instrumentation
    relay.point_at(capture)
    before = otel_context.get_current()
    try:
        yield name
    finally:
        relay.point_at(None)
        otel_context.attach(before)  # Traceloop leaves its workflow span's context attached when a run raises


class FakeModel(GenericFakeChatModel):
    """Asks for get_weather ``calls`` times, then answers; remembers what it was sent."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 (pydantic field; replaced per instance)

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model(calls: int) -> FakeModel:
    script = [AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": f"call_{i}",
                                                  "type": "tool_call"}]) for i in range(calls)]
    return FakeModel(messages=iter([*script, AIMessage(content="done")]), seen=[])


def agent_for(kit: Kit, fake: FakeModel, ran: list[str], *, healthy: bool) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"{len(ran)}0% cloud" if healthy else "sunny"

    return create_agent(fake, [get_weather], name="weather_agent", middleware=[ToolchainMiddleware(kit.chain)])


def test_wedged_agent_is_stopped_at_exactly_the_limit(instrumented: str, capture: Capture) -> None:
    kit, ran = make_kit(capture, limit=5), []
    agent = agent_for(kit, model(50), ran, healthy=False)
    with pytest.raises(TurnStopped) as stopped:
        agent.invoke({"messages": [("user", "weather in Paris?")]}, config={"configurable": {"thread_id": "t-1"}})
    signal = stopped.value.signal
    assert (signal.plugin, signal.period, signal.repeats, signal.at_call, len(ran)) == ("repeat_guard", 1, 5, 5, 5)
    (where, _), = stop_events(capture)
    assert where == TURN_SPANS[instrumented]
    assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 5
    assert [(c["tool"], c["arguments"], c["result"]) for c in kit.seen.calls] == [
        ("get_weather", "Paris" if instrumented == "openinference" else {"city": "Paris"}, "sunny")] * 5
    assert [(s["calls"], s["classes"], s["tools"]["get_weather"]["calls"]) for s in kit.stats] == [
        (5, {"network": 5}, 5)]


def test_healthy_agent_runs_to_the_end(instrumented: str, capture: Capture) -> None:
    kit, ran = make_kit(capture, limit=5), []
    out = agent_for(kit, model(8), ran, healthy=True).invoke({"messages": [("user", "weather?")]})
    assert out["messages"][-1].content == "done" and kit.stops == [] and len(ran) == 8
    assert [c["result"] for c in kit.seen.calls] == [f"{i}0% cloud" for i in range(1, 9)]
    assert [(s["calls"], s["classes"]) for s in kit.stats] == [(8, {"network": 8})]


@pytest.mark.parametrize("instrumentation", ["openinference"], indirect=True)
def test_nudge_is_a_block_beside_the_tool_result(instrumented: str, capture: Capture) -> None:
    kit, ran = make_kit(capture, limit=5, nudge_at=3), []
    fake = model(50)
    with pytest.raises(TurnStopped):
        agent_for(kit, fake, ran, healthy=False).invoke({"messages": [("user", "weather?")]})
    tool_messages = [m for m in fake.seen[-1] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages[:2]] == ["sunny", "sunny"]
    third = tool_messages[2].content
    assert isinstance(third, list) and third[0] == {"type": "text", "text": "sunny"}
    assert third[1]["text"].startswith(NOTE_PREFIX) and "get_weather" in third[1]["text"]
    assert [m.content for m in tool_messages[3:]] == ["sunny"]
