"""Agno Agent offline against the scripted OpenAI server: its spans under each instrumentation family.

Families:
- ``openinference``: ``openinference-instrumentation-agno`` (Agno's own ``agno.tracing.setup_tracing``
  is this same instrumentor writing to a database, so there is no separate native family);
- ``traceloop``: OpenLLMetry's ``opentelemetry-instrumentation-agno``;
- ``genai``: the official ``opentelemetry-instrumentation-genai-agno`` (util-genai), with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``.

Run ``python tests/frameworks/capture_agno.py`` in the venv that holds the frameworks.
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from fake_openai import FakeOpenAI
from opentelemetry.sdk.trace import SpanProcessor
from spancap import Recorder, Weather, calls_for, main, versions

FAMILIES = ("openinference", "traceloop", "genai")
PACKAGES = ("agno", "openinference-instrumentation-agno", "opentelemetry-instrumentation-agno",
            "opentelemetry-instrumentation-genai-agno", "opentelemetry-util-genai", "openai", "opentelemetry-sdk")
CONTENT_ENV = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRACELOOP_TRACE_CONTENT")


def setup(family: str) -> Iterable[SpanProcessor]:
    if family == "genai":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ.setdefault("AGNO_TELEMETRY", "false")  # Agno's usage ping to its servers
    return []


def instrument(family: str, recorder: Recorder) -> None:
    if family == "openinference":
        from openinference.instrumentation.agno import AgnoInstrumentor

        AgnoInstrumentor().instrument(tracer_provider=recorder.provider)
    elif family == "traceloop":
        from opentelemetry.instrumentation.agno import AgnoInstrumentor as TraceloopInstrumentor

        TraceloopInstrumentor().instrument(tracer_provider=recorder.provider)
    else:
        from opentelemetry.instrumentation.genai.agno import AgnoInstrumentor as GenAIInstrumentor

        GenAIInstrumentor().instrument(tracer_provider=recorder.provider)


def make_agent(server: FakeOpenAI, weather: Weather, **kwargs: Any) -> Any:
    """An Agno Agent on the fake server with one tool, ``get_weather``."""
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return weather(city)

    model = OpenAIChat(id="gpt-4o-mini", base_url=server.base_url, api_key="sk-fake", max_retries=0)
    return Agent(name="weather_agent", model=model, tools=[get_weather], telemetry=False, **kwargs)


def run(family: str, scenario: str, recorder: Recorder) -> dict[str, Any]:
    instrument(family, recorder)
    calls = calls_for(scenario)
    weather = Weather.of(scenario)
    with FakeOpenAI(calls=calls) as server:
        agent = make_agent(server, weather)
        result = agent.run("What is the weather in Paris?")
        requests = len(server.requests)
    return {"versions": versions(PACKAGES), "settings": {k: os.environ[k] for k in CONTENT_ENV if k in os.environ},
            "tool_calls": weather.calls, "model_requests": requests,
            "outcome": f"status={getattr(result.status, 'value', result.status)}; content={result.content!r}"}


if __name__ == "__main__":
    main("agno", FAMILIES, run, setup=setup)
