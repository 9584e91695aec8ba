"""The receiver's core: decoded OTLP requests in, the chain's turns and calls out, stops marked in the agent's trace.

Calls are grouped into turns (a trace, or a session for log events: see :mod:`.records`) and handed to
the chain through its direct entry points (:meth:`Toolchain.open_turn`, ``tool_call``, ``close_turn``).
A turn closes ``linger_s`` after its turn span arrives (requests can overtake each other on the way:
a Collector's sending queue exports with ten consumers at once, an exporter retries a failed request
later; a call that arrives in that time still counts; ``linger_s=0`` closes it with the request that
brought the turn span), at once when it is stopped, after ``idle_s`` without news (an agent killed
before its turn span was sent), or at :meth:`Receiver.close`. A stopped turn gets a span of its own in the
agent's trace (child of the turn span where it is known) with status ERROR, ``error.type =
tool_plugin.<plugin>`` and the stop event, so a trace view shows the stop where the loop was.

Claude Code's ``tool_result`` log events are held ``hold_s`` and dropped when the span of the same
call arrives (the span carries the result; the log event does not). Open turns, remembered call ids
and failed children are bounded.

Thread-safety: every method takes one lock; the chain's listeners run on the calling thread, under it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from google.protobuf.message import Message
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags, set_span_in_context

from otel_toolchain import semconv
from otel_toolchain.chain import Toolchain, stop_event_attributes
from otel_toolchain.receiver.records import Batch, GroupKey, Record, read_logs, read_spans
from otel_toolchain.signals import StopSignal
from otel_toolchain.turn import Turn

__all__ = ["LINGER_S", "STOP_SPAN_NAME", "Receiver", "ReceiverStats"]

_K = TypeVar("_K")
_V = TypeVar("_V")

_REMEMBERED: Final = 65_536
LINGER_S: Final = 10.0
"""How long a turn stays open after its turn span: past a Collector's first retry (5 s, up to 7.5 s)."""
STOP_SPAN_NAME: Final = semconv.STOP_MARK_SPAN


@dataclass
class ReceiverStats:
    """Counts since start (read them for tests and benchmarks; written under the receiver's lock)."""

    requests: dict[str, int] = field(default_factory=lambda: {"traces": 0, "logs": 0, "metrics": 0})
    calls: int = 0
    duplicates: int = 0
    turns_opened: int = 0
    turns_closed: int = 0
    late_calls: int = 0
    """Calls of a turn already closed (more than ``linger_s`` after its turn span, or stopped): not run."""


class _Group:
    __slots__ = ("call_ids", "ends_at", "last_seen", "turn", "turn_span_id")

    def __init__(self, turn: Turn, turn_span_id: int, now: float, ends_at: float | None) -> None:
        self.turn = turn
        self.turn_span_id = turn_span_id
        self.last_seen = now
        self.ends_at = ends_at  # linger_s after its turn span arrived; None before that
        self.call_ids: set[str] = set()


class Receiver:
    """Feeds the chain from OTLP requests; see the module docstring for the rules."""

    def __init__(self, chain: Toolchain, tracer_provider: TracerProvider | None = None, *, idle_s: float = 300.0,
                 hold_s: float = 1.5, linger_s: float = LINGER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.chain = chain
        self.idle_s = idle_s
        self.hold_s = hold_s
        self.linger_s = linger_s
        self.stats = ReceiverStats()
        self._clock = clock
        self._tracer = tracer_provider.get_tracer("otel_toolchain.receiver") if tracer_provider else None
        self._lock = threading.RLock()
        self._groups: OrderedDict[GroupKey, _Group] = OrderedDict()
        self._closed: OrderedDict[GroupKey, None] = OrderedDict()
        self._ending: OrderedDict[GroupKey, float] = OrderedDict()
        """Turns whose turn span came before any of their calls, and when they close."""
        self._span_calls: OrderedDict[str, None] = OrderedDict()
        self._span_sessions: OrderedDict[str, None] = OrderedDict()
        self._failed: OrderedDict[tuple[int, int], str] = OrderedDict()
        self._held: list[tuple[float, Record]] = []
        self.stops: list[StopSignal] = []
        self._marking = 0
        chain.on_stop(self._mark_stop)

    # -- input ---------------------------------------------------------------------------------------
    def ingest(self, signal: str, message: Message) -> None:
        """Read one decoded export request of ``signal`` (``traces``, ``logs``, ``metrics``)."""
        now = self._clock()
        with self._lock:
            self.stats.requests[signal] = self.stats.requests.get(signal, 0) + 1
            self._close_ended(now)  # a call past its turn's linger is late even if no tick came between
            if signal == "traces":
                self._spans(read_spans(message), now)
            elif signal == "logs":
                for record in read_logs(message):
                    if not record.held:
                        self._call(record, now)
                    elif not self._covered(record):
                        self._held.append((now, record))
            self.tick(now)

    def _spans(self, batch: Batch, now: float) -> None:
        for key, error in batch.failed_children.items():
            _remember(self._failed, key, error)
        for session in batch.span_sessions:
            _remember(self._span_sessions, session, None)
        for each in batch.records:
            if each.call.call_id:
                _remember(self._span_calls, each.call.call_id, None)
            failed = self._failed.get((each.call.trace_id, each.call.span_id))
            if failed is not None and not each.call.failed:  # Claude Code fails the execution child only
                each = Record(each.group, each.call._replace(failed=True, error_type=failed),  # noqa: PLW2901
                              each.turn_span_id, each.source, each.agent)
            self._call(each, now)
        self._held = [(t, r) for t, r in self._held if not self._covered(r)]
        for ended, _span_id in batch.ended:
            self._end(ended, now + self.linger_s)

    def _covered(self, record: Record) -> bool:
        """A held log event whose call came (or will come) as a span."""
        return (record.call.call_id in self._span_calls) or (record.session in self._span_sessions)

    def _end(self, key: GroupKey, ends_at: float) -> None:
        """The turn span of ``key`` arrived: close its turn at ``ends_at``."""
        group = self._groups.get(key)
        if group is not None:
            group.ends_at = ends_at if group.ends_at is None else min(group.ends_at, ends_at)
        elif key not in self._closed:
            _remember(self._ending, key, ends_at)

    def _call(self, record: Record, now: float) -> None:
        if record.group in self._closed:
            self.stats.late_calls += 1
            return
        group = self._groups.get(record.group)
        if group is None:
            turn = self.chain.open_turn(record.call.trace_id, record.turn_span_id or _span_of(record.group),
                                        agent=record.agent)
            group = self._groups[record.group] = _Group(turn, record.turn_span_id, now,
                                                        self._ending.pop(record.group, None))
            self.stats.turns_opened += 1
        call_id = record.call.call_id
        if call_id is not None:
            if call_id in group.call_ids:  # an exporter's retry, or the same call sent twice
                self.stats.duplicates += 1
                return
            group.call_ids.add(call_id)
        group.last_seen = now
        self._groups.move_to_end(record.group)
        self.stats.calls += 1
        # The stop mark's parent: the turn span where known, else the call's own span (both are the agent's).
        self._marking = group.turn_span_id or record.call.span_id
        self.chain.tool_call(group.turn, record.call, source=record.source)
        if group.turn.stopped is not None:
            self._close(record.group)  # the verdict is in: the rest of this turn is the agent dying
            _remember(self._closed, record.group, None)

    # -- time ----------------------------------------------------------------------------------------
    def tick(self, now: float | None = None) -> None:
        """Run held log events whose span did not come, and close turns idle for ``idle_s``."""
        now = self._clock() if now is None else now
        with self._lock:
            due = [r for t, r in self._held if now - t >= self.hold_s]
            self._held = [(t, r) for t, r in self._held if now - t < self.hold_s]
            for record in due:
                self._call(record, now)
            self._close_ended(now)
            for key in [k for k, g in self._groups.items() if now - g.last_seen >= self.idle_s]:
                self._close(key)

    def close(self) -> None:
        """Run every held event and close every open turn (the agent has exited)."""
        with self._lock:
            self.tick(float("inf"))

    def open_groups(self) -> list[GroupKey]:
        """The groups with an open turn (a snapshot)."""
        with self._lock:
            return list(self._groups)

    def _close_ended(self, now: float) -> None:
        """Close the turns whose linger is over; from then on their calls are late."""
        for key in [k for k, g in self._groups.items() if g.ends_at is not None and g.ends_at <= now]:
            self._close(key)
            _remember(self._closed, key, None)
        for key in [k for k, at in self._ending.items() if at <= now]:
            del self._ending[key]
            _remember(self._closed, key, None)

    def _close(self, key: GroupKey) -> None:
        group = self._groups.pop(key, None)
        if group is not None:
            self.stats.turns_closed += 1
            self.chain.close_turn(group.turn)

    # -- stops ---------------------------------------------------------------------------------------
    def _mark_stop(self, signal: StopSignal) -> None:
        self.stops.append(signal)
        parent_id = self._marking
        if self._tracer is None or not parent_id:
            return
        parent = SpanContext(signal.trace_id, parent_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        span = self._tracer.start_span(STOP_SPAN_NAME, context=set_span_in_context(NonRecordingSpan(parent)))
        span.set_attribute(semconv.ERROR_TYPE, semconv.ERROR_TYPE_PLUGIN_PREFIX + signal.plugin)
        span.add_event(semconv.STOP_EVENT, stop_event_attributes(signal))
        span.set_status(Status(StatusCode.ERROR, signal.reason))
        span.end()


def _span_of(key: GroupKey) -> int:
    """A stable non-zero id for a turn whose span is unknown (chain turns are keyed by trace and span)."""
    return (hash(key) & 0x7FFF_FFFF_FFFF_FFFF) or 1


def _remember(table: OrderedDict[_K, _V], key: _K, value: _V) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _REMEMBERED:
        table.popitem(last=False)
