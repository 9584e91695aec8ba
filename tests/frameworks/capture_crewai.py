"""CrewAI (one agent, one task) offline against the scripted OpenAI server: its spans under each family.

Families:
- ``native``: CrewAI's own event-driven GenAI tracing, ``crewai.telemetry.tracing.telemetry_session``
  around the kickoff, with the recorder's processors handed in (``processors=``); it runs on a
  TracerProvider of CrewAI's own, not the global one;
- ``openinference``: ``openinference-instrumentation-crewai`` (its default, wrapper-based mode);
- ``traceloop``: OpenLLMetry's ``opentelemetry-instrumentation-crewai``.

CrewAI's own telemetry to its servers is turned off (``CREWAI_DISABLE_TELEMETRY``) and so is its
hosted tracing prompt (``CREWAI_TRACING_ENABLED=false``). The tool cache is off (the default
since CrewAI opted caching in).

CrewAI itself ends a run whose same call gives the same result ``MAX_REPEATED_TOOL_CALLS`` (5)
times, raising ``ToolExecutionFailedError`` at the caller; there is no setting for it. The
``guarded`` scenario keeps that default (a wedged tool: 5 calls); ``wedged`` raises the module
constant past the run's length so the wedge runs its 40 calls like everywhere else.

Run ``python tests/frameworks/capture_crewai.py`` in the venv that holds the frameworks.
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable
from typing import Any

from fake_openai import FakeOpenAI
from opentelemetry.sdk.trace import SpanProcessor
from spancap import CALLS, Recorder, Weather, calls_for, main, versions

FAMILIES = ("native", "openinference", "traceloop")
PACKAGES = ("crewai", "crewai-core", "openinference-instrumentation-crewai", "opentelemetry-instrumentation-crewai",
            "openai", "opentelemetry-sdk")
QUIET = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false", "OPENAI_API_KEY": "sk-fake",
         "CREWAI_DISABLE_TRACKING": "true"}


def setup(family: str) -> Iterable[SpanProcessor]:
    os.environ.update(QUIET)
    logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)  # "approximate token count", per call
    return []


def instrument(family: str, recorder: Recorder) -> None:
    if family == "openinference":
        from openinference.instrumentation.crewai import CrewAIInstrumentor

        CrewAIInstrumentor().instrument(tracer_provider=recorder.provider)
    elif family == "traceloop":
        from opentelemetry.instrumentation.crewai import CrewAIInstrumentor as TraceloopInstrumentor

        TraceloopInstrumentor().instrument(tracer_provider=recorder.provider)


def make_crew(server: FakeOpenAI, weather: Weather, **agent_kwargs: Any) -> Any:
    """A crew of one agent with one tool, ``get_weather``, and one task."""
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    llm = LLM(model="openai/gpt-4o-mini", base_url=server.base_url, api_key="sk-fake", max_retries=0)
    agent = Agent(role="weather reporter", goal="tell the weather", backstory="You read the weather.",
                  tools=[get_weather], llm=llm, max_iter=100, verbose=False, **agent_kwargs)
    task = Task(description="What is the weather in Paris?", expected_output="the weather", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


def run(family: str, scenario: str, recorder: Recorder) -> dict[str, Any]:
    instrument(family, recorder)
    calls = calls_for(scenario)
    weather = Weather.of("wedged" if scenario == "guarded" else scenario)
    if scenario == "wedged":
        from crewai.utilities import agent_utils

        agent_utils.MAX_REPEATED_TOOL_CALLS = CALLS + 1  # read at each call: CrewAI's own guard out of the way
    with FakeOpenAI(calls=calls) as server:
        crew = make_crew(server, weather)
        try:
            if family == "native":
                from crewai.telemetry.tracing import telemetry_session

                processor = recorder.provider._active_span_processor  # the recorder's chain, as one processor
                with telemetry_session(str(uuid.uuid4()), "weather_crew", processors=[processor]):
                    result = crew.kickoff()
            else:
                result = crew.kickoff()
            outcome = f"raw={str(result.raw)!r}"
        except Exception as exc:
            outcome = f"raised {type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        requests = len(server.requests)
    return {"versions": versions(PACKAGES), "settings": QUIET, "tool_calls": weather.calls,
            "model_requests": requests, "outcome": outcome}


if __name__ == "__main__":
    main("crewai", FAMILIES, run, setup=setup, extra=("guarded",))
