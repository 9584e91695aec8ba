"""OTLP JSON lines: the file format of the embedded default, as the Collector's ``otlpjsonfile`` reads it.

Each line is one ``Export{Trace,Metrics,Logs}ServiceRequest`` encoded by the OTLP exporters' own
protobuf encoders and written in the OTLP/JSON mapping: lowerCamelCase fields, enums as integers,
trace and span ids as hex (not protobuf JSON's base64).

Exporters here append under a lock and never raise into the SDK: an unwritable file fails the
export (the SDK logs it and the data is counted as dropped by the caller's wrapper).
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_toolchain._input.lines import BadLineError, decode_line, regular_file
from otel_toolchain.errors import StreamError

__all__ = ["JsonLinesLogExporter", "JsonLinesMetricExporter", "JsonLinesSpanExporter", "otlp_spans",
           "read_otlp_json_lines", "to_otlp_json"]

_ID_KEYS: Final = frozenset({"traceId", "spanId", "parentSpanId"})


def _ids(data: Any, convert: Any) -> Any:
    if isinstance(data, dict):
        return {k: convert(v) if k in _ID_KEYS and isinstance(v, str) else _ids(v, convert) for k, v in data.items()}
    if isinstance(data, list):
        return [_ids(item, convert) for item in data]
    return data


def to_otlp_json(message: Message) -> str:
    """One line of OTLP/JSON for an export request message."""
    data = json_format.MessageToDict(message, use_integers_for_enums=True)
    return json.dumps(_ids(data, lambda v: base64.b64decode(v).hex()), separators=(",", ":"))


def parse_otlp_json(line: str, message: Message) -> Message:
    """Parse one OTLP/JSON line into ``message`` (an empty request of the right type) with real protobufs."""
    data = _ids(decode_line(line), lambda v: base64.b64encode(bytes.fromhex(v)).decode())
    return json_format.ParseDict(data, message, ignore_unknown_fields=True)


def read_otlp_json_lines(path: Path, *, offset: int = 0) -> Iterator[dict[str, Any]]:
    """Every request in an OTLP JSON lines file from byte ``offset`` on, as plain dicts (ids stay hex).

    Lines are decoded within the limits of :func:`~otel_toolchain._input.lines.decode_line`.

    Raises:
        StreamError: ``path`` is not a regular file (a FIFO would block).
        ValueError: a line is not a JSON object within those limits; the message names the line.
    """
    regular_file(path)
    with path.open(encoding="utf-8", errors="replace") as lines:
        lines.seek(offset)
        for line_no, line in enumerate(lines, 1):
            if line.strip():
                try:
                    request = decode_line(line)
                except BadLineError as exc:
                    raise BadLineError(f"line {line_no}: {exc}") from None
                if not isinstance(request, dict):
                    raise BadLineError(f"line {line_no}: not a JSON object")
                yield request


def _objects(value: Any, what: str) -> list[dict[str, Any]]:
    """``value`` as the list of JSON objects OTLP puts there; raises BadLineError naming ``what``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BadLineError(f"{what} is not a list of objects")
    return value


def otlp_spans(path: Path, *, offset: int = 0, bad_lines: list[StreamError] | None = None
               ) -> Iterator[dict[str, Any]]:
    """Every span object of an OTLP JSON lines traces file, from byte ``offset`` on, in file order.

    The one reader of traces files (``show`` and ``analyze`` both use it): each line through the
    hardened decoder, then its shape checked down to the spans. With ``bad_lines``, a bad line after
    the first good one is appended there (naming its line) and skipped, so one broken line loses only
    itself; a bad first line still raises, as the file is then not a traces file at all.

    Raises:
        StreamError: ``path`` is not a regular file; a line that is not JSON, not a traces request
            (no ``resourceSpans``) or not shaped as one; no traces at all in a file read from its start.
    """
    regular_file(path)
    seen = False
    with path.open(encoding="utf-8", errors="replace") as lines:
        lines.seek(offset)
        for line_no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                spans = _spans_of_line(line)
            except BadLineError as exc:
                error = StreamError(str(exc), source=str(path), line_no=line_no)
                if bad_lines is None or not seen:
                    raise error from None
                bad_lines.append(error)
                continue
            seen = True
            yield from spans
    if not seen and offset == 0:
        raise StreamError("empty: no traces in it", source=str(path))


def _spans_of_line(line: str) -> list[dict[str, Any]]:
    """The span objects of one traces line; raises BadLineError saying what is wrong with it."""
    try:
        request = decode_line(line)
    except BadLineError as exc:
        why = "this line is not JSON" if str(exc) == "not JSON" else str(exc)
        raise BadLineError(f"not OTLP JSON lines: {why}") from None
    if not isinstance(request, dict) or "resourceSpans" not in request:
        found = ", ".join(sorted(request)[:3]) if isinstance(request, dict) else type(request).__name__
        raise BadLineError(f"not an OTLP JSON traces file: no resourceSpans (found {found})")
    return [span for resource in _objects(request["resourceSpans"], "resourceSpans")
            for scope in _objects(resource.get("scopeSpans"), "scopeSpans")
            for span in _objects(scope.get("spans"), "spans")]


class _Appender:
    """Appends lines to ``path``; a folder it creates is 0700 and a file 0600 (they may hold tool content)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, line: str) -> bool:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with self._lock, open(fd, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            return False
        return True


class JsonLinesSpanExporter(SpanExporter):
    def __init__(self, path: Path) -> None:
        self._out = _Appender(path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self._out.append(to_otlp_json(encode_spans(spans)))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


class JsonLinesMetricExporter(MetricExporter):
    def __init__(self, path: Path) -> None:
        super().__init__(preferred_temporality={}, preferred_aggregation={})
        self._out = _Appender(path)

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        ok = self._out.append(to_otlp_json(encode_metrics(metrics_data)))
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


class JsonLinesLogExporter(LogRecordExporter):
    def __init__(self, path: Path) -> None:
        self._out = _Appender(path)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = self._out.append(to_otlp_json(encode_logs(batch)))
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
