"""One framework run with otel_toolchain dropped in, through its integration; prints what happened as JSON.

    python tests/frameworks/guarded.py FRAMEWORK FAMILY SCENARIO     (scenario: wedged | healthy)

FAMILY is one of the framework's ``capture_X.FAMILIES``, or (LlamaIndex) ``traceloop-nonstreaming``:
Traceloop's instrumentation with ``FunctionAgent(streaming=False)``.

Each run is its own process (instrumentors patch globally). The framework is real, its model is
``fake_openai.FakeOpenAI`` on 127.0.0.1 (ADK: its scripted ``BaseLlm``, see capture_adk.py); the
tool is real. The chain (repeat_guard limit 25, classify, tool_stats) sits on the same provider as
the instrumentation, after the family's own processors and before the in-memory exporter, so
what it reads is what an exporter gets. Printed: tool calls made, model requests, how the run
ended at the caller, the chain's stops, tool_stats' report, the exported tool spans' classes and
the instrumentation scopes they came from (so a family that was never instrumented shows), and
the turn span that holds the stop (name, status, error.type).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from fake_openai import FakeOpenAI
from spancap import CALLS, Recorder, Weather, install

from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import TurnStopped
from otel_toolchain.plugins.classify import Classify
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.plugins.tool_stats import ToolStats
from otel_toolchain.signals import StopSignal, TurnReport

LIMIT = 25
PROMPT = "What is the weather in Paris?"


def strands(family: str, chain: Toolchain, server: FakeOpenAI, weather: Weather) -> Any:
    from capture_strands import make_agent

    from otel_toolchain.integrations.strands import ToolchainHooks, run_agent

    agent = make_agent(server, weather, hooks=[ToolchainHooks(chain)])
    return run_agent(agent, PROMPT, toolchain=chain).stop_reason


def llamaindex(family: str, chain: Toolchain, server: FakeOpenAI, weather: Weather) -> Any:
    from capture_llamaindex import make_agent

    from otel_toolchain.integrations.llamaindex import run_agent

    # Traceloop ends the workflow span at the first streamed model response's end (see test_frameworks.py)
    agent = make_agent(server, weather, **({"streaming": False} if family == "traceloop-nonstreaming" else {}))
    return str(asyncio.run(run_agent(agent, PROMPT, toolchain=chain, max_iterations=100)))


def crewai(family: str, chain: Toolchain, server: FakeOpenAI, weather: Weather) -> Any:
    from capture_crewai import make_crew
    from crewai.utilities import agent_utils

    from otel_toolchain.integrations.crewai import install_hooks, kickoff

    agent_utils.MAX_REPEATED_TOOL_CALLS = CALLS + 1  # CrewAI's own guard (5) out of the way: ours is tested
    install_hooks(chain)
    crew = make_crew(server, weather)
    if family == "native":
        import uuid

        from crewai.telemetry.tracing import telemetry_session

        processors = [RECORDER.provider._active_span_processor]  # CrewAI's own provider gets the same chain
        with telemetry_session(str(uuid.uuid4()), "weather_crew", processors=processors):
            return kickoff(crew, toolchain=chain).raw
    return kickoff(crew, toolchain=chain).raw


def agno(family: str, chain: Toolchain, server: FakeOpenAI, weather: Weather) -> Any:
    from capture_agno import make_agent

    from otel_toolchain.integrations.agno import ToolchainToolHook, run_agent

    agent = make_agent(server, weather, tool_hooks=[ToolchainToolHook(chain)])
    return run_agent(agent, PROMPT, toolchain=chain).content


def adk(family: str, chain: Toolchain, server: FakeOpenAI, weather: Weather) -> Any:
    from capture_adk import make_runner, run_once, scripted_llm
    from google.adk.agents.run_config import RunConfig

    from otel_toolchain.integrations.google_adk import before_model_callback

    model = scripted_llm(CALLS)
    runner = make_runner(model, weather, before_model_callback=before_model_callback(chain))
    try:
        return asyncio.run(run_once(runner, run_config=RunConfig(max_llm_calls=500)))
    finally:
        MODEL_REQUESTS.append(model.requests)


RUNS: dict[str, Callable[[str, Toolchain, FakeOpenAI, Weather], Any]] = {
    "strands": strands, "llamaindex": llamaindex, "crewai": crewai, "agno": agno, "adk": adk}
RECORDER: Recorder
MODEL_REQUESTS: list[int] = []  # ADK's scripted model counts its own requests (no server)


def main() -> None:
    global RECORDER  # noqa: PLW0603 (one run per process; CrewAI's native session needs the provider)
    framework, family, scenario = sys.argv[1:4]
    module = __import__(f"capture_{framework}")
    instrumented = family.removesuffix("-nonstreaming")  # the same instrumentation, the agent set otherwise
    processors = list(module.setup(instrumented))
    chain = Toolchain([RepeatGuard(limit=LIMIT), Classify([{"tool": "get_*", "class": "network"}]), ToolStats()])
    stops: list[StopSignal] = []
    reports: list[TurnReport] = []
    chain.on_stop(stops.append)
    chain.on_report(reports.append)
    RECORDER = install(processors=[*processors, chain])
    if hasattr(module, "instrument"):
        module.instrument(instrumented, RECORDER)
    weather = Weather.of(scenario)
    with FakeOpenAI(calls=CALLS) as server:
        try:
            outcome = f"returned {RUNS[framework](family, chain, server, weather)!r}"[:200]
        except TurnStopped as stop:
            outcome = f"TurnStopped at call {stop.signal.at_call}"
        except Exception as exc:  # reported: the test fails on it
            outcome = f"raised {type(exc).__qualname__}: {exc}"[:300]
        requests = MODEL_REQUESTS[0] if MODEL_REQUESTS else len(server.requests)
    print(json.dumps(summary(weather, requests, outcome, stops, reports)))


def summary(weather: Weather, requests: int, outcome: str, stops: list[StopSignal],
            reports: list[TurnReport]) -> dict[str, Any]:
    spans = RECORDER.spans()
    tools = [s for s in spans if s.attributes and "otel_toolchain.tool.class" in s.attributes]
    classes = [(s.attributes or {}).get("otel_toolchain.tool.class") for s in tools]
    scopes = sorted({s.instrumentation_scope.name for s in tools if s.instrumentation_scope is not None})
    turns = [{"name": s.name, "status": s.status.status_code.name,
              "error.type": (s.attributes or {}).get("error.type")}
             for s in spans if any(e.name == "otel_toolchain.turn.stop" for e in s.events)]
    return {"tool_calls": weather.calls, "model_requests": requests, "outcome": outcome,
            "stops": [s.at_call for s in stops],
            "stats": [r.value["calls"] for r in reports if r.plugin == "tool_stats"],
            "classes": classes, "tool_scopes": scopes, "stopped_turns": turns}


if __name__ == "__main__":
    main()
