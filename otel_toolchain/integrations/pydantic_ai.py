"""pydantic-ai: end a run the chain stopped, and hand nudges to the model beside the tool results.

::

    from otel_toolchain.integrations.pydantic_ai import ToolchainCapability

    agent = Agent(model, capabilities=[ToolchainCapability(toolchain)])   # or ToolchainCapability()
    agent.instrument = InstrumentationSettings(tracer_provider=provider)  # the chain is on provider
    try:
        agent.run_sync("...")
    except TurnStopped as stop:
        stop.signal                                                       # which plugin, why, which calls

pydantic-ai's instrumentation is the outermost capability, so a tool span ends (and the chain
runs) after every other capability's tool hooks returned. The stop is therefore acted on at the
next step the run takes: before the next model request, or before the next tool executes, this
capability raises :class:`~otel_toolchain.TurnStopped`. pydantic-ai lets it through unchanged,
the ``invoke_agent`` span records it and ends, and ``run``/``run_sync`` raise it. No tool call
runs after the one that completed the stop.

A nudge becomes a user part enqueued with ``ctx.enqueue``: pydantic-ai puts it into the request
that carries the tool returns, right after them, never inside a tool's return value.

Hooks run on the run's event loop; they do not block and raise only ``TurnStopped``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability

from otel_toolchain.integrations.guard import Guard, nudge_note

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapRunHandler
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext, ToolDefinition

    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainCapability"]


@dataclass(init=False)
class ToolchainCapability(AbstractCapability[Any]):
    """Raises TurnStopped at the run's next step once the chain stops its turn; delivers nudges.

    ``toolchain`` defaults to the chain ``opentelemetry-instrument`` attached (looked up at the
    first run, so the capability may be built before the chain is attached).
    """

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self._toolchain = toolchain
        self._guard: Guard | None = None

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self._guard = Guard.of(self._toolchain)
        return self._guard

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        with self.guard.watch():
            return await handler()

    async def before_model_request(self, ctx: RunContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        self.guard.check()
        note = nudge_note(self.guard.take_nudges())
        if note is not None:
            ctx.enqueue(note)
        return request_context

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                  args: ValidatedToolArgs) -> ValidatedToolArgs:
        self.guard.check()
        return args
