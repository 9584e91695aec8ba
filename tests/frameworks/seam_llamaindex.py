"""Ending a wedged LlamaIndex FunctionAgent run from outside, through the workflow handler (OpenInference spans).

Seams:
- ``cancel-run``: the caller reads ``handler.stream_events()``; after the AT-th ``ToolCallResult``
  it calls ``await handler.cancel_run()`` and then awaits the handler;
- ``cancel-run-raise``: the same, then the caller raises ``Stop`` itself (what an integration
  would do to give its caller the typed stop);
- ``tool-raises``: the tool raises ``Stop`` from call AT+1 on (what ``@guard.tool`` does).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import asyncio
from typing import Any

from capture_llamaindex import instrument, make_agent
from fake_openai import FakeOpenAI
from seamkit import AT, Stop, main, outcome, turn_spans
from spancap import CALLS, Recorder, Weather


def _run(recorder: Recorder, drive: Any, weather: Weather | None = None) -> dict[str, Any]:
    instrument("openinference", recorder)
    weather = weather or Weather(healthy=False)
    with FakeOpenAI(calls=CALLS) as server:
        agent = make_agent(server, weather)
        seen = outcome(lambda: asyncio.run(drive(agent, weather)))
        requests = len(server.requests)
    return {"tool_calls": weather.calls, "model_requests": requests, **seen,
            "turn": turn_spans(recorder, ("FunctionAgent.run",))}


def cancel_run(recorder: Recorder, *, then_raise: bool) -> dict[str, Any]:
    from llama_index.core.agent.workflow import ToolCallResult

    async def drive(agent: Any, weather: Weather) -> Any:
        handler = agent.run(user_msg="What is the weather in Paris?", max_iterations=100)
        results = 0
        async for event in handler.stream_events():
            if isinstance(event, ToolCallResult):
                results += 1
                if results >= AT:
                    await handler.cancel_run()
                    break
        try:
            value = await handler
        except BaseException as exc:
            if then_raise:
                raise Stop(f"stopped after {results} tool results") from exc
            raise
        if then_raise:
            raise Stop(f"stopped after {results} tool results")
        return value

    return _run(recorder, drive)


def tool_raises(recorder: Recorder) -> dict[str, Any]:
    class Guarded(Weather):
        def __call__(self, city: str) -> str:
            if self.calls >= AT:
                self.calls += 1
                raise Stop(f"stopped at call {self.calls}")
            return super().__call__(city)

    async def drive(agent: Any, weather: Weather) -> Any:
        return await agent.run(user_msg="What is the weather in Paris?", max_iterations=100)

    return _run(recorder, drive, Guarded(healthy=False))


SEAMS = {
    "cancel-run": lambda r: cancel_run(r, then_raise=False),
    "cancel-run-raise": lambda r: cancel_run(r, then_raise=True),
    "tool-raises": tool_raises,
}

if __name__ == "__main__":
    main("llamaindex", SEAMS)
