"""LangChain and LangGraph: end the agent run at the tool call that completes a stop; nudge beside it.

With LangChain's agents (``langchain.agents.create_agent``), add the middleware::

    agent = create_agent(model, tools, middleware=[ToolchainMiddleware(toolchain)])
    try:
        agent.invoke({"messages": [...]})
    except TurnStopped as stop: ...

With a LangGraph ``ToolNode`` of your own, wrap its calls instead::

    ToolNode(tools, wrap_tool_call=guard_tool_call(toolchain), awrap_tool_call=aguard_tool_call(toolchain),
             handle_tool_errors=handle_tool_errors)   # only if you handle tool errors: it lets the stop through

The tool span of every LangChain instrumentation (OpenInference, the official GenAI one,
Traceloop) ends inside the call the wrapper makes, so the chain has ruled before the wrapper
returns. When it stopped the turn, the wrapper raises :class:`~otel_toolchain.TurnStopped`;
``ToolNode`` re-raises it (its default error handler only converts ``ToolInvocationError``), and
``invoke``/``ainvoke`` raise it to the caller. The turn span ends with the exception recorded.
``handle_tool_errors=True`` would turn every exception, the stop included, into a ToolMessage:
pass :func:`handle_tool_errors` instead. OpenInference attaches no OTel context, so the stop is
found through a watch around the call, not the current span.

A nudge becomes a second text block of the ToolMessage, after the tool's own content, which is
left as it was (a JSON result stays parseable). A ``Command`` result is passed through unnudged.

Wrappers run on the thread (or event loop) that runs the tool; they raise only ``TurnStopped``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import TOOL_CALL_ERROR_TEMPLATE, ToolCallRequest

from otel_toolchain.errors import TurnStopped
from otel_toolchain.integrations.guard import Guard, nudge_note

if TYPE_CHECKING:
    from langgraph.runtime import Runtime
    from langgraph.types import Command

    from otel_toolchain.chain import Toolchain

__all__ = ["ToolchainMiddleware", "aguard_tool_call", "guard_tool_call", "handle_tool_errors"]

_Result: TypeAlias = "ToolMessage | Command[Any]"
_Handler: TypeAlias = Callable[[ToolCallRequest], _Result]
_AsyncHandler: TypeAlias = Callable[[ToolCallRequest], Awaitable[_Result]]


def _settle(guard: Guard, result: _Result) -> _Result:
    """Inside the call's watch: raise a stop, else add any nudge beside the result."""
    guard.check()
    note = nudge_note(guard.take_nudges())
    if note is None or not isinstance(result, ToolMessage):
        return result
    content = result.content
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) \
        else list(content)
    return result.model_copy(update={"content": [*blocks, {"type": "text", "text": note}]})


def guard_tool_call(toolchain: Toolchain | None = None) -> Callable[[ToolCallRequest, _Handler], _Result]:
    """A ``ToolNode(wrap_tool_call=…)`` that raises TurnStopped at the call that stops the turn."""
    def wrap(request: ToolCallRequest, handler: _Handler) -> _Result:
        guard = Guard.of(toolchain)
        with guard.watch():
            return _settle(guard, handler(request))

    return wrap


def aguard_tool_call(toolchain: Toolchain | None = None) -> Callable[[ToolCallRequest, _AsyncHandler],
                                                                     Awaitable[_Result]]:
    """The ``awrap_tool_call`` twin of :func:`guard_tool_call`."""
    async def wrap(request: ToolCallRequest, handler: _AsyncHandler) -> _Result:
        guard = Guard.of(toolchain)
        with guard.watch():
            return _settle(guard, await handler(request))

    return wrap


def handle_tool_errors(error: Exception) -> str:
    """A ``ToolNode(handle_tool_errors=…)`` that reports tool errors to the model but lets a stop through."""
    if isinstance(error, TurnStopped):
        raise error
    return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(error))


class ToolchainMiddleware(AgentMiddleware[Any, Any, Any]):
    """``create_agent`` middleware: stops at the tool call that completes a stop, nudges beside results.

    ``toolchain`` defaults to the chain ``opentelemetry-instrument`` attached (looked up per call).
    """

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        super().__init__()
        self._sync = guard_tool_call(toolchain)
        self._async = aguard_tool_call(toolchain)
        self._toolchain = toolchain

    def wrap_tool_call(self, request: ToolCallRequest, handler: _Handler) -> _Result:
        return self._sync(request, handler)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: _AsyncHandler) -> _Result:
        return await self._async(request, handler)

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """A stop that came from outside a tool call (a retry), seen through the current span."""
        Guard.of(self._toolchain).check()
        return None

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        Guard.of(self._toolchain).check()
        return None
