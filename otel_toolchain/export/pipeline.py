"""Build the tracer, meter and logger providers a run exports through.

Where data goes, in order of precedence:

1. the manifest's ``[export]`` table (``endpoint``, ``protocol``, ``headers``, …), then
2. the standard ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` and the per-signal ones,
   ``OTEL_EXPORTER_OTLP_PROTOCOL``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``,
   ``OTEL_RESOURCE_ATTRIBUTES``): with an endpoint, OTLP over gRPC or HTTP/protobuf;
3. with no endpoint anywhere, the embedded default: OTLP JSON lines files in
   ``$OTEL_TOOLCHAIN_OUTPUT_DIR``, else ``$XDG_STATE_HOME/otel-toolchain``, else
   ``~/.local/state/otel-toolchain`` (``traces.jsonl``, ``metrics.jsonl``, ``logs.jsonl``);
   ``~`` and ``$VARS`` in ``output_dir`` and ``OTEL_TOOLCHAIN_OUTPUT_DIR`` are expanded.

``OTEL_TRACES_EXPORTER``, ``OTEL_METRICS_EXPORTER`` and ``OTEL_LOGS_EXPORTER`` choose each signal's
exporters, comma-separated as the spec has it: ``otlp`` (the default: the endpoint, else the embedded
default, which is OTLP too, as JSON lines), ``console`` (the SDK's
console exporters, on standard error: standard output is the command's) and ``none`` (nothing).

Export never blocks the agent: spans and logs go through batch processors with bounded queues,
metrics through a periodic reader, all exporting on their own threads. Data an exporter fails to
deliver is counted in ``otel_toolchain.export.dropped`` (and ``Pipeline.dropped``); data dropped
because a queue was full is counted by the SDK's own ``otel.sdk.processor.*.processed`` metrics
(``error.type=queue_full``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from opentelemetry.metrics import Counter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    ConsoleLogRecordExporter,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricExportResult,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter, SpanExportResult

from otel_toolchain import semconv
from otel_toolchain.errors import ToolchainError
from otel_toolchain.export._sanitize import clean_log, clean_span
from otel_toolchain.export.otlp_json import JsonLinesLogExporter, JsonLinesMetricExporter, JsonLinesSpanExporter
from otel_toolchain.export.settings import ExportSettings, default_output_dir, expand_path

__all__ = ["ExportSettings", "Pipeline", "build_pipeline", "default_output_dir", "expand_path", "signal_endpoint"]

_EXPORTER_CHOICES: Final = ("otlp", "console", "none")
_ENDPOINT_VARS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                         "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")


@dataclass
class Pipeline:
    """Providers wired to exporters. Call :meth:`shutdown` once, at the end, to flush everything."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider
    destination: str
    output_dir: Path | None = None
    _dropped: dict[str, int] = field(default_factory=lambda: {"traces": 0, "metrics": 0, "logs": 0})
    _prometheus_server: Any = None
    traces_start: int = 0
    """With the embedded default: the size ``traces.jsonl`` had before this pipeline wrote to it."""

    @property
    def prometheus_address(self) -> tuple[str, int] | None:
        """Where the Prometheus pull endpoint listens, if there is one."""
        if self._prometheus_server is None:
            return None
        host, port = self._prometheus_server.server_address[:2]
        return str(host), int(port)

    @property
    def dropped(self) -> dict[str, int]:
        """Items each exporter failed to deliver, by signal."""
        return dict(self._dropped)

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Flush and stop, waiting at most ``timeout_s``; False if export had not finished by then.

        Never raises. With a dead Collector, exporters retry until their own timeouts; past
        ``timeout_s`` the rest is given up (the processors' threads are daemons) and counted nowhere.
        """
        done = threading.Event()

        def stop_all() -> None:
            for provider in (self.tracer_provider, self.logger_provider, self.meter_provider):
                try:
                    provider.shutdown()
                except Exception:  # noqa: BLE001 (a dead Collector or a full disk must not turn into a crash at exit)
                    continue
            done.set()

        threading.Thread(target=stop_all, name="otel_toolchain-shutdown", daemon=True).start()
        finished = done.wait(timeout_s)
        if self._prometheus_server is not None:
            self._prometheus_server.shutdown()
            self._prometheus_server.server_close()
        return finished


_T = TypeVar("_T")

class _Dropped:
    """Counts what an exporter failed to deliver, in a counter and a plain dict."""

    def __init__(self, pipeline_counts: dict[str, int], signal: str) -> None:
        self._counts = pipeline_counts
        self._signal = signal
        self._lock = threading.Lock()
        self.counter: Counter | None = None
        self.repaired_counter: Counter | None = None
        self.repaired = 0

    def add(self, items: int, *, invalid: bool = False) -> None:
        with self._lock:
            self._counts[self._signal] += items
        if self.counter is not None:
            attributes = {semconv.EXPORT_SIGNAL: self._signal}
            if invalid:
                attributes[semconv.EXPORT_REASON] = semconv.EXPORT_REASON_INVALID
            self.counter.add(items, attributes)

    def clean(self, items: Sequence[_T], clean: Callable[[_T], tuple[_T | None, bool]]) -> list[_T]:
        """``items`` made encodable one by one (see :mod:`._sanitize`): the refused counted, the rest kept."""
        kept: list[_T] = []
        repaired = refused = 0
        for item in items:
            cleaned, changed = clean(item)
            repaired += changed and cleaned is not None
            if cleaned is None:
                refused += 1
            else:
                kept.append(cleaned)
        if refused:
            self.add(refused, invalid=True)
        if repaired:
            with self._lock:
                self.repaired += repaired
            if self.repaired_counter is not None:
                self.repaired_counter.add(repaired, {semconv.EXPORT_SIGNAL: self._signal})
        return kept


class _CountingSpanExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, dropped: _Dropped) -> None:
        self._inner, self._dropped = inner, dropped

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        spans = self._dropped.clean(spans, clean_span)
        try:
            result = self._inner.export(spans)
        except Exception:  # noqa: BLE001 (exporters should not raise; if one does, the batch is lost)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._dropped.add(len(spans))
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _CountingLogExporter(LogRecordExporter):
    def __init__(self, inner: LogRecordExporter, dropped: _Dropped) -> None:
        self._inner, self._dropped = inner, dropped

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        batch = self._dropped.clean(batch, clean_log)
        try:
            result = self._inner.export(batch)
        except Exception:  # noqa: BLE001 (as for spans)
            result = LogRecordExportResult.FAILURE
        if result is not LogRecordExportResult.SUCCESS:
            self._dropped.add(len(batch))
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()  # type: ignore[no-untyped-call]  # untyped in the SDK


def _resource(settings: ExportSettings, environ: Mapping[str, str]) -> Resource:
    attributes: dict[str, Any] = {}
    for pair in environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = value.strip()
    attributes.update(settings.resource_attributes)
    name = settings.service_name or environ.get("OTEL_SERVICE_NAME") or attributes.get("service.name")
    attributes["service.name"] = name or "otel-toolchain"
    return Resource.create(attributes)


def _signal_endpoint(signal: str, settings: ExportSettings, environ: Mapping[str, str], *, http: bool) -> str | None:
    """The endpoint for one signal, resolved here so the given ``environ`` decides (not os.environ)."""
    path = f"/v1/{signal}" if http else ""
    if settings.endpoint:
        return settings.endpoint.rstrip("/") + path
    per_signal = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if per_signal:
        return per_signal  # the spec: a per-signal endpoint is used as it is
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return base.rstrip("/") + path if base else None


def signal_endpoint(signal: str, settings: ExportSettings, environ: Mapping[str, str], *, http: bool) -> str | None:
    """Where one signal is exported to, as the pipeline resolves it (None: no endpoint is set)."""
    return _signal_endpoint(signal, settings, environ, http=http)


def _otlp_exporters(settings: ExportSettings, environ: Mapping[str, str], protocol: str) -> tuple[Any, Any, Any]:
    headers = dict(settings.headers) or None
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter  # noqa: PLC0415
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter  # noqa: PLC0415
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # noqa: PLC0415

        def grpc_args(signal: str) -> dict[str, Any]:
            url = _signal_endpoint(signal, settings, environ, http=False)
            # gRPC takes TLS from the scheme only when told: http:// means a plaintext channel.
            return {"endpoint": url, "headers": headers, "insecure": url.startswith("http://") if url else None}

        return (OTLPSpanExporter(**grpc_args("traces")), OTLPMetricExporter(**grpc_args("metrics")),
                OTLPLogExporter(**grpc_args("logs")))
    if protocol != "http/protobuf":
        raise ToolchainError(f"OTLP protocol {protocol!r} is not supported; use 'grpc' or 'http/protobuf'")
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLog  # noqa: PLC0415
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # noqa: PLC0415
        OTLPMetricExporter as HttpMetric,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpan  # noqa: PLC0415

    def http_url(signal: str) -> str | None:
        return _signal_endpoint(signal, settings, environ, http=True)

    return (HttpSpan(endpoint=http_url("traces"), headers=headers),
            HttpMetric(endpoint=http_url("metrics"), headers=headers),
            HttpLog(endpoint=http_url("logs"), headers=headers))


def _prometheus_reader(port: int) -> tuple[MetricReader, Any]:
    """A pull reader and its HTTP server on 127.0.0.1 (port 0: any free port)."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader  # noqa: PLC0415
        from prometheus_client import start_http_server  # noqa: PLC0415
    except ImportError as exc:
        raise ToolchainError("prometheus_port needs the extra: pip install 'otel-toolchain[prometheus]'") from exc
    try:
        server, _thread = start_http_server(port, addr="127.0.0.1")
    except OSError as exc:
        raise ToolchainError(f"cannot serve Prometheus metrics on 127.0.0.1:{port} "
                             f"([export] prometheus_port): {exc.strerror or exc}") from exc
    reader: MetricReader = PrometheusMetricReader()
    return reader, server


def build_pipeline(settings: ExportSettings | None = None, environ: Mapping[str, str] | None = None) -> Pipeline:
    """Providers exporting as ``settings`` and ``environ`` say (``environ`` defaults to ``os.environ``)."""
    settings = settings or ExportSettings()
    environ = os.environ if environ is None else environ
    resource = _resource(settings, environ)
    counts = {"traces": 0, "metrics": 0, "logs": 0}
    dropped = {signal: _Dropped(counts, signal) for signal in counts}
    chosen = {signal: _exporter_names(signal, environ) for signal in counts}
    endpoint = bool(settings.endpoint or any(environ.get(var) for var in _ENDPOINT_VARS))
    wants_otlp = any("otlp" in names for names in chosen.values())
    output_dir: Path | None = None
    traces_start = 0
    otlp: tuple[Any, Any, Any] | None = None
    destinations: list[str] = []
    if wants_otlp and endpoint:
        protocol = settings.protocol or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        otlp = _otlp_exporters(settings, environ, protocol)
        destinations.append(f"OTLP ({protocol})")
    elif wants_otlp:
        output_dir = expand_path(settings.output_dir, environ) if settings.output_dir else default_output_dir(environ)
        traces_start = (output_dir / "traces.jsonl").stat().st_size if (output_dir / "traces.jsonl").exists() else 0
        otlp = (JsonLinesSpanExporter(output_dir / "traces.jsonl"),
                JsonLinesMetricExporter(output_dir / "metrics.jsonl"), JsonLinesLogExporter(output_dir / "logs.jsonl"))
        destinations.append(f"OTLP JSON lines in {output_dir}")
        if "otlp" not in chosen["traces"]:
            output_dir = None  # no trees drawn back from a traces file this run does not write
    if any("console" in names for names in chosen.values()):
        destinations.append("the console (standard error)")
    spans_out = _pick(chosen["traces"], otlp[0] if otlp else None, lambda: ConsoleSpanExporter(out=sys.stderr))
    metrics_out = _pick(chosen["metrics"], otlp[1] if otlp else None, lambda: ConsoleMetricExporter(out=sys.stderr))
    logs_out = _pick(chosen["logs"], otlp[2] if otlp else None, lambda: ConsoleLogRecordExporter(out=sys.stderr))
    destination = " and ".join(destinations) or "nowhere (OTEL_*_EXPORTER=none)"
    # The Prometheus endpoint first: it can fail (a port in use), and a periodic reader made before it
    # would be left ticking with no provider, complaining at exit.
    readers: list[MetricReader] = []
    prometheus_server = None
    if settings.prometheus_port is not None:
        reader, prometheus_server = _prometheus_reader(settings.prometheus_port)
        readers.append(reader)
    readers[:0] = [_metric_reader(m, settings, dropped["metrics"]) for m in metrics_out]
    # shutdown_on_exit=False: Pipeline.shutdown bounds the wait; an atexit hook would wait again, unbounded.
    meter_provider = MeterProvider(metric_readers=readers, resource=resource, shutdown_on_exit=False)
    counter = meter_provider.get_meter("otel_toolchain").create_counter(
        semconv.METRIC_EXPORT_DROPPED, unit="{item}", description="Telemetry an exporter failed to deliver."
    )
    repaired = meter_provider.get_meter("otel_toolchain").create_counter(
        semconv.METRIC_EXPORT_REPAIRED, unit="{item}", description="Telemetry made encodable before export."
    )
    for signal, each in dropped.items():
        each.counter, each.repaired_counter = counter, repaired
        counter.add(0, {semconv.EXPORT_SIGNAL: signal})
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    for spans in spans_out:
        tracer_provider.add_span_processor(BatchSpanProcessor(
            _CountingSpanExporter(spans, dropped["traces"]), max_queue_size=settings.max_queue_size))
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    for logs in logs_out:
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(
            _CountingLogExporter(logs, dropped["logs"]), max_queue_size=settings.max_queue_size))
    return Pipeline(tracer_provider, meter_provider, logger_provider, destination, output_dir, counts,
                    prometheus_server, traces_start)


def _exporter_names(signal: str, environ: Mapping[str, str]) -> list[str]:
    """The exporters ``OTEL_<SIGNAL>_EXPORTER`` names (default ``otlp``); raises ToolchainError for others."""
    variable = f"OTEL_{signal.upper()}_EXPORTER"
    names = [name.strip().lower() for name in environ.get(variable, "").split(",") if name.strip()] or ["otlp"]
    for name in names:
        if name not in _EXPORTER_CHOICES:
            raise ToolchainError(f"{variable}={environ.get(variable)}: unknown exporter {name!r}; use "
                                 f"{', '.join(_EXPORTER_CHOICES)} (comma-separated)")
    return ["none"] if "none" in names else names


def _pick(names: list[str], otlp: Any, console: Any) -> list[Any]:
    exporters = []
    for name in names:
        if name == "otlp" and otlp is not None:
            exporters.append(otlp)
        elif name == "console":
            exporters.append(console())
    return exporters


def _metric_reader(exporter: MetricExporter, settings: ExportSettings, dropped: _Dropped) -> MetricReader:
    original = exporter.export

    def export(metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
        try:
            result = original(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:  # noqa: BLE001 (as for spans)
            result = MetricExportResult.FAILURE
        if result is not MetricExportResult.SUCCESS:
            dropped.add(sum(len(m.data.data_points) for rm in metrics_data.resource_metrics
                            for sm in rm.scope_metrics for m in sm.metrics))
        return result

    exporter.export = export  # type: ignore[method-assign]
    return PeriodicExportingMetricReader(exporter, export_interval_millis=settings.metric_interval_ms)
