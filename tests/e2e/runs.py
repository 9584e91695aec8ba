"""Runs of the CLI that the back-end tests share: the stand-in agent's streams, and a replay through the tap
that waits until the tail sampler has decided every trace it offered."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .agent_stack import AgentStack
from .backends_stack import ROOT, run_cli
from .e2e_alert_stack import Deadline
from .otlp_sinks import SpanView

HERE = Path(__file__).resolve().parent
SECRET_AGENT = HERE / "secret_agent.py"
WEDGE = ROOT / "examples" / "streams" / "claude-code-wedge.jsonl"
# The default chain, metrics exported every 500 ms: the CLI takes the interval from the manifest only
# (OTEL_METRIC_EXPORT_INTERVAL is not read), and a 5 s run needs several exports for rate() to see a rise.
LIVE_MANIFEST = "[export]\nmetric_interval_ms = 500\n"
SHADOW_MANIFEST = '[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\nmode = "shadow"\n'
# The synthetic mix: healthy turns, turns with one failed tool call, failed turns, stopped turns.
MIX = ["healthy"] * 48 + ["toolfail"] * 16 + ["turnfail"] * 6 + ["wedge"] * 3


def outcomes(stdout: str) -> list[dict[str, Any]]:
    """The turns of ``replay --format json``: one JSON object a line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def agent_turns(path: Path, kinds: list[str]) -> Path:
    """Write the stand-in agent's stream for ``kinds`` to ``path``."""
    with open(path, "w", encoding="utf-8") as out:
        subprocess.run([sys.executable, str(SECRET_AGENT), "turns", *kinds], stdout=out, check=True, timeout=60)
    return path


@dataclass
class Replayed:
    """A replay through the tap: the CLI's turns, and every trace the Collector was offered."""

    turns: list[dict[str, Any]]
    offered: dict[str, list[SpanView]]
    decisions: dict[str, float]  # the tail sampler's decisions during this replay: {"true": n, "false": m}


def replay_through_tap(stack: AgentStack, runs: list[list[str]], deadline: Deadline) -> Replayed:
    """Run each ``replay ARGS`` with traces through the tap; wait until the sampler decided them all."""
    before_traces = set(stack.tap.traces())
    before = stack.sampling_decisions()
    turns: list[dict[str, Any]] = []
    for args in runs:
        done = run_cli(["replay", "--format", "json", *args], stack.cli_env())
        assert done.returncode in (0, 75), done.stdout[-2000:] + done.stderr[-2000:]  # 75: a turn was stopped
        turns += outcomes(done.stdout)
    offered = {t: spans for t, spans in stack.tap.traces().items() if t not in before_traces}
    after = stack.wait_decided(int(sum(before.values())) + len(offered), deadline)
    return Replayed(turns, offered, {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after})
