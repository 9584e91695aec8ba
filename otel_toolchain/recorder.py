"""A small API for agents that are not traced yet: turns, tool calls and retries as GenAI spans.

Spans are created on the tracer provider the caller passes in; nothing global is set. Tool
arguments and results go on spans only when content capture is on
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` or ``SPAN_AND_EVENT``, or
``capture_content=True``); the plugins see them in full either way.

Sampling: the SDK calls span processors only for spans that record, so the chain sees exactly the
turns a head sampler keeps. Keep head sampling at ``ALWAYS_ON`` (the default) where the chain must
guard every turn, and sample at the Collector (tail sampling) instead.

Threads: one TurnRecording may be used from several threads (tools ending on workers); each call
creates and ends its own span. Nothing here blocks beyond what the span processors do.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_toolchain import semconv
from otel_toolchain._content import Content, offered
from otel_toolchain._telemetry import SCOPE, package_version
from otel_toolchain.errors import TurnStopped

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain
    from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport

__all__ = ["AgentRecorder", "ToolSpan", "TurnRecording", "capture_from_environment"]

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURING: Final = frozenset({"SPAN_ONLY", "SPAN_AND_EVENT"})


def capture_from_environment() -> bool:
    """Whether the GenAI content-capture variable asks for content on spans."""
    return os.environ.get(CAPTURE_ENV, "").strip().upper() in _CAPTURING


def _as_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class AgentRecorder:
    """Records turns on ``tracer_provider``; with ``toolchain``, turns learn of stops and reports."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider,
        *,
        toolchain: Toolchain | None = None,
        capture_content: bool | None = None,
    ) -> None:
        self._tracer = tracer_provider.get_tracer(SCOPE, package_version())
        self.capture_content = capture_from_environment() if capture_content is None else capture_content
        self._open: dict[tuple[int, int], TurnRecording] = {}
        self._lock = threading.Lock()
        if toolchain is not None:
            toolchain.on_stop(self._deliver_stop)
            toolchain.on_nudge(self._deliver_nudge)
            toolchain.on_report(self._deliver_report)

    def start_turn(
        self,
        agent: str | None = None,
        *,
        conversation_id: str | None = None,
        model: str | None = None,
        start_ns: int | None = None,
        attributes: Mapping[str, Any] | None = None,
        links: list[trace.Link] | None = None,
    ) -> TurnRecording:
        """Open a turn: an ``invoke_agent`` span. End it with :meth:`TurnRecording.end`."""
        attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT}
        for key, value in ((semconv.GEN_AI_AGENT_NAME, agent), (semconv.GEN_AI_CONVERSATION_ID, conversation_id),
                           (semconv.GEN_AI_REQUEST_MODEL, model)):
            if value:
                attrs[key] = value
        attrs.update(attributes or {})
        span = self._tracer.start_span(
            semconv.agent_span_name(agent), kind=SpanKind.INTERNAL, attributes=attrs, start_time=start_ns,
            links=links,
        )
        recording = TurnRecording(self, span)
        with self._lock:
            self._open[recording.key] = recording
        return recording

    @contextmanager
    def turn(self, agent: str | None = None, **kwargs: Any) -> Iterator[TurnRecording]:
        """A turn as a context manager; its span is current inside, and ends on exit.

        An exception leaving the block marks the turn failed (``error.type`` = its class name).
        """
        recording = self.start_turn(agent, **kwargs)
        try:
            with trace.use_span(recording.span, end_on_exit=False, record_exception=False,
                                set_status_on_exception=False):
                yield recording
        except BaseException as exc:
            recording.end(failed=True, error_type=type(exc).__qualname__)
            raise
        recording.end()

    def _forget(self, recording: TurnRecording) -> None:
        with self._lock:
            self._open.pop(recording.key, None)

    def _find(self, trace_id: int, span_id: int) -> TurnRecording | None:
        with self._lock:
            return self._open.get((trace_id, span_id))

    def _deliver_stop(self, signal: StopSignal) -> None:
        recording = self._find(signal.trace_id, signal.span_id)
        if recording is not None and recording.stop_signal is None:
            recording.stop_signal = signal

    def _deliver_nudge(self, signal: NudgeSignal) -> None:
        recording = self._find(signal.trace_id, signal.span_id)
        if recording is not None:
            recording.nudges.append(signal)

    def _deliver_report(self, report: TurnReport) -> None:
        recording = self._find(report.trace_id, report.span_id)
        if recording is not None:
            recording.reports.append(report)


class TurnRecording:
    """An open turn: record its tool calls and retries, then end it."""

    def __init__(self, recorder: AgentRecorder, span: Span) -> None:
        self._recorder = recorder
        self.span = span
        context = span.get_span_context()
        self.trace_id = context.trace_id
        self.span_id = context.span_id
        self.stop_signal: StopSignal | None = None
        self.nudges: list[NudgeSignal] = []
        self.reports: list[TurnReport] = []

    @property
    def key(self) -> tuple[int, int]:
        return (self.trace_id, self.span_id)

    def start_tool(
        self,
        tool: str,
        arguments: object = None,
        *,
        call_id: str | None = None,
        start_ns: int | None = None,
        cwd: str | None = None,
        parent: ToolSpan | None = None,
    ) -> ToolSpan:
        """Open a tool call whose result comes later (``parent`` nests a sub-agent's call)."""
        attrs: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: tool,
        }
        if call_id:
            attrs[semconv.GEN_AI_TOOL_CALL_ID] = call_id
        if cwd:
            attrs[semconv.TOOL_CWD] = cwd
        text = _as_text(arguments)
        if self._recorder.capture_content and text is not None:
            attrs[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        context = trace.set_span_in_context(parent.span if parent is not None else self.span)
        span = self._recorder._tracer.start_span(
            semconv.tool_span_name(tool), context=context, kind=SpanKind.INTERNAL, attributes=attrs,
            start_time=start_ns,
        )
        return ToolSpan(span, text, capture=self._recorder.capture_content)

    def tool_call(
        self,
        tool: str,
        arguments: object = None,
        *,
        result: object = None,
        failed: bool = False,
        error_type: str | None = None,
        call_id: str | None = None,
        start_ns: int | None = None,
        end_ns: int | None = None,
        cwd: str | None = None,
        parent: ToolSpan | None = None,
    ) -> None:
        """Record a finished tool call. The chain runs before this returns."""
        tool_span = self.start_tool(tool, arguments, call_id=call_id, start_ns=start_ns, cwd=cwd, parent=parent)
        tool_span.finish(result, failed=failed, error_type=error_type, end_ns=end_ns if end_ns else start_ns)

    def retry(self, attempt: int = 1, *, reason: str | None = None, error_type: str | None = None,
              time_ns: int | None = None) -> None:
        """Record a provider retry (a zero-length ``otel_toolchain.retry`` span in the turn)."""
        attrs: dict[str, Any] = {semconv.RETRY_ATTEMPT: attempt}
        if reason:
            attrs[semconv.RETRY_REASON] = reason
        if error_type:
            attrs[semconv.ERROR_TYPE] = error_type
        span = self._recorder._tracer.start_span(
            semconv.RETRY_SPAN_NAME, context=trace.set_span_in_context(self.span), attributes=attrs,
            start_time=time_ns,
        )
        span.end(time_ns)

    def raise_if_stopped(self) -> None:
        """Raise :class:`TurnStopped` if a plugin stopped this turn (needs a toolchain)."""
        if self.stop_signal is not None:
            raise TurnStopped(self.stop_signal)

    def end(self, end_ns: int | None = None, *, failed: bool = False, error_type: str | None = None,
            attributes: Mapping[str, Any] | None = None) -> None:
        """End the turn; the chain's end-of-turn reports arrive in ``reports`` before this returns."""
        if not self.span.is_recording():  # ended already, or never recorded (sampled out)
            self._recorder._forget(self)
            return
        if attributes:
            self.span.set_attributes(dict(attributes))
        if failed and self.stop_signal is None:
            self.span.set_status(Status(StatusCode.ERROR, error_type))
            self.span.set_attribute(semconv.ERROR_TYPE, error_type or semconv.ERROR_TYPE_OTHER)
        self.span.end(end_ns)
        self._recorder._forget(self)


class ToolSpan:
    """A tool call in progress; :meth:`finish` ends it with its result."""

    def __init__(self, span: Span, arguments: str | None, *, capture: bool) -> None:
        self.span = span
        self._arguments = arguments
        self._capture = capture

    def finish(self, result: object = None, *, failed: bool = False, error_type: str | None = None,
               end_ns: int | None = None) -> None:
        """End the call. A failed call gets status ERROR and ``error.type`` (``_OTHER`` if not given)."""
        if not self.span.is_recording():
            return
        text = _as_text(result)
        if failed:
            self.span.set_status(Status(StatusCode.ERROR))
            self.span.set_attribute(semconv.ERROR_TYPE, error_type or semconv.ERROR_TYPE_OTHER)
        elif self._capture and text is not None:
            self.span.set_attribute(semconv.GEN_AI_TOOL_CALL_RESULT, text)
        with offered(Content(self.span.get_span_context().span_id, self._arguments, text)):
            self.span.end(end_ns)
