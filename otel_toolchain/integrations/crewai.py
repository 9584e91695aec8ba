"""CrewAI: abort a stopped crew before its next LLM call, and raise TurnStopped at the caller.

::

    from otel_toolchain.integrations.crewai import install_hooks, kickoff

    install_hooks(toolchain)            # once: CrewAI's hooks are global
    try:
        result = kickoff(crew, toolchain=toolchain)
    except TurnStopped as stop: ...

The seam: a ``before_llm_call`` hook raises ``crewai.hooks.HookAborted`` (the one exception
CrewAI's hooks let through; any other fails open) once the turn is stopped, so no LLM call and
no tool call follows the stop. :func:`kickoff` raises the TurnStopped (``__cause__``: CrewAI's
HookAborted). Raising from the tool ends nothing: CrewAI hands tool errors back to the model.

Under Traceloop's CrewAI instrumentation there are no tool spans at all (workflow, task and
agent only): the chain sees no call there, so use CrewAI's own telemetry or OpenInference.
CrewAI's own repeat guard (``MAX_REPEATED_TOOL_CALLS``, 5) still ends identical calls first.

The hook runs on the crew's thread. CrewAI is imported by :func:`install_hooks`, not on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_toolchain.integrations._runs import stop_behind, stopped
from otel_toolchain.integrations.guard import Guard

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain

__all__ = ["install_hooks", "kickoff"]

SOURCE = "otel_toolchain"
"""The ``source`` of the HookAborted raised at a stop."""


def install_hooks(toolchain: Toolchain | None = None) -> None:
    """Register the before_llm_call hook (global in CrewAI: call it once per process)."""
    from crewai.hooks import HookAborted, register_before_llm_call_hook  # noqa: PLC0415 (only when used)

    def before_llm(context: Any) -> None:
        guard = Guard.of(toolchain)
        signal = guard.stop_signal()
        if signal is not None:
            raise HookAborted(f"{signal.plugin}: {signal.reason}", source=SOURCE)

    register_before_llm_call_hook(before_llm)


def kickoff(crew: Any, *, toolchain: Toolchain | None = None, **kwargs: Any) -> Any:
    """``crew.kickoff(**kwargs)``; a stopped turn raises TurnStopped (blocks for the whole run)."""
    guard = Guard.of(toolchain)
    with guard.watch() as watch:
        try:
            return crew.kickoff(**kwargs)
        except Exception as exc:
            stop = stop_behind(exc) or stopped(guard, watch)
            if stop is None:
                raise
            raise stop from exc
