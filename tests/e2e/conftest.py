"""Session fixtures of the back-end tests: one running agent stack, and the CLI runs that feed it.

The runs are fixtures so that several tests can look at what one run left in Jaeger, the sinks and
Prometheus; each run finds its own traces by session id or trace id, never by "the latest", and waits
until the tail sampler has decided its traces, so that fixtures may run in any order.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .agent_stack import AgentStack, start_agent_stack
from .backends_stack import require_backends
from .e2e_alert_stack import Deadline
from .runs import (
    LIVE_MANIFEST,
    MIX,
    SECRET_AGENT,
    SHADOW_MANIFEST,
    WEDGE,
    Replayed,
    agent_turns,
    outcomes,
    replay_through_tap,
)


@pytest.fixture(scope="session")
def agent_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentStack]:
    require_backends()
    stack = start_agent_stack(tmp_path_factory.mktemp("agent-stack"), Deadline(60))
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def wedge_replay(agent_stack: AgentStack) -> dict[str, Any]:
    """The recorded wedged Claude Code run, replayed with OTLP/HTTP straight to the Collector (no tap)."""
    done = agent_stack.cli(["replay", "--format", "json", str(WEDGE)], agent_stack.cli_env(tap=False), turns=1)
    assert done.returncode == 75, done.stdout[-2000:] + done.stderr[-2000:]  # 75: the wedge was stopped
    [turn] = outcomes(done.stdout)
    return turn


@pytest.fixture(scope="session")
def live_run(agent_stack: AgentStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``otel-toolchain run`` of the stand-in agent that wedges, OTLP/gRPC straight to the Collector."""
    session = str(uuid.uuid4())
    manifest = tmp_path_factory.mktemp("live") / "live.toml"
    manifest.write_text(LIVE_MANIFEST, encoding="utf-8")
    env = {**agent_stack.cli_env(tap=False, grpc=True), "SECRET_AGENT_SESSION": session}
    done = agent_stack.cli(["run", "--harness", "claude-code", "--manifest", str(manifest), "--",
                            sys.executable, str(SECRET_AGENT), "wedge"], env, turns=1, timeout=90)
    return {"session": session, "returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="session")
def mixed_replay(agent_stack: AgentStack, tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    """The synthetic mix (:data:`MIX`) and one shadow-mode wedge, replayed through the tap."""
    workdir = tmp_path_factory.mktemp("mix")
    mix = agent_turns(workdir / "mix.jsonl", MIX)
    shadow = agent_turns(workdir / "shadow.jsonl", ["wedge"])
    manifest = workdir / "shadow.toml"
    manifest.write_text(SHADOW_MANIFEST, encoding="utf-8")
    return replay_through_tap(agent_stack, [[str(mix)], ["--manifest", str(manifest), str(shadow)]],
                              Deadline(60))
