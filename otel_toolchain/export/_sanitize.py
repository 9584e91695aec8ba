"""One bad item is dropped or repaired, never its batch: spans and log records made encodable before export.

The OTLP encoders refuse a whole batch for one item they cannot encode: a time outside
``fixed64`` (a negative start, OpenCode's ``"start": -1``) or a string that is not valid UTF-8 (a
lone surrogate, ``"\\udc80"`` in a tool name). Checked here, per item, before the exporter sees
the batch:

- a string (name, attribute key or value, event, status, log body) with a lone surrogate has it
  replaced by U+FFFD: the item is **repaired**;
- a time outside ``[0, 2**64)``: replaced by the item's other time when that one is valid (the
  item is **repaired**), else the item is **refused** (dropped, counted).

Pure functions, safe from any thread; cost: one regular-expression scan per string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status

from otel_toolchain._input.lines import valid_text

__all__ = ["clean_log", "clean_span"]

_TIME_END = 1 << 64


def _valid_time(value: object) -> bool:
    return isinstance(value, int) and 0 <= value < _TIME_END


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, Mapping):
        return _attributes(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return tuple(_value(item) for item in value)
    return value


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if attributes is None:
        return None
    return {valid_text(key): _value(item) for key, item in attributes.items()}


def _needs_text_repair(value: Any) -> bool:
    if isinstance(value, str):
        return valid_text(value) is not value  # the same object back when nothing needed repair
    if isinstance(value, Mapping):
        return any(_needs_text_repair(k) or _needs_text_repair(v) for k, v in value.items())
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return any(_needs_text_repair(item) for item in value)
    return False


def clean_span(span: ReadableSpan) -> tuple[ReadableSpan | None, bool]:
    """(the span as it can be encoded, or None when refused; whether it had to be changed)."""
    start, end = span.start_time, span.end_time
    times_ok = _valid_time(start) and (end is None or _valid_time(end))
    status = span.status
    texts = (span.name, span.attributes, [(e.name, e.attributes) for e in span.events], status.description,
             [link.attributes for link in span.links])
    if times_ok and not _needs_text_repair(texts):
        return span, False
    if not _valid_time(start):
        start = end if _valid_time(end) else None
    if end is not None and not _valid_time(end):
        end = start
    if start is None:
        return None, True
    events = [Event(valid_text(e.name), _attributes(e.attributes), e.timestamp if _valid_time(e.timestamp) else start)
              for e in span.events]
    description = valid_text(status.description) if status.description else None
    return ReadableSpan(
        name=valid_text(span.name), context=span.context, parent=span.parent, resource=span.resource,
        attributes=_attributes(span.attributes), events=events, links=span.links, kind=span.kind,
        status=Status(status.status_code, description), start_time=start, end_time=end,
        instrumentation_scope=span.instrumentation_scope,
    ), True


def clean_log(record: ReadableLogRecord) -> tuple[ReadableLogRecord | None, bool]:
    """(the record as it can be encoded, or None when refused; whether it had to be changed). Repairs in place."""
    inner = record.log_record
    times = (inner.timestamp, inner.observed_timestamp)
    times_ok = all(t is None or _valid_time(t) for t in times)
    if times_ok and not _needs_text_repair((inner.body, inner.attributes, inner.event_name)):
        return record, False
    if not times_ok:
        good = next((t for t in times if t is not None and _valid_time(t)), None)
        if good is None:
            return None, True
        inner.timestamp = inner.timestamp if _valid_time(inner.timestamp) else good
        inner.observed_timestamp = inner.observed_timestamp if _valid_time(inner.observed_timestamp) else good
    inner.body = _value(inner.body)
    if inner.attributes is not None:
        inner.attributes = _attributes(inner.attributes)
    if isinstance(inner.event_name, str):
        inner.event_name = valid_text(inner.event_name)
    return record, True
