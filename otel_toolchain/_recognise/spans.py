"""Reading spans: which ones are tool calls, turns and retries, and what a tool span says.

Recognised, whoever recorded the span (attribute names in ``integrations._shapes``):

- tool: ``gen_ai.operation.name=execute_tool`` (GenAI conventions, pydantic-ai, util-genai,
  Traceloop), ``openinference.span.kind=TOOL``, ``traceloop.span.kind=tool``, ``claude_code.tool``,
  or a name ``execute_tool …`` whose attributes have not arrived yet. smolagents' ``final_answer``
  is not a tool call (it is how the agent ends).
- turn: ``invoke_agent``/``invoke_workflow``, OpenInference ``AGENT``, Traceloop ``agent`` and
  ``workflow``, ``claude_code.interaction``. The chain takes the outermost one above a tool span.
  Frameworks that mark no agent span get the rule of their run entry point: a span named
  ``<X>Agent.run`` or ``<X>AgentWorkflow.run`` (LlamaIndex's workflow agents, under its own OTel
  and OpenInference, which call it a CHAIN) is a turn, so two runs under one application span
  are two turns. (CrewAI marks its agent under every family that records tools.)
- retry: the recorder's ``otel_toolchain.retry`` spans, pydantic-ai's failed model request attempts,
  ``http.request.resend_count`` > 0, Claude Code's ``gen_ai.request.attempt`` events.

Works on live spans (``on_start``, just before ``end()``) and on ended ``ReadableSpan`` alike.
Pure reads of the span: no locks, never raises on odd attribute values.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from opentelemetry.util.types import Attributes

from otel_toolchain import semconv
from otel_toolchain._recognise import shapes as shp
from otel_toolchain._recognise import vendors
from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.identity import parse_arguments

__all__ = [
    "Role", "attributes_of", "failure_of", "is_decided", "read_tool_call", "retries_from", "role_of",
]

_TOOL_PREFIX: Final = semconv.OPERATION_EXECUTE_TOOL + " "
_MARKERS: Final = (semconv.GEN_AI_OPERATION_NAME, shp.OI_SPAN_KIND, shp.TL_SPAN_KIND, semconv.RETRY_ATTEMPT,
                   *shp.NOT_A_TOOL_MARKERS)
_ARGUMENT_KEYS: Final = (semconv.GEN_AI_TOOL_CALL_ARGUMENTS, shp.OI_INPUT, vendors.TL_TOOL_ARGUMENTS,
                         vendors.ADK_ARGS, vendors.TL_ENTITY_INPUT)
_RESULT_KEYS: Final = (semconv.GEN_AI_TOOL_CALL_RESULT, shp.OI_OUTPUT, vendors.ADK_RESPONSE, vendors.TL_ENTITY_OUTPUT)


class Role(enum.Enum):
    TOOL = "tool"
    TURN = "turn"
    RETRY = "retry"
    OTHER = "other"


_OPERATION_ROLES: Final = {semconv.OPERATION_EXECUTE_TOOL: Role.TOOL, semconv.OPERATION_INVOKE_AGENT: Role.TURN,
                           semconv.OPERATION_INVOKE_WORKFLOW: Role.TURN}
_OI_ROLES: Final = {"TOOL": Role.TOOL, "AGENT": Role.TURN}
_TL_ROLES: Final = {"tool": Role.TOOL, "agent": Role.TURN, "workflow": Role.TURN}
_NAMED_ROLES: Final = {shp.CC_TOOL_SPAN: Role.TOOL, shp.CC_TURN_SPAN: Role.TURN}


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
    role = (_OPERATION_ROLES.get(operation) if isinstance(operation, str) else None) or _kind_role(attrs) \
        or _NAMED_ROLES.get(name)
    if role is None:
        if operation is None and name.startswith(_TOOL_PREFIX):
            return Role.TOOL  # Traceloop names the span at start and sets everything else after
        if vendors.is_llamaindex_tool_step(name, attrs):
            return Role.TOOL
        if vendors.is_run_entry(name):
            return Role.TURN
        return Role.RETRY if semconv.RETRY_ATTEMPT in attrs else Role.OTHER
    if role is Role.TOOL and (attrs.get(shp.OI_TOOL_NAME) == "final_answer" or vendors.CREWAI_FAILURE in attrs):
        return Role.OTHER  # smolagents ends its run through final_answer; CrewAI records a failure twice
    return role


def _kind_role(attrs: Mapping[str, Any]) -> Role | None:
    kind = attrs.get(shp.OI_SPAN_KIND)
    if isinstance(kind, str):
        return _OI_ROLES.get(kind)  # CHAIN: None, so a run entry's name can still make it a turn
    kind = attrs.get(shp.TL_SPAN_KIND)
    if kind == "task" and shp.OI_TOOL_NAME in attrs:
        return Role.TOOL  # Traceloop-LlamaIndex: its tool step is a task carrying the tool's name
    return _TL_ROLES.get(kind) if isinstance(kind, str) else None


def is_decided(attributes: Mapping[str, Any]) -> bool:
    """Whether the span already says what it is; spans that do not may become tools before they end."""
    return any(key in attributes for key in _MARKERS)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return str(value)
    return None


def read_tool_call(span: ReadableSpan, *, end_ns: int | None = None, child_failure: str | None = None) -> ToolCall:
    """The ToolCall a tool span of another instrumentation describes.

    ``child_failure`` is the error type of a failed direct child (Claude Code fails the child).
    ``has_content`` is False when the span carried neither arguments nor result.
    """
    attrs = attributes_of(span)
    context = span.get_span_context()
    name, arguments, call_id, text, result = _content(span, attrs)
    has_content = text is not None or result is not None or arguments is not None
    result_failed = False
    if text is not None:
        arguments = parse_arguments(shp.normalise_arguments(text))
    elif arguments is None and shp.CC_FILE_PATH in attrs:  # Claude Code with OTEL_LOG_TOOL_DETAILS: what there is
        arguments = {shp.CC_FILE_PATH: attrs[shp.CC_FILE_PATH]}
    if result is not None:
        info = shp.normalise_result(result)
        result, call_id, result_failed = info.text, call_id or info.call_id, info.failed
    error_type = _failure(span, attrs) or child_failure
    if error_type is None and result_failed:
        error_type = semconv.ERROR_TYPE_OTHER
    return ToolCall(
        name, arguments, result, error_type is not None, error_type, call_id,
        _text(attrs.get(semconv.TOOL_CWD)), span.start_time or 0, end_ns or span.end_time or time.time_ns(),
        context.trace_id if context is not None else 0, context.span_id if context is not None else 0, has_content,
    )


def _content(span: ReadableSpan, attrs: Mapping[str, Any]) -> tuple[str, Any, str | None, str | None, str | None]:
    """(tool name, parsed arguments, call id, argument text, result text) where the span keeps them."""
    call_id = _first(attrs, (semconv.GEN_AI_TOOL_CALL_ID, shp.CC_TOOL_USE_ID, shp.OI_TOOL_ID))
    if call_id == vendors.NOT_SPECIFIED:
        call_id = None
    if vendors.is_llamaindex_tool_step(span.name, attrs):
        named, arguments, step_id, result = vendors.llamaindex_step(attrs, span.events)
        return named or span.name, arguments, call_id or step_id, None, result
    text, result = _first(attrs, _ARGUMENT_KEYS), _first(attrs, _RESULT_KEYS)
    if text is None and result is None and span.events:
        text, result = vendors.from_events(span.events)  # Strands' default conventions
    return _tool_name(span.name, attrs), None, call_id, text, result


def _tool_name(name: str, attrs: Mapping[str, Any]) -> str:
    named = _first(attrs, (semconv.GEN_AI_TOOL_NAME, shp.OI_TOOL_NAME, shp.CC_TOOL_NAME))
    if named:
        return named
    if name.startswith(_TOOL_PREFIX):
        return name[len(_TOOL_PREFIX):]
    return name[: -len(".tool")] if name.endswith(".tool") and len(name) > 5 else name


def _failure(span: ReadableSpan, attrs: Mapping[str, Any]) -> str | None:
    """The span's error type if it failed: ``error.type``, else its exception's type, else ``_OTHER``."""
    error_type = attrs.get(semconv.ERROR_TYPE)
    if error_type is not None:
        return str(error_type)
    if span.status.status_code is not StatusCode.ERROR and attrs.get(shp.TL_TASK_STATUS) != "failure":
        return None
    for event in span.events:
        if event.name == shp.EXCEPTION_EVENT and event.attributes and shp.EXCEPTION_TYPE in event.attributes:
            return str(event.attributes[shp.EXCEPTION_TYPE])
    return semconv.ERROR_TYPE_OTHER


def failure_of(span: ReadableSpan) -> str | None:
    """The error type of a span that failed (status ERROR or ``error.type``), else None."""
    attrs = attributes_of(span)
    if span.status.status_code is not StatusCode.ERROR and semconv.ERROR_TYPE not in attrs:
        return None
    return _failure(span, attrs)


def retries_from(span: ReadableSpan) -> list[Retry]:
    """The provider retries an ended span shows (most spans show none)."""
    attrs = attributes_of(span)
    time_ns = span.start_time or 0
    if semconv.RETRY_ATTEMPT in attrs:
        attempt = attrs[semconv.RETRY_ATTEMPT]
        return [Retry(attempt if isinstance(attempt, int) else 1, _text(attrs.get(semconv.RETRY_REASON)),
                      _text(attrs.get(semconv.ERROR_TYPE)), time_ns)]
    attempt = attrs.get(shp.PYDANTIC_AI_ATTEMPT)
    if isinstance(attempt, int) and span.status.status_code is StatusCode.ERROR:
        return [Retry(attempt + 1, span.status.description, _failure(span, attrs), time_ns)]
    resends = attrs.get(shp.HTTP_RESEND_COUNT)
    if isinstance(resends, int) and resends > 0:
        return [Retry(resends, "http.request.resend_count", _text(attrs.get(semconv.ERROR_TYPE)), time_ns)]
    if span.name == shp.CC_LLM_SPAN:
        return _claude_code_attempts(span, attrs)
    return []


def _claude_code_attempts(span: ReadableSpan, attrs: Mapping[str, Any]) -> list[Retry]:
    attempts = [e for e in span.events if e.name == shp.CC_ATTEMPT_EVENT]
    if attempts:
        numbers = [e.attributes.get(shp.CC_ATTEMPT) if e.attributes else None for e in attempts]
        return [Retry(n - 1, shp.CC_ATTEMPT_EVENT, None, e.timestamp)
                for n, e in zip(numbers, attempts, strict=True) if isinstance(n, int) and n > 1]
    last = attrs.get(shp.CC_ATTEMPT)
    if isinstance(last, int) and last > 1:
        return [Retry(n, shp.CC_ATTEMPT, None, span.start_time or 0) for n in range(1, last)]
    return []
