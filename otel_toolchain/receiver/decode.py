"""OTLP/HTTP request bodies into the real ``opentelemetry-proto`` request messages.

Protobuf (``application/x-protobuf``) and JSON (``application/json``, the OTLP/JSON mapping with hex
ids), raw or ``gzip``/``deflate`` encoded. Sizes are bounded twice: the body as sent, and what it
inflates to, so a small gzip bomb cannot take the process' memory. Pure functions, any thread;
bad input raises :class:`~otel_toolchain.errors.BadRequest` naming the signal and the cause.
"""

from __future__ import annotations

import zlib
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_toolchain.errors import BadRequest
from otel_toolchain.export.otlp_json import parse_otlp_json

__all__ = ["MAX_BODY_BYTES", "MAX_INFLATED_BYTES", "SIGNALS", "decode_body", "inflate", "new_request"]

MAX_BODY_BYTES: Final = 32 * 1024 * 1024
"""Largest body accepted as sent (OpenCode's prompts make multi-megabyte trace batches)."""
MAX_INFLATED_BYTES: Final = 128 * 1024 * 1024
SIGNALS: Final = ("traces", "logs", "metrics")
_REQUESTS: Final = {"traces": ExportTraceServiceRequest, "logs": ExportLogsServiceRequest,
                    "metrics": ExportMetricsServiceRequest}


def new_request(signal: str) -> Message:
    """An empty export request message of ``signal`` (``traces``, ``logs`` or ``metrics``)."""
    kind = _REQUESTS.get(signal)
    if kind is None:
        raise BadRequest(f"unknown OTLP signal {signal!r}; expected one of {', '.join(SIGNALS)}", status=404)
    message: Message = kind()
    return message


def inflate(body: bytes, encoding: str, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """``body`` decoded from its Content-Encoding, at most ``limit`` bytes of it (else BadRequest 413)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}; send gzip, deflate or none", status=415)
    wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"bad {encoding} body: {exc}") from exc
    if len(out) > limit:
        raise BadRequest(f"body inflates to more than {limit} bytes", status=413)
    return out


def decode_body(signal: str, body: bytes, content_type: str = "application/x-protobuf",
                content_encoding: str = "") -> Message:
    """Parse one OTLP/HTTP request body of ``signal``; raises BadRequest (400, 413, 415) on bad input."""
    message = new_request(signal)
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(f"{signal} body of {len(body)} bytes is over the limit of {MAX_BODY_BYTES}", status=413)
    raw = inflate(body, content_encoding)
    kind = content_type.split(";", 1)[0].strip().lower()
    try:
        if kind == "application/json":
            return parse_otlp_json(raw.decode("utf-8"), message)
        if kind in ("application/x-protobuf", "application/protobuf", ""):
            message.ParseFromString(raw)
            return message
    except (DecodeError, json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        raise BadRequest(f"not an OTLP {signal} request ({kind or 'protobuf'}): {exc}") from exc
    raise BadRequest(f"unsupported Content-Type {content_type!r}; send application/x-protobuf or "
                     "application/json", status=415)
