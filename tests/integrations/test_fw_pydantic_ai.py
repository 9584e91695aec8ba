"""pydantic-ai, natively instrumented, driven offline by a FunctionModel: stopped, nudged, counted.

``asyncio.run(agent.run(...))`` rather than ``run_sync``: run_sync leaves a thread event loop open for good.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from chainkit import Kit, make_kit, stop_events, tool_spans
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import NOTE_PREFIX
from otel_toolchain.integrations.pydantic_ai import ToolchainCapability
from otel_toolchain.testing import Capture

pytestmark = pytest.mark.integration


class Scripted:
    """A model that asks for get_weather ``calls`` times, then answers; it records what it was sent."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        step = len(self.requests)
        if step <= self.calls:
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id=f"call_{step}")])
        return ModelResponse(parts=[TextPart("done")])


def build(capture: Capture, kit: Kit, model: Scripted, results: list[str], *,
          healthy: bool = False) -> Agent[None, str]:
    """The agent with the chain's capability; its tool's result changes each call only when ``healthy``."""
    agent = Agent(FunctionModel(model), name="weather_agent", capabilities=[ToolchainCapability(kit.chain)])
    agent.instrument = InstrumentationSettings(tracer_provider=capture.tracer_provider)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        results.append(city)
        return f"{len(results)}0% cloud" if healthy else "sunny"

    return agent


def test_wedged_agent_is_stopped_at_exactly_the_limit(capture: Capture) -> None:
    kit = make_kit(capture, limit=5)
    model, ran = Scripted(calls=50), []
    agent = build(capture, kit, model, ran)
    with pytest.raises(TurnStopped) as stopped:
        asyncio.run(agent.run("weather in Paris?"))
    signal = stopped.value.signal
    assert (signal.plugin, signal.period, signal.repeats, signal.at_call) == ("repeat_guard", 1, 5, 5)
    assert len(ran) == 5 and len(model.requests) == 5  # no model request, no tool call after the stop
    (where, event), = stop_events(capture)
    assert where == "invoke_agent weather_agent" and event["otel_toolchain.stop.cycle.call_ids"] == ("call_5",)
    turn = next(s for s in capture.finished_spans() if s["name"] == where)
    assert (turn["status"], turn["attributes"]["error.type"]) == ("ERROR", "tool_plugin.repeat_guard")
    assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 5
    assert kit.stats == [{"calls": 5, "retries": 0, "longest_fail_streak": 0, "classes": {"network": 5},
                          "tools": {"get_weather": {"calls": 5, "failed": 0, "ms": kit.stats[0]["tools"][
                              "get_weather"]["ms"]}}}]


def test_healthy_agent_runs_to_the_end(capture: Capture) -> None:
    kit = make_kit(capture, limit=5)
    model, ran = Scripted(calls=8), []
    assert asyncio.run(build(capture, kit, model, ran, healthy=True).run("weather in Paris?")).output == "done"
    assert kit.stops == [] and len(ran) == 8
    assert [c["result"] for c in kit.seen.calls] == [f"{i}0% cloud" for i in range(1, 9)]
    assert kit.stats[0]["calls"] == 8 and kit.stats[0]["classes"] == {"network": 8}


def test_nudge_reaches_the_model_beside_the_tool_return(capture: Capture) -> None:
    kit = make_kit(capture, limit=5, nudge_at=3)
    model, ran = Scripted(calls=50), []
    with pytest.raises(TurnStopped):
        asyncio.run(build(capture, kit, model, ran).run("weather in Paris?"))
    after_third = model.requests[3][-1]
    assert isinstance(after_third, ModelRequest)
    kinds: list[tuple[str, Any]] = [(type(p).__name__, p.content) for p in after_third.parts]
    assert kinds[0] == ("ToolReturnPart", "sunny")
    assert kinds[1][0] == "UserPromptPart" and kinds[1][1].startswith(NOTE_PREFIX)
    assert "get_weather" in kinds[1][1] and "Paris" not in kinds[1][1]
    earlier = [p for m in model.requests[2] for p in getattr(m, "parts", ()) if not isinstance(p, ToolReturnPart)]
    assert not any(NOTE_PREFIX in str(getattr(p, "content", "")) for p in earlier)
    assert len(kit.nudges) == 1


def test_fallback_model_attempts_reach_the_retry_hook(capture: Capture) -> None:
    """Each request fails on the primary model first: pydantic-ai's attempt span is a provider retry."""
    def overloaded(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(status_code=529, model_name="primary", body="overloaded")

    kit, model, ran = make_kit(capture, limit=5), Scripted(calls=3), []
    agent = build(capture, kit, model, ran, healthy=True)
    fallback = FallbackModel(FunctionModel(overloaded, model_name="primary"), FunctionModel(model, model_name="backup"))
    assert asyncio.run(agent.run("weather?", model=fallback)).output == "done"
    assert [(s["calls"], s["retries"]) for s in kit.stats] == [(3, 4)]
