"""The real agents, run now: each exports its own OTLP to the capture receiver with the settings the
fixtures' README documents, and the hook answers end or nudge a real Claude Code session.

The Vercel AI SDK agent's npm dependencies are installed by ``.ci/install-agents`` (run here when they
are missing); the CLIs must be installed by ``.ci/install-clis``, as for tests/clis.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import hook_experiments
import pytest
import recording
from fake_openai import WEDGE_CALLS, WEDGE_OUTPUT
from harness import cli_dir, missing_binaries
from hook_probe import NUDGE
from otlp_fixtures import DOCUMENTED, items, load, tool_records

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def vercel_agent() -> None:
    """Install the agent's dependencies if needed (idempotent), so the test runs rather than skips."""
    if not recording.node_modules_ready():
        subprocess.run(["bash", str(REPO / ".ci" / "install-agents")], check=True, timeout=600)
    assert recording.node_modules_ready()


@pytest.fixture(scope="module")
def clis() -> None:
    missing = missing_binaries(cli_dir())
    assert not missing, f"run .ci/install-clis first: {missing}"


def _check_keys(agent: str, folder: Path) -> Counter[str]:
    """Assert the documented keys on every documented record; return how many of each were seen."""
    seen: Counter[str] = Counter()
    for source, item, _ in items(load(folder)):
        if source in DOCUMENTED[agent]:
            seen[source] += 1
            always, on_success = DOCUMENTED[agent][source]
            ok = item.get("status") != "ERROR" and item["attributes"].get("success") not in ("false", False)
            assert set(always) | (set(on_success) if ok else set()) <= set(item["attributes"]), source
    return seen


def test_vercel_agent_wedge_exports_every_call(vercel_agent: None, tmp_path: Path) -> None:
    rec = recording.record("vercel-ai", "wedge", tmp_path / "otlp", tmp_path / "run")
    assert rec.run.returncode == 0 and rec.run.stopped_by is None and not rec.run.leftover
    calls = [r for r in tool_records(load(tmp_path / "otlp")) if r.source == "span ai.toolCall"]
    assert len(calls) == WEDGE_CALLS
    assert {(r.tool, r.arguments, r.result) for r in calls} == {
        ("read_file", '{"path":"wedge.txt"}', '"' + WEDGE_OUTPUT.replace("\n", "\\n") + '"')}
    assert all(0 < r.delay_s < 1.0 for r in calls)
    roots = [item for source, item, _ in items(load(tmp_path / "otlp")) if not item.get("parent_span_id", "x")]
    assert [root["name"] for root in roots] == ["ai.generateText"]
    assert {r.trace_id for r in calls} == {roots[0]["trace_id"]}
    assert _check_keys("vercel-ai", tmp_path / "otlp")["span ai.toolCall"] == WEDGE_CALLS


def test_vercel_agent_flushes_on_sigterm(vercel_agent: None, tmp_path: Path) -> None:
    rec = recording.record("vercel-ai", "wedge-sigterm", tmp_path / "otlp", tmp_path / "run")
    assert rec.run.stopped_by == "SIGTERM" and rec.run.returncode == 143 and not rec.run.leftover
    calls = [r for r in tool_records(load(tmp_path / "otlp")) if r.source == "span ai.toolCall"]
    assert len(calls) >= 10  # every call finished before the signal was exported on it
    assert not [i for _, i, _ in items(load(tmp_path / "otlp")) if not i.get("parent_span_id", "x")]


def test_vercel_agent_stream_healthy(vercel_agent: None, tmp_path: Path) -> None:
    rec = recording.record("vercel-ai", "healthy-stream", tmp_path / "otlp", tmp_path / "run")
    assert rec.run.returncode == 0
    calls = [r for r in tool_records(load(tmp_path / "otlp")) if r.source == "span ai.toolCall"]
    assert len(calls) == 5 and len({r.result for r in calls}) == 5
    assert _check_keys("vercel-ai", tmp_path / "otlp")["span ai.generateText"] == 0  # a streamText run


@pytest.mark.parametrize("agent", ["claude-code", "codex", "opencode"])
def test_cli_exports_its_calls(clis: None, agent: str, tmp_path: Path) -> None:
    rec = recording.record(agent, "healthy", tmp_path / "otlp", tmp_path / "run")
    assert rec.run.returncode == 0 and not rec.run.leftover
    seen = _check_keys(agent, tmp_path / "otlp")
    primary = {"claude-code": "span claude_code.tool", "codex": "log codex.tool_result",
               "opencode": "span ai.toolCall"}[agent]
    assert seen[primary] == recording.HEALTHY_CALLS
    calls = [r for r in tool_records(load(tmp_path / "otlp")) if r.source == primary]
    assert len({r.result for r in calls}) == recording.HEALTHY_CALLS
    assert all(0 < r.delay_s < 1.5 for r in calls)


def test_claude_hook_continue_false_ends_the_session(clis: None, tmp_path: Path) -> None:
    report, hooks = hook_experiments.run("stop", hook_experiments.EXPERIMENTS["stop"], tmp_path)
    assert report["returncode"] == 0 and report["stopped_by_test"] is None
    assert report["result_line"]["terminal_reason"] == "hook_stopped"
    assert report["tool_results_seen_by_model"] == 2
    assert [h["payload"]["hook_event_name"] for h in hooks].count("PostToolUse") == 3


def test_claude_hook_additional_context_reaches_the_model(clis: None, tmp_path: Path) -> None:
    report, _ = hook_experiments.run("context", hook_experiments.EXPERIMENTS["context"], tmp_path)
    [(request, paths)] = report["hook_text_reached_model"][NUDGE[:40]]
    assert request == 2 and paths == ["messages[6].content[0].text (system)"]
