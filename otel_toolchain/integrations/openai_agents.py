"""OpenAI Agents SDK: end a run the chain stopped before its next model call; nudge beside the outputs.

::

    from otel_toolchain.integrations.openai_agents import ToolchainInputFilter

    config = RunConfig(call_model_input_filter=ToolchainInputFilter(toolchain))
    try:
        await Runner.run(agent, "...", run_config=config)
    except TurnStopped as stop: ...

Every OTel bridge (OpenInference, the official GenAI one, Traceloop) turns the SDK's own spans
into OTel spans when the SDK span ends; the SDK ends a function span after the tool and its
``on_tool_end`` hooks returned. So the stop is acted on before the next model call: the SDK
calls ``call_model_input_filter`` there, and this filter raises
:class:`~otel_toolchain.TurnStopped`, which the SDK records on its span and lets ``Runner.run``
raise. No model call is made after the tool call that completed the stop.

The bridges set no OTel context, so the run is found by the SDK's current trace: the chain's
stops and nudges are filed under it as they are delivered (they are delivered inside the run).

A nudge becomes a user input item appended after the function call outputs: beside them, never
inside a tool's output string.

The filter runs on the run's event loop; it does not block and raises only ``TurnStopped``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from agents.tracing import get_current_trace

from otel_toolchain.integrations.guard import Guard, nudge_note

if TYPE_CHECKING:
    from agents.run_config import CallModelData, ModelInputData

    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainInputFilter", "current_run_key"]


def current_run_key() -> Hashable | None:
    """The key of the SDK run (its trace) in the current context, if one is running."""
    current = get_current_trace()
    return ("openai-agents", current.trace_id) if current is not None else None


class ToolchainInputFilter:
    """A ``RunConfig.call_model_input_filter`` that raises TurnStopped and delivers nudges.

    ``toolchain`` defaults to the chain ``opentelemetry-instrument`` attached (looked up at the
    first model call). A ``RunConfig`` holds one filter: to keep one of your own, call it from a
    filter that calls this one first.
    """

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self._toolchain = toolchain
        self._guard: Guard | None = None

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self._guard = Guard.of(self._toolchain)
            self._guard.add_key_source(current_run_key)
        return self._guard

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        guard = self.guard
        guard.check()
        note = nudge_note(guard.take_nudges())
        if note is not None:
            data.model_data.input.append({"role": "user", "content": note})
        return data.model_data
