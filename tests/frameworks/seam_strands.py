"""Ending a wedged Strands run from outside, through Strands' own API (native spans recorded).

Seams:
- ``cancel``: an ``AfterToolCallEvent`` hook calls ``agent.cancel(after_current_tools=True)`` after
  the AT-th call;
- ``cancel-now``: the same with ``agent.cancel()`` (no deferral);
- ``before-model-raise``: a ``BeforeModelCallEvent`` hook raises ``Stop`` once AT calls ran;
- ``before-model-cancel``: a ``BeforeModelCallEvent`` hook sets ``event.cancel`` once AT calls ran;
- ``tool-raises``: the tool itself raises ``Stop`` from call AT+1 on (what ``@guard.tool`` does).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

from typing import Any

from capture_strands import make_agent
from fake_openai import FakeOpenAI
from seamkit import AT, Stop, main, outcome, turn_spans
from spancap import CALLS, Recorder, Weather


def _run(recorder: Recorder, wire: Any, weather: Weather | None = None) -> dict[str, Any]:
    weather = weather or Weather(healthy=False)
    with FakeOpenAI(calls=CALLS) as server:
        agent = make_agent(server, weather)
        wire(agent, weather)
        seen = outcome(lambda: _result(agent("What is the weather in Paris?")))
        requests = len(server.requests)
    return {"tool_calls": weather.calls, "model_requests": requests, **seen,
            "turn": turn_spans(recorder, ("invoke_agent",))}


def _result(result: Any) -> str:
    return f"stop_reason={result.stop_reason}; text={str(result).strip()!r}"


def cancel(recorder: Recorder, *, defer: bool = True) -> dict[str, Any]:
    from strands.hooks import AfterToolCallEvent

    def wire(agent: Any, weather: Weather) -> None:
        def after_tool(event: AfterToolCallEvent) -> None:
            if weather.calls >= AT:
                event.agent.cancel(after_current_tools=defer) if defer else event.agent.cancel()

        agent.hooks.add_callback(AfterToolCallEvent, after_tool)

    return _run(recorder, wire)


def before_model(recorder: Recorder, *, raise_it: bool) -> dict[str, Any]:
    from strands.hooks import BeforeModelCallEvent

    def wire(agent: Any, weather: Weather) -> None:
        def before(event: BeforeModelCallEvent) -> None:
            if weather.calls >= AT:
                if raise_it:
                    raise Stop(f"stopped after {weather.calls} calls")
                event.cancel = f"stopped after {weather.calls} calls"

        agent.hooks.add_callback(BeforeModelCallEvent, before)

    return _run(recorder, wire)


def tool_raises(recorder: Recorder) -> dict[str, Any]:
    class Guarded(Weather):
        def __call__(self, city: str) -> str:
            if self.calls >= AT:
                self.calls += 1
                raise Stop(f"stopped at call {self.calls}")
            return super().__call__(city)

    return _run(recorder, lambda agent, weather: None, Guarded(healthy=False))


SEAMS = {
    "cancel": cancel,
    "cancel-now": lambda r: cancel(r, defer=False),
    "before-model-raise": lambda r: before_model(r, raise_it=True),
    "before-model-cancel": lambda r: before_model(r, raise_it=False),
    "tool-raises": tool_raises,
}

if __name__ == "__main__":
    main("strands", SEAMS)
