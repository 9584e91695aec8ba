"""Ending a wedged CrewAI run from outside, through CrewAI's interception hooks (OpenInference spans).

CrewAI's own repeat guard is raised past the run's length first (as in the ``wedged`` capture).

Seams (global hooks, ``crewai.hooks``):
- ``after-tool-aborted``: an after_tool_call hook raises ``HookAborted`` after the AT-th call;
- ``before-llm-aborted``: a before_llm_call hook raises ``HookAborted`` once AT calls ran;
- ``before-llm-raise``: the same hook raises ``Stop`` (a plain exception) instead;
- ``before-llm-false``: the same hook returns ``False`` (the legacy "block this call");
- ``tool-raises``: the tool raises ``Stop`` from call AT+1 on (what ``@guard.tool`` does).
"""

# ruff: noqa: PLC0415  (frameworks are imported late: their settings are read from the environment at import)

from __future__ import annotations

import os
from typing import Any

from capture_crewai import CALLS, QUIET, instrument, make_crew
from fake_openai import FakeOpenAI
from seamkit import AT, Stop, main, outcome, turn_spans
from spancap import Recorder, Weather


def setup() -> None:
    import logging

    os.environ.update(QUIET)
    logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)
    from crewai.utilities import agent_utils

    agent_utils.MAX_REPEATED_TOOL_CALLS = CALLS + 1


def _run(recorder: Recorder, weather: Weather | None = None) -> dict[str, Any]:
    instrument("openinference", recorder)
    weather = weather or Weather(healthy=False)
    with FakeOpenAI(calls=CALLS) as server:
        crew = make_crew(server, weather)
        seen = outcome(lambda: f"raw={crew.kickoff().raw!r}")
        requests = len(server.requests)
    return {"tool_calls": weather.calls, "model_requests": requests, **seen,
            "turn": turn_spans(recorder, ("weather reporter._execute_core", "Crew_"))}


def after_tool_aborted(recorder: Recorder) -> dict[str, Any]:
    from crewai.hooks import HookAborted, register_after_tool_call_hook

    calls = {"n": 0}

    def after(context: Any) -> None:
        calls["n"] += 1
        if calls["n"] >= AT:
            raise HookAborted(f"stopped after {calls['n']} calls", source="seam")

    register_after_tool_call_hook(after)
    return _run(recorder)


def before_llm(recorder: Recorder, how: str) -> dict[str, Any]:
    from crewai.hooks import HookAborted, register_before_llm_call_hook

    weather = Weather(healthy=False)

    def before(context: Any) -> bool | None:
        if weather.calls >= AT:
            if how == "aborted":
                raise HookAborted(f"stopped after {weather.calls} calls", source="seam")
            if how == "raise":
                raise Stop(f"stopped after {weather.calls} calls")
            return False
        return None

    register_before_llm_call_hook(before)
    return _run(recorder, weather)


def tool_raises(recorder: Recorder) -> dict[str, Any]:
    class Guarded(Weather):
        def __call__(self, city: str) -> str:
            if self.calls >= AT:
                self.calls += 1
                raise Stop(f"stopped at call {self.calls}")
            return super().__call__(city)

    return _run(recorder, Guarded(healthy=False))


SEAMS = {
    "after-tool-aborted": after_tool_aborted,
    "before-llm-aborted": lambda r: before_llm(r, "aborted"),
    "before-llm-raise": lambda r: before_llm(r, "raise"),
    "before-llm-false": lambda r: before_llm(r, "false"),
    "tool-raises": tool_raises,
}

if __name__ == "__main__":
    main("crewai", SEAMS, setup=setup)
