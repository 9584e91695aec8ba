"""The chain: plugins in manifest order, run as one OTel SDK span processor.

Span time is quiet: every call into plugin or listener code is guarded (``Exception`` only), logged
once per plugin and counted, so a plugin that raises never reaches the agent, never stops the
plugins after it and never keeps a span from the exporters. ``strict=True`` re-raises, for tests.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Status, StatusCode

from otel_toolchain import semconv
from otel_toolchain._identity import Canonicaliser, Digester
from otel_toolchain._recognise.content import ContentNotes
from otel_toolchain._recognise.spans import (
    Role,
    ToolRead,
    attributes_of,
    failure_of,
    is_decided,
    read_tool_call,
    retries_from,
    role_of,
)
from otel_toolchain._recognise.tracker import Live, TurnIndex, mark_agent
from otel_toolchain._telemetry import ChainInstruments, make_telemetry
from otel_toolchain.plugin import Telemetry, ToolPlugin
from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport
from otel_toolchain.turn import Turn, TurnSink

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from otel_toolchain.calls import Retry

__all__ = ["Toolchain"]

_log = logging.getLogger("otel_toolchain")
_CHAIN: Final = "<chain>"
_RECENT_LIMIT: Final = 1024


class Toolchain(SpanProcessor, TurnSink):
    """An OTel ``SpanProcessor`` that runs tool plugins over the tool calls of each turn.

    A turn is the outermost agent span above a tool span, else the trace's root span (``_turns``).
    Spans that say what they are only before they end (kind included) are read again then.
    Per-turn state is keyed by (trace id, turn span id), guarded by locks, freed when the turn span
    ends, and bounded: beyond ``max_open_turns`` the oldest open turn is evicted and counted.

    Listeners (``on_stop``, ``on_nudge``, ``on_report``) run synchronously on the thread that ended
    the span that triggered them; they must not block for long. They are guarded like plugins.
    """

    def __init__(
        self,
        plugins: Sequence[ToolPlugin] = (),
        *,
        strict: bool = False,
        max_open_turns: int = 4096,
        digest_key: bytes | None = None,
    ) -> None:
        self.plugins: tuple[ToolPlugin, ...] = tuple(plugins)
        self.strict = strict
        self._index = TurnIndex(self, max_open_turns)
        self.max_open_turns = max_open_turns
        self.digester = Digester(digest_key)
        self._canonicaliser = Canonicaliser()
        self._lock = threading.Lock()  # guards _recent_stops, plugin_errors and _logged
        self._recent_stops: OrderedDict[tuple[int, int], StopSignal] = OrderedDict()
        self._stop_listeners: list[Callable[[StopSignal], object]] = []
        self._nudge_listeners: list[Callable[[NudgeSignal], object]] = []
        self._report_listeners: list[Callable[[TurnReport], object]] = []
        self._logged: set[str] = set()
        self._content_notes = ContentNotes()
        self.telemetry = Telemetry.disabled()
        self._instruments = ChainInstruments(self.telemetry.meter, self.plugins)
        self.evicted = 0
        self.plugin_errors = 0
        for plugin in self.plugins:
            self._guarded(plugin.name, "setup", plugin.setup, self.telemetry)

    # -- wiring ---------------------------------------------------------------------------------------
    def install(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> Toolchain:
        """Add the chain to ``tracer_provider``; metrics and events go to the other two, if given.

        Spans started before this call are not seen. Call it once, before the agent runs.
        """
        self.telemetry = make_telemetry(meter_provider, logger_provider)
        self._instruments = ChainInstruments(self.telemetry.meter, self.plugins)
        for plugin in self.plugins:
            self._guarded(plugin.name, "setup", plugin.setup, self.telemetry)
        tracer_provider.add_span_processor(self)
        return self

    def on_stop(self, listener: Callable[[StopSignal], object]) -> None:
        """Call ``listener`` once per stopped turn with its StopSignal (not for shadow verdicts)."""
        self._stop_listeners.append(listener)

    def on_nudge(self, listener: Callable[[NudgeSignal], object]) -> None:
        """Call ``listener`` with every nudge a plugin sends."""
        self._nudge_listeners.append(listener)

    def on_report(self, listener: Callable[[TurnReport], object]) -> None:
        """Call ``listener`` with every end-of-turn report."""
        self._report_listeners.append(listener)

    def stop_signal(self, trace_id: int, span_id: int) -> StopSignal | None:
        """The stop of a recent or open turn, if it was stopped."""
        with self._lock:
            return self._recent_stops.get((trace_id, span_id))

    def open_turns(self) -> list[Turn]:
        """The turns whose span has started and not ended (a snapshot)."""
        return self._index.open_turns()

    def turn_key_of(self, trace_id: int, span_id: int) -> tuple[int, int]:
        """The (trace id, span id) of the turn an open span belongs to; any other span is taken as a turn.

        With :meth:`stop_signal`, this tells code running inside a span whether its turn was stopped.
        """
        return self._index.turn_key_of((trace_id, span_id))

    def live_spans(self) -> int:
        """How many spans the chain is tracking (0 once every span has ended)."""
        return self._index.live_count()

    # -- SpanProcessor --------------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._guarded(_CHAIN, "on_start", self._start, span)

    def on_end(self, span: ReadableSpan) -> None:
        self._guarded(_CHAIN, "on_end", self._end, span)

    def shutdown(self) -> None:
        for plugin in self.plugins:
            self._guarded(plugin.name, "shutdown", plugin.shutdown)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- span bookkeeping -----------------------------------------------------------------------------
    def _start(self, span: Span) -> None:
        attrs = attributes_of(span)
        role = role_of(span.name, attrs)
        live, evicted = self._index.start(span, role)
        self._count_evicted(evicted)
        if role is Role.TOOL or (role is Role.OTHER and not is_decided(attrs)):
            self._wrap_end(span, live)

    def _count_evicted(self, evicted: int) -> None:
        if evicted:
            self.evicted += evicted
            self._instruments.turns_evicted.add(evicted)

    def _turn_of(self, live: Live) -> Turn:
        if live.turn.is_agent:  # the common case, without the index's lock
            return live.turn
        turn, evicted = self._index.turn_of(live)
        self._count_evicted(evicted)
        return turn

    def _wrap_end(self, span: Span, live: Live) -> None:
        # The SDK freezes attributes before any processor's on_end; wrapping the instance's end()
        # runs the plugins while the span is still live, after late attributes were set, so a tag
        # still reaches the exporters. Every end path looks ``end`` up on the instance.
        original = span.end

        def end(end_time: int | None = None) -> None:
            try:
                self._guarded(_CHAIN, "on_tool", self._tool_ending, span, live, end_time)
            finally:  # even a strict chain that re-raises must not leave the span unended
                original(end_time)

        span.end = end  # type: ignore[method-assign]

    def _tool_ending(self, span: Span, live: Live, end_time: int | None) -> None:
        if live.done or not span.is_recording():
            return
        if live.role is not Role.TOOL:  # it said nothing at start; it may say it is a tool by now
            if role_of(span.name, attributes_of(span)) is not Role.TOOL:
                return
            live.role = Role.TOOL
        if not self._index.claim(live):  # another thread is ending the same span
            return
        read = read_tool_call(span, end_ns=end_time, child_failure=live.child_failure)
        read.call.span = span
        self._run_tool(self._turn_of(live), read, span.instrumentation_scope)

    def _end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        key = (context.trace_id, context.span_id)
        live, parent = self._index.end(key)
        if live is None:
            return
        role = live.role if live.role is not Role.OTHER else role_of(span.name, attributes_of(span))
        if role is Role.TOOL:
            if not live.done and self._index.claim(live):  # done: its end hook already ran it
                read = read_tool_call(span, child_failure=live.child_failure)
                self._run_tool(self._turn_of(live), read, span.instrumentation_scope)
        else:
            if parent is not None and role is not Role.TURN and parent.child_failure is None:
                parent.child_failure = failure_of(span)
            retries = retries_from(span)
            if retries:
                self._run_retries(self._turn_of(live), retries)
        if live.turn.key == key:
            if role is Role.TURN:  # marked late (OpenInference marks at end): say so in the report
                mark_agent(live.turn, attributes_of(span))
            self._close_turn(live.turn)

    # -- running plugins ------------------------------------------------------------------------------
    def _run_tool(self, turn: Turn, read: ToolRead, scope: InstrumentationScope | None) -> None:
        call = read.call
        if not read.has_content:
            self._content_notes.missing(turn, scope.name if scope is not None else "", call.span_id)
        call.digester = self.digester
        call.canonicaliser = self._canonicaliser
        call.trace_id, call.span_id = call.trace_id or turn.trace_id, call.span_id
        with turn.lock:
            turn.calls += 1
            call.index = turn.calls
            for plugin in self.plugins:
                self._guarded(plugin.name, "on_tool", plugin.on_tool, call, turn)

    def _run_retries(self, turn: Turn, retries: list[Retry]) -> None:
        with turn.lock:
            for retry in retries:
                turn.retries += 1
                for plugin in self.plugins:
                    self._guarded(plugin.name, "on_retry", plugin.on_retry, retry, turn)

    def _close_turn(self, turn: Turn) -> None:
        if not self._index.close(turn):  # evicted: its state is gone, so there is nothing true to report
            return
        turn.closed = True
        if not turn.is_agent and turn.calls == 0 and turn.retries == 0:
            return  # a root span that held no tool use is not a turn anyone asked about
        with turn.lock:
            turn.span = None
            for plugin in self.plugins:
                self._guarded(plugin.name, "on_turn_end", plugin.on_turn_end, turn)

    # -- TurnSink: what plugins ask of the chain ------------------------------------------------------
    def stop(self, turn: Turn, signal: StopSignal) -> None:
        if signal.shadow:
            if turn.shadow_stopped is not None:
                return
            turn.shadow_stopped = signal
            self._mark_turn(turn, signal, semconv.SHADOW_STOP_EVENT)
            return
        if turn.stopped is not None:
            return
        turn.stopped = signal
        with self._lock:
            self._recent_stops[turn.key] = signal
            while len(self._recent_stops) > _RECENT_LIMIT:
                self._recent_stops.popitem(last=False)
        self._mark_turn(turn, signal, semconv.STOP_EVENT)
        if turn.span is not None and turn.span.is_recording():
            turn.span.set_status(Status(StatusCode.ERROR, signal.reason))
            turn.span.set_attribute(semconv.ERROR_TYPE, semconv.ERROR_TYPE_PLUGIN_PREFIX + signal.plugin)
        for listener in self._stop_listeners:
            self._guarded(signal.plugin, semconv.LISTENER_HOOK_PREFIX + "on_stop", listener, signal)

    def _mark_turn(self, turn: Turn, signal: StopSignal, event: str) -> None:
        mode = "shadow" if signal.shadow else "enforce"
        self._instruments.stops.add(
            1, {semconv.PLUGIN: signal.plugin, semconv.STOP_REASON: signal.code, semconv.STOP_MODE: mode}
        )
        if turn.span is not None and turn.span.is_recording():
            turn.span.add_event(event, _stop_event_attributes(signal))

    def nudge(self, turn: Turn, signal: NudgeSignal) -> None:
        if turn.span is not None and turn.span.is_recording():
            attributes = {semconv.PLUGIN: signal.plugin, semconv.NUDGE_MESSAGE: signal.message}
            turn.span.add_event(semconv.NUDGE_EVENT, attributes)
        for listener in self._nudge_listeners:
            self._guarded(signal.plugin, semconv.LISTENER_HOOK_PREFIX + "on_nudge", listener, signal)

    def report(self, turn: Turn, report: TurnReport) -> None:
        for listener in self._report_listeners:
            self._guarded(report.plugin, semconv.LISTENER_HOOK_PREFIX + "on_report", listener, report)

    # -- the one guard --------------------------------------------------------------------------------
    def _guarded(self, name: str, hook: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            if self.strict:
                raise
            with self._lock:
                self.plugin_errors += 1
                first = name not in self._logged
                self._logged.add(name)
            self._instruments.plugin_errors.add(1, {semconv.PLUGIN: name, semconv.HOOK: hook})
            if first:  # once per plugin: a broken plugin raises on every call
                who = "a listener of plugin" if hook.startswith(semconv.LISTENER_HOOK_PREFIX) else "plugin"
                _log.exception("otel_toolchain %s %r raised in %s; it keeps running, errors are counted",
                               who, name, hook)


def _stop_event_attributes(signal: StopSignal) -> dict[str, Any]:
    return {
        semconv.PLUGIN: signal.plugin,
        semconv.STOP_REASON: signal.code,
        semconv.STOP_MESSAGE: signal.reason,
        semconv.STOP_PERIOD: signal.period,
        semconv.STOP_REPEATS: signal.repeats,
        semconv.STOP_CYCLE_TOOLS: [c.tool for c in signal.cycle],
        semconv.STOP_CYCLE_CALL_IDS: [c.call_id or "" for c in signal.cycle],
        semconv.STOP_CYCLE_DIGESTS: [c.digest for c in signal.cycle],
    }
