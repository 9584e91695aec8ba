"""Google ADK offline with a scripted in-process model: its spans under each instrumentation family.

ADK speaks to Gemini through google-genai, not to an OpenAI-compatible server, so the model is
ADK's own extension point: a ``BaseLlm`` subclass (:class:`ScriptedLlm`) that follows the same
script as ``fake_openai`` (``get_weather`` until the request holds ``calls`` function responses,
then ``done``).

Families:
- ``native``: ADK's own spans, as shipped (schema 2: ``gen_ai.*`` names, content off unless asked);
- ``native-content``: the same with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``;
- ``native-legacy``: schema 1 (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``, the spans of ADK 1.x:
  content as ``gcp.vertex.agent.tool_call_args``/``tool_response``, on by default through
  ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS``);
- ``openinference``: ``openinference-instrumentation-google-adk``.

Needs the ADK venv (google-adk pins opentelemetry <= 1.44). Run
``python tests/frameworks/capture_adk.py``.
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor
from spancap import Recorder, Weather, calls_for, main, versions

FAMILIES = ("native", "native-content", "native-legacy", "openinference")
PACKAGES = ("google-adk", "google-genai", "openinference-instrumentation-google-adk", "opentelemetry-sdk")
CONTENT_ENV = ("OTEL_SEMCONV_STABILITY_OPT_IN", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
               "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN")


def setup(family: str) -> Iterable[SpanProcessor]:
    if family == "native-content":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    if family == "native-legacy":
        os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
    os.environ.setdefault("GOOGLE_API_KEY", "fake")  # never used: the model is in-process
    return []


def scripted_llm(calls: int) -> Any:
    """A BaseLlm that asks for get_weather until ``calls`` function responses came back, then says done."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        script_calls: int = calls
        requests: int = 0

        async def generate_content_async(self, llm_request: Any, stream: bool = False
                                         ) -> AsyncGenerator[LlmResponse, None]:
            self.requests += 1
            done = sum(1 for content in llm_request.contents for part in (content.parts or [])
                       if part.function_response is not None)
            if done >= self.script_calls:
                part = types.Part(text="done")
            else:
                part = types.Part(function_call=types.FunctionCall(id=f"call_{done + 1}", name="get_weather",
                                                                   args={"city": "Paris"}))
            yield LlmResponse(content=types.Content(role="model", parts=[part]),
                              usage_metadata=types.GenerateContentResponseUsageMetadata(
                                  prompt_token_count=10, candidates_token_count=5, total_token_count=15))

    return ScriptedLlm(model="scripted-model")


def make_runner(model: Any, weather: Weather, **agent_kwargs: Any) -> Any:
    """An InMemoryRunner for an LlmAgent with one tool, ``get_weather``."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner

    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return weather(city)

    agent = LlmAgent(name="weather_agent", model=model, instruction="You tell the weather.", tools=[get_weather],
                     **agent_kwargs)
    return InMemoryRunner(agent=agent, app_name="weather_app")


async def run_once(runner: Any, **run_kwargs: Any) -> str:
    """One run to its end; the text of the last event with text."""
    from google.genai import types

    session = await runner.session_service.create_session(app_name="weather_app", user_id="u1")
    text = ""
    message = types.Content(role="user", parts=[types.Part(text="What is the weather in Paris?")])
    async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message, **run_kwargs):
        for part in (event.content.parts or []) if event.content else []:
            if part.text:
                text = part.text
    return text


def instrument(family: str, recorder: Recorder) -> None:
    """OpenInference's instrumentor on the recorder's provider; the native families need none."""
    if family == "openinference":
        from openinference.instrumentation.google_adk import GoogleADKInstrumentor

        GoogleADKInstrumentor().instrument(tracer_provider=recorder.provider)


def run(family: str, scenario: str, recorder: Recorder) -> dict[str, Any]:
    instrument(family, recorder)
    from google.adk.agents.run_config import RunConfig

    calls = calls_for(scenario)
    weather = Weather.of(scenario)
    model = scripted_llm(calls)
    runner = make_runner(model, weather)
    try:
        outcome = f"final text={asyncio.run(run_once(runner, run_config=RunConfig(max_llm_calls=500)))!r}"
    except Exception as exc:  # ADK ends the run on a failing tool: the outcome is what is kept
        outcome = f"raised {type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    return {"versions": versions(PACKAGES), "settings": {k: os.environ[k] for k in CONTENT_ENV if k in os.environ},
            "tool_calls": weather.calls, "model_requests": model.requests, "outcome": outcome}


if __name__ == "__main__":
    main("adk", FAMILIES, run, setup=setup)
