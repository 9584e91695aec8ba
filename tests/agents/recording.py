"""Run a real agent with its own OTLP export pointed at an :class:`otlp_capture.OtlpCapture`.

One function per agent builds the launch with that agent's telemetry switches on (the settings the
fixtures' README documents); :func:`record` runs it in its own process group against a scripted
fake model and a capture receiver, stops it when the scenario says so, and leaves no process behind.

Agents: ``vercel-ai`` (tests/agents/vercel-ai, against :mod:`fake_openai`), and the pinned CLIs of
``.ci/install-clis``: ``claude-code``, ``codex`` and ``opencode`` (against tests/clis/fake_models).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clis"))

import fake_models
import harness
from fake_openai import WORKSPACE_FILES, FakeOpenAI, count_tool_results, fake_openai
from otlp_capture import Captured, OtlpCapture, otlp_capture

AGENT_DIR = Path(__file__).resolve().parent / "vercel-ai"
AGENTS = ("vercel-ai", "claude-code", "codex", "opencode")
EXPORT_DELAY_MS = "200"

#: Scenarios per agent: (fake model scenario, how many tool results before we stop it, or None).
SCENARIOS: dict[str, dict[str, tuple[str, int | None]]] = {
    "vercel-ai": {"wedge": ("wedge", None), "healthy": ("healthy", None), "healthy-stream": ("healthy", None),
                  "failing": ("failing", None), "wedge-sigterm": ("wedge", 10)},
    "claude-code": {"wedge": ("wedge", 32), "healthy": ("healthy", None), "failing": ("failing", 6),
                    "healthy-json-gzip": ("healthy", None)},
    "codex": {"wedge": ("wedge", 32), "healthy": ("healthy", None), "failing": ("failing", 6)},
    "opencode": {"wedge": ("wedge", 32), "healthy": ("healthy", None), "failing": ("failing", 6)},
}
HEALTHY_CALLS = 5
# OpenCode loses its last export batch at exit (tests/agents/README.md): its model's final answer waits
# this long, ten times the export delay of 200 ms, so the last call's span is sent before OpenCode is told to finish.
FINAL_ANSWER_DELAY_S = {"opencode": 2.0}
#: Settings some scenarios add to the agent's usual telemetry settings.
EXTRA_ENV = {("claude-code", "healthy-json-gzip"): {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
                                                    "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}}


def node_modules_ready() -> bool:
    """True when ``.ci/install-agents`` has linked the Vercel agent's dependencies."""
    return (AGENT_DIR / "node_modules" / "ai" / "package.json").is_file()


# --------------------------------------------------------------------------- per-agent launches


def claude_telemetry_env(endpoint: str) -> dict[str, str]:
    """Claude Code's own OTLP export: spans (beta), log events, metrics, tool arguments and results."""
    return {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_LOG_TOOL_DETAILS": "1",
        "OTEL_LOG_TOOL_CONTENT": "1",
        "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
        "OTEL_TRACES_EXPORT_INTERVAL": EXPORT_DELAY_MS,
        "OTEL_LOGS_EXPORT_INTERVAL": EXPORT_DELAY_MS,
        "OTEL_METRIC_EXPORT_INTERVAL": "2000",
    }


def codex_otel_flags(endpoint: str) -> list[str]:
    """Codex's ``[otel]`` exporters as ``-c`` overrides (the endpoint must name the signal's path)."""
    def exporter(signal: str) -> str:
        return f'{{otlp-http={{endpoint="{endpoint}/v1/{signal}",protocol="binary"}}}}'
    return ["-c", f"otel.exporter={exporter('logs')}", "-c", f"otel.trace_exporter={exporter('traces')}",
            "-c", f"otel.metrics_exporter={exporter('metrics')}"]


def codex_telemetry_env() -> dict[str, str]:
    """Codex reads the standard batch delays of its log and span processors."""
    return {"OTEL_BLRP_SCHEDULE_DELAY": EXPORT_DELAY_MS, "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS}


def opencode_telemetry_env(endpoint: str) -> dict[str, str]:
    """OpenCode exports to the standard endpoint (OTLP/JSON); its AI SDK spans need the config flag."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
            "OTEL_BLRP_SCHEDULE_DELAY": EXPORT_DELAY_MS}


def vercel_telemetry_env(endpoint: str) -> dict[str, str]:
    """The Vercel agent uses OTel JS's standard variables."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
            "OTEL_SERVICE_NAME": "vercel-ai-agent"}


def vercel_launch(model: FakeOpenAI, endpoint: str, tmp_path: Path, scenario: str, *, stream: bool) -> harness.Launch:
    """The Vercel AI SDK agent (node) in a fresh working directory holding the scripted files."""
    work = tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    for name, text in WORKSPACE_FILES.items():
        (work / name).write_text(text)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "AGENT_BASE_URL": model.base_url, "AGENT_MODEL": f"fake-{scenario}"} | vercel_telemetry_env(endpoint)
    argv = ["node", str(AGENT_DIR / "agent.mjs"), *(["--stream"] if stream else [])]
    return harness.Launch(argv, env, work)


def cli_launch(agent: str, server: fake_models.FakeModelServer, endpoint: str, tmp_path: Path,
               scenario: str) -> harness.Launch:
    """The harness's headless launch of ``agent`` with its telemetry switched on."""
    cli = {"claude-code": "claude", "codex": "codex", "opencode": "opencode"}[agent]
    base = harness.launch(cli, harness.cli_dir(), server, tmp_path, scenario)
    if agent == "claude-code":
        return harness.Launch(base.argv, base.env | claude_telemetry_env(endpoint), base.cwd)
    if agent == "codex":
        argv = [base.argv[0], *codex_otel_flags(endpoint), *base.argv[1:]]
        return harness.Launch(argv, base.env | codex_telemetry_env(), base.cwd)
    config_path = base.cwd / "opencode.json"
    config = json.loads(config_path.read_text())
    config["experimental"] = {"openTelemetry": True}
    config_path.write_text(json.dumps(config, indent=1))
    return harness.Launch(base.argv, base.env | opencode_telemetry_env(endpoint), base.cwd)


# --------------------------------------------------------------------------- recording


@dataclass
class Recording:
    """What one recorded run produced."""

    agent: str
    scenario: str
    launch: harness.Launch
    run: harness.GroupRun
    captured: list[Captured]
    tool_results_seen: int
    model_requests: list[dict[str, Any]] = field(repr=False, default_factory=list)


@contextmanager
def _model(agent: str, scenario: str, stack: ExitStack) -> Iterator[tuple[Any, Callable[[], int]]]:
    """The scripted model for ``agent`` and a function giving the most tool results a request carried."""
    if agent == "vercel-ai":
        server: Any = stack.enter_context(fake_openai(scenario))

        def seen() -> int:
            return max((count_tool_results(b) for b in server.snapshot()), default=0)
    else:
        server = stack.enter_context(fake_models.fake_model_server(
            scenario, delay=0.1, healthy_calls=HEALTHY_CALLS, final_delay=FINAL_ANSWER_DELAY_S.get(agent, 0.0)))

        def seen() -> int:
            return max((r.tool_results for r in server.main_requests()), default=0)
    yield server, seen


def record(agent: str, scenario: str, out_dir: Path, tmp_path: Path, *, timeout: float = 180.0,
           settle: float = 1.0) -> Recording:
    """Run ``agent`` in ``scenario`` (a key of :data:`SCENARIOS`) with captures written to ``out_dir``.

    A scenario with a call limit is stopped (SIGTERM, SIGKILL after 3 s) once the model has seen
    that many tool results; the others must end by themselves within ``timeout``. After the run,
    ``settle`` seconds pass so an export still in flight is received.
    """
    model_scenario, limit = SCENARIOS[agent][scenario]
    with ExitStack() as stack, _model(agent, model_scenario, stack) as (server, seen):
        capture: OtlpCapture = stack.enter_context(otlp_capture(out_dir))
        if agent == "vercel-ai":
            launch = vercel_launch(server, capture.endpoint, tmp_path, model_scenario, stream="stream" in scenario)
        else:
            launch = cli_launch(agent, server, capture.endpoint, tmp_path, model_scenario)
        extra = EXTRA_ENV.get((agent, scenario), {})
        launch = harness.Launch(launch.argv, launch.env | extra, launch.cwd)
        stop_when = (lambda _lines: seen() >= limit) if limit is not None else None
        run = harness.run_group(launch, timeout=timeout, stop_when=stop_when)
        time.sleep(settle)
        requests = [r.body for r in server.main_requests()] if agent != "vercel-ai" else server.snapshot()
        return Recording(agent, scenario, launch, run, capture.snapshot(), seen(), requests)
