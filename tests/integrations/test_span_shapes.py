"""Recognition, fast and without the frameworks: synthetic spans shaped exactly like each instrumentation's.

Each emitter builds one agent run the way the reference matrix says its instrumentation does:
which attributes are passed to ``start_span`` (S), set right after start (A, Traceloop), or set
just before ``end()`` (L), and how failure and call ids show. Every shape must give the same calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chainkit import Kit, make_kit, stop_events, tool_spans
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from otel_toolchain.testing import Capture

Call = tuple[dict[str, Any], str, bool]  # arguments, result, failed
OP = "gen_ai.operation.name"


@contextmanager
def span(tracer: trace.Tracer, name: str, start: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
         late: dict[str, Any] | None = None, error: str | None = None) -> Iterator[trace.Span]:
    """A span with attributes at start, right after start, and just before end; ``error`` fails it."""
    live = tracer.start_span(name, attributes=start)
    if after:
        live.set_attributes(after)
    with trace.use_span(live, end_on_exit=False):
        yield live
    if late:
        live.set_attributes(late)
    if error is not None:
        live.add_event("exception", {"exception.type": error, "exception.message": "boom"})
        live.set_status(Status(StatusCode.ERROR, "boom"))
    live.end()


def tool_message(content: str, call_id: str, *, traceloop: bool) -> str:
    data = {"content": content, "type": "tool", "name": "get_weather", "id": None, "tool_call_id": call_id,
            "status": "success"}
    if traceloop:
        return json.dumps({"output": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
                                                                                "ToolMessage"], "kwargs": data}})
    return json.dumps({"type": "tool", "data": data})


def pydantic_ai(t: trace.Tracer, calls: list[Call]) -> None:
    with span(t, "invoke_agent weather_agent", {OP: "invoke_agent", "gen_ai.agent.name": "weather_agent"}):
        for i, (args, result, failed) in enumerate(calls):
            with span(t, "chat fn", {OP: "chat"}):
                pass
            with span(t, "execute_tool get_weather", {OP: "execute_tool", "gen_ai.tool.name": "get_weather",
                      "gen_ai.tool.call.id": f"call_{i}", "gen_ai.tool.call.arguments": json.dumps(args)},
                      late=None if failed else {"gen_ai.tool.call.result": result},
                      error="RuntimeError" if failed else None):
                pass


def util_genai_langchain(t: trace.Tracer, calls: list[Call]) -> None:
    with span(t, "invoke_agent weather_agent", {OP: "invoke_agent", "gen_ai.agent.name": "weather_agent"},
              late={"gen_ai.conversation.id": "t-1"}):
        for i, (args, result, failed) in enumerate(calls):
            late: dict[str, Any] = {"gen_ai.tool.call.id": f"call_{i}", "gen_ai.tool.call.arguments": json.dumps(args)}
            late.update({"error.type": "ValueError"} if failed else {"gen_ai.tool.call.result": result})
            with span(t, "execute_tool get_weather", {OP: "execute_tool", "gen_ai.tool.name": "get_weather",
                      "gen_ai.tool.type": "function"}, late=late) as live:
                if failed:
                    live.set_status(Status(StatusCode.ERROR, "boom"))


def util_genai_openai_agents(t: trace.Tracer, calls: list[Call]) -> None:
    with span(t, "invoke_workflow demo", {OP: "invoke_workflow", "gen_ai.workflow.name": "demo"}), \
            span(t, "invoke_agent weather_agent", {OP: "invoke_agent", "gen_ai.agent.name": "weather_agent"}):
        for args, result, failed in calls:
            late = {"gen_ai.tool.call.arguments": json.dumps(args)}
            late.update({"error.type": "_OTHER"} if failed else {"gen_ai.tool.call.result": result})
            with span(t, "execute_tool get_weather", {OP: "execute_tool", "gen_ai.tool.name": "get_weather"},
                      late=late) as live:
                if failed:
                    live.set_status(Status(StatusCode.ERROR))


def openinference_langchain(t: trace.Tracer, calls: list[Call]) -> None:
    with span(t, "weather_agent", late={"openinference.span.kind": "AGENT"}):
        for i, (args, result, failed) in enumerate(calls):
            with span(t, "tools", late={"openinference.span.kind": "CHAIN"}):
                late = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": args["city"]}
                if not failed:
                    late["output.value"] = tool_message(result, f"call_{i}", traceloop=False)
                with span(t, "get_weather", late=late, error="ValueError" if failed else None):
                    pass


def openinference_openai_agents(t: trace.Tracer, calls: list[Call]) -> None:
    with span(t, "demo workflow", {"openinference.span.kind": "AGENT"}), \
            span(t, "weather_agent", {"openinference.span.kind": "AGENT"}, late={"agent.name": "weather_agent"}):
        for args, result, failed in calls:
            with span(t, "turn", {"openinference.span.kind": "CHAIN"}), \
                    span(t, "get_weather", {"openinference.span.kind": "TOOL"},
                         late={"tool.name": "get_weather", "input.value": json.dumps(args), "output.value": result},
                         error="Error running tool (non-fatal)" if failed else None):
                pass


def openinference_smolagents(t: trace.Tracer, calls: list[Call]) -> None:
    kind = "openinference.span.kind"
    with span(t, "smol_weather.run", {kind: "AGENT"}):
        for step, (args, result, failed) in enumerate([*calls, ({"answer": "sunny"}, "sunny", False)], start=1):
            tool = "get_weather" if step <= len(calls) else "final_answer"
            wrapped = json.dumps({"args": [], "sanitize_inputs_outputs": True, "kwargs": args})
            with span(t, f"Step {step}", {kind: "CHAIN"}), \
                    span(t, "SimpleTool", {kind: "TOOL", "tool.name": tool, "input.value": wrapped},
                         late=None if failed else {"output.value": result}, error="ValueError" if failed else None):
                pass


def traceloop_langchain(t: trace.Tracer, calls: list[Call]) -> None:
    kind = "traceloop.span.kind"
    with span(t, "invoke_agent weather_agent", after={OP: "invoke_agent", "gen_ai.agent.name": "weather_agent"}), \
            span(t, "weather_agent.workflow", after={kind: "workflow", OP: "invoke_agent"}):
        for i, (args, result, failed) in enumerate(calls):
            wrapper = json.dumps({"input_str": repr(args), "tags": ["seq:step:1"],
                                  "metadata": {"langgraph_step": 2 * i + 2, "checkpoint_ns": f"tools:{i}"}})
            late: dict[str, Any] = {"gen_ai.task.status": "failure" if failed else "success"}
            late.update({"error.type": "ValueError"} if failed else {
                "gen_ai.tool.call.result": tool_message(result, f"call_{i}", traceloop=True)})
            with span(t, "execute_task tools", after={kind: "task", OP: "execute_task"}), \
                    span(t, "execute_tool get_weather", after={kind: "tool", OP: "execute_tool",
                         "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.arguments": wrapper}, late=late) as live:
                if failed:
                    live.set_status(Status(StatusCode.ERROR))


def traceloop_openai_agents(t: trace.Tracer, calls: list[Call]) -> None:
    kind = "traceloop.span.kind"
    with span(t, "Agent Workflow", {kind: "workflow"}), \
            span(t, "weather_agent.agent", {kind: "agent", OP: "invoke_agent", "gen_ai.agent.name": "weather_agent"}):
        for args, result, failed in calls:
            with span(t, "get_weather.tool", {kind: "tool", "gen_ai.tool.name": "get_weather", OP: "execute_tool"},
                      late={"gen_ai.tool.call.arguments": json.dumps(args), "gen_ai.tool.call.result": result},
                      error="ValueError" if failed else None):
                pass


SHAPES: dict[str, Callable[[trace.Tracer, list[Call]], None]] = {
    "pydantic-ai": pydantic_ai, "util-genai-langchain": util_genai_langchain,
    "util-genai-openai-agents": util_genai_openai_agents, "openinference-langchain": openinference_langchain,
    "openinference-openai-agents": openinference_openai_agents, "openinference-smolagents": openinference_smolagents,
    "traceloop-langchain": traceloop_langchain, "traceloop-openai-agents": traceloop_openai_agents,
}
TURNS = {"pydantic-ai": "invoke_agent weather_agent", "util-genai-langchain": "invoke_agent weather_agent",
         "util-genai-openai-agents": "invoke_workflow demo", "openinference-langchain": "weather_agent",
         "openinference-openai-agents": "demo workflow", "openinference-smolagents": "smol_weather.run",
         "traceloop-langchain": "invoke_agent weather_agent", "traceloop-openai-agents": "Agent Workflow"}
ERRORS = {"pydantic-ai": "RuntimeError", "util-genai-openai-agents": "_OTHER",
          "openinference-openai-agents": "Error running tool (non-fatal)"}
CALL_IDS = {"pydantic-ai", "util-genai-langchain"}  # a call id even on the failed call
CALL_IDS_FROM_RESULT = {"openinference-langchain", "traceloop-langchain"}  # inside the ToolMessage result
# OpenInference-LangChain records a one-argument tool's input raw
ARGUMENTS: dict[str, Any] = {"openinference-langchain": "Paris"}
RESULT_ON_FAILURE = {"openinference-openai-agents", "traceloop-openai-agents"}  # the SDK's error text is the output


def run(shape: str, calls: list[Call], capture: Capture, **kit: Any) -> Kit:
    made = make_kit(capture, **kit)
    SHAPES[shape](capture.tracer_provider.get_tracer(shape), calls)
    return made


@pytest.mark.parametrize("shape", SHAPES)
class TestEveryShape:
    def test_calls_read_alike_and_classified(self, shape: str, capture: Capture) -> None:
        calls = [({"city": "Paris"}, f"sunny {i}", False) for i in range(3)] + [({"city": "Paris"}, "", True)]
        kit = run(shape, calls, capture)
        turn_ids = {s["name"]: s["span_id"] for s in capture.finished_spans()}
        with_id = CALL_IDS | CALL_IDS_FROM_RESULT
        assert kit.seen.calls == [{
            "tool": "get_weather", "arguments": ARGUMENTS.get(shape, {"city": "Paris"}),
            "result": None if failed and shape not in RESULT_ON_FAILURE else result, "failed": failed,
            "turn": turn_ids[TURNS[shape]],
            "error_type": ERRORS.get(shape, "ValueError") if failed else None, "class": "network", "index": i + 1,
            "call_id": f"call_{i}" if shape in CALL_IDS or (shape in with_id and not failed) else None,
        } for i, (_, result, failed) in enumerate(calls)]
        assert [s["attributes"]["otel_toolchain.tool.class"] for s in tool_spans(capture)] == ["network"] * 4
        ms = kit.stats[0]["tools"]["get_weather"]["ms"]
        assert kit.stats == [{"calls": 4, "retries": 0, "longest_fail_streak": 1, "classes": {"network": 4},
                              "tools": {"get_weather": {"calls": 4, "failed": 1, "ms": ms}}}]
        assert kit.stops == []

    def test_wedged_run_stops_at_the_limit(self, shape: str, capture: Capture) -> None:
        kit = run(shape, [({"city": "Paris"}, "sunny", False)] * 5, capture)
        assert [(s.plugin, s.period, s.repeats, s.at_call) for s in kit.stops] == [("repeat_guard", 1, 3, 3)]
        (where, event), = stop_events(capture)
        assert event["otel_toolchain.stop.cycle.tools"] == ("get_weather",)
        assert {s["name"]: s["status"] for s in capture.finished_spans()}[where] == "ERROR"

    def test_healthy_run_with_changing_results_is_not_stopped(self, shape: str, capture: Capture) -> None:
        kit = run(shape, [({"city": "Paris"}, f"{i}% done", False) for i in range(6)], capture)
        assert kit.stops == [] and kit.stats[0]["calls"] == 6
