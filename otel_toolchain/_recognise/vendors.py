"""Tool content that five agent frameworks keep outside the usual attributes, and their result forms.

Where each one puts it (captured for real in ``tests/data/frameworks``):

- Strands (its default conventions): the arguments in the span event ``gen_ai.tool.message``
  (``content``), the result in ``gen_ai.choice`` (``message``, a content-block list).
- LlamaIndex's own OTel (``llama-index-observability-otel``): the tool span is the
  ``BaseWorkflowAgent.call_tool`` step, its call in ``llamaindex.step.input_summary`` as a Python
  repr ``ToolCall(tool_name=…, tool_kwargs=…, tool_id=…)``, its result in the event
  ``step.output`` (a ``ToolCallResult(…)`` repr, cut after about 200 characters).
- Google ADK with schema 1 (ADK 1.x): ``gcp.vertex.agent.tool_call_args`` / ``tool_response``.
- Traceloop (LlamaIndex, Agno): ``traceloop.entity.input`` / ``traceloop.entity.output``; Agno's
  output is the repr of its ``ToolExecution``: ``status='success' result='…' error=None …``.

Result forms made into the text the model saw (so that one call reads the same whoever recorded
it, and per-call ids never make equal results differ): LlamaIndex ``ToolOutput`` /
``ToolCallResult`` JSON (``raw_output``, ``is_error``, ``tool_id``), ADK function responses
(``{"id", "name", "response"}`` and ``{"result": …}``), single text-block lists
(``[{"text": …}]``), Agno's ``ToolExecution`` repr.

Pure functions: no I/O, no locks, never raise on odd input (odd input is kept as it is).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from otel_toolchain.identity import canonical_json

__all__ = [
    "ADK_ARGS", "ADK_RESPONSE", "CREWAI_FAILURE", "LI_INPUT_EVENT", "LI_SUMMARY", "NOT_SPECIFIED", "TL_ENTITY_INPUT",
    "TL_ENTITY_OUTPUT", "TL_TOOL_ARGUMENTS", "Unwrapped", "agno_execution", "from_events",
    "is_llamaindex_tool_step", "is_run_entry",
    "llamaindex_step", "unwrap_result",
]

STRANDS_ARGS_EVENT: Final = "gen_ai.tool.message"
STRANDS_RESULT_EVENT: Final = "gen_ai.choice"
LI_TOOL_STEP: Final = "BaseWorkflowAgent.call_tool"
LI_INPUT_EVENT: Final = "llamaindex.step.input_event"
LI_SUMMARY: Final = "llamaindex.step.input_summary"
LI_OUTPUT_EVENT: Final = "step.output"
ADK_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_RESPONSE: Final = "gcp.vertex.agent.tool_response"
_RUN_SUFFIXES: Final = ("Agent.run", "AgentWorkflow.run")
NOT_SPECIFIED: Final = "<not specified>"
"""What ADK writes for a call id (and a result) it does not have."""
CREWAI_FAILURE: Final = "crewai.tool.failure.reason"
"""On CrewAI's ``tool failure`` span: a second ``execute_tool`` span beside the failed call's own."""
TL_ENTITY_INPUT: Final = "traceloop.entity.input"
TL_ENTITY_OUTPUT: Final = "traceloop.entity.output"
TL_TOOL_ARGUMENTS: Final = "tool.arguments"
_TEXT_IN_REPR: Final = re.compile(r"""text=(?P<q>['"])(?P<text>(?:\\.|(?!(?P=q)).)*)(?P=q)""")
_AGNO_FIELD: Final = re.compile(
    r"""(?P<key>status|result|error)=(?:None|(?P<q>['"])(?P<v>(?:\\.|(?!(?P=q)).)*)(?P=q))""")


class Unwrapped(NamedTuple):
    """A result as the model saw it, and what its form said about the call."""

    text: str
    call_id: str | None = None
    failed: bool = False


def from_events(events: Sequence[Any]) -> tuple[str | None, str | None]:
    """(arguments, result) from Strands' span events, each None when absent."""
    arguments = result = None
    for event in events:
        attrs = event.attributes or {}
        if event.name == STRANDS_ARGS_EVENT and "content" in attrs:
            arguments = str(attrs["content"])
        elif event.name == STRANDS_RESULT_EVENT and "message" in attrs:
            result = str(attrs["message"])
    return arguments, result


def is_run_entry(name: str) -> bool:
    """Whether a span is a LlamaIndex agent's run (``FunctionAgent.run``, ``AgentWorkflow.run``, …)."""
    return name.endswith(_RUN_SUFFIXES)


def is_llamaindex_tool_step(name: str, attrs: Mapping[str, Any]) -> bool:
    """Whether a span is LlamaIndex's own tool step (its native OTel writes no kind attribute)."""
    return name == LI_TOOL_STEP and attrs.get(LI_INPUT_EVENT) == "ToolCall"


def llamaindex_step(attrs: Mapping[str, Any], events: Sequence[Any]) -> tuple[str | None, Any, str | None, str | None]:
    """(tool name, arguments, call id, result) of a LlamaIndex tool step; None where unreadable."""
    fields = _call_fields(str(attrs.get(LI_SUMMARY, "")))
    name, call_id = fields.get("tool_name"), fields.get("tool_id")
    result = None
    for event in events:
        if event.name == LI_OUTPUT_EVENT and event.attributes and "output" in event.attributes:
            result = _llamaindex_output(str(event.attributes["output"]))
    return (name if isinstance(name, str) else None, fields.get("tool_kwargs"),
            call_id if isinstance(call_id, str) else None, result)


def _call_fields(text: str) -> dict[str, Any]:
    """The literal keyword arguments of a repr like ``ToolCall(a='x', b={…})``; {} if not one."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    if not isinstance(node, ast.Call):
        return {}
    fields: dict[str, Any] = {}
    for keyword in node.keywords:
        try:
            if keyword.arg is not None:
                fields[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # not a literal (a nested repr): skipped
    return fields


def _llamaindex_output(text: str) -> str:
    """The result text in a ``ToolCallResult(…)`` repr; the repr after its call id if it has none."""
    _, _, output = text.partition("tool_output=")
    match = _TEXT_IN_REPR.search(output)
    if match is not None:
        return _unescape(match.group("text"))
    return output or text  # cut before the text: what there is, without the per-call id before it


def _unescape(text: str) -> str:
    try:
        value = ast.literal_eval(f"'{text}'")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, str) else text


def unwrap_result(value: Any) -> Unwrapped | None:
    """The result a parsed JSON value stands for, if it is one of the framework forms above."""
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict) and set(value[0]) == {"text"}:
            return Unwrapped(_as_text(value[0]["text"]))  # Strands' content blocks
        return None
    return _unwrap_object(value) if isinstance(value, dict) else None


def _unwrap_object(value: dict[str, Any]) -> Unwrapped | None:
    if isinstance(value.get("tool_output"), dict) and "tool_name" in value:  # LlamaIndex ToolCallResult
        inner = unwrap_result(value["tool_output"])
        call_id = value.get("tool_id")
        return inner._replace(call_id=call_id if isinstance(call_id, str) else None) if inner else None
    if "raw_output" in value and "is_error" in value:  # LlamaIndex ToolOutput
        return Unwrapped(_as_text(value["raw_output"]), failed=value["is_error"] is True)
    if set(value) == {"id", "name", "response"}:  # ADK's function response (OpenInference)
        inner = unwrap_result(value["response"])
        call_id = value["id"] if isinstance(value["id"], str) else None
        return (inner or Unwrapped(_as_text(value["response"])))._replace(call_id=call_id)
    if set(value) == {"result"}:  # ADK's tool response
        return Unwrapped(_as_text(value["result"]))
    return None


def agno_execution(raw: str) -> Unwrapped | None:
    """Agno's ``ToolExecution`` repr (Traceloop): its result, or its error when it failed."""
    if not raw.startswith("status="):
        return None
    fields = {m.group("key"): (None if m.group("v") is None else _unescape(m.group("v")))
              for m in _AGNO_FIELD.finditer(raw)}
    failed = fields.get("status") == "failure"
    text = fields.get("error") if failed else fields.get("result")
    return Unwrapped(text if text is not None else raw, failed=failed)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)
