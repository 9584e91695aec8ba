"""Strands Agents: end a stopped run before its next model call, and raise TurnStopped at the caller.

::

    from otel_toolchain.integrations.strands import ToolchainHooks, run_agent

    agent = Agent(model=..., tools=[...], hooks=[ToolchainHooks(toolchain)])
    try:
        result = run_agent(agent, "...", toolchain=toolchain)
    except TurnStopped as stop: ...

The seam: a ``BeforeModelCallEvent`` hook raises :class:`~otel_toolchain.TurnStopped` once the
turn is stopped (the stop lands as the stopping tool call's span ends, before Strands asks the
model again), so no model request and no tool call follows the stop. Strands wraps it in an
``EventLoopException``; :func:`run_agent` raises the TurnStopped itself (``__cause__`` keeps
Strands' exception). Raising from the tool (``@guard.tool``) ends nothing: Strands hands tool
exceptions back to the model.

The hook runs on the agent's event-loop thread and raises only TurnStopped. Strands is imported
when the hooks are registered, not when this module is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_toolchain.integrations._runs import stop_behind
from otel_toolchain.integrations.guard import Guard

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainHooks", "run_agent"]


class ToolchainHooks:
    """A Strands ``HookProvider``: raises TurnStopped before the model call that would follow a stop."""

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self._toolchain = toolchain

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        """Called by Strands with the agent's hook registry."""
        from strands.hooks import BeforeModelCallEvent  # noqa: PLC0415 (the framework only when used)

        registry.add_callback(BeforeModelCallEvent, self._before_model)

    def _before_model(self, event: Any) -> None:
        Guard.of(self._toolchain).check()


def run_agent(agent: Any, prompt: Any, *, toolchain: Toolchain | None = None, **kwargs: Any) -> Any:
    """``agent(prompt, **kwargs)``; a stopped turn raises TurnStopped (blocks for the whole run)."""
    with Guard.of(toolchain).watch():
        try:
            return agent(prompt, **kwargs)
        except Exception as exc:
            stop = stop_behind(exc)
            if stop is None or stop is exc:
                raise
            raise stop from exc
