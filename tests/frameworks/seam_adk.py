"""Ending a wedged Google ADK run from outside, through ADK's callbacks (native spans, schema 2).

Seams:
- ``before-model-raise``: ``before_model_callback`` raises ``Stop`` once AT calls ran;
- ``before-model-response``: ``before_model_callback`` returns an ``LlmResponse`` (a final text)
  instead of calling the model once AT calls ran;
- ``before-tool-raise``: ``before_tool_callback`` raises ``Stop`` instead of making call AT+1;
- ``abort-signal``: ``after_tool_callback`` sets the ``abort_signal`` event handed to
  ``Runner.run_async`` once AT calls ran;
- ``tool-raises``: the tool raises ``Stop`` from call AT+1 on (what ``@guard.tool`` does).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import asyncio
from typing import Any

from capture_adk import make_runner, run_once, scripted_llm
from seamkit import AT, Stop, main, outcome, turn_spans
from spancap import CALLS, Recorder, Weather


def _run(recorder: Recorder, weather: Weather, *, run_kwargs: dict[str, Any] | None = None,
         **agent_kwargs: Any) -> dict[str, Any]:
    from google.adk.agents.run_config import RunConfig

    model = scripted_llm(CALLS)
    runner = make_runner(model, weather, **agent_kwargs)
    kwargs = {"run_config": RunConfig(max_llm_calls=500), **(run_kwargs or {})}
    seen = outcome(lambda: f"final text={asyncio.run(run_once(runner, **kwargs))!r}")
    return {"tool_calls": weather.calls, "model_requests": model.requests, **seen,
            "turn": turn_spans(recorder, ("invoke_agent", "invoke_workflow"))}


def before_model(recorder: Recorder, *, raise_it: bool) -> dict[str, Any]:
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    weather = Weather(healthy=False)

    def before(callback_context: Any, llm_request: Any) -> Any:
        if weather.calls < AT:
            return None
        if raise_it:
            raise Stop(f"stopped after {weather.calls} calls")
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="stopped")]))

    return _run(recorder, weather, before_model_callback=before)


def before_tool_raise(recorder: Recorder) -> dict[str, Any]:
    weather = Weather(healthy=False)

    def before(tool: Any, args: dict[str, Any], tool_context: Any) -> Any:
        if weather.calls >= AT:
            raise Stop(f"stopped after {weather.calls} calls")
        return None

    return _run(recorder, weather, before_tool_callback=before)


def abort_signal(recorder: Recorder) -> dict[str, Any]:
    weather = Weather(healthy=False)
    holder: dict[str, asyncio.Event] = {}

    def after(tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> Any:
        if weather.calls >= AT:
            holder["event"].set()
        return None

    class LazyEvent(asyncio.Event):  # made inside the run's event loop (asyncio.run makes a new one)
        def __init__(self) -> None:
            super().__init__()
            holder["event"] = self

    return _run(recorder, weather, run_kwargs={"abort_signal": LazyEvent()}, after_tool_callback=after)


def tool_raises(recorder: Recorder) -> dict[str, Any]:
    class Guarded(Weather):
        def __call__(self, city: str) -> str:
            if self.calls >= AT:
                self.calls += 1
                raise Stop(f"stopped at call {self.calls}")
            return super().__call__(city)

    return _run(recorder, Guarded(healthy=False))


SEAMS = {
    "before-model-raise": lambda r: before_model(r, raise_it=True),
    "before-model-response": lambda r: before_model(r, raise_it=False),
    "before-tool-raise": before_tool_raise,
    "abort-signal": abort_signal,
    "tool-raises": tool_raises,
}

if __name__ == "__main__":
    main("adk", SEAMS)
