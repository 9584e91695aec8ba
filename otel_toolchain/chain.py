"""The chain: plugins in manifest order over the tool calls of each turn.

Calls reach it one way, :meth:`Toolchain.tool_call`, from whoever built them: the recorder API,
the harness adapters, the OTLP receiver, the Claude Code hook, and, as an OTel SDK span
processor, the spans of other instrumentations (read in :mod:`otel_toolchain._recognise`).
A turn is opened with :meth:`Toolchain.open_turn` and ended with :meth:`Toolchain.close_turn`.

Span time is quiet: every call into plugin, listener or observer code is guarded, logged once
per plugin and counted, so a plugin that raises never reaches the agent, never stops the plugins
after it and never keeps a span from the exporters. The guard contains every ``BaseException``
(``SystemExit``, ``GeneratorExit`` and custom subclasses included) but ``KeyboardInterrupt``,
which is the user's and goes through (the turn stays consistent: its call is counted, its later
plugins are skipped, and a turn being closed is closed and freed). ``strict=True`` re-raises
everything, for tests.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.trace import Span, Status, StatusCode

from otel_toolchain import semconv
from otel_toolchain._recognise.content import ContentNotes
from otel_toolchain._recognise.tracker import DIRECT, SpanPath
from otel_toolchain._telemetry import ChainInstruments, Telemetry, make_telemetry
from otel_toolchain.identity import Digester, IdentityKey
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport
from otel_toolchain.turn import Turn, TurnObserver, TurnSink

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    from otel_toolchain.calls import Retry, ToolCall

__all__ = ["Toolchain"]

_log = logging.getLogger("otel_toolchain")
_CHAIN: Final = "<chain>"
_RECENT_LIMIT: Final = 1024
_NO_TAGS: Final[Mapping[str, str]] = {}


def _overrides(plugins: Iterable[ToolPlugin], hook: str) -> tuple[ToolPlugin, ...]:
    base = getattr(ToolPlugin, hook)
    return tuple(p for p in plugins if getattr(type(p), hook, base) is not base)


class Toolchain(SpanProcessor, TurnSink):
    """Runs tool plugins over the tool calls of each turn; also an OTel ``SpanProcessor``.

    Open turns are bounded: beyond ``max_open_turns`` the oldest is evicted and counted; its later
    calls are counted as evicted calls and run through no plugin (they would make a new turn of
    their own otherwise, with none of the turn's history).

    Listeners (``on_stop``, ``on_nudge``, ``on_report``) and a turn's observer run synchronously on
    the thread that handed in the call that triggered them, which is the agent's own thread: a
    listener that sleeps or waits on I/O blocks the agent for that long. Hand slow work to a
    thread or queue of your own.
    """

    def __init__(
        self,
        plugins: Sequence[ToolPlugin] = (),
        *,
        strict: bool = False,
        max_open_turns: int = 4096,
        digest_key: bytes | None = None,
    ) -> None:
        if max_open_turns < 1:
            raise ValueError("max_open_turns must be at least 1")
        self.plugins: tuple[ToolPlugin, ...] = tuple(plugins)
        self._on_tool = tuple((p.name, p.on_tool) for p in _overrides(self.plugins, "on_tool"))
        self._retry_plugins = _overrides(self.plugins, "on_retry")
        self._end_plugins = _overrides(self.plugins, "on_turn_end")
        self.strict = strict
        self.max_open_turns = max_open_turns
        self.digester = Digester(digest_key)
        self._lock = threading.Lock()  # guards _open, _recent_stops, plugin_errors and _logged
        self._open: OrderedDict[tuple[int, int], Turn] = OrderedDict()
        self._recent_stops: OrderedDict[tuple[int, int], StopSignal] = OrderedDict()
        self._stop_listeners: list[Callable[[StopSignal], object]] = []
        self._nudge_listeners: list[Callable[[NudgeSignal], object]] = []
        self._report_listeners: list[Callable[[TurnReport], object]] = []
        self._logged: set[str] = set()
        self._content_notes = ContentNotes()
        self._spans = SpanPath(self, max_live_spans=64 * max_open_turns)
        self.processes_spans = False
        """The chain was added to a tracer provider: code that hands calls in directly marks its spans."""
        self.evicted = 0
        self.evicted_calls = 0
        self.plugin_errors = 0
        self.telemetry = Telemetry.disabled()
        self._setup(self.telemetry)

    # -- wiring ---------------------------------------------------------------------------------------
    def install(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> Toolchain:
        """Put metrics and events on the given providers, and add the chain to ``tracer_provider``.

        Without a tracer provider the chain sees only the calls handed to it directly. Spans
        started before this call are not seen. Call it once, before the agent runs.
        """
        self.telemetry = make_telemetry(meter_provider, logger_provider)
        self._setup(self.telemetry)
        if tracer_provider is not None:
            self.processes_spans = True
            tracer_provider.add_span_processor(self)
        return self

    def _setup(self, telemetry: Telemetry) -> None:
        self._instruments = ChainInstruments(telemetry.meter, ((p.name, p.stop_codes) for p in self.plugins))
        for plugin in self.plugins:
            self._guarded(plugin.name, "setup", plugin.setup, telemetry)

    def on_stop(self, listener: Callable[[StopSignal], object]) -> None:
        """Call ``listener`` once per stopped turn with its StopSignal (not for shadow verdicts).

        The listener runs on the agent's thread, inside the call that completed the stop: it
        must not block (a listener that sleeps delays the agent by as much). What it raises is
        contained like a plugin's.
        """
        self._stop_listeners.append(listener)

    def on_nudge(self, listener: Callable[[NudgeSignal], object]) -> None:
        """Call ``listener`` with every nudge a plugin sends."""
        self._nudge_listeners.append(listener)

    def on_report(self, listener: Callable[[TurnReport], object]) -> None:
        """Call ``listener`` with every end-of-turn report."""
        self._report_listeners.append(listener)

    # -- the direct entry points ----------------------------------------------------------------------
    def open_turn(self, trace_id: int, span_id: int, *, agent: str | None = None, span: Span | None = None,
                  observer: TurnObserver | None = None, is_agent: bool = True) -> Turn:
        """Open a turn; ``span`` is its live span, if there is one (a stop marks it).

        May be called from any thread; takes the chain's lock briefly.
        """
        turn = Turn(trace_id, span_id, is_agent=is_agent, agent=agent, span=span, sink=self, observer=observer)
        evicted: list[Turn] = []
        with self._lock:
            self._open[turn.key] = turn
            while len(self._open) > self.max_open_turns:
                evicted.append(self._open.popitem(last=False)[1])
        for old in evicted:
            old.evicted = True
            old.span = old.observer = None  # kept as a tombstone by the span path: hold nothing big
            old.drop_states()
            self._spans.drop_turn(old.key)
        if evicted:
            self.evicted += len(evicted)
            self._instruments.turns_evicted.add(len(evicted))
        if span is not None and self.processes_spans:  # only spans seen as a processor can nest under it
            self._spans.adopt(turn.key, turn, span)
        return turn

    def tool_call(self, turn: Turn, call: ToolCall, *, source: str = "") -> Mapping[str, str]:
        """Run ``call`` through the plugins, in order; returns what they tagged it with.

        ``source`` names where the call came from (an instrumentation scope, a service) for the
        one-time hint when calls carry no content. Blocks only for as long as the plugins do.
        """
        if turn.evicted:
            self._count_evicted_call()
            return _NO_TAGS
        if not call.has_content:
            self._content_notes.missing(turn, source, call.span_id)
        tags: dict[str, str] = {}
        lock = turn.lock
        lock.acquire()  # not ``with``: on CPython 3.11 the method calls cost half what the statement does
        try:
            turn.calls += 1
            turn.tags = tags
            for name, on_tool in self._on_tool:
                try:
                    on_tool(call, turn)
                except KeyboardInterrupt:
                    raise
                except BaseException:  # noqa: BLE001 (the contract: nothing but KeyboardInterrupt reaches the agent)
                    self._failed(name, "on_tool")
        finally:
            lock.release()
        return tags

    def retry(self, turn: Turn, retry: Retry) -> None:
        """Hand the plugins a provider retry of ``turn``."""
        if turn.evicted:
            return
        with turn.lock:
            turn.retries += 1
            for plugin in self._retry_plugins:
                self._guarded(plugin.name, "on_retry", plugin.on_retry, retry, turn)

    def close_turn(self, turn: Turn) -> None:
        """End ``turn``: plugins report, observers hear of it, its state is freed. Idempotent."""
        with self._lock:
            open_turn = self._open.pop(turn.key, None)
        self._spans.forget(turn.key)
        if open_turn is None or turn.closed:  # evicted, or closed already: nothing true to report
            turn.closed = True
            return
        turn.closed = True
        if not turn.is_agent and turn.calls == 0 and turn.retries == 0:
            return  # a root span that held no tool use is not a turn anyone asked about
        with turn.lock:
            turn.span = None
            try:
                for plugin in self._end_plugins:
                    self._guarded(plugin.name, "on_turn_end", plugin.on_turn_end, turn)
            finally:  # a KeyboardInterrupt goes through, but the turn is closed and freed all the same
                turn.drop_states()

    def _count_evicted_call(self) -> None:
        with self._lock:
            self.evicted_calls += 1
        self._instruments.evicted_calls.add(1)

    # -- what the chain knows -------------------------------------------------------------------------
    def stop_signal(self, trace_id: int, span_id: int) -> StopSignal | None:
        """The stop of a recent or open turn, if it was stopped."""
        with self._lock:
            return self._recent_stops.get((trace_id, span_id))

    def open_turns(self) -> list[Turn]:
        """The turns opened and not closed nor evicted (a snapshot)."""
        with self._lock:
            return list(self._open.values())

    def turn_key_of(self, trace_id: int, span_id: int) -> tuple[int, int]:
        """The (trace id, span id) of the turn a live span belongs to; any other span is taken as a turn.

        With :meth:`stop_signal`, this tells code running inside a span whether its turn was stopped.
        """
        return self._spans.turn_key_of((trace_id, span_id))

    def live_spans(self) -> int:
        """How many spans the chain is tracking as a processor (0 once every span has ended)."""
        return self._spans.live_count()

    # -- SpanProcessor --------------------------------------------------------------------------------
    def on_start(self, span: SdkSpan, parent_context: Context | None = None) -> None:
        if DIRECT.get():  # a span of code that hands us its calls itself (the recorder)
            return
        self._guarded(_CHAIN, "on_start", self._spans.start, span)

    def on_end(self, span: ReadableSpan) -> None:
        if self._spans.tracks(span):
            self._guarded(_CHAIN, "on_end", self._spans.end, span)

    def shutdown(self) -> None:
        for plugin in self.plugins:
            self._guarded(plugin.name, "shutdown", plugin.shutdown)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- TurnSink: what plugins ask of the chain ------------------------------------------------------
    def stop(self, turn: Turn, signal: StopSignal) -> None:
        if signal.shadow:
            if turn.shadow_stopped is None:
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
            _mark_failed(turn.span, signal)
        hook = semconv.LISTENER_HOOK_PREFIX + "on_stop"
        if turn.observer is not None:
            self._guarded(signal.plugin, hook, turn.observer.on_stop, signal)
        for listener in self._stop_listeners:
            self._guarded(signal.plugin, hook, listener, signal)

    def _mark_turn(self, turn: Turn, signal: StopSignal, event: str) -> None:
        mode = "shadow" if signal.shadow else "enforce"
        self._instruments.stops.add(
            1, {semconv.PLUGIN: signal.plugin, semconv.STOP_REASON: signal.code, semconv.STOP_MODE: mode}
        )
        if turn.span is not None and turn.span.is_recording():
            turn.span.add_event(event, stop_event_attributes(signal))

    def nudge(self, turn: Turn, signal: NudgeSignal) -> None:
        turn.nudges.append(signal)
        if turn.span is not None and turn.span.is_recording():
            attributes = {semconv.PLUGIN: signal.plugin, semconv.NUDGE_MESSAGE: signal.message}
            turn.span.add_event(semconv.NUDGE_EVENT, attributes)
        hook = semconv.LISTENER_HOOK_PREFIX + "on_nudge"
        if turn.observer is not None:
            self._guarded(signal.plugin, hook, turn.observer.on_nudge, signal)
        for listener in self._nudge_listeners:
            self._guarded(signal.plugin, hook, listener, signal)

    def report(self, turn: Turn, report: TurnReport) -> None:
        hook = semconv.LISTENER_HOOK_PREFIX + "on_report"
        if turn.observer is not None:
            self._guarded(report.plugin, hook, turn.observer.on_report, report)
        for listener in self._report_listeners:
            self._guarded(report.plugin, hook, listener, report)

    def digest(self, key: IdentityKey) -> str:
        return self.digester.of_identity(key)

    # -- the one guard --------------------------------------------------------------------------------
    def _guarded(self, name: str, hook: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 (as in tool_call)
            self._failed(name, hook)

    def _failed(self, name: str, hook: str) -> None:
        """Count and (once per plugin and kind of hook) log the exception being handled."""
        if self.strict:
            raise  # noqa: PLE0704 (called only from an except block: re-raises what it handles)
        listener = hook.startswith(semconv.LISTENER_HOOK_PREFIX)
        with self._lock:
            self.plugin_errors += 1
            logged = f"{name}/{listener}"
            first = logged not in self._logged
            self._logged.add(logged)
        self._instruments.plugin_errors.add(1, {semconv.PLUGIN: name, semconv.HOOK: hook})
        if first:  # once: a broken plugin raises on every call
            who = "a listener of plugin" if listener else "plugin"
            _log.exception("otel_toolchain %s %r raised in %s; it keeps running, errors are counted", who, name, hook)


def _mark_failed(span: Span, signal: StopSignal) -> None:
    """Status ERROR and ``error.type`` on a stopped turn's span, kept until it ends.

    Some frameworks set OK on their agent span just before ending it (Strands, CrewAI, Agno,
    OpenInference's wrappers). The SDK keeps an OK status for good once set, so re-asserting
    ERROR after it would be ignored: instead the span's own ``set_status`` drops every status
    but ERROR from the stop on, and its ``end`` sets the stop's status once more.
    """
    stop_status = Status(StatusCode.ERROR, signal.reason)
    original_set, original_end = span.set_status, span.end
    original_set(stop_status)
    span.set_attribute(semconv.ERROR_TYPE, semconv.ERROR_TYPE_PLUGIN_PREFIX + signal.plugin)

    def set_status(status: Status | StatusCode, description: str | None = None) -> None:
        code = status.status_code if isinstance(status, Status) else status
        if code is StatusCode.ERROR:
            original_set(status, description)

    def end(end_time: int | None = None) -> None:
        original_set(stop_status)
        original_end(end_time)

    span.set_status = set_status  # type: ignore[method-assign]
    span.end = end  # type: ignore[method-assign]


def stop_event_attributes(signal: StopSignal) -> dict[str, Any]:
    """The attributes of a stop event (``otel_toolchain.turn.stop``) on the turn span."""
    return {
        semconv.PLUGIN: signal.plugin,
        semconv.STOP_REASON: signal.code,
        semconv.STOP_MESSAGE: signal.reason,
        semconv.STOP_PERIOD: signal.period,
        semconv.STOP_REPEATS: signal.repeats,
        semconv.STOP_AT_CALL: signal.at_call,
        semconv.STOP_LOOP_START: signal.loop_start,
        semconv.STOP_LOOP_CALLS: signal.loop_calls,
        semconv.STOP_LOOP_SECONDS: signal.loop_seconds,
        semconv.STOP_IGNORED_FIELDS: list(signal.ignored_fields),
        semconv.STOP_MASKED: signal.masked,
        semconv.STOP_MASKS: list(signal.masks),
        semconv.STOP_CYCLE_TOOLS: [c.tool for c in signal.cycle],
        semconv.STOP_CYCLE_CALL_IDS: [c.call_id or "" for c in signal.cycle],
        semconv.STOP_CYCLE_DIGESTS: [c.digest for c in signal.cycle],
        **({semconv.STOP_LOOP_TOKENS: signal.loop_tokens} if signal.loop_tokens is not None else {}),
        **({semconv.STOP_NOTE: signal.note} if signal.note else {}),
    }
