"""Reading spans: which ones are tool calls, turns and retries, and what a tool span says.

Works on live spans (``on_start``, just before ``end()``) and on ended ``ReadableSpan`` alike:
both expose ``name``, ``attributes``, ``status``, ``start_time`` and ``end_time``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from opentelemetry.util.types import Attributes

from otel_toolchain import semconv
from otel_toolchain._content import take
from otel_toolchain.calls import Retry, ToolCall


class Role(enum.Enum):
    TOOL = "tool"
    TURN = "turn"
    RETRY = "retry"
    OTHER = "other"


def attributes_of(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attributes as a plain mapping, for fast repeated lookups.

    The SDK hands out a read-only proxy whose ``get`` of a missing key goes through an exception;
    a tool call's hot path makes a dozen such lookups, so the plain dict behind the proxy is read
    when it is there (SDK 1.x: ``BoundedAttributes._dict``). Reads only: no lock is needed under
    the GIL, and a write racing with a read is the instrumentation's own race either way.
    """
    inner = getattr(getattr(span, "_attributes", None), "_dict", None)
    if isinstance(inner, dict):
        return inner
    return span.attributes or {}


def role_of(name: str, attributes: Mapping[str, Any] | Attributes) -> Role:
    """What a span is, from its name and attributes as they are now."""
    attrs = attributes or {}
    operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
    if operation == semconv.OPERATION_EXECUTE_TOOL:
        return Role.TOOL
    if operation == semconv.OPERATION_INVOKE_AGENT:
        return Role.TURN
    if semconv.RETRY_ATTEMPT in attrs:
        return Role.RETRY
    return Role.OTHER


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def tool_call_from(span: ReadableSpan, *, end_ns: int | None = None) -> ToolCall:
    """The ToolCall a tool span describes; content offered by the recorder takes precedence."""
    attrs = attributes_of(span)
    context = span.get_span_context()
    span_id = context.span_id if context is not None else 0
    offered = take(span_id)
    if offered is not None:
        arguments, result = offered.arguments, offered.result
    else:
        arguments = _text(attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS))
        result = _text(attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT))
    error_type = _text(attrs.get(semconv.ERROR_TYPE))
    failed = error_type is not None or span.status.status_code is StatusCode.ERROR
    return ToolCall(
        tool=str(attrs.get(semconv.GEN_AI_TOOL_NAME) or _tool_from_name(span.name)),
        call_id=_text(attrs.get(semconv.GEN_AI_TOOL_CALL_ID)),
        raw_arguments=arguments,
        result=result,
        failed=failed,
        error_type=error_type or (semconv.ERROR_TYPE_OTHER if failed else None),
        start_ns=span.start_time or 0,
        end_ns=end_ns or span.end_time or time.time_ns(),
        cwd=_text(attrs.get(semconv.TOOL_CWD)),
        trace_id=context.trace_id if context is not None else 0,
        span_id=span_id,
    )


def _tool_from_name(name: str) -> str:
    prefix = semconv.OPERATION_EXECUTE_TOOL + " "
    return name[len(prefix):] if name.startswith(prefix) else name


def retry_from(span: ReadableSpan) -> Retry:
    """The Retry a retry span describes."""
    attrs = span.attributes or {}
    attempt = attrs.get(semconv.RETRY_ATTEMPT)
    return Retry(
        attempt=attempt if isinstance(attempt, int) else 1,
        reason=_text(attrs.get(semconv.RETRY_REASON)),
        error_type=_text(attrs.get(semconv.ERROR_TYPE)),
        time_ns=span.start_time or 0,
    )
