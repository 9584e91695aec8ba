"""call_budget: stop a turn once it has made ``max_calls`` tool calls (an example plugin)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from otel_toolchain import StopSignal, ToolCall, ToolPlugin, Turn

__all__ = ["CallBudget"]


class CallBudgetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_calls: int = Field(ge=1)


class CallBudget(ToolPlugin):
    name: ClassVar[str] = "call_budget"
    Config: ClassVar[type[BaseModel]] = CallBudgetConfig
    stop_codes: ClassVar[tuple[str, ...]] = ("over_budget",)

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        if turn.calls == self.max_calls:
            turn.stop(StopSignal(self.name, "over_budget", f"the turn used its budget of {self.max_calls} calls",
                                 turn.trace_id, turn.span_id, at_call=turn.calls))
