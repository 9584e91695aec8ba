"""What each instrumentation writes on its spans, and how to read it as one call identity.

The attribute names of the conventions otel_toolchain recognises besides the GenAI ones
(OpenInference, OpenLLMetry/Traceloop, Claude Code), and the value normalisers that make the same
call look the same whoever recorded it:

- arguments: Traceloop-LangChain wraps them as ``{"input_str": "<python repr>", "tags": …,
  "metadata": {… per-call ids …}}``; smolagents (OpenInference) as ``{"args": [], "kwargs": {…},
  "sanitize_inputs_outputs": true}``. Both are unwrapped to the call's own arguments, as JSON.
- results: LangChain ``ToolMessage`` serialisations (OpenInference ``{"type": "tool", "data": …}``,
  Traceloop ``{"output": {"lc": 1, … "kwargs": …}}``) become their ``content``; their
  ``tool_call_id`` and ``status`` give the call id and the failure.

Pure functions of strings and mappings: no I/O, no locks, never raise on odd input (odd input
is kept as it is). Called on whatever thread ends the span.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from otel_toolchain._recognise import vendors
from otel_toolchain.identity import canonical_json

__all__ = [
    "CAPTURE_HINTS",
    "ResultInfo",
    "capture_hint",
    "normalise_arguments",
    "normalise_result",
]

NOT_A_TOOL_MARKERS: Final = ("http.request.method", "http.method", "db.system", "db.system.name", "rpc.system")
"""Attributes that, present at a span's start, say it is an HTTP, database or RPC span: never a tool."""

# -- OpenInference (openinference-semantic-conventions) --------------------------------------------
OI_SPAN_KIND: Final = "openinference.span.kind"
OI_TOOL_NAME: Final = "tool.name"
OI_TOOL_ID: Final = "tool.id"
OI_INPUT: Final = "input.value"
OI_OUTPUT: Final = "output.value"
# -- OpenLLMetry / Traceloop -----------------------------------------------------------------------
TL_SPAN_KIND: Final = "traceloop.span.kind"
TL_TASK_STATUS: Final = "gen_ai.task.status"
# -- Claude Code (its own OTLP spans) --------------------------------------------------------------
CC_TOOL_SPAN: Final = "claude_code.tool"
CC_TURN_SPAN: Final = "claude_code.interaction"
CC_LLM_SPAN: Final = "claude_code.llm_request"
CC_TOOL_NAME: Final = "tool_name"
CC_TOOL_USE_ID: Final = "tool_use_id"
CC_FILE_PATH: Final = "file_path"
CC_ATTEMPT: Final = "attempt"
CC_ATTEMPT_EVENT: Final = "gen_ai.request.attempt"
# -- retries shown by other instrumentations -------------------------------------------------------
PYDANTIC_AI_ATTEMPT: Final = "pydantic_ai.model_request.attempt"
HTTP_RESEND_COUNT: Final = "http.request.resend_count"
# -- the exception event of the OTel spec ----------------------------------------------------------
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"

#: Scope-name prefix → how to make that instrumentation record tool arguments and results.
CAPTURE_HINTS: Final[tuple[tuple[str, str], ...]] = (
    ("pydantic-ai", "pydantic-ai: InstrumentationSettings(include_content=True) (the default)"),
    ("strands.telemetry", "Strands: content is always recorded (span events; attributes with "
     "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental); with StrandsAgentsToOpenInferenceProcessor, "
     "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS"),
    ("gcp.vertex.agent", "Google ADK: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY; "
     "with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1, ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true (the default)"),
    ("llamaindex.opentelemetry", "LlamaIndex's own OTel (llama-index-observability-otel): no setting, "
     "its step summaries are always recorded"),
    ("crewai", "CrewAI's own telemetry: content is always recorded"),
    ("opentelemetry.instrumentation.genai", "official GenAI instrumentations: "
     "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT)"),
    ("openinference", "OpenInference: unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS "
     "(content is on by default); OpenAI Agents SDK: RunConfig(trace_include_sensitive_data=True)"),
    ("opentelemetry.instrumentation.openai_agents", "Traceloop: TRACELOOP_TRACE_CONTENT=true; "
     "OpenAI Agents SDK: RunConfig(trace_include_sensitive_data=True)"),
    ("opentelemetry.instrumentation.crewai", "Traceloop's CrewAI instrumentation records no tool spans: "
     "use CrewAI's own telemetry (crewai.telemetry.tracing.telemetry_session) or OpenInference's"),
    ("opentelemetry.instrumentation", "Traceloop/OpenLLMetry: TRACELOOP_TRACE_CONTENT=true (the default)"),
    ("com.anthropic.claude_code", "Claude Code: OTEL_LOG_TOOL_DETAILS=1 (puts file_path on claude_code.tool; "
     "arguments and results stay in its logs)"),
)
_GENERIC_HINT: Final = ("the GenAI conventions: gen_ai.tool.call.arguments and gen_ai.tool.call.result "
                        "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY for util-genai)")


def capture_hint(scope: str) -> str:
    """How to turn content capture on for the instrumentation whose scope is ``scope``."""
    for prefix, hint in CAPTURE_HINTS:
        if scope.startswith(prefix):
            return hint
    return _GENERIC_HINT


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the stack (an agent may send that)
        return None


def normalise_arguments(raw: str) -> str:
    """The call's own arguments from ``raw``: unwrapped (as canonical JSON) when wrapped, else ``raw``."""
    if '"input_str"' not in raw and '"sanitize_inputs_outputs"' not in raw and not raw.startswith('{"kwargs"'):
        return raw  # not wrapped: ToolCall canonicalises it (cached), no need to parse it twice
    value = _loads(raw)
    if not isinstance(value, dict):
        return raw
    if "input_str" in value and "metadata" in value:  # Traceloop-LangChain's per-call wrapper
        return _from_python_repr(value["input_str"])
    if "sanitize_inputs_outputs" in value and isinstance(value.get("kwargs"), dict):  # smolagents
        args = value.get("args") or []
        return canonical_json(value["kwargs"] if not args else {"args": args, "kwargs": value["kwargs"]})
    if set(value) == {"kwargs"} and isinstance(value["kwargs"], dict):  # LlamaIndex tools (OpenInference, Traceloop)
        return canonical_json(value["kwargs"])
    return raw


def _from_python_repr(text: Any) -> str:
    if not isinstance(text, str):
        return canonical_json(text)
    try:
        return canonical_json(ast.literal_eval(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text


@dataclass(frozen=True, slots=True)
class ResultInfo:
    """A tool result as the model saw it, with what its serialisation said about the call."""

    text: str
    call_id: str | None = None
    failed: bool = False


def normalise_result(raw: str) -> ResultInfo:
    """``raw`` itself, or the content, call id and status of a serialised tool result.

    Serialised results: LangChain ToolMessages, and the framework forms of ``vendors``.
    """
    first = raw.lstrip()[:1]
    if first == "s" and (execution := vendors.agno_execution(raw)) is not None:
        return ResultInfo(execution.text, execution.call_id, execution.failed)
    if first == '"' and isinstance(text := _loads(raw), str):
        return ResultInfo(text)  # CrewAI's own telemetry writes the result as a JSON string
    if first not in ("{", "["):
        return ResultInfo(raw)
    if '"tool_call_id"' not in raw:
        unwrapped = vendors.unwrap_result(_loads(raw))
        return ResultInfo(raw) if unwrapped is None else ResultInfo(*unwrapped)
    value = _loads(raw)
    message = _tool_message(value) if isinstance(value, dict) else None
    if message is None:
        return ResultInfo(raw)
    content = message.get("content")
    text = content if isinstance(content, str) else canonical_json(content)
    call_id = message.get("tool_call_id")
    return ResultInfo(text, call_id if isinstance(call_id, str) else None, message.get("status") == "error")


def _tool_message(value: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if isinstance(value.get("output"), dict):  # Traceloop wraps the message in {"output": …}
        value = value["output"]
    for key in ("kwargs", "data"):  # lc constructor form, or messages_to_dict form
        inner = value.get(key)
        if isinstance(inner, dict) and "tool_call_id" in inner:
            return inner
    return value if "tool_call_id" in value and "content" in value else None


# -- agents' own OTLP export, as the receiver reads it (tests/data/otlp/README.md) ----------------
AI_TOOL_SPAN: Final = "ai.toolCall"
"""The Vercel AI SDK's per-call span (every AI SDK agent, and OpenCode with its experimental flag)."""
AI_TOOL_NAME: Final = "ai.toolCall.name"
AI_TOOL_ID: Final = "ai.toolCall.id"
AI_TOOL_ARGS: Final = "ai.toolCall.args"
AI_TOOL_RESULT: Final = "ai.toolCall.result"
CC_EXECUTION_SPAN: Final = "claude_code.tool.execution"
CC_OUTPUT_EVENT: Final = "tool.output"
CC_OUTPUT: Final = "output"
CC_FULL_COMMAND: Final = "full_command"
CC_ERROR_CLASS: Final = "error_class"
CC_DETAIL_KEYS: Final = (CC_FULL_COMMAND, CC_FILE_PATH, "pattern", "url", "query", "mcp_server_name", "mcp_tool_name",
                         "skill_name", "subagent_type")
"""The tool-detail attributes on a ``claude_code.tool`` span (OTEL_LOG_TOOL_DETAILS) that say what was called."""
CC_EVENTS_SCOPE: Final = "com.anthropic.claude_code.events"
EVENT_NAME: Final = "event.name"
SESSION_ID: Final = "session.id"
CC_TOOL_RESULT_EVENT: Final = "tool_result"
CC_TOOL_INPUT: Final = "tool_input"
CC_SUCCESS: Final = "success"
CC_ERROR_TYPE: Final = "error_type"
CC_DURATION_MS: Final = "duration_ms"
CODEX_TOOL_RESULT_EVENT: Final = "codex.tool_result"
CODEX_CONVERSATION_ID: Final = "conversation.id"
CODEX_CALL_ID: Final = "call_id"
CODEX_ARGUMENTS: Final = "arguments"
CODEX_OUTPUT: Final = "output"
