"""The generic guard: any Python agent gets the typed stop at its next tool call, and its nudges once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from chainkit import Kit, make_kit
from opentelemetry import trace

from otel_toolchain.errors import ToolchainError, TurnStopped
from otel_toolchain.integrations import _autoattach
from otel_toolchain.integrations.guard import Guard
from otel_toolchain.testing import Capture

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "poll", "gen_ai.tool.call.result": "same"}


@contextmanager
def agent_turn(capture: Capture) -> Iterator[trace.Tracer]:
    tracer = capture.tracer_provider.get_tracer("my-agent")
    with tracer.start_as_current_span("invoke_agent mine", attributes={"gen_ai.operation.name": "invoke_agent"}):
        yield tracer


def call_tool(tracer: trace.Tracer, fn: Callable[[], str]) -> str:
    """How a homemade agent runs a tool: the function inside its execute_tool span."""
    with tracer.start_as_current_span("execute_tool poll", attributes=TOOL) as span:
        result = fn()
        span.set_attribute("gen_ai.tool.call.result", result)
        return result


@pytest.fixture
def kit(capture: Capture) -> Kit:
    return make_kit(capture, limit=3, nudge_at=2)


class TestCheck:
    def test_the_next_tool_call_of_a_stopped_turn_raises(self, kit: Kit, capture: Capture) -> None:
        guard, ran = Guard.of(kit.chain), []

        @guard.tool
        def poll() -> str:
            ran.append("poll")
            return "same"

        with agent_turn(capture) as tracer, pytest.raises(TurnStopped) as stopped:
            for _ in range(10):
                call_tool(tracer, poll)
        assert len(ran) == 3 and stopped.value.signal is kit.stops[0] and kit.stops[0].at_call == 3
        assert stopped.value.signal.to_dict()["span_id"] == f"{1:016x}"

    def test_async_tools_too(self, kit: Kit, capture: Capture) -> None:
        guard = Guard.of(kit.chain)

        @guard.tool
        async def poll() -> str:
            return "same"

        async def agent() -> None:
            with agent_turn(capture) as tracer:
                for _ in range(10):
                    with tracer.start_as_current_span("execute_tool poll", attributes=TOOL) as span:
                        span.set_attribute("gen_ai.tool.call.result", await poll())

        with pytest.raises(TurnStopped):
            asyncio.run(agent())
        assert [s.at_call for s in kit.stops] == [3]

    def test_another_turn_and_no_span_are_not_stopped(self, kit: Kit, capture: Capture) -> None:
        guard = Guard.of(kit.chain)
        with agent_turn(capture) as tracer:
            for _ in range(3):
                call_tool(tracer, lambda: "same")
            with pytest.raises(TurnStopped):
                guard.check()
        guard.check()  # no current span: nothing to say
        with agent_turn(capture):
            guard.check()
            assert guard.stop_signal() is None


class TestDelivery:
    def test_nudges_are_handed_out_once_wherever_they_were_filed(self, kit: Kit, capture: Capture) -> None:
        guard = Guard.of(kit.chain)
        with guard.watch() as watch, agent_turn(capture) as tracer:
            for _ in range(2):
                call_tool(tracer, lambda: "same")
            assert len(watch.nudges) == 1
            nudges = guard.take_nudges()
            assert [n.repeats for n in nudges] == [2] and guard.take_nudges() == []
        assert guard.take_nudges((nudges[0].trace_id, nudges[0].span_id)) == []

    def test_a_watch_sees_the_stop_without_any_span_context(self, kit: Kit, capture: Capture) -> None:
        """As under OpenInference-LangChain, which attaches no context: the watch finds the stop."""
        guard = Guard.of(kit.chain)
        tracer = capture.tracer_provider.get_tracer("no-context")
        root = tracer.start_span("invoke_agent x", attributes={"gen_ai.operation.name": "invoke_agent"})
        with guard.watch():
            for _ in range(3):
                tracer.start_span("execute_tool poll", context=trace.set_span_in_context(root), attributes=TOOL).end()
            with pytest.raises(TurnStopped):
                guard.check()
        guard.check()
        root.end()

    def test_key_sources_file_signals_under_a_framework_run(self, kit: Kit, capture: Capture) -> None:
        guard, run = Guard.of(kit.chain), {"key": "run-1"}
        guard.add_key_source(lambda: run["key"])
        with agent_turn(capture) as tracer:
            for _ in range(3):
                call_tool(tracer, lambda: "same")
        assert guard.stop_signal("run-1") is kit.stops[0] and guard.stop_signal("run-2") is None
        run["key"] = "run-2"
        guard.check()

    def test_keys_are_bounded(self, capture: Capture) -> None:
        kit = make_kit(capture, limit=1)
        guard = Guard(kit.chain, max_keys=2)
        for _ in range(4):
            with agent_turn(capture) as tracer:
                call_tool(tracer, lambda: "x")
        assert len(guard._boxes) == 2


class TestShared:
    def test_one_guard_per_chain(self, kit: Kit) -> None:
        assert Guard.of(kit.chain) is Guard.of(kit.chain)

    def test_without_a_chain_or_an_attached_one_it_says_so(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_autoattach, "_attached", None)
        with pytest.raises(ToolchainError, match="opentelemetry-instrument"):
            Guard.of()
