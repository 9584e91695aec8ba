"""The harness adapter's core: stream events become turns and calls for the chain, and spans to export.

:class:`SpanWriter` takes the neutral events of a harness reader, in order; each finished call is
built once as a :class:`~otel_toolchain.calls.ToolCall` and handed through the recorder to the chain
(which runs before the call's span ends). The turn's stop reaches the writer the moment the chain
decides it (``on_stop``), and each turn ends as a :class:`~otel_toolchain.outcome.TurnOutcome`: its
calls as a tree, its verdicts, its reports and the lines that could not be read. Used by
``otel-toolchain replay`` (whole files) and ``otel-toolchain run`` (lines as they arrive).

Not thread-safe: feed one writer from one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_toolchain import semconv
from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.harnesses.events import BadLine, Event, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.identity import Digester, Identity
from otel_toolchain.outcome import CallRecord, TurnOutcome, summary
from otel_toolchain.recorder import AgentRecorder, ToolSpan, TurnRecording
from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport
from otel_toolchain.turn import TurnObserver

__all__ = ["SpanWriter", "TurnOutcome"]

_IDENTITY = Identity()


class _Watch(TurnObserver):
    """Hears of the open turn's verdicts and puts them on its outcome as they happen."""

    def __init__(self, writer: SpanWriter, outcome: TurnOutcome) -> None:
        self._writer = writer
        self._outcome = outcome

    def on_stop(self, signal: StopSignal) -> None:
        self._outcome.stopped = signal
        if self._writer._on_stop is not None:
            self._writer._on_stop(signal, self._outcome)

    def on_nudge(self, signal: NudgeSignal) -> None:
        self._outcome.nudges.append(signal)

    def on_report(self, report: TurnReport) -> None:
        self._outcome.reports[report.plugin] = report.value


class SpanWriter:
    """Turns one run's events into calls and spans; ``on_stop`` fires the moment a turn is stopped."""

    def __init__(
        self,
        recorder: AgentRecorder,
        *,
        source: str,
        harness: str,
        on_stop: Callable[[StopSignal, TurnOutcome], None] | None = None,
        on_turn: Callable[[TurnOutcome], None] | None = None,
        links: list[Any] | None = None,
        attempt: int = 1,
    ) -> None:
        self._recorder = recorder
        self.source = source
        self.harness = harness
        self._on_stop = on_stop
        self._on_turn = on_turn
        self._links = links
        self._attempt = attempt
        chain = recorder.toolchain
        self._digester = chain.digester if chain is not None else Digester()
        self.outcomes: list[TurnOutcome] = []
        self._turn: TurnRecording | None = None
        self._outcome: TurnOutcome | None = None
        self._open_tools: dict[str, tuple[ToolSpan, CallRecord]] = {}
        self._pending_bad: list[BadLine] = []

    @property
    def current(self) -> TurnOutcome | None:
        """The outcome of the turn now open, if any."""
        return self._outcome

    def handle(self, event: Event) -> None:
        """Record one event. Never raises for odd orders: a call without a turn opens one."""
        if isinstance(event, ToolFinished):
            self._finished(event)
        elif isinstance(event, ToolStarted):
            self._started(event)
        elif isinstance(event, BadLine):
            (self._outcome.bad_lines if self._outcome else self._pending_bad).append(event)
        elif isinstance(event, TurnStarted):
            self._end_turn(None)
            self._start_turn(event.session_id, event.model, event.time_ns)
        elif isinstance(event, Retry):
            self._ensure_turn(event.time_ns).retry(event.attempt, reason=event.reason, time_ns=event.time_ns)
        elif isinstance(event, TurnEnded):
            self._end_turn(event)

    def close(self) -> list[TurnOutcome]:
        """End whatever is still open (the input ended); returns every turn's outcome."""
        self._end_turn(None)
        if self._pending_bad:  # bad lines with no turn at all still have to be reported
            outcome = TurnOutcome(self.source, self.harness, bad_lines=self._pending_bad, attempt=self._attempt)
            self._pending_bad = []
            self._publish(outcome)
        return self.outcomes

    # -- turns ----------------------------------------------------------------------------------------
    def _start_turn(self, session_id: str | None, model: str | None, time_ns: int) -> TurnRecording:
        outcome = TurnOutcome(self.source, self.harness, session_id=session_id, bad_lines=self._pending_bad,
                              attempt=self._attempt, name=semconv.agent_span_name(self.harness))
        self._pending_bad = []
        self._turn = self._recorder.start_turn(
            self.harness, conversation_id=session_id, model=model, start_ns=time_ns or None,
            attributes={semconv.HARNESS: self.harness}, links=self._links, observer=_Watch(self, outcome),
        )
        outcome.trace_id, outcome.span_id = self._turn.trace_id, self._turn.span_id
        self._outcome = outcome
        return self._turn

    def _ensure_turn(self, time_ns: int) -> TurnRecording:
        return self._turn if self._turn is not None else self._start_turn(None, None, time_ns)

    def _end_turn(self, event: TurnEnded | None) -> None:
        turn, outcome = self._turn, self._outcome
        if turn is None or outcome is None:
            return
        end_ns = event.time_ns if event is not None and event.time_ns else None
        for call_id in list(self._open_tools):  # calls a dead run never finished
            tool, record = self._open_tools.pop(call_id)
            call = ToolCall(tool.tool, tool.arguments, None, True, "interrupted", call_id, tool.cwd, tool.start_ns,
                            end_ns or tool.start_ns, turn.trace_id, tool.span.get_span_context().span_id)
            self._record(outcome, record, call, tool.end(call))
        attributes: dict[str, Any] = {}
        if event is not None:
            if event.session_id and not outcome.session_id:
                outcome.session_id = event.session_id
                attributes[semconv.GEN_AI_CONVERSATION_ID] = event.session_id
            if event.usage is not None:
                attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] = event.usage.input_tokens
                attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = event.usage.output_tokens
                outcome.tokens = event.usage.input_tokens + event.usage.output_tokens
            if event.model:
                attributes[semconv.GEN_AI_RESPONSE_MODEL] = event.model
        failed = event.is_error if event is not None else True
        turn.end(end_ns, failed=failed, error_type="harness_error" if event is not None else "interrupted",
                 attributes=attributes)
        if turn.turn is not None and turn.turn.shadow_stopped is not None:  # the chain tells observers no shadow stop
            outcome.shadow_stopped = turn.turn.shadow_stopped
        self._turn, self._outcome = None, None
        self._publish(outcome)

    def _publish(self, outcome: TurnOutcome) -> None:
        self.outcomes.append(outcome)
        if self._on_turn is not None:
            self._on_turn(outcome)

    # -- tool calls -----------------------------------------------------------------------------------
    def _started(self, event: ToolStarted) -> None:
        if event.call_id in self._open_tools:  # started twice: one span, which its one end ends
            return
        turn = self._ensure_turn(event.time_ns)
        parent = self._open_tools.get(event.parent_call_id) if event.parent_call_id else None
        span = turn.start_tool(event.tool, event.arguments, call_id=event.call_id, start_ns=event.time_ns or None,
                               parent=parent[0] if parent else None)
        record = CallRecord(0, event.tool, "", 0, False, None, event.call_id)
        assert self._outcome is not None
        (parent[1].children if parent else self._outcome.tree).append(record)
        self._open_tools[event.call_id] = (span, record)

    def _finished(self, event: ToolFinished) -> None:
        turn = self._ensure_turn(event.start_ns)
        if event.tokens is not None:
            turn.set_tokens(event.tokens)
        outcome = self._outcome
        assert outcome is not None
        opened = self._open_tools.pop(event.call_id, None)
        call = ToolCall(event.tool, event.arguments, event.result, event.failed, event.error_type, event.call_id,
                        event.cwd, event.start_ns, event.end_ns, turn.trace_id)
        if opened is None:  # a result with no start line: record the call whole
            parent = self._open_tools.get(event.parent_call_id) if event.parent_call_id else None
            record = CallRecord(0, event.tool, "", 0, False, None, event.call_id)
            (parent[1].children if parent else outcome.tree).append(record)
            tags = turn.record(call, parent=parent[0] if parent else None)
        else:
            tool, record = opened
            call = call._replace(span_id=tool.span.get_span_context().span_id)
            tags = tool.end(call)
        self._record(outcome, record, call, tags)

    def _record(self, outcome: TurnOutcome, record: CallRecord, call: ToolCall, tags: Any) -> None:
        outcome.calls += 1
        outcome.failed += call.failed
        record.index = outcome.calls
        record.cls = tags.get("class", "") if tags else ""
        record.ms = call.duration_ms
        record.failed = call.failed
        record.error_type = call.error_type
        if self._recorder.capture_content:
            record.what = summary(call.arguments)
        else:
            record.what = "#" + self._digester.of_identity(_IDENTITY.key(call))[:8]
