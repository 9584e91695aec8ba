"""A test kit for otel_toolchain and its plugins (no pytest import; use it from any runner).

- :class:`Capture`: tracer, meter and logger providers with in-memory exporters and deterministic
  span ids, plus readers that turn what was exported into plain data to compare whole.
- :func:`make_tool_call` and :class:`FakeTurn`: drive a plugin's hooks without any provider.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.identity import parse_arguments
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.turn import Turn, TurnSink

__all__ = ["Capture", "FakeTurn", "IncrementalIdGenerator", "make_tool_call", "span_to_dict"]


class IncrementalIdGenerator(IdGenerator):
    """Trace and span ids 1, 2, 3, … so that tests can name them. Thread-safe."""

    def __init__(self) -> None:
        self._spans = itertools.count(1)
        self._traces = itertools.count(1)
        self._lock = threading.Lock()

    def generate_span_id(self) -> int:
        with self._lock:
            return next(self._spans)

    def generate_trace_id(self) -> int:
        with self._lock:
            return next(self._traces)


class Capture:
    """Providers that keep everything in memory; ``install`` puts a chain on them."""

    def __init__(self, *, deterministic_ids: bool = True) -> None:
        resource = Resource.create({"service.name": "otel_toolchain-test"})
        ids = IncrementalIdGenerator() if deterministic_ids else None
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(resource=resource, id_generator=ids)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metric_reader], resource=resource)
        self.logs = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # untyped in the SDK
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))

    def install(self, toolchain: Toolchain) -> Toolchain:
        return toolchain.install(self.tracer_provider, self.meter_provider, self.logger_provider)

    def finished_spans(self) -> list[dict[str, Any]]:
        """Every exported span as plain data, in the order they ended."""
        return [span_to_dict(span) for span in self.spans.get_finished_spans()]

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """Metric name → its points as {"attributes": …, "value": …} (histograms: count, sum, min, max)."""
        result: dict[str, list[dict[str, Any]]] = {}
        data = self.metric_reader.get_metrics_data()
        for resource_metrics in data.resource_metrics if data else ():
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    result[metric.name] = sorted(
                        (_point_to_dict(point) for point in metric.data.data_points),
                        key=lambda p: sorted(p["attributes"].items()),
                    )
        return result

    def events(self) -> list[dict[str, Any]]:
        """Every exported log record that has an event name, as plain data."""
        events = []
        for readable in self.logs.get_finished_logs():
            record = readable.log_record
            if record.event_name:
                events.append({
                    "event_name": record.event_name,
                    "body": record.body,
                    "trace_id": record.trace_id,
                    "span_id": record.span_id,
                    "attributes": dict(record.attributes or {}),
                })
        return events

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        self.logger_provider.shutdown()


def _point_to_dict(point: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"attributes": dict(point.attributes or {})}
    if hasattr(point, "bucket_counts"):
        data.update(count=point.count, sum=point.sum, min=point.min, max=point.max)
    else:
        data["value"] = point.value
    return data


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """A span as plain data: name, ids, parent, status, attributes, events (times left out)."""
    context = span.get_span_context()
    return {
        "name": span.name,
        "trace_id": context.trace_id if context else 0,
        "span_id": context.span_id if context else 0,
        "parent_id": span.parent.span_id if span.parent else None,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
    }


def make_tool_call(tool: str = "Bash", arguments: object = None, **fields: Any) -> ToolCall:
    """A ToolCall for driving plugin hooks directly; ``arguments`` may be a JSON text or any value."""
    return ToolCall(tool, parse_arguments(arguments) if isinstance(arguments, str) else arguments, **fields)


class FakeTurn(Turn):
    """A turn with no chain behind it: stops, nudges and reports are kept on it for inspection."""

    def __init__(self, trace_id: int = 1, span_id: int = 1, agent: str | None = "test") -> None:
        super().__init__(trace_id, span_id, is_agent=True, agent=agent, span=None, sink=_KeepingSink())
        self.stops: list[Any] = []
        self.call_tags: list[dict[str, str]] = []
        """The tags the plugins gave each call, in order."""

    def run(self, plugins: Sequence[ToolPlugin], calls: Sequence[ToolCall]) -> FakeTurn:
        """Feed ``calls`` through ``plugins`` in order, as a chain would (unguarded)."""
        for call in calls:
            self.calls += 1
            self.tags = {}
            for plugin in plugins:
                plugin.on_tool(call, self)
            self.call_tags.append(self.tags)
        return self

    def end(self, plugins: Sequence[ToolPlugin]) -> FakeTurn:
        for plugin in plugins:
            plugin.on_turn_end(self)
        return self


class _KeepingSink(TurnSink):
    def stop(self, turn: Turn, signal: Any) -> None:
        first = (turn.shadow_stopped if signal.shadow else turn.stopped) is None
        super().stop(turn, signal)
        if first and isinstance(turn, FakeTurn):  # like the chain: one stop per turn
            turn.stops.append(signal)
