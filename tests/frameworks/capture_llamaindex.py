"""LlamaIndex FunctionAgent offline against the scripted OpenAI server: its spans under each family.

Families:
- ``native``: LlamaIndex's own OTel bridge (``llama-index-observability-otel``'s
  ``LlamaIndexOpenTelemetry``: the instrumentation dispatcher's spans as OTel spans);
- ``openinference``: ``openinference-instrumentation-llama-index``;
- ``traceloop``: OpenLLMetry's ``opentelemetry-instrumentation-llamaindex``;
- ``genai``: the official ``opentelemetry-instrumentation-genai-llama-index`` (util-genai), with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``.

Run ``python tests/frameworks/capture_llamaindex.py`` in the venv that holds the frameworks.
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

from fake_openai import FakeOpenAI
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from spancap import Recorder, Weather, calls_for, main, versions

FAMILIES = ("native", "openinference", "traceloop", "genai")
PACKAGES = ("llama-index-core", "llama-index-llms-openai", "llama-index-workflows", "llama-index-observability-otel",
            "openinference-instrumentation-llama-index", "opentelemetry-instrumentation-llamaindex",
            "opentelemetry-instrumentation-genai-llama-index", "opentelemetry-util-genai", "openai",
            "opentelemetry-sdk")
CONTENT_ENV = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRACELOOP_TRACE_CONTENT")


def setup(family: str) -> Iterable[SpanProcessor]:
    if family == "genai":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    return []


def instrument(family: str, recorder: Recorder) -> None:
    provider = recorder.provider
    if family == "native":
        from llama_index.observability.otel import LlamaIndexOpenTelemetry

        # It adds its own exporter to the provider; the recorder's exporter is the one read.
        LlamaIndexOpenTelemetry(tracer_provider=provider, span_exporter=InMemorySpanExporter(),
                                span_processor="simple").start_registering()
    elif family == "openinference":
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    elif family == "traceloop":
        from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor as TraceloopInstrumentor

        TraceloopInstrumentor().instrument(tracer_provider=provider)
    else:
        from opentelemetry.instrumentation.genai.llama_index import LlamaIndexInstrumentor as GenAIInstrumentor

        GenAIInstrumentor().instrument(tracer_provider=provider)


def make_agent(server: FakeOpenAI, weather: Weather, **agent_kwargs: Any) -> Any:
    """A FunctionAgent on the fake server with one tool, ``get_weather`` (``agent_kwargs``: e.g. ``streaming``)."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    llm = OpenAI(model="gpt-4o-mini", api_base=server.base_url, api_key="sk-fake", max_retries=0)
    return FunctionAgent(name="weather_agent", description="tells the weather", llm=llm,
                         tools=[FunctionTool.from_defaults(get_weather)], system_prompt="You tell the weather.",
                         **agent_kwargs)


def run(family: str, scenario: str, recorder: Recorder) -> dict[str, Any]:
    instrument(family, recorder)
    calls = calls_for(scenario)
    weather = Weather.of(scenario)
    with FakeOpenAI(calls=calls) as server:
        agent = make_agent(server, weather)

        async def go() -> Any:
            return await agent.run(user_msg="What is the weather in Paris?", max_iterations=100)

        result = asyncio.run(go())
        requests = len(server.requests)
    return {"versions": versions(PACKAGES), "settings": {k: os.environ[k] for k in CONTENT_ENV if k in os.environ},
            "tool_calls": weather.calls, "model_requests": requests, "outcome": f"response={str(result)!r}"}


if __name__ == "__main__":
    main("llamaindex", FAMILIES, run, setup=setup)
