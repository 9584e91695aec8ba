"""Real agents guarded through their own OTLP: the Vercel AI SDK agent under ``serve`` and under
``run --telemetry``, and the real Claude Code, Codex and OpenCode CLIs under ``run --telemetry``.

Faked: only the model APIs (scripted servers on 127.0.0.1: tests/agents/fake_openai.py and
tests/clis/fake_models.py), so the runs are offline and the wedge is the same call every time. The
agents, their OTel exporters, the receiver and the command are the real ones. The CLIs come from
``.ci/install-clis``, the Vercel agent's npm deps from ``.ci/install-agents``.

A wedged run stops at the 25th identical call; the model may have answered a few more calls by then:
the ones the agent ran during the export interval and the stop's own delivery (IN_FLIGHT bounds
them). Healthy runs complete with the child's own exit code. Nothing of the child's group is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "agents"), str(REPO / "tests" / "clis"), str(REPO / "tests" / "e2e")]

import fake_models  # noqa: E402
import harness  # noqa: E402
import recording  # noqa: E402
from e2e_alert_stack import free_port  # noqa: E402
from fake_openai import count_tool_results, fake_openai  # noqa: E402

pytestmark = pytest.mark.integration
IN_FLIGHT = 8
"""Calls the model may answer after the 25th: measured 1-6 at 200 ms export intervals."""
CLI_AGENTS = {"claude-code": "claude", "codex": "codex", "opencode": "opencode"}


def _otel_toolchain(*args: str) -> list[str]:
    return [sys.executable, "-m", "otel_toolchain", *args]


def _without_telemetry(env: dict[str, str]) -> dict[str, str]:
    """The launch's environment less any telemetry setting: the product must set its own."""
    return {k: v for k, v in env.items() if not k.startswith(("OTEL_", "CLAUDE_CODE_ENABLE_TELEMETRY",
                                                              "CLAUDE_CODE_ENHANCED"))}


def _left_running(folder: Path) -> list[int]:
    """Processes whose working directory is inside ``folder``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


@pytest.fixture(scope="module")
def vercel_agent() -> None:
    if not recording.node_modules_ready():
        subprocess.run(["bash", str(REPO / ".ci" / "install-agents")], check=True, timeout=600)
    assert recording.node_modules_ready()


def _vercel(tmp_path: Path, model: object, scenario: str) -> harness.Launch:
    launch = recording.vercel_launch(model, "http://unused", tmp_path, scenario, stream=False)  # type: ignore[arg-type]
    env = _without_telemetry(launch.env) | {"OTEL_SERVICE_NAME": "vercel-ai-agent",
                                            "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "out")}
    return harness.Launch(launch.argv, env, launch.cwd)


def test_vercel_ai_agent_under_serve(tmp_path: Path, vercel_agent: None) -> None:
    """``serve`` sees the agent's wedge and reports it (the agent is not its child: it finishes its 40 calls)."""
    port = free_port()
    stop_file = tmp_path / "stop.json"
    with fake_openai("wedge") as model:
        launch = _vercel(tmp_path, model, "wedge")
        serve = subprocess.Popen(_otel_toolchain("serve", "--listen", f"127.0.0.1:{port}", "--on-stop",
                                                 f"cat > {stop_file}"),
                                 env=launch.env, stderr=subprocess.PIPE, text=True)
        try:
            assert serve.stderr is not None
            assert "receiving OTLP/HTTP" in serve.stderr.readline()
            env = launch.env | {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                                "OTEL_BSP_SCHEDULE_DELAY": "200"}
            agent = subprocess.run(launch.argv, env=env, cwd=launch.cwd, capture_output=True, timeout=120, check=False)
            assert agent.returncode == 0, agent.stderr
            line = serve.stderr.readline()
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.communicate(timeout=30)
    assert line.startswith("otel-toolchain: stopped by repeat_guard at call 25: "), line
    assert serve.returncode == 0
    stop = json.loads(stop_file.read_text())
    assert stop["at_call"] == 25
    traces = [json.loads(x) for x in (tmp_path / "out" / "traces.jsonl").read_text().splitlines()]
    spans = [s for t in traces for rs in t["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    marks = [s for s in spans if s["name"] == "otel_toolchain.turn.stopped"]
    assert [m["traceId"] for m in marks] == [stop["trace_id"]]
    roots = [s for s in spans if s["name"] == "ai.generateText"]
    assert [r["traceId"] for r in roots] == [stop["trace_id"]]  # the mark is in the agent's own trace
    assert sum(s["name"] == "ai.toolCall" for s in spans) == 40  # forwarded unchanged


@pytest.mark.parametrize(("scenario", "code"), [("wedge", 75), ("healthy", 0)])
def test_vercel_ai_agent_under_run_telemetry(tmp_path: Path, vercel_agent: None, scenario: str, code: int) -> None:
    with fake_openai(scenario) as model:
        launch = _vercel(tmp_path, model, scenario)
        run = subprocess.run(_otel_toolchain("run", "--telemetry", "--", *launch.argv), env=launch.env,
                             cwd=launch.cwd, capture_output=True, text=True, timeout=180, check=False)
        seen = max((count_tool_results(b) for b in model.snapshot()), default=0)
    assert run.returncode == code, run.stderr
    if scenario == "wedge":
        assert "otel-toolchain: stopped by repeat_guard at call 25: " in run.stderr
        assert 25 <= seen <= 25 + IN_FLIGHT, seen
    else:
        assert "stopped by" not in run.stderr
        assert seen == 5
    assert _left_running(tmp_path) == []


@pytest.fixture(scope="module")
def clis() -> None:
    missing = harness.missing_binaries(harness.cli_dir())
    assert not missing, f"run .ci/install-clis first: {missing}"


@pytest.mark.parametrize("scenario", ["wedge", "healthy"])
@pytest.mark.parametrize("agent", sorted(CLI_AGENTS))
def test_cli_under_run_telemetry(tmp_path: Path, clis: None, agent: str, scenario: str) -> None:
    with fake_models.fake_model_server(scenario, delay=0.1, healthy_calls=recording.HEALTHY_CALLS) as server:
        base = harness.launch(CLI_AGENTS[agent], harness.cli_dir(), server, tmp_path, scenario)
        env = _without_telemetry(base.env) | {"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "out")}
        run = subprocess.run(_otel_toolchain("run", "--telemetry", "--", *base.argv), env=env, cwd=base.cwd,
                             capture_output=True, text=True, timeout=240, check=False)
        seen = max((r.tool_results for r in server.main_requests()), default=0)
    print(f"{agent} {scenario}: exit {run.returncode}, model saw {seen} tool results")
    if scenario == "wedge":
        assert run.returncode == 75, run.stderr[-3000:]
        assert "otel-toolchain: stopped by repeat_guard at call 25: " in run.stderr
        # A CLI exports the 25th call's span when the call ends, before it sends that result to the model,
        # so a prompt stop can end the run with the model having seen 24 results: earlier is allowed.
        assert 24 <= seen <= 25 + IN_FLIGHT, seen
    else:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "stopped by" not in run.stderr
        assert seen == recording.HEALTHY_CALLS
    assert _left_running(tmp_path) == []
