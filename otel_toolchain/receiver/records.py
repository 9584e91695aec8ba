"""What one decoded OTLP request says about tool calls and turns, agent by agent.

Per-call records (tests/data/otlp/README.md has the measurements behind each rule):

- span ``ai.toolCall`` (the Vercel AI SDK: any TypeScript agent on it, and OpenCode): name, id,
  ``args`` and ``result`` as JSON text; a tool that threw has status ERROR and an ``exception``
  event; a non-zero exit only shows inside the result (``exit_code``, or OpenCode's ``metadata.exit``).
- span ``claude_code.tool`` (Claude Code with its enhanced-telemetry beta): the tool-detail attributes
  as the arguments, the ``tool.output`` event as the result; its failure sits on the
  ``claude_code.tool.execution`` child, which ends first. No error text is sent for a failed Bash
  call, so a failure is told apart by its arguments and error class only.
- span with ``gen_ai.operation.name = execute_tool`` (the GenAI conventions, any SDK).
- log event ``tool_result`` (Claude Code without the beta): arguments (``tool_input``), success,
  error class, no result. ``held``: the receiver prefers the span of the same call when one comes.
- log event ``codex.tool_result``: the output's header gives the exit code (``success`` is "true"
  regardless) and its per-call lines (chunk id, wall time) are dropped from the result.

A turn is a trace for spans; a log event goes by its session id (Codex's ``conversation.id``: its
events' trace ids vary within a run), else its trace; Claude Code's events carry their turn's trace
id and go by it, so a call sent both ways is one call of one turn. A turn's end is a span without a parent, or a
``claude_code.interaction`` or ``invoke_agent`` span. Pure functions of the message; never raise
on odd values (odd records are skipped and counted by the caller).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_toolchain import semconv
from otel_toolchain._recognise import shapes as shp
from otel_toolchain.calls import ToolCall
from otel_toolchain.harnesses.stores._codex_output import outcome_of

__all__ = ["Batch", "Record", "any_value", "attributes", "read_logs", "read_spans"]

GroupKey = tuple[str, str]
"""("trace", hex trace id) or ("session", service/session id)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One tool call an agent reported, with the turn it belongs to."""

    group: GroupKey
    call: ToolCall
    turn_span_id: int
    """The span the call hangs under (the agent's turn span, usually); 0 when unknown."""
    source: str
    """The instrumentation scope, for the chain's hint when calls carry no content."""
    agent: str | None
    held: bool = False
    """A Claude Code log event: used only if no span of the same call arrives."""
    session: str | None = None


@dataclass(slots=True)
class Batch:
    """Everything one request says: calls in order of their end, failed children, ended turns."""

    records: list[Record] = field(default_factory=list)
    failed_children: dict[tuple[int, int], str] = field(default_factory=dict)
    """(trace id, parent span id) → error type of a failed ``claude_code.tool.execution`` span."""
    ended: list[tuple[GroupKey, int]] = field(default_factory=list)
    """Groups whose turn span arrived, with that span's id."""
    span_sessions: set[str] = field(default_factory=set)
    """Session ids that sent ``claude_code.tool`` spans: their log events are not needed."""


def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a Python value (arrays as lists, kvlists as dicts, bytes as hex)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """A repeated KeyValue field as a dict."""
    return {pair.key: any_value(pair.value) for pair in pairs}


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big") if data else 0


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _exit_code(result: str | None) -> int | None:
    """``exit_code`` (or OpenCode's ``metadata.exit``) inside a JSON result, else None."""
    if not result or result[:1] != "{":
        return None
    try:
        data = json.loads(result)
    except (ValueError, RecursionError):  # RecursionError: nested past the stack (an agent may send that)
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("exit_code")
    metadata = data.get("metadata")
    if code is None and isinstance(metadata, dict):
        code = metadata.get("exit")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _span_failure(span: Span) -> str | None:
    if span.status.code != Status.STATUS_CODE_ERROR:
        return None
    for event in span.events:
        if event.name == shp.EXCEPTION_EVENT:
            kind = attributes(event.attributes).get(shp.EXCEPTION_TYPE)
            if kind:
                return str(kind)
    return semconv.ERROR_TYPE_OTHER


def _scopes(message: Message, kind: str) -> Iterator[tuple[Mapping[str, Any], str, Any]]:
    for group in getattr(message, f"resource_{kind}"):
        resource = attributes(group.resource.attributes)
        for scoped in getattr(group, f"scope_{kind}"):
            yield resource, scoped.scope.name, scoped


def _has_key(span: Span, key: str, value: str) -> bool:
    return any(kv.key == key and kv.value.string_value == value for kv in span.attributes)


def read_spans(message: Message) -> Batch:
    """The calls, failed children and ended turns of an ``ExportTraceServiceRequest``."""
    batch = Batch()
    for resource, scope, scoped in _scopes(message, "spans"):
        agent = resource.get("service.name")
        for span in scoped.spans:
            _read_span(span, scope, agent if isinstance(agent, str) else None, batch)
    batch.records.sort(key=lambda r: r.call.end_ns)
    return batch


def _read_span(span: Span, scope: str, agent: str | None, batch: Batch) -> None:
    trace_id, parent = _int(span.trace_id), _int(span.parent_span_id)
    name = span.name
    if name == shp.CC_EXECUTION_SPAN:
        failure = _span_failure(span)
        if failure is not None:
            attrs = attributes(span.attributes)
            batch.failed_children[(trace_id, parent)] = str(attrs.get(shp.CC_ERROR_CLASS) or failure)
        return
    if not parent or name == shp.CC_TURN_SPAN or _has_key(span, semconv.GEN_AI_OPERATION_NAME,
                                                             semconv.OPERATION_INVOKE_AGENT):
        batch.ended.append((("trace", f"{trace_id:032x}"), _int(span.span_id)))
    if name == shp.AI_TOOL_SPAN:
        call = _ai_tool_call(span, attributes(span.attributes))
    elif name == shp.CC_TOOL_SPAN:
        attrs = attributes(span.attributes)
        call = _claude_tool(span, attrs)
        session = attrs.get(shp.SESSION_ID)
        if isinstance(session, str):
            batch.span_sessions.add(session)
    elif _has_key(span, semconv.GEN_AI_OPERATION_NAME, semconv.OPERATION_EXECUTE_TOOL):
        call = _genai_tool(span, attributes(span.attributes))
    else:
        return
    batch.records.append(Record(("trace", f"{trace_id:032x}"), call, parent, scope, agent))


def _base(span: Span, tool: str, call_id: Any, arguments: Any, result: str | None,  # noqa: PLR0917
          error: str | None) -> ToolCall:
    return ToolCall(tool, arguments, result, error is not None, error, _text(call_id), None,
                    span.start_time_unix_nano, span.end_time_unix_nano, _int(span.trace_id), _int(span.span_id),
                    arguments is not None or result is not None)


def _ai_tool_call(span: Span, attrs: Mapping[str, Any]) -> ToolCall:
    result = _text(attrs.get(shp.AI_TOOL_RESULT))
    error = _span_failure(span)
    code = _exit_code(result)
    if error is None and code:
        error = f"exit_code_{code}"
    return _base(span, str(attrs.get(shp.AI_TOOL_NAME) or shp.AI_TOOL_SPAN), attrs.get(shp.AI_TOOL_ID),
                 _text(attrs.get(shp.AI_TOOL_ARGS)), result, error)


def _claude_tool(span: Span, attrs: Mapping[str, Any]) -> ToolCall:
    details = {key: attrs[key] for key in shp.CC_DETAIL_KEYS if key in attrs}
    outputs = [attributes(e.attributes).get(shp.CC_OUTPUT) for e in span.events if e.name == shp.CC_OUTPUT_EVENT]
    result = _text(outputs[0]) if outputs else None
    tool = attrs.get(semconv.GEN_AI_TOOL_NAME) or attrs.get(shp.CC_TOOL_NAME) or shp.CC_TOOL_SPAN
    return _base(span, str(tool), attrs.get(semconv.GEN_AI_TOOL_CALL_ID) or attrs.get(shp.CC_TOOL_USE_ID),
                 details or None, result, _span_failure(span))


def _genai_tool(span: Span, attrs: Mapping[str, Any]) -> ToolCall:
    error = attrs.get(semconv.ERROR_TYPE)
    tool = attrs.get(semconv.GEN_AI_TOOL_NAME) or span.name.removeprefix(semconv.OPERATION_EXECUTE_TOOL + " ")
    arguments = _text(attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS))
    result = _text(attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT))
    return _base(span, str(tool), attrs.get(semconv.GEN_AI_TOOL_CALL_ID), arguments, result,
                 str(error) if error is not None else _span_failure(span))


def read_logs(message: Message) -> list[Record]:
    """The calls of an ``ExportLogsServiceRequest``, in order of their time."""
    out: list[Record] = []
    for resource, scope, scoped in _scopes(message, "logs"):
        agent = resource.get("service.name")
        for log in scoped.log_records:
            if not any(kv.key == shp.EVENT_NAME and kv.value.string_value in (
                    shp.CC_TOOL_RESULT_EVENT, shp.CODEX_TOOL_RESULT_EVENT) for kv in log.attributes):
                continue
            record = _log_record(log, attributes(log.attributes), scope, agent if isinstance(agent, str) else None)
            if record is not None:
                out.append(record)
    out.sort(key=lambda r: r.call.end_ns)
    return out


def _ms(value: Any) -> int:
    try:
        return max(0, int(float(value) * 1_000_000))
    except (TypeError, ValueError):
        return 0


def _log_record(log: Any, attrs: Mapping[str, Any], scope: str, agent: str | None) -> Record | None:
    end_ns = log.time_unix_nano or log.observed_time_unix_nano  # Codex sets only the observed time
    start_ns = max(0, end_ns - _ms(attrs.get(shp.CC_DURATION_MS)))
    trace_id, span_id = _int(log.trace_id), _int(log.span_id)
    if attrs.get(shp.EVENT_NAME) == shp.CODEX_TOOL_RESULT_EVENT:
        session = _text(attrs.get(shp.CODEX_CONVERSATION_ID))
        outcome = outcome_of(attrs.get(shp.CODEX_OUTPUT))
        arguments = _text(attrs.get(shp.CODEX_ARGUMENTS))
        call = ToolCall(str(attrs.get(shp.CC_TOOL_NAME) or "unknown"), arguments, outcome.result, outcome.failed,
                        outcome.error_type, _text(attrs.get(shp.CODEX_CALL_ID)), None, start_ns, end_ns, trace_id,
                        span_id, arguments is not None or outcome.result is not None)
        held = False
    else:
        session = _text(attrs.get(shp.SESSION_ID))
        failed = str(attrs.get(shp.CC_SUCCESS, "true")).lower() != "true"
        error = (_text(attrs.get(shp.CC_ERROR_TYPE)) or semconv.ERROR_TYPE_OTHER) if failed else None
        arguments = _text(attrs.get(shp.CC_TOOL_INPUT))
        call = ToolCall(str(attrs.get(shp.CC_TOOL_NAME) or "unknown"), arguments, None, failed, error,
                        _text(attrs.get(shp.CC_TOOL_USE_ID)), None, start_ns, end_ns, trace_id, span_id,
                        arguments is not None)
        held = True
        if trace_id:  # Claude Code puts the turn's trace on its events: the same turn as its spans
            return Record(("trace", f"{trace_id:032x}"), call, 0, scope, agent, held, session)
    group: GroupKey = ("session", f"{agent or '?'}/{session}") if session else ("trace", f"{trace_id:032x}")
    return Record(group, call, 0, scope, agent, held, session)
