"""Every attribute, metric and event name otel_toolchain reads or writes.

The GenAI names are the string values of the OpenTelemetry GenAI semantic conventions
(open-telemetry/semantic-conventions-genai). They are kept here as plain strings, not imported
from ``opentelemetry.semconv._incubating``: that module is private and marks every GenAI name as
moved. The package's own names live under ``otel_toolchain.*``. The names other conventions use
(OpenInference, Traceloop, Claude Code), which the chain only reads, live beside their
normalisers in ``otel_toolchain._recognise.shapes``.
"""

from __future__ import annotations

from typing import Final

# -- GenAI span attributes (semantic-conventions-genai) ------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_NAME_OPENINFERENCE: Final = "agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
ERROR_TYPE: Final = "error.type"
ERROR_TYPE_OTHER: Final = "_OTHER"

OPERATION_EXECUTE_TOOL: Final = "execute_tool"
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
OPERATION_INVOKE_WORKFLOW: Final = "invoke_workflow"

# -- otel_toolchain span attributes ---------------------------------------------------------------
TOOL_TAG_PREFIX: Final = "otel_toolchain.tool."
"""A plugin's tag ``key`` on a call becomes the span attribute ``otel_toolchain.tool.<key>``."""
TOOL_CLASS: Final = "otel_toolchain.tool.class"
TOOL_CWD: Final = "otel_toolchain.tool.cwd"
HARNESS: Final = "otel_toolchain.harness"
"""On a turn span: the coding-agent CLI whose stream it came from (claude-code, codex, opencode, pi)."""
TURN_CONTENT_CAPTURE: Final = "otel_toolchain.turn.content_capture"
"""On a turn span: ``off`` when an instrumentation recorded no tool arguments or results."""
RETRY_ATTEMPT: Final = "otel_toolchain.retry.attempt"
RETRY_REASON: Final = "otel_toolchain.retry.reason"
PLUGIN: Final = "otel_toolchain.plugin"
STOP_REASON: Final = "otel_toolchain.stop.reason"
STOP_MODE: Final = "otel_toolchain.stop.mode"
STOP_PERIOD: Final = "otel_toolchain.stop.period"
STOP_MESSAGE: Final = "otel_toolchain.stop.message"
NUDGE_MESSAGE: Final = "otel_toolchain.nudge.message"
STOP_REPEATS: Final = "otel_toolchain.stop.repeats"
STOP_AT_CALL: Final = "otel_toolchain.stop.at_call"
STOP_LOOP_START: Final = "otel_toolchain.stop.loop.start"
STOP_LOOP_CALLS: Final = "otel_toolchain.stop.loop.calls"
STOP_LOOP_SECONDS: Final = "otel_toolchain.stop.loop.seconds"
STOP_IGNORED_FIELDS: Final = "otel_toolchain.stop.ignored_fields"
STOP_MASKED: Final = "otel_toolchain.stop.masked"
STOP_MASKS: Final = "otel_toolchain.stop.masks"
"""What identity masked in the cycle's failed results: kinds of volatile token and ``line order``."""
STOP_LOOP_TOKENS: Final = "otel_toolchain.stop.loop.tokens"
"""Input and output tokens the loop cost; only where the harness reports usage as it goes."""
STOP_NOTE: Final = "otel_toolchain.stop.note"
"""Why a verdict is shadow-only in enforce mode (no content to compare); absent otherwise."""
STOP_CYCLE_TOOLS: Final = "otel_toolchain.stop.cycle.tools"
STOP_CYCLE_CALL_IDS: Final = "otel_toolchain.stop.cycle.call_ids"
STOP_CYCLE_DIGESTS: Final = "otel_toolchain.stop.cycle.digests"
HOOK: Final = "otel_toolchain.hook"
LISTENER_HOOK_PREFIX: Final = "listener."
"""``otel_toolchain.hook`` of an error raised by a listener (``listener.on_stop``…), not by the plugin itself."""
EXPORT_SIGNAL: Final = "otel_toolchain.signal"
EXPORT_REASON: Final = "otel_toolchain.export.reason"
"""Why ``otel_toolchain.export.dropped`` dropped items: absent for a failed export, ``invalid_item``
for one item refused alone."""
EXPORT_REASON_INVALID: Final = "invalid_item"
TOOL_FAILED: Final = "otel_toolchain.tool.failed"

ERROR_TYPE_PLUGIN_PREFIX: Final = "tool_plugin."
"""A stopped turn's ``error.type`` is ``tool_plugin.<plugin name>``."""

# -- span and event names -------------------------------------------------------------------------
RETRY_SPAN_NAME: Final = "otel_toolchain.retry"
STOP_EVENT: Final = "otel_toolchain.turn.stop"
SHADOW_STOP_EVENT: Final = "otel_toolchain.turn.stop.shadow"
NUDGE_EVENT: Final = "otel_toolchain.turn.nudge"
STOP_MARK_SPAN: Final = "otel_toolchain.turn.stopped"
"""The span the OTLP receiver adds to an agent's own trace when it stops the turn (the turn span is not its to mark)."""
TOOL_STATS_EVENT: Final = "otel_toolchain.tool_stats"


def tool_span_name(tool: str) -> str:
    """The GenAI span name of a tool call: ``execute_tool {tool}``."""
    return f"{OPERATION_EXECUTE_TOOL} {tool}"


def agent_span_name(agent: str | None) -> str:
    """The GenAI span name of a turn: ``invoke_agent {agent}``, or ``invoke_agent`` unnamed."""
    return f"{OPERATION_INVOKE_AGENT} {agent}" if agent else OPERATION_INVOKE_AGENT


# -- metrics (instrument name, unit) --------------------------------------------------------------
METRIC_TOOL_CALLS: Final = "otel_toolchain.tool.calls"
OTEL_METRIC_OVERFLOW: Final = "otel.metric.overflow"  # the SDK's attribute for points past a cardinality limit
METRIC_TOOL_DURATION: Final = "otel_toolchain.tool.duration"
METRIC_RETRIES: Final = "otel_toolchain.retries"
METRIC_TURN_FAIL_STREAK: Final = "otel_toolchain.turn.longest_fail_streak"
METRIC_TURN_STOPS: Final = "otel_toolchain.turn.stops"
METRIC_TURN_REPEAT_STREAK: Final = "otel_toolchain.turn.repeat_streak"
METRIC_OPEN_REPEAT_STREAK: Final = "otel_toolchain.repeat_streak.open_max"
METRIC_REPEAT_LIMIT: Final = "otel_toolchain.repeat_guard.limit"
METRIC_PLUGIN_ERRORS: Final = "otel_toolchain.plugin.errors"
METRIC_TURNS_EVICTED: Final = "otel_toolchain.turns.evicted"
METRIC_EVICTED_CALLS: Final = "otel_toolchain.turns.evicted_calls"
METRIC_EXPORT_DROPPED: Final = "otel_toolchain.export.dropped"
METRIC_EXPORT_REPAIRED: Final = "otel_toolchain.export.repaired"
"""Items made encodable before export (a lone surrogate replaced, a time out of range clamped), by signal."""

TOOL_DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                                40.96, 81.92)
"""The GenAI conventions' duration buckets, in seconds."""
COUNT_BUCKETS: Final = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)
