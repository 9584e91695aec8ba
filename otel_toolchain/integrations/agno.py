"""Agno: end a stopped run after the stopping tool call, and raise TurnStopped at the caller.

::

    from otel_toolchain.integrations.agno import ToolchainToolHook, run_agent

    agent = Agent(model=..., tools=[...], tool_hooks=[ToolchainToolHook(toolchain)])
    try:
        response = run_agent(agent, "...", toolchain=toolchain)
    except TurnStopped as stop: ...

The seam: the ``tool_hooks`` entry raises ``agno.exceptions.StopAgentRun`` once the turn is
stopped. The hook runs inside the tool's span, so the stopping call's span ends (and the stop
lands) after its hook returned: the run ends at the next call's hook, before that call runs
(25 calls, 26 model requests for a stop at 25). Agno ends the run normally
(``RunStatus.COMPLETED``, no exception): :func:`run_agent` raises the TurnStopped after it.
Raising anything else from the hook or the tool ends nothing (Agno hands it to the model), and
``Agent.cancel_run`` ends a non-streamed run only after its whole loop.

Runs on the agent's thread. Agno is imported when the hook first runs, not on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_toolchain.integrations._runs import stopped
from otel_toolchain.integrations.guard import Guard

if TYPE_CHECKING:
    from collections.abc import Callable

    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainToolHook", "run_agent"]


class ToolchainToolHook:
    """An Agno tool hook: makes the call, then ends the run with StopAgentRun if the turn is stopped."""

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self._toolchain = toolchain

    def __call__(self, function_name: str, function_call: Callable[..., Any], arguments: dict[str, Any]) -> Any:
        """Called by Agno for each tool call (its argument names are part of its hook contract)."""
        guard = Guard.of(self._toolchain)
        self._stop_if_stopped(guard)  # the stopping call's span ended after its hook returned
        result = function_call(**arguments)
        self._stop_if_stopped(guard)
        return result

    @staticmethod
    def _stop_if_stopped(guard: Guard) -> None:
        signal = guard.stop_signal()
        if signal is not None:
            from agno.exceptions import StopAgentRun  # noqa: PLC0415 (the framework only when used)

            raise StopAgentRun(f"{signal.plugin}: {signal.reason}")


def run_agent(agent: Any, message: Any, *, toolchain: Toolchain | None = None, **kwargs: Any) -> Any:
    """``agent.run(message, **kwargs)``; a stopped turn raises TurnStopped (blocks for the whole run)."""
    guard = Guard.of(toolchain)
    with guard.watch() as watch:
        result = agent.run(message, **kwargs)
        stop = stopped(guard, watch)
        if stop is not None:
            raise stop
        return result
