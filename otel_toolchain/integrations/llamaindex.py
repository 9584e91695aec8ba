"""LlamaIndex workflow agents: cancel a stopped run through its handler, and raise TurnStopped.

::

    from otel_toolchain.integrations.llamaindex import run_agent

    try:
        response = await run_agent(agent, "...", toolchain=toolchain, max_iterations=100)
    except TurnStopped as stop: ...

The seam: the run's event stream is read; at the first event after the stop (the stopping call's
``ToolCallResult``) the handler's ``cancel_run()`` ends the workflow, so no model request and no
tool call follows. The caller gets :class:`~otel_toolchain.TurnStopped` (``__cause__``: the
workflow's ``WorkflowCancelledByUser``). Raising from the tool ends nothing: LlamaIndex hands tool
exceptions back to the model. The turn of a run without an agent span is its ``<X>Agent.run``
span (see ``otel_toolchain._recognise.spans``), so each ``run_agent`` is one turn.

A coroutine: runs on the caller's event loop. Imports nothing from LlamaIndex (it drives the
handler ``agent.run`` returns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_toolchain.integrations._runs import stopped
from otel_toolchain.integrations.guard import Guard

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain

__all__ = ["run_agent"]


async def run_agent(agent: Any, user_msg: Any, *, toolchain: Toolchain | None = None, **kwargs: Any) -> Any:
    """``await agent.run(user_msg=…, **kwargs)``, cancelled at a stop; a stop raises TurnStopped."""
    guard = Guard.of(toolchain)
    with guard.watch() as watch:
        handler = agent.run(user_msg=user_msg, **kwargs)
        async for _event in handler.stream_events():
            if stopped(guard, watch) is not None:
                await handler.cancel_run()
                break
        try:
            result = await handler
        except Exception as exc:
            stop = stopped(guard, watch)
            if stop is None:
                raise
            raise stop from exc
        stop = stopped(guard, watch)
        if stop is not None:
            raise stop
        return result
