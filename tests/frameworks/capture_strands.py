"""Strands Agents offline against the scripted OpenAI server: its spans under each instrumentation family.

Families:
- ``native``: Strands' own spans, default conventions (content in span events);
- ``native-latest``: the same with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
  (content also as ``gen_ai.tool.call.arguments``/``.result`` attributes);
- ``openinference``: Strands' spans rewritten by OpenInference's span processor
  (``StrandsAgentsToOpenInferenceProcessor``, added before the exporter).

There is no Traceloop/OpenLLMetry and no official GenAI instrumentation for Strands.

Run ``python tests/frameworks/capture_strands.py`` (every family and scenario) in the venv that
holds the frameworks; fixtures go to ``tests/data/frameworks/``.
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from fake_openai import FakeOpenAI
from opentelemetry.sdk.trace import SpanProcessor
from spancap import Recorder, Weather, calls_for, main, versions

FAMILIES = ("native", "native-latest", "openinference")
PACKAGES = ("strands-agents", "openinference-instrumentation-strands-agents", "openai", "opentelemetry-sdk")


def setup(family: str) -> Iterable[SpanProcessor]:
    if family == "native-latest":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    if family == "openinference":
        from openinference.instrumentation.strands_agents import StrandsAgentsToOpenInferenceProcessor

        return [StrandsAgentsToOpenInferenceProcessor()]
    return []


def make_agent(server: FakeOpenAI, weather: Weather, **kwargs: Any) -> Any:
    """A Strands Agent on the fake server with one tool, ``get_weather``."""
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return weather(city)

    model = OpenAIModel(client_args={"base_url": server.base_url, "api_key": "sk-fake"}, model_id="gpt-4o-mini")
    return Agent(model=model, tools=[get_weather], name="weather_agent", callback_handler=None, **kwargs)


def run(family: str, scenario: str, recorder: Recorder) -> dict[str, Any]:
    calls = calls_for(scenario)
    weather = Weather.of(scenario)
    with FakeOpenAI(calls=calls) as server:
        agent = make_agent(server, weather)
        result = agent("What is the weather in Paris?")
        requests = len(server.requests)
    return {"versions": versions(PACKAGES), "settings": {k: v for k, v in os.environ.items()
                                                      if k.startswith("OTEL_SEMCONV")},
            "tool_calls": weather.calls, "model_requests": requests,
            "outcome": f"stop_reason={result.stop_reason}; text={str(result).strip()!r}"}


if __name__ == "__main__":
    main("strands", FAMILIES, run, setup=setup)
