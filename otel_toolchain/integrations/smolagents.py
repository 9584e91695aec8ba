"""smolagents: end a run the chain stopped at the end of the step that stopped it; nudge in its observations.

::

    from otel_toolchain.integrations.smolagents import ToolchainStepCallback, run_agent

    agent = ToolCallingAgent(tools=[...], model=model, step_callbacks=[ToolchainStepCallback(toolchain)])
    try:
        run_agent(agent, "...", toolchain=toolchain)   # or agent.run(...): see below
    except TurnStopped as stop: ...

smolagents calls its step callbacks when a step ends, after the step's tool calls (and so their
spans, and the chain) finished. :class:`ToolchainStepCallback` raises
:class:`~otel_toolchain.TurnStopped` there; smolagents does not catch it (it catches only its
own ``AgentError``), so ``agent.run`` raises it. No step runs after the stopping one.

Use :func:`run_agent` rather than ``agent.run`` under OpenInference's smolagents instrumentation
(0.1.43): when ``run`` raises, that instrumentation records the error on the ``<agent>.run`` span
but neither ends the span nor detaches its context. ``run_agent`` ends the stopped turn's span, so
it is exported, and restores the caller's context.

A nudge is appended to the step's observations as its own paragraph, after every tool output
of the step (smolagents shows the model one observation text per step).

Callbacks run on the agent's thread; they raise only ``TurnStopped``. This module imports nothing
from smolagents (which ships no type information): it duck-types the steps it is handed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import Guard, nudge_note

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainStepCallback", "run_agent"]


class ToolchainStepCallback:
    """A step callback: raises TurnStopped after the step whose tool call stopped the turn; nudges.

    ``toolchain`` defaults to the chain ``opentelemetry-instrument`` attached (looked up per step).
    """

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self._toolchain = toolchain

    def __call__(self, memory_step: Any, agent: Any = None) -> None:
        """Called by smolagents with each finished step (smolagents is untyped: steps are ``Any``)."""
        guard = Guard.of(self._toolchain)
        guard.check()
        note = nudge_note(guard.take_nudges())
        if note is not None and type(memory_step).__name__ == "ActionStep":
            seen = memory_step.observations
            memory_step.observations = f"{seen}\n\n{note}" if seen else note


def run_agent(agent: Any, task: str, *, toolchain: Toolchain | None = None, **kwargs: Any) -> Any:
    """``agent.run(task, **kwargs)``; a stopped turn raises TurnStopped with its span ended and exported.

    Blocks for the whole run, like ``agent.run``.
    """
    guard = Guard.of(toolchain)
    before = otel_context.get_current()
    with guard.watch():
        try:
            return agent.run(task, **kwargs)
        except TurnStopped as stop:
            _end_turn_span(guard, stop)
            otel_context.attach(before)  # the instrumentation left the run span's context attached
            raise


def _end_turn_span(guard: Guard, stop: TurnStopped) -> None:
    key = (stop.signal.trace_id, stop.signal.span_id)
    for turn in guard.toolchain.open_turns():
        if turn.key == key and turn.span is not None and turn.span.is_recording():
            turn.span.end()
