"""Turns from OTLP JSON lines traces, as the embedded default writes them (``traces.jsonl``).

A turn is an ``invoke_agent`` span with no ``invoke_agent`` or ``execute_tool`` span above it;
its calls are the ``execute_tool`` spans below it, in the order they ended (the order the chain
saw them), and its retries the ``otel_toolchain.retry`` spans. Each turn comes out as the same
neutral events a stream gives, plus what only a trace has: whether the chain recorded a stop
on the turn (``otel_toolchain.turn.stop``, or its shadow), and whether the spans carry content.

A span carries ``gen_ai.tool.call.arguments``/``.result`` only when content capture was on,
and never the result of a failed call. Without content, two calls of one tool that fail (or
succeed) alike compare equal, so the turn's repeats are upper bounds; ``content=False`` says so.

Spans are grouped by trace and a trace is let go when its root turn arrives (a parent ends after
its children), so memory holds the traces still open, not the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_toolchain import semconv
from otel_toolchain.errors import StreamError
from otel_toolchain.export.otlp_json import otlp_spans
from otel_toolchain.harnesses.events import Event, Retry, ToolFinished, TurnEnded, TurnStarted
from otel_toolchain.identity import parse_arguments

__all__ = ["OtlpTurn", "is_otlp_traces", "otlp_turns"]

_STATUS_ERROR = 2
_STOPS = frozenset({semconv.STOP_EVENT, semconv.SHADOW_STOP_EVENT})


@dataclass(frozen=True)
class OtlpTurn:
    """One turn of a traces file: its events, and what the trace records beyond them."""

    events: list[Event]
    recorded_stop: bool
    content: bool


def is_otlp_traces(first_line: str) -> bool | None:
    """True for a traces line, False for a metrics or logs line (skip the file), None otherwise."""
    head = first_line.lstrip()[:40]
    if head.startswith('{"resourceSpans"'):
        return True
    if head.startswith(('{"resourceMetrics"', '{"resourceLogs"')):
        return False
    return None


def _attributes(item: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in item.get("attributes", ()):
        value = attribute.get("value") or {}
        values[attribute.get("key", "")] = next(iter(value.values()), None) if value else None
    return values


def _operation(span: dict[str, Any]) -> str | None:
    return _attributes(span).get(semconv.GEN_AI_OPERATION_NAME)


def otlp_turns(path: Path, bad_lines: list[StreamError] | None = None) -> Iterator[OtlpTurn]:
    """The turns of a traces file, in the order their turn spans ended; ``bad_lines`` as for
    :func:`~otel_toolchain.export.otlp_json.otlp_spans` (skipped after the first good line, collected)."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in otlp_spans(path, bad_lines=bad_lines):
        trace = traces.setdefault(span.get("traceId", ""), [])
        trace.append(span)
        if not span.get("parentSpanId") and _operation(span) == semconv.OPERATION_INVOKE_AGENT:
            yield from _turns(traces.pop(span.get("traceId", "")))
    for spans in traces.values():
        yield from _turns(spans)


def _turns(spans: list[dict[str, Any]]) -> Iterator[OtlpTurn]:
    by_id = {span.get("spanId"): span for span in spans}
    members: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans:
        members.setdefault(_turn_of(span, by_id), []).append(span)
    for turn_id, group in members.items():
        turn = by_id.get(turn_id) if turn_id is not None else None
        if turn is None and not any(_operation(span) == semconv.OPERATION_EXECUTE_TOOL for span in group):
            continue
        yield _turn(turn, group)


def _turn_of(span: dict[str, Any], by_id: dict[Any, dict[str, Any]]) -> str | None:
    """The span id of the top ``invoke_agent`` span above ``span`` (itself included), if any."""
    found: str | None = None
    current: dict[str, Any] | None = span
    for _ in range(len(by_id) + 1):  # bounded: ids could form a loop in a broken file
        if current is None:
            break
        if _operation(current) == semconv.OPERATION_INVOKE_AGENT:
            found = current.get("spanId")
        current = by_id.get(current.get("parentSpanId"))
    return found


def _turn(turn: dict[str, Any] | None, spans: list[dict[str, Any]]) -> OtlpTurn:
    attributes = _attributes(turn) if turn is not None else {}
    harness = str(attributes.get(semconv.HARNESS) or "otlp")
    session = attributes.get(semconv.GEN_AI_CONVERSATION_ID)
    start = int(turn.get("startTimeUnixNano", 0)) if turn is not None else 0
    events: list[Event] = [TurnStarted(harness, str(session) if session else None, None, None, start, 0)]
    calls = sorted((span for span in spans if _operation(span) == semconv.OPERATION_EXECUTE_TOOL),
                   key=lambda span: (int(span.get("endTimeUnixNano", 0)), int(span.get("startTimeUnixNano", 0))))
    content = any(semconv.GEN_AI_TOOL_CALL_ARGUMENTS in _attributes(span) for span in calls)
    timeline: list[tuple[int, Event]] = [(int(span.get("endTimeUnixNano", 0)), _call(span)) for span in calls]
    for span in spans:
        attrs = _attributes(span)
        if semconv.RETRY_ATTEMPT in attrs:
            at = int(span.get("startTimeUnixNano", 0))
            timeline.append((at, Retry(int(attrs[semconv.RETRY_ATTEMPT]), attrs.get(semconv.RETRY_REASON), None, at)))
    events.extend(event for _, event in sorted(timeline, key=lambda item: item[0]))
    failed = turn is not None and turn.get("status", {}).get("code") == _STATUS_ERROR
    end = int(turn.get("endTimeUnixNano", 0)) if turn is not None else 0
    events.append(TurnEnded(end, 0, failed, None, None, str(session) if session else None))
    stopped = turn is not None and any(event.get("name") in _STOPS for event in turn.get("events", ()))
    return OtlpTurn(events, stopped, content or not calls)


def _call(span: dict[str, Any]) -> ToolFinished:
    attrs = _attributes(span)
    error_type = attrs.get(semconv.ERROR_TYPE)
    failed = error_type is not None or span.get("status", {}).get("code") == _STATUS_ERROR
    arguments, result, cwd = (attrs.get(key) for key in (semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
                                                          semconv.GEN_AI_TOOL_CALL_RESULT, semconv.TOOL_CWD))
    return ToolFinished(
        str(attrs.get(semconv.GEN_AI_TOOL_CALL_ID) or span.get("spanId", "")), str(attrs.get(semconv.GEN_AI_TOOL_NAME)),
        None if arguments is None else parse_arguments(str(arguments)), None if result is None else str(result), failed,
        str(error_type) if failed and error_type else None, None, int(span.get("startTimeUnixNano", 0)),
        int(span.get("endTimeUnixNano", 0)), None if cwd is None else str(cwd), 0,
    )
