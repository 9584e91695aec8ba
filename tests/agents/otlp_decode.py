"""Decode OTLP/HTTP request bodies with the real protobufs, and summarise them as plain JSON.

``decode(signal, body, content_type, content_encoding)`` parses one request body of ``/v1/traces``,
``/v1/logs`` or ``/v1/metrics`` (protobuf or OTLP/JSON, optionally gzip/deflate encoded) into the
``opentelemetry-proto`` Export*ServiceRequest message; it raises :class:`ValueError` when the body
is not a valid request. ``summarize(signal, message)`` turns it into a small JSON-able dict: spans,
log records or metric names with their attributes flattened to Python values and ids in hex.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

REQUESTS: dict[str, type[Message]] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
RESPONSES: dict[str, type[Message]] = {
    "traces": ExportTraceServiceResponse,
    "logs": ExportLogsServiceResponse,
    "metrics": ExportMetricsServiceResponse,
}
#: OTLP/JSON writes these ids as hex; proto3 JSON (json_format) wants base64.
_ID_KEYS = {"traceId", "spanId", "parentSpanId"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def signal_of(path: str) -> str | None:
    """``traces``/``logs``/``metrics`` for an OTLP/HTTP path such as ``/v1/traces``, else ``None``."""
    tail = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return tail if tail in REQUESTS else None


def unpack(body: bytes, content_encoding: str) -> bytes:
    """Undo a ``gzip`` or ``deflate`` content encoding; other values leave the body as it is."""
    encoding = content_encoding.strip().lower()
    try:
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error) as exc:
        raise ValueError(f"bad {encoding} body: {exc}") from exc
    return body


def _hex_ids_to_base64(node: Any) -> Any:
    """Rewrite OTLP/JSON's hex trace and span ids in place as base64, recursively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str) and value:
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)
    return node


def decode(signal: str, body: bytes, content_type: str = "application/x-protobuf",
           content_encoding: str = "") -> Message:
    """Parse one OTLP/HTTP request body of ``signal`` (see the module docstring)."""
    message = REQUESTS[signal]()
    raw = unpack(body, content_encoding)
    try:
        if "json" in content_type.lower():
            json_format.ParseDict(_hex_ids_to_base64(json.loads(raw)), message)
        else:
            message.ParseFromString(raw)
    except (DecodeError, json_format.ParseError, ValueError) as exc:
        raise ValueError(f"not an OTLP {signal} request: {exc}") from exc
    return message


#: Summaries cut strings longer than this (the raw body keeps them whole): prompts can be megabytes.
SUMMARY_MAX_CHARS = 500


def _cut(text: str) -> str:
    """``text``, or its head and its length when it is longer than :data:`SUMMARY_MAX_CHARS`."""
    if len(text) <= SUMMARY_MAX_CHARS:
        return text
    return f"{text[:SUMMARY_MAX_CHARS]}...[cut: {len(text)} chars]"


def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a Python value (bytes as hex, kvlists as dicts, long strings cut)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if kind == "string_value":
        return _cut(value.string_value)
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """A repeated KeyValue field as a dict."""
    out: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        out[pair.key] = any_value(pair.value)
    return out


def _span(span: Any, scope: str) -> dict[str, Any]:
    """One span as a dict (times in unix nanoseconds)."""
    return {
        "name": span.name, "scope": scope, "kind": _KINDS.get(span.kind, str(span.kind)),
        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(), "parent_span_id": span.parent_span_id.hex(),
        "start_ns": span.start_time_unix_nano, "end_ns": span.end_time_unix_nano,
        "status": _STATUS.get(span.status.code, str(span.status.code)), "status_message": span.status.message,
        "attributes": attributes(span.attributes),
        "events": [{"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes(e.attributes)}
                   for e in span.events],
    }


def _log(record: Any, scope: str) -> dict[str, Any]:
    """One log record as a dict."""
    return {
        "event_name": record.event_name, "scope": scope, "time_ns": record.time_unix_nano,
        "observed_ns": record.observed_time_unix_nano, "severity": record.severity_text,
        "body": any_value(record.body), "trace_id": record.trace_id.hex(), "span_id": record.span_id.hex(),
        "attributes": attributes(record.attributes),
    }


def summarize(signal: str, message: Message) -> dict[str, Any]:
    """A JSON-able summary of a decoded request: resources, then spans / log records / metric names."""
    out: dict[str, Any] = {"signal": signal, "resources": [], "items": []}
    kind = {"traces": "spans", "logs": "logs", "metrics": "metrics"}[signal]
    for group in getattr(message, f"resource_{kind}"):
        out["resources"].append(attributes(group.resource.attributes))
        for scoped in getattr(group, f"scope_{kind}"):
            scope = scoped.scope.name
            if signal == "traces":
                out["items"] += [_span(s, scope) for s in scoped.spans]
            elif signal == "logs":
                out["items"] += [_log(r, scope) for r in scoped.log_records]
            else:
                out["items"] += [{"metric": m.name, "scope": scope, "type": m.WhichOneof("data")}
                                 for m in scoped.metrics]
    return out


def dump_summary(summary: dict[str, Any]) -> str:
    """A summary as JSON text with one resource or item per line (compact, yet readable and diffable)."""
    def lines(key: str) -> str:
        rows = [json.dumps(row, sort_keys=True, ensure_ascii=False) for row in summary[key]]
        return "[\n" + ",\n".join(rows) + "\n]" if rows else "[]"
    return (f'{{"signal": {json.dumps(summary["signal"])},\n"resources": {lines("resources")},\n'
            f'"items": {lines("items")}}}\n')
