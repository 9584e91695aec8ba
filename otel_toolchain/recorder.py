"""A small API for agents that are not traced yet: turns, tool calls and retries as GenAI spans.

Spans are created on the tracer provider the caller passes in; nothing global is set. With a
``toolchain``, each call is built once as a :class:`~otel_toolchain.calls.ToolCall` and handed to
the chain directly (the chain skips this recorder's spans as a span processor), and the turn hears
of its stop, nudges and reports as they happen. Tool arguments and results go on spans only when
content capture is on (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` or
``SPAN_AND_EVENT``, or ``capture_content=True``); the plugins see them in full either way.

A call recorded whole (:meth:`TurnRecording.tool_call`) runs through the chain before its span is
made, so the plugins' tags are among the span's first attributes; a call that starts and ends later
(:meth:`TurnRecording.start_tool`) runs through the chain as it finishes, before its span ends.

Sampling: a head sampler decides what is exported, not what is guarded: turns the sampler drops
are still run through the chain (their spans, not recording, carry no marks).

Threads: one TurnRecording may be used from several threads (tools ending on workers); each call
creates and ends its own span. Nothing here blocks beyond what the span processors and plugins do.
The recorder keeps no registry of its turns: a turn that is never ended costs only what its
caller keeps of it (and the chain bounds its own open turns).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_toolchain import semconv
from otel_toolchain._recognise.tracker import DIRECT
from otel_toolchain._telemetry import SCOPE, package_version
from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.errors import TurnStopped
from otel_toolchain.identity import canonical_json
from otel_toolchain.turn import TurnObserver

if TYPE_CHECKING:
    from otel_toolchain.chain import Toolchain
    from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport
    from otel_toolchain.turn import Turn

__all__ = ["AgentRecorder", "ToolSpan", "TurnRecording", "capture_from_environment"]

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURING: Final = frozenset({"SPAN_ONLY", "SPAN_AND_EVENT"})
_NO_TAGS: Final[Mapping[str, str]] = {}


def capture_from_environment() -> bool:
    """Whether the GenAI content-capture variable asks for content on spans."""
    return os.environ.get(CAPTURE_ENV, "").strip().upper() in _CAPTURING


def _as_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _argument_text(arguments: Any) -> str | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    return canonical_json(arguments)


def _tag_attributes(attrs: dict[str, Any], tags: Mapping[str, str]) -> None:
    for key, value in tags.items():
        attrs[semconv.TOOL_TAG_PREFIX + key] = value


class AgentRecorder:
    """Records turns on ``tracer_provider``; with ``toolchain``, the chain runs on every call."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider,
        *,
        toolchain: Toolchain | None = None,
        capture_content: bool | None = None,
    ) -> None:
        self._tracer = tracer_provider.get_tracer(SCOPE, package_version())
        self.toolchain = toolchain
        self.capture_content = capture_from_environment() if capture_content is None else capture_content

    def _start_span(self, name: str, **kwargs: Any) -> Span:
        if self.toolchain is None or not self.toolchain.processes_spans:
            return self._tracer.start_span(name, **kwargs)
        token = DIRECT.set(True)  # the chain gets these calls from us: it skips the spans as a processor
        try:
            return self._tracer.start_span(name, **kwargs)
        finally:
            DIRECT.reset(token)

    def start_turn(
        self,
        agent: str | None = None,
        *,
        conversation_id: str | None = None,
        model: str | None = None,
        start_ns: int | None = None,
        attributes: Mapping[str, Any] | None = None,
        links: list[trace.Link] | None = None,
        observer: TurnObserver | None = None,
    ) -> TurnRecording:
        """Open a turn: an ``invoke_agent`` span. End it with :meth:`TurnRecording.end`.

        ``observer`` hears of the turn's stop, nudges and reports as they happen (besides the
        recording itself, which keeps them).
        """
        attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT}
        for key, value in ((semconv.GEN_AI_AGENT_NAME, agent), (semconv.GEN_AI_CONVERSATION_ID, conversation_id),
                           (semconv.GEN_AI_REQUEST_MODEL, model)):
            if value:
                attrs[key] = value
        attrs.update(attributes or {})
        span = self._start_span(
            semconv.agent_span_name(agent), kind=SpanKind.INTERNAL, attributes=attrs, start_time=start_ns,
            links=links,
        )
        recording = TurnRecording(self, span, observer)
        if self.toolchain is not None:  # sampled out or not, the turn is guarded: the chain is not telemetry
            recording.turn = self.toolchain.open_turn(recording.trace_id, recording.span_id, agent=agent, span=span,
                                                      observer=recording)
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


class TurnRecording(TurnObserver):
    """An open turn: record its tool calls and retries, then end it.

    ``stop_signal``, ``nudges`` and ``reports`` fill in as the chain decides them.
    """

    def __init__(self, recorder: AgentRecorder, span: Span, observer: TurnObserver | None = None) -> None:
        self._recorder = recorder
        self._observer = observer
        self.span = span
        context = span.get_span_context()
        self.trace_id = context.trace_id
        self.span_id = context.span_id
        self.turn: Turn | None = None
        """The chain's turn, when the recorder has a toolchain (whether or not the span is sampled)."""
        self.stop_signal: StopSignal | None = None
        self.nudges: list[NudgeSignal] = []
        self.reports: list[TurnReport] = []

    @property
    def key(self) -> tuple[int, int]:
        return (self.trace_id, self.span_id)

    # -- TurnObserver ---------------------------------------------------------------------------------
    def on_stop(self, signal: StopSignal) -> None:
        if self.stop_signal is None:
            self.stop_signal = signal
        if self._observer is not None:
            self._observer.on_stop(signal)

    def on_nudge(self, signal: NudgeSignal) -> None:
        self.nudges.append(signal)
        if self._observer is not None:
            self._observer.on_nudge(signal)

    def on_report(self, report: TurnReport) -> None:
        self.reports.append(report)
        if self._observer is not None:
            self._observer.on_report(report)

    # -- calls ----------------------------------------------------------------------------------------
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
        start = start_ns or time.time_ns()
        attrs = self._call_attributes(tool, call_id, cwd)
        if self._recorder.capture_content and arguments is not None:
            attrs[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] = _argument_text(arguments)
        context = trace.set_span_in_context(parent.span if parent is not None else self.span)
        span = self._recorder._start_span(
            semconv.tool_span_name(tool), context=context, kind=SpanKind.INTERNAL, attributes=attrs, start_time=start,
        )
        return ToolSpan(self, span, tool=tool, arguments=arguments, call_id=call_id, cwd=cwd, start_ns=start)

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
    ) -> Mapping[str, str]:
        """Record a finished tool call; the chain runs before this returns. Returns the plugins' tags.

        ``arguments`` may be a JSON text or any JSON-able value; ``result`` text or a JSON-able value.
        """
        start = start_ns or time.time_ns()
        call = ToolCall(tool, arguments, _as_text(result), failed,
                        (error_type or semconv.ERROR_TYPE_OTHER) if failed else None, call_id, cwd, start,
                        end_ns or start, self.trace_id)
        return self.record(call, parent=parent)

    def record(self, call: ToolCall, *, parent: ToolSpan | None = None) -> Mapping[str, str]:
        """Record a call built elsewhere (a harness adapter's): the chain runs, then its span is made whole."""
        tags = self._run(call)
        attrs = self._call_attributes(call.tool, call.call_id, call.cwd)
        capture = self._recorder.capture_content
        if capture and call.arguments is not None:
            attrs[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] = _argument_text(call.arguments)
        _finish_attributes(attrs, call, tags, capture)
        context = trace.set_span_in_context(parent.span if parent is not None else self.span)
        span = self._recorder._start_span(
            semconv.tool_span_name(call.tool), context=context, kind=SpanKind.INTERNAL, attributes=attrs,
            start_time=call.start_ns or None,
        )
        if call.failed:
            span.set_status(Status(StatusCode.ERROR))
        span.end(call.end_ns or None)
        return tags

    def _call_attributes(self, tool: str, call_id: str | None, cwd: str | None) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: tool,
        }
        if call_id:
            attrs[semconv.GEN_AI_TOOL_CALL_ID] = call_id
        if cwd:
            attrs[semconv.TOOL_CWD] = cwd
        return attrs

    def set_tokens(self, tokens: int) -> None:
        """The input and output tokens the turn has used so far (a stop reports what its loop cost)."""
        if self.turn is not None:
            self.turn.tokens = tokens

    def _run(self, call: ToolCall) -> Mapping[str, str]:
        chain, turn = self._recorder.toolchain, self.turn
        if chain is None or turn is None:
            return _NO_TAGS
        return chain.tool_call(turn, call)

    def retry(self, attempt: int = 1, *, reason: str | None = None, error_type: str | None = None,
              time_ns: int | None = None) -> None:
        """Record a provider retry (a zero-length ``otel_toolchain.retry`` span in the turn)."""
        attrs: dict[str, Any] = {semconv.RETRY_ATTEMPT: attempt}
        if reason:
            attrs[semconv.RETRY_REASON] = reason
        if error_type:
            attrs[semconv.ERROR_TYPE] = error_type
        span = self._recorder._start_span(
            semconv.RETRY_SPAN_NAME, context=trace.set_span_in_context(self.span), attributes=attrs,
            start_time=time_ns,
        )
        span.end(time_ns)
        chain, turn = self._recorder.toolchain, self.turn
        if chain is not None and turn is not None:
            chain.retry(turn, Retry(attempt, reason, error_type, time_ns or 0))

    def raise_if_stopped(self) -> None:
        """Raise :class:`TurnStopped` if a plugin stopped this turn (needs a toolchain)."""
        if self.stop_signal is not None:
            raise TurnStopped(self.stop_signal)

    def end(self, end_ns: int | None = None, *, failed: bool = False, error_type: str | None = None,
            attributes: Mapping[str, Any] | None = None) -> None:
        """End the turn; the chain's end-of-turn reports arrive in ``reports`` before this returns."""
        chain, turn = self._recorder.toolchain, self.turn
        if chain is not None and turn is not None:
            chain.close_turn(turn)
        if not self.span.is_recording():  # ended already, or never recorded (sampled out)
            return
        if attributes:
            self.span.set_attributes(dict(attributes))
        if failed and self.stop_signal is None:
            self.span.set_status(Status(StatusCode.ERROR, error_type))
            self.span.set_attribute(semconv.ERROR_TYPE, error_type or semconv.ERROR_TYPE_OTHER)
        self.span.end(end_ns)


def _finish_attributes(attrs: dict[str, Any], call: ToolCall, tags: Mapping[str, str], capture: bool) -> None:
    """What a finished call adds to its span: failure or (captured) result, and the plugins' tags."""
    if call.failed:
        attrs[semconv.ERROR_TYPE] = call.error_type or semconv.ERROR_TYPE_OTHER
    elif capture and call.result is not None:
        attrs[semconv.GEN_AI_TOOL_CALL_RESULT] = call.result
    if tags:
        _tag_attributes(attrs, tags)


class ToolSpan:
    """A tool call in progress; :meth:`finish` ends it with its result."""

    def __init__(self, recording: TurnRecording, span: Span, *, tool: str, arguments: Any, call_id: str | None,
                 cwd: str | None, start_ns: int) -> None:
        self._recording = recording
        self.span = span
        self.tool = tool
        self.arguments = arguments
        self.call_id = call_id
        self.cwd = cwd
        self.start_ns = start_ns

    def finish(self, result: object = None, *, failed: bool = False, error_type: str | None = None,
               end_ns: int | None = None, cwd: str | None = None) -> Mapping[str, str]:
        """End the call; the chain runs before its span ends. Returns the plugins' tags.

        A failed call gets status ERROR and ``error.type`` (``_OTHER`` if not given).
        """
        call = ToolCall(self.tool, self.arguments, _as_text(result), failed,
                        (error_type or semconv.ERROR_TYPE_OTHER) if failed else None, self.call_id, cwd or self.cwd,
                        self.start_ns, end_ns or time.time_ns(), self._recording.trace_id,
                        self.span.get_span_context().span_id)
        return self.end(call)

    def end(self, call: ToolCall) -> Mapping[str, str]:
        """End the call with ``call``, built elsewhere from what this span started with."""
        tags = self._recording._run(call)
        if not self.span.is_recording():
            return tags
        attrs: dict[str, Any] = {}
        if call.cwd and call.cwd != self.cwd:
            attrs[semconv.TOOL_CWD] = call.cwd
        _finish_attributes(attrs, call, tags, self._recording._recorder.capture_content)
        if attrs:
            self.span.set_attributes(attrs)
        if call.failed:
            self.span.set_status(Status(StatusCode.ERROR))
        self.span.end(call.end_ns or None)
        return tags
