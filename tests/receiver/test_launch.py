"""``run --telemetry``'s child settings, and the command on plain programs (no agent, no model needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from otel_toolchain.receiver.launch import agent_of, child_argv, child_env

E = "http://127.0.0.1:4999"


def test_every_child_gets_the_standard_settings_and_loses_per_signal_overrides() -> None:
    env = child_env(["node", "agent.mjs"], E, {"PATH": "/bin", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x",
                                               "OTEL_SDK_DISABLED": "true"})
    assert env == {"PATH": "/bin", "OTEL_EXPORTER_OTLP_ENDPOINT": E, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                   "OTEL_TRACES_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                   "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BLRP_SCHEDULE_DELAY": "200",
                   "OTEL_METRIC_EXPORT_INTERVAL": "5000"}
    assert child_argv(["node", "agent.mjs"], E) == ["node", "agent.mjs"]


def test_claude_codes_switches() -> None:
    env = child_env(["/opt/x/claude", "-p", "hi"], E, {})
    assert {k: env[k] for k in ("CLAUDE_CODE_ENABLE_TELEMETRY", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA",
                                "OTEL_LOG_TOOL_DETAILS", "OTEL_LOG_TOOL_CONTENT")} == dict.fromkeys(
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA", "OTEL_LOG_TOOL_DETAILS",
         "OTEL_LOG_TOOL_CONTENT"), "1")
    assert agent_of(["/opt/x/claude"]) == "claude-code"


def test_codex_gets_its_exporters_before_the_subcommand() -> None:
    argv = child_argv(["codex", "exec", "--json", "fix"], E)
    assert argv[0] == "codex" and argv[-3:] == ["exec", "--json", "fix"]
    assert argv[1:7] == ["-c", f'otel.exporter={{otlp-http={{endpoint="{E}/v1/logs",protocol="binary"}}}}',
                         "-c", f'otel.trace_exporter={{otlp-http={{endpoint="{E}/v1/traces",protocol="binary"}}}}',
                         "-c", f'otel.metrics_exporter={{otlp-http={{endpoint="{E}/v1/metrics",protocol="binary"}}}}']


def test_opencodes_flag_is_merged_into_its_inline_config() -> None:
    env = child_env(["opencode", "run"], E, {"OPENCODE_CONFIG_CONTENT": '{"model": "m", "experimental": {"x": 1}}'})
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {"model": "m", "experimental": {"x": 1, "openTelemetry": True}}
    assert json.loads(child_env(["opencode"], E, {"OPENCODE_CONFIG_CONTENT": "not json"})["OPENCODE_CONFIG_CONTENT"]) \
        == {"experimental": {"openTelemetry": True}}


def _run(*argv: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "otel_toolchain", "run", "--telemetry", "--", *argv], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_childs_exit_code_and_endpoint(tmp_path: Path) -> None:
    done = _run("sh", "-c", 'echo "$OTEL_EXPORTER_OTLP_ENDPOINT"; exit 3', tmp=tmp_path)
    assert done.returncode == 3
    assert done.stdout.startswith("http://127.0.0.1:") and done.stdout.strip().rsplit(":", 1)[1].isdigit()
    missing = _run("/nonexistent-program", tmp=tmp_path)
    assert missing.returncode == 127 and "cannot run '/nonexistent-program'" in missing.stderr
