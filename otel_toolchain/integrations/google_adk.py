"""Google ADK: end a stopped run before its next model call; the caller gets TurnStopped itself.

::

    from otel_toolchain.integrations.google_adk import before_model_callback

    agent = LlmAgent(name=..., model=..., tools=[...], before_model_callback=before_model_callback(toolchain))
    try:
        async for event in runner.run_async(...): ...
    except TurnStopped as stop: ...

The seam: ``before_model_callback`` raises :class:`~otel_toolchain.TurnStopped` once the turn is
stopped; ADK lets the callback's exception through to the caller of ``run_async`` (it logs the
traceback) and ends its spans with status ERROR. No model request follows the stop. (Raising
from ``before_tool_callback`` costs one more model request.)

Runs on the runner's event loop. Imports nothing from ADK (the callback's arguments are ADK's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_toolchain.integrations.guard import Guard

if TYPE_CHECKING:
    from collections.abc import Callable

    from otel_toolchain.chain import Toolchain

__all__ = ["before_model_callback"]


def before_model_callback(toolchain: Toolchain | None = None) -> Callable[[Any, Any], None]:
    """A ``before_model_callback`` raising TurnStopped when the turn was stopped (returns None otherwise)."""

    def before_model(callback_context: Any, llm_request: Any) -> None:
        Guard.of(toolchain).check()

    return before_model
