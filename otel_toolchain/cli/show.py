"""Read the turns of an OTLP JSON lines traces file back as :class:`~otel_toolchain.outcome.TurnOutcome` s.

``otel-toolchain show`` draws them with :mod:`otel_toolchain.cli.tree`, the same way ``replay``
and ``run`` draw the turns they recorded. A turn is an ``invoke_agent`` span that is no sub-agent
of another; its tool calls are the ``execute_tool`` spans under it, numbered in the order they
ended (the order the chain saw them); its stop, shadow stop and nudges come from its span events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_toolchain import semconv
from otel_toolchain.errors import StreamError
from otel_toolchain.export.otlp_json import otlp_spans
from otel_toolchain.identity import parse_arguments
from otel_toolchain.outcome import CallRecord, TurnOutcome, summary
from otel_toolchain.signals import CycleCall, NudgeSignal, StopSignal

__all__ = ["turns_from_otlp_file"]

_STATUS_ERROR = 2


def _attributes(item: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in item.get("attributes", []):
        value = attribute.get("value", {})
        inner = next(iter(value.values()), None) if value else None
        if isinstance(inner, dict) and "values" in inner:  # arrayValue
            inner = [next(iter(v.values()), None) for v in inner["values"]]
        values[attribute["key"]] = inner
    return values


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _stop(event: dict[str, Any], trace_id: int, span_id: int, shadow: bool) -> StopSignal:
    attrs = _attributes(event)
    tools = attrs.get(semconv.STOP_CYCLE_TOOLS) or []
    ids = attrs.get(semconv.STOP_CYCLE_CALL_IDS) or []
    digests = attrs.get(semconv.STOP_CYCLE_DIGESTS) or []
    cycle = tuple(CycleCall(str(tool), (ids[i] if i < len(ids) else "") or None,
                            str(digests[i]) if i < len(digests) else "") for i, tool in enumerate(tools))
    return StopSignal(
        str(attrs.get(semconv.PLUGIN, "?")), str(attrs.get(semconv.STOP_REASON, "")),
        str(attrs.get(semconv.STOP_MESSAGE, "")), trace_id, span_id, period=_int(attrs.get(semconv.STOP_PERIOD)),
        repeats=_int(attrs.get(semconv.STOP_REPEATS)), at_call=_int(attrs.get(semconv.STOP_AT_CALL)), cycle=cycle,
        shadow=shadow, loop_start=_int(attrs.get(semconv.STOP_LOOP_START)),
        loop_calls=_int(attrs.get(semconv.STOP_LOOP_CALLS)))


class _Trace:
    """The spans of a file, indexed by id and by parent."""

    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.by_id = {span.get("spanId", ""): span for span in spans}
        self.children: dict[str, list[dict[str, Any]]] = {}
        for span in spans:
            self.children.setdefault(span.get("parentSpanId", ""), []).append(span)

    def calls_under(self, span_id: str, capture: list[tuple[int, CallRecord]]) -> list[CallRecord]:
        calls = []
        for child in sorted(self.children.get(span_id, []), key=lambda s: _int(s.get("startTimeUnixNano"))):
            attrs = _attributes(child)
            if attrs.get(semconv.GEN_AI_OPERATION_NAME) != semconv.OPERATION_EXECUTE_TOOL:
                calls.extend(self.calls_under(child.get("spanId", ""), capture))
                continue
            start, end = _int(child.get("startTimeUnixNano")), _int(child.get("endTimeUnixNano"))
            arguments = attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS)
            parsed = parse_arguments(arguments) if isinstance(arguments, str) else None
            record = CallRecord(0, str(attrs.get(semconv.GEN_AI_TOOL_NAME, "?")),
                                str(attrs.get(semconv.TOOL_CLASS, "")), max(0, end - start) // 1_000_000,
                                child.get("status", {}).get("code") == _STATUS_ERROR,
                                attrs.get(semconv.ERROR_TYPE), attrs.get(semconv.GEN_AI_TOOL_CALL_ID),
                                summary(parsed) if parsed is not None else "")
            record.children = self.calls_under(child.get("spanId", ""), capture)
            capture.append((end, record))
            calls.append(record)
        return calls

    def is_sub_agent(self, span: dict[str, Any]) -> bool:
        parent = self.by_id.get(span.get("parentSpanId", ""))
        while parent is not None:
            if _attributes(parent).get(semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_INVOKE_AGENT:
                return True
            parent = self.by_id.get(parent.get("parentSpanId", ""))
        return False


def _turn(span: dict[str, Any], trace: _Trace, source: str) -> TurnOutcome:
    attrs = _attributes(span)
    trace_id, span_id = int(span.get("traceId") or "0", 16), int(span.get("spanId") or "0", 16)
    ended: list[tuple[int, CallRecord]] = []
    tree = trace.calls_under(span.get("spanId", ""), ended)
    for number, (_end, record) in enumerate(sorted(ended, key=lambda pair: pair[0]), 1):
        record.index = number
    outcome = TurnOutcome(source, str(attrs.get(semconv.HARNESS, "")), session_id=attrs.get(
        semconv.GEN_AI_CONVERSATION_ID), calls=len(ended), failed=sum(r.failed for _e, r in ended), tree=tree,
        trace_id=trace_id, span_id=span_id, name=str(span.get("name", "turn")))
    for event in span.get("events", []):
        name = event.get("name")
        if name == semconv.STOP_EVENT and outcome.stopped is None:
            outcome.stopped = _stop(event, trace_id, span_id, shadow=False)
        elif name == semconv.SHADOW_STOP_EVENT and outcome.shadow_stopped is None:
            outcome.shadow_stopped = _stop(event, trace_id, span_id, shadow=True)
        elif name == semconv.NUDGE_EVENT:
            event_attrs = _attributes(event)
            outcome.nudges.append(NudgeSignal(str(event_attrs.get(semconv.PLUGIN, "?")),
                                              str(event_attrs.get(semconv.NUDGE_MESSAGE, "")), trace_id, span_id, 0, 0))
    return outcome


def turns_from_otlp_file(path: Path, *, offset: int = 0, bad_lines: list[StreamError] | None = None
                         ) -> list[TurnOutcome]:
    """The turns in an OTLP JSON lines traces file, in the order they ended; ``offset`` skips earlier bytes.

    ``bad_lines``: collects the bad lines after the first good one, which are skipped (see
    :func:`~otel_toolchain.export.otlp_json.otlp_spans`); without it the first bad line raises.

    Raises:
        StreamError: the file is empty (from offset 0), not JSON lines, or holds no traces.
        OSError, UnicodeDecodeError: it cannot be read.
    """
    trace = _Trace(list(otlp_spans(path, offset=offset, bad_lines=bad_lines)))
    turns = []
    for span in trace.by_id.values():
        attrs = _attributes(span)
        if attrs.get(semconv.GEN_AI_OPERATION_NAME) != semconv.OPERATION_INVOKE_AGENT or trace.is_sub_agent(span):
            continue
        turns.append(_turn(span, trace, str(path)))
    return turns
