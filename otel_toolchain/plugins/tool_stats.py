"""``tool_stats``: the turn's tool use as metrics and, at the end of the turn, one report.

The report is the seed's object, exactly::

    {"calls": 37, "retries": 4, "longest_fail_streak": 2,
     "tools": {"Bash": {"calls": 24, "failed": 3, "ms": 81234}, ...},
     "classes": {"build": 9, "exec": 15, "read": 11, "write": 2}}

It goes to the chain's report listeners and out as an OTel event (a log record named
``otel_toolchain.tool_stats``, tied to the turn span). ``classes`` counts the ``class`` tag that
``classify`` puts on each call, so place ``classify`` before ``tool_stats``; untagged calls count
as ``other``.

Metrics cost more than a span would allow per call, so counts are kept in plain Python: per turn,
folded into the plugin's totals at the end of the turn and every ``flush_every`` calls (so a long
turn still shows up while it runs), and the totals are read by an observable counter when the
metric reader collects. A turn costs the metrics nothing but that fold; the totals hold at most
``MAX_SERIES`` (tool, class, failure) keys, the rest counted under ``otel.metric.overflow = true``
as the SDK does past its cardinality limit. Per-call durations are left to the spans by default:
the Collector's span-metrics connector (in collector-config/) makes the duration histogram from
them. ``duration_histogram = true`` records ``otel_toolchain.tool.duration`` here too, each
point with its tool span's context (the turn's, for calls handed in without a span), so
histogram exemplars link to the span.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.metrics import CallbackOptions, Observation
from pydantic import BaseModel, ConfigDict, Field

from otel_toolchain import semconv
from otel_toolchain._input.lines import valid_text
from otel_toolchain.plugin import Telemetry, ToolPlugin

if TYPE_CHECKING:
    from otel_toolchain.calls import Retry, ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["MAX_SERIES", "ToolStats", "ToolStatsConfig"]

MAX_SERIES: Final = 2000  # the SDK's default cardinality limit per metric
_OVERFLOW: Final = ("", "", False)


class ToolStatsConfig(BaseModel):
    """Settings of ``tool_stats`` as the manifest gives them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flush_every: int = Field(default=256, ge=1, description="Calls between metric flushes within a turn.")
    duration_histogram: bool = Field(
        default=False, description="Record otel_toolchain.tool.duration here (the costliest metric; by default "
        "the Collector's span_metrics connector computes durations from the spans).")


class _Stats:
    """One turn's counts. Per call: two dict updates and the failure streak; the rest at a flush."""

    __slots__ = ("counts", "fail_streak", "longest_fail_streak", "ns", "pending", "totals", "unflushed")

    def __init__(self) -> None:
        self.unflushed = 0
        self.fail_streak = 0
        self.longest_fail_streak = 0
        self.counts: dict[tuple[str, str, bool], int] = {}
        """(tool, class, failed) -> calls since the last flush."""
        self.totals: dict[tuple[str, str, bool], int] = {}
        """(tool, class, failed) -> calls flushed so far."""
        self.ns: dict[str, int] = {}
        """tool -> nanoseconds spent."""
        self.pending: list[tuple[str, str, float, int, int]] = []
        """What a duration point needs, when the plugin records durations."""


class ToolStats(ToolPlugin):
    """Counts each turn's calls, failures, time and classes; see the module docstring."""

    name: ClassVar[str] = "tool_stats"
    Config: ClassVar[type[BaseModel]] = ToolStatsConfig

    def __init__(self, flush_every: int = 256, duration_histogram: bool = False) -> None:
        settings = ToolStatsConfig(flush_every=flush_every, duration_histogram=duration_histogram)
        self.flush_every = settings.flush_every
        self.duration_histogram = settings.duration_histogram
        self.setup(Telemetry.disabled())

    def describe(self) -> dict[str, Any]:
        return {"flush_every": self.flush_every, "duration_histogram": self.duration_histogram}

    def setup(self, telemetry: Telemetry) -> None:
        meter = telemetry.meter
        self._logger = telemetry.logger
        # A fresh total per set-up: the counter is new on this meter, so what it reports starts here.
        self._totals: dict[tuple[str, str, bool], int] = {}
        self._totals_lock = threading.Lock()
        meter.create_observable_counter(
            semconv.METRIC_TOOL_CALLS, callbacks=[self._observe_calls], unit="{call}",
            description="Tool calls, by tool, class and failure.",
        )
        self._duration = meter.create_histogram(
            semconv.METRIC_TOOL_DURATION, unit="s", description="Time from a tool call to its result.",
            explicit_bucket_boundaries_advisory=list(semconv.TOOL_DURATION_BUCKETS),
        )
        self._retries = meter.create_counter(semconv.METRIC_RETRIES, unit="{retry}", description="Provider retries.")
        self._fail_streaks = meter.create_histogram(
            semconv.METRIC_TURN_FAIL_STREAK, unit="{call}", description="Longest run of failed calls in a turn.",
            explicit_bucket_boundaries_advisory=list(semconv.COUNT_BUCKETS),
        )

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        stats = turn.states.get(self)
        if stats is None:
            stats = turn.states[self] = _Stats()
        tool, failed = call[0], call[3]
        key = (tool, turn.tags.get("class", "other"), failed)
        counts = stats.counts
        counts[key] = counts.get(key, 0) + 1
        spent = call[8] - call[7]
        if spent > 0:
            stats.ns[tool] = stats.ns.get(tool, 0) + spent
        if failed:
            stats.fail_streak += 1
            if stats.fail_streak > stats.longest_fail_streak:  # noqa: PLR1730 (no call on the hot path)
                stats.longest_fail_streak = stats.fail_streak
        elif stats.fail_streak:
            stats.fail_streak = 0
        if self.duration_histogram:
            stats.pending.append((valid_text(tool), key[1], max(0, spent) / 1e9, call.trace_id or turn.trace_id,
                                  call.span_id or turn.span_id))
        stats.unflushed += 1
        if stats.unflushed >= self.flush_every or turn.closed:  # a late call: no turn end will flush it
            self._flush(stats)

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        self._retries.add(1)

    def on_turn_end(self, turn: Turn) -> None:
        stats = turn.state_of(self, _Stats)
        self._flush(stats)
        self._fail_streaks.record(stats.longest_fail_streak)
        value = self.summary(stats, turn.retries)
        turn.report(self.name, self.name, value)
        context = trace.set_span_in_context(trace.NonRecordingSpan(_span_context(turn.trace_id, turn.span_id)))
        self._logger.emit(
            event_name=semconv.TOOL_STATS_EVENT, body=value, context=context, severity_number=SeverityNumber.INFO,
            attributes={semconv.PLUGIN: self.name},
        )

    @staticmethod
    def summary(stats: _Stats, retries: int) -> dict[str, Any]:
        """The seed's tool_stats object for one turn (after a flush)."""
        tools: dict[str, dict[str, int]] = {}
        classes: dict[str, int] = {}
        for (tool, cls, failed), count in stats.totals.items():
            per_tool = tools.setdefault(tool, {"calls": 0, "failed": 0, "ms": stats.ns.get(tool, 0) // 1_000_000})
            per_tool["calls"] += count
            per_tool["failed"] += count if failed else 0
            classes[cls] = classes.get(cls, 0) + count
        return {
            "calls": sum(stats.totals.values()),
            "retries": retries,
            "longest_fail_streak": stats.longest_fail_streak,
            "tools": tools,
            "classes": dict(sorted(classes.items())),
        }

    def _observe_calls(self, options: CallbackOptions) -> Iterable[Observation]:
        """The reader's callback (its collection thread): every total so far, one point per key."""
        with self._totals_lock:
            totals = list(self._totals.items())
        for (tool, cls, failed), count in totals:
            if (tool, cls, failed) == _OVERFLOW:
                yield Observation(count, {semconv.OTEL_METRIC_OVERFLOW: True})
            else:
                yield Observation(count, {semconv.GEN_AI_TOOL_NAME: tool, semconv.TOOL_CLASS: cls,
                                          semconv.TOOL_FAILED: "true" if failed else "false"})

    def _flush(self, stats: _Stats) -> None:
        totals = self._totals
        with self._totals_lock:
            for key, count in stats.counts.items():
                series = key if key in totals else _new_series(totals, key)
                totals[series] = totals.get(series, 0) + count
        for key, count in stats.counts.items():
            stats.totals[key] = stats.totals.get(key, 0) + count
        stats.counts.clear()
        stats.unflushed = 0
        for tool, cls, seconds, trace_id, span_id in stats.pending:
            context = trace.set_span_in_context(trace.NonRecordingSpan(_span_context(trace_id, span_id)))
            self._duration.record(seconds, {semconv.GEN_AI_TOOL_NAME: tool, semconv.TOOL_CLASS: cls}, context=context)
        stats.pending.clear()


def _new_series(totals: dict[tuple[str, str, bool], int], key: tuple[str, str, bool]) -> tuple[str, str, bool]:
    """The series a key not yet in ``totals`` counts under: its text made valid UTF-8 (a lone surrogate
    handed in through the Python API would fail the export), or the overflow series past MAX_SERIES."""
    tool, cls, failed = key
    series = (valid_text(tool), valid_text(cls), failed)
    if series not in totals and len(totals) >= MAX_SERIES:  # read at call time: tests lower it
        return _OVERFLOW
    return series


def _span_context(trace_id: int, span_id: int) -> trace.SpanContext:
    return trace.SpanContext(trace_id, span_id, is_remote=False, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
