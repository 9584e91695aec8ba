"""The neutral events a stream reader makes of a harness's JSON lines.

Every reader emits the same few event kinds whatever the harness, in stream order:

::

    TurnStarted
      ToolStarted ... ToolFinished      (each started call finishes before its turn ends)
      Retry                             (a provider retry inside the turn)
    TurnEnded                           (carries the turn's Usage)
    BadLine                             (anywhere: a line that could not be read)

Times are nanoseconds since the epoch: the stream's own times where it has them (OpenCode),
else the arrival time the caller passed to ``feed``. ``line_no`` is the 1-based number of the
line the event came from. The events build no spans; they are plain frozen values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_toolchain.calls import Retry

__all__ = [
    "BadLine",
    "Event",
    "Retry",
    "ToolFinished",
    "ToolStarted",
    "TurnEnded",
    "TurnStarted",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """An agent turn began: one prompt's run, from the first line of it to its end line."""

    harness: str
    """Which reader saw it: ``claude-code``, ``codex``, ``opencode`` or ``pi``."""
    session_id: str | None
    model: str | None
    """The model, where the stream names it at the start (Claude Code only)."""
    cwd: str | None
    """The session's working directory, where the stream says (Claude Code, Pi)."""
    time_ns: int
    line_no: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call began (or, for OpenCode, is reported together with its end)."""

    call_id: str
    tool: str
    arguments: Any
    """The input as the stream gives it, parsed (a dict, usually): the one form the chain compares."""
    parent_call_id: str | None
    """The call id of the sub-agent call this call runs inside (Claude Code), else None."""
    time_ns: int
    line_no: int


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended, successfully or not; repeats the call's identity so it stands alone."""

    call_id: str
    tool: str
    arguments: Any
    result: str | None
    """The result text; text blocks of a structured result are joined with newlines."""
    failed: bool
    """The harness's own failure signal (``is_error``, ``status``, ``isError``, exit code)."""
    error_type: str | None
    """``exit_code_<n>``, ``tool_error``, ``declined``, ``invalid_tool`` or ``interrupted``; None if ok."""
    parent_call_id: str | None
    start_ns: int
    end_ns: int
    cwd: str | None
    """The working directory of a shell call, where known; None for other tools."""
    line_no: int
    tokens: int | None = None
    """Input and output tokens the turn has used so far, as of this line; None where the harness
    reports no usage before the turn ends (Codex streams)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token use of one turn.

    ``input_tokens`` counts all input, cached or not (as OTel's ``gen_ai.usage.input_tokens``);
    ``cache_read_tokens`` and ``cache_write_tokens`` say how much of it hit or filled the cache.
    ``output_tokens`` includes ``reasoning_tokens``.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None

    def plus(self, other: Usage) -> Usage:
        """The sum of two usages; the cost is known if either cost is."""
        cost = self.cost_usd
        if other.cost_usd is not None:
            cost = other.cost_usd if cost is None else cost + other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            cost,
        )


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn ended: by its end line, or at end of input when the run died or was killed."""

    time_ns: int
    line_no: int
    is_error: bool
    usage: Usage | None
    model: str | None
    session_id: str | None


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not JSON, or a known event missing a field it needs; reading goes on."""

    line_no: int
    reason: str
    text: str
    """The line, cut to 200 characters."""


Event = TurnStarted | ToolStarted | ToolFinished | Retry | TurnEnded | BadLine
"""Anything a reader emits."""
