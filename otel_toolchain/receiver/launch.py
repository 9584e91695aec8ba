"""Pointing a child agent's own OTLP export at the receiver: the environment and arguments per CLI.

Every child gets the standard OTel settings (endpoint, http/protobuf, OTLP exporters for traces,
logs and metrics, 200 ms batch and export delays so calls arrive 0.06-0.3 s after they end). Then,
by the program's name (measured with Claude Code 2.1.332, Codex 0.171, OpenCode 1.18.33):

- ``claude``: ``CLAUDE_CODE_ENABLE_TELEMETRY``, the enhanced-telemetry beta (spans, with the tool
  output as an event), ``OTEL_LOG_TOOL_DETAILS`` (arguments) and ``OTEL_LOG_TOOL_CONTENT`` (results).
  It sends no error text for a failed Bash call: failures are compared by arguments and error class.
- ``codex``: its ``[otel]`` exporters as ``-c`` overrides placed before the subcommand (the endpoint
  must name the signal's path); it ignores the standard endpoint variables.
- ``opencode``: ``experimental.openTelemetry`` through ``OPENCODE_CONFIG_CONTENT`` (merged with the
  project's config), for its AI SDK ``ai.toolCall`` spans; it sends OTLP/JSON whatever is asked.

What the child already sets in its environment for these switches is overridden: the run's guard
needs them. Pure functions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["EXPORT_DELAY_MS", "agent_of", "child_argv", "child_env"]

EXPORT_DELAY_MS: Final = "200"

_STANDARD: Final = {
    "OTEL_TRACES_EXPORTER": "otlp",
    "OTEL_LOGS_EXPORTER": "otlp",
    "OTEL_METRICS_EXPORTER": "otlp",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
    "OTEL_BLRP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
    "OTEL_METRIC_EXPORT_INTERVAL": "5000",
}
_CLAUDE: Final = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
    "OTEL_LOG_TOOL_DETAILS": "1",
    "OTEL_LOG_TOOL_CONTENT": "1",
    "OTEL_TRACES_EXPORT_INTERVAL": EXPORT_DELAY_MS,
    "OTEL_LOGS_EXPORT_INTERVAL": EXPORT_DELAY_MS,
}
#: The per-signal endpoints would win over the one the receiver sets: they are removed.
_OVERRIDDEN: Final = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                      "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SDK_DISABLED")


def agent_of(argv: Sequence[str]) -> str | None:
    """``claude-code``, ``codex`` or ``opencode`` from the program's file name, else None."""
    name = os.path.basename(argv[0]) if argv else ""
    return {"claude": "claude-code", "codex": "codex", "opencode": "opencode"}.get(name)


def child_env(argv: Sequence[str], endpoint: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with the child's export pointed at ``endpoint`` (``http://127.0.0.1:PORT``)."""
    env = {k: v for k, v in environ.items() if k not in _OVERRIDDEN}
    env.update(_STANDARD)
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    agent = agent_of(argv)
    if agent == "claude-code":
        env.update(_CLAUDE)
    elif agent == "opencode":
        config = _json_object(env.get("OPENCODE_CONFIG_CONTENT"))
        experimental = config.get("experimental")
        config["experimental"] = {**(experimental if isinstance(experimental, dict) else {}), "openTelemetry": True}
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    return env


def child_argv(argv: Sequence[str], endpoint: str) -> list[str]:
    """``argv`` with the CLI's own export switches added where it needs them (Codex only)."""
    if agent_of(argv) != "codex":
        return list(argv)

    def exporter(signal: str) -> str:
        return f'{{otlp-http={{endpoint="{endpoint}/v1/{signal}",protocol="binary"}}}}'
    flags = ["-c", f"otel.exporter={exporter('logs')}", "-c", f"otel.trace_exporter={exporter('traces')}",
             "-c", f"otel.metrics_exporter={exporter('metrics')}"]
    return [argv[0], *flags, *argv[1:]]


def _json_object(text: str | None) -> dict[str, object]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
