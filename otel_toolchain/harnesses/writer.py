"""The harness adapter's core: stream events become turn and tool spans, and the chain's verdicts come back.

:class:`SpanWriter` takes the neutral events of :mod:`otel_toolchain.harnesses.streams`, in order, and
records them through an :class:`~otel_toolchain.recorder.AgentRecorder`, so the chain runs on
each call as it finishes. Each turn ends as a :class:`TurnOutcome`: its calls, the stop (if a
plugin stopped it), the tool_stats report and the lines that could not be read. Used by
``otel-toolchain replay`` (whole files) and ``otel-toolchain run`` (lines as they arrive).

Not thread-safe: feed one writer from one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from otel_toolchain import semconv
from otel_toolchain.harnesses.events import (
    BadLine,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from otel_toolchain.recorder import AgentRecorder, ToolSpan, TurnRecording
from otel_toolchain.signals import StopSignal

__all__ = ["SpanWriter", "TurnOutcome"]


@dataclass
class TurnOutcome:
    """What became of one turn of one run."""

    source: str
    harness: str
    session_id: str | None = None
    calls: int = 0
    failed: int = 0
    stopped: StopSignal | None = None
    tool_stats: dict[str, Any] | None = None
    bad_lines: list[BadLine] = field(default_factory=list)
    trace_id: int = 0
    span_id: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON line ``otel-toolchain replay --format json`` prints for this turn."""
        stopped = None
        if self.stopped is not None:
            s = self.stopped
            stopped = {"plugin": s.plugin, "reason": s.reason, "at_call": s.at_call, "period": s.period,
                       "repeats": s.repeats, "cycle": [{"tool": c.tool, "call_id": c.call_id} for c in s.cycle]}
        return {"source": self.source, "harness": self.harness, "session_id": self.session_id, "calls": self.calls,
                "stopped": stopped, "tool_stats": self.tool_stats, "bad_lines": len(self.bad_lines)}


class SpanWriter:
    """Turns one run's events into spans; ``on_stop`` fires the moment a turn is stopped."""

    def __init__(
        self,
        recorder: AgentRecorder,
        *,
        source: str,
        harness: str,
        on_stop: Callable[[StopSignal, TurnOutcome], None] | None = None,
        on_turn: Callable[[TurnOutcome], None] | None = None,
        links: list[Any] | None = None,
    ) -> None:
        self._recorder = recorder
        self.source = source
        self.harness = harness
        self._on_stop = on_stop
        self._on_turn = on_turn
        self._links = links
        self.outcomes: list[TurnOutcome] = []
        self._turn: TurnRecording | None = None
        self._outcome: TurnOutcome | None = None
        self._open_tools: dict[str, ToolSpan] = {}
        self._pending_bad: list[BadLine] = []

    @property
    def current(self) -> TurnOutcome | None:
        """The outcome of the turn now open, if any."""
        return self._outcome

    def handle(self, event: Event) -> None:
        """Record one event. Never raises for odd orders: a call without a turn opens one."""
        if isinstance(event, BadLine):
            (self._outcome.bad_lines if self._outcome else self._pending_bad).append(event)
        elif isinstance(event, TurnStarted):
            self._end_turn(None)
            self._start_turn(event.session_id, event.model, event.time_ns)
        elif isinstance(event, ToolStarted):
            self._started(event)
        elif isinstance(event, ToolFinished):
            self._finished(event)
        elif isinstance(event, Retry):
            self._ensure_turn(event.time_ns).retry(event.attempt, reason=event.reason, time_ns=event.time_ns)
        elif isinstance(event, TurnEnded):
            self._end_turn(event)

    def close(self) -> list[TurnOutcome]:
        """End whatever is still open (the input ended); returns every turn's outcome."""
        self._end_turn(None)
        if self._pending_bad:  # bad lines with no turn at all still have to be reported
            outcome = TurnOutcome(self.source, self.harness, bad_lines=self._pending_bad)
            self._pending_bad = []
            self._publish(outcome)
        return self.outcomes

    # -- turns ----------------------------------------------------------------------------------------
    def _start_turn(self, session_id: str | None, model: str | None, time_ns: int) -> TurnRecording:
        attributes = {semconv.HARNESS: self.harness}
        self._turn = self._recorder.start_turn(
            self.harness, conversation_id=session_id, model=model, start_ns=time_ns or None, attributes=attributes,
            links=self._links,
        )
        self._outcome = TurnOutcome(self.source, self.harness, session_id=session_id, trace_id=self._turn.trace_id,
                                    span_id=self._turn.span_id, bad_lines=self._pending_bad)
        self._pending_bad = []
        return self._turn

    def _ensure_turn(self, time_ns: int) -> TurnRecording:
        return self._turn if self._turn is not None else self._start_turn(None, None, time_ns)

    def _end_turn(self, event: TurnEnded | None) -> None:
        turn, outcome = self._turn, self._outcome
        if turn is None or outcome is None:
            return
        for call_id in list(self._open_tools):  # calls a dead run never finished
            self._open_tools.pop(call_id).finish(None, failed=True, error_type="interrupted",
                                                 end_ns=event.time_ns if event and event.time_ns else None)
        attributes: dict[str, Any] = {}
        if event is not None:
            if event.session_id and not outcome.session_id:
                outcome.session_id = event.session_id
                attributes[semconv.GEN_AI_CONVERSATION_ID] = event.session_id
            if event.usage is not None:
                attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] = event.usage.input_tokens
                attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = event.usage.output_tokens
            if event.model:
                attributes[semconv.GEN_AI_RESPONSE_MODEL] = event.model
        failed = event.is_error if event is not None else True
        turn.end(event.time_ns if event and event.time_ns else None, failed=failed,
                 error_type="harness_error" if event is not None else "interrupted", attributes=attributes)
        outcome.stopped = turn.stop_signal
        stats = [r.value for r in turn.reports if r.label == "tool_stats"]
        outcome.tool_stats = stats[0] if stats else None
        self._turn, self._outcome = None, None
        self._publish(outcome)

    def _publish(self, outcome: TurnOutcome) -> None:
        self.outcomes.append(outcome)
        if self._on_turn is not None:
            self._on_turn(outcome)

    # -- tool calls -----------------------------------------------------------------------------------
    def _started(self, event: ToolStarted) -> None:
        turn = self._ensure_turn(event.time_ns)
        parent = self._open_tools.get(event.parent_call_id) if event.parent_call_id else None
        self._open_tools[event.call_id] = turn.start_tool(
            event.tool, event.arguments, call_id=event.call_id, start_ns=event.time_ns or None, parent=parent)

    def _finished(self, event: ToolFinished) -> None:
        turn = self._ensure_turn(event.start_ns)
        tool = self._open_tools.pop(event.call_id, None)
        if tool is None:  # a result with no start line: record the call whole
            parent = self._open_tools.get(event.parent_call_id) if event.parent_call_id else None
            tool = turn.start_tool(event.tool, event.arguments, call_id=event.call_id,
                                   start_ns=event.start_ns or None, cwd=event.cwd, parent=parent)
        elif event.cwd:
            tool.span.set_attribute(semconv.TOOL_CWD, event.cwd)
        stopped_before = turn.stop_signal
        tool.finish(event.result, failed=event.failed, error_type=event.error_type, end_ns=event.end_ns or None)
        assert self._outcome is not None
        self._outcome.calls += 1
        self._outcome.failed += event.failed
        if turn.stop_signal is not None and stopped_before is None:
            self._outcome.stopped = turn.stop_signal
            if self._on_stop is not None:
                self._on_stop(turn.stop_signal, self._outcome)
