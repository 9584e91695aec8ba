"""Ending a wedged Agno run from outside, through Agno's own API (OpenInference spans).

Seams:
- ``tool-hook-stop-after``: a ``tool_hooks`` entry runs the call, then raises ``StopAgentRun`` once
  AT calls ran;
- ``tool-hook-stop-before``: the entry raises ``StopAgentRun`` instead of making call AT+1;
- ``tool-hook-raise``: the entry raises ``Stop`` (a plain exception) instead of making call AT+1;
- ``cancel-run``: the entry calls ``Agent.cancel_run(run_id)`` once AT calls ran (non-streamed run:
  Agno checks for it only before and after the whole model/tool loop);
- ``cancel-run-stream``: the same in a streamed run (``run(stream=True)``, checked per chunk);
- ``tool-raises``: the tool raises ``Stop`` from call AT+1 on (what ``@guard.tool`` does).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

from typing import Any

from capture_agno import instrument, make_agent, setup
from fake_openai import FakeOpenAI
from seamkit import AT, Stop, main, outcome, turn_spans
from spancap import CALLS, Recorder, Weather

RUN_ID = "seam-run-1"


def _run(recorder: Recorder, weather: Weather, *, stream: bool = False, **agent_kwargs: Any) -> dict[str, Any]:
    instrument("openinference", recorder)
    with FakeOpenAI(calls=CALLS) as server:
        agent = make_agent(server, weather, **agent_kwargs)

        def go() -> str:
            if stream:
                events = [type(e).__name__ for e in agent.run("What is the weather in Paris?", run_id=RUN_ID,
                                                              stream=True)]
                return f"streamed {len(events)} events, last {events[-3:]}"
            result = agent.run("What is the weather in Paris?", run_id=RUN_ID)
            return f"status={getattr(result.status, 'value', result.status)}; content={result.content!r}"

        seen = outcome(go)
        requests = len(server.requests)
    return {"tool_calls": weather.calls, "model_requests": requests, **seen,
            "turn": turn_spans(recorder, ("weather_agent.run",))}


def tool_hook(recorder: Recorder, how: str, *, stream: bool = False) -> dict[str, Any]:
    from agno.agent import Agent
    from agno.exceptions import StopAgentRun

    weather = Weather(healthy=False)

    def hook(function_name: str, function_call: Any, arguments: dict[str, Any]) -> Any:
        if weather.calls >= AT and how == "stop-before":
            raise StopAgentRun(f"stopped after {weather.calls} calls")
        if weather.calls >= AT and how == "raise":
            raise Stop(f"stopped after {weather.calls} calls")
        result = function_call(**arguments)
        if weather.calls >= AT and how == "stop-after":
            raise StopAgentRun(f"stopped after {weather.calls} calls")
        if weather.calls >= AT and how == "cancel":
            Agent.cancel_run(RUN_ID)
        return result

    return _run(recorder, weather, stream=stream, tool_hooks=[hook])


def tool_raises(recorder: Recorder) -> dict[str, Any]:
    class Guarded(Weather):
        def __call__(self, city: str) -> str:
            if self.calls >= AT:
                self.calls += 1
                raise Stop(f"stopped at call {self.calls}")
            return super().__call__(city)

    return _run(recorder, Guarded(healthy=False))


SEAMS = {
    "tool-hook-stop-after": lambda r: tool_hook(r, "stop-after"),
    "tool-hook-stop-before": lambda r: tool_hook(r, "stop-before"),
    "tool-hook-raise": lambda r: tool_hook(r, "raise"),
    "cancel-run": lambda r: tool_hook(r, "cancel"),
    "cancel-run-stream": lambda r: tool_hook(r, "cancel", stream=True),
    "tool-raises": tool_raises,
}

if __name__ == "__main__":
    main("agno", SEAMS, setup=lambda: list(setup("openinference")) and None)
