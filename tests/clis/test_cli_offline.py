"""The four real coding-agent CLIs, run headless against the scripted fake model on 127.0.0.1.

For each CLI (Claude Code, Codex, Pi, OpenCode):

* ``healthy``: the run ends by itself with exit code 0 after exactly ``HEALTHY_CALLS`` tool calls,
  each with a different output, and its stream has the CLI's end-of-run line;
* ``wedge``: the CLI calls the same command with the same output until we stop it; we stop its
  process group after ``WEDGE_RESULTS`` identical results and check that no process is left;
* ``failing``: the same failing command again and again, flagged as failed in the stream;
* ``cycle2``: two commands alternating, with their two outputs alternating.

Plus, for Claude Code, one HTTP 529 shows as a ``system/api_retry`` line and the run still succeeds.

Tool calls are counted here with plain ``json`` code from each CLI's stream format (see
``/work/shared/reference/harness-streams.md``), independently of otel_toolchain's own parsers.
The CLIs must be installed by ``.ci/install-clis``; when they are missing these tests fail.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_models import (
    CYCLE_COMMANDS,
    CYCLE_OUTPUTS,
    FAILING_COMMAND,
    FINAL_TEXT,
    HEALTHY_COMMAND,
    WEDGE_COMMAND,
    WEDGE_OUTPUT,
    FakeModelServer,
    fake_model_server,
)
from harness import CLIS, GroupRun, cli_dir, group_members, launch, missing_binaries, run_group

pytestmark = pytest.mark.integration

HEALTHY_CALLS = 3
WEDGE_RESULTS = 8
FAILING_RESULTS = 4
CYCLE_RESULTS = 6
RUN_TIMEOUT = 30.0  # per run; a healthy run takes 1-5 s, a stopped one 1-6 s (about 10 s on a busy machine)
KILL_GRACE = 3.0


def require_clis() -> Path:
    """Return the CLI dir; fail the test (never skip) when a CLI binary is missing."""
    root = cli_dir()
    missing = missing_binaries(root)
    if missing:
        pytest.fail(
            f"coding-agent CLIs are not installed under {root} (missing: {', '.join(map(str, missing))}). "
            "Run .ci/install-clis (it installs into $OTEL_TOOLCHAIN_CLI_DIR, default "
            "/opt/otel-toolchain-clis).",
            pytrace=False,
        )
    return root


# --------------------------------------------------------------------------- stream reading


@dataclass(frozen=True)
class ToolCall:
    """A tool call seen in a stream: its id and shell command."""

    call_id: str
    command: str


@dataclass(frozen=True)
class ToolResult:
    """A tool result seen in a stream: the call id, output text and failure flag."""

    call_id: str
    output: str
    failed: bool


Event = ToolCall | ToolResult


def _text(content: Any) -> str:
    """Join the text of a result ``content`` that is a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def claude_events(obj: dict[str, Any]) -> list[Event]:
    """Claude Code: ``tool_use`` blocks on ``assistant`` lines, ``tool_result`` blocks on ``user`` lines."""
    blocks = (obj.get("message") or {}).get("content")
    if obj.get("type") not in ("assistant", "user") or not isinstance(blocks, list):
        return []
    events: list[Event] = []
    for block in blocks:
        if block.get("type") == "tool_use":
            events.append(ToolCall(block["id"], str((block.get("input") or {}).get("command", ""))))
        elif block.get("type") == "tool_result":
            events.append(ToolResult(block["tool_use_id"], _text(block.get("content")),
                                     bool(block.get("is_error"))))
    return events


def codex_events(obj: dict[str, Any]) -> list[Event]:
    """Codex: ``command_execution`` items, ``item.started`` then ``item.completed`` with the same id."""
    item = obj.get("item") or {}
    if item.get("type") != "command_execution":
        return []
    if obj.get("type") == "item.started":
        return [ToolCall(item["id"], item.get("command", ""))]
    if obj.get("type") == "item.completed":
        return [ToolResult(item["id"], item.get("aggregated_output", ""), item.get("status") == "failed")]
    return []


def pi_events(obj: dict[str, Any]) -> list[Event]:
    """Pi: ``tool_execution_start`` / ``tool_execution_end`` keyed by ``toolCallId``."""
    if obj.get("type") == "tool_execution_start":
        return [ToolCall(obj["toolCallId"], str((obj.get("args") or {}).get("command", "")))]
    if obj.get("type") == "tool_execution_end":
        output = _text((obj.get("result") or {}).get("content"))
        return [ToolResult(obj["toolCallId"], output, bool(obj.get("isError")))]
    return []


def opencode_events(obj: dict[str, Any]) -> list[Event]:
    """OpenCode: one ``tool_use`` line per finished call; a non-zero bash exit is still ``completed``."""
    part = obj.get("part") or {}
    if obj.get("type") != "tool_use" or part.get("type") != "tool":
        return []
    state = part.get("state") or {}
    exit_code = (state.get("metadata") or {}).get("exit")
    failed = state.get("status") == "error" or exit_code not in (0, None)
    command = str((state.get("input") or {}).get("command", ""))
    return [ToolCall(part["callID"], command), ToolResult(part["callID"], state.get("output", ""), failed)]


EVENTS: dict[str, Callable[[dict[str, Any]], list[Event]]] = {
    "claude": claude_events, "codex": codex_events, "pi": pi_events, "opencode": opencode_events,
}


def is_run_end(cli: str, obj: dict[str, Any]) -> bool:
    """True for the line that closes a finished run (never printed by a killed run)."""
    kind = obj.get("type")
    if cli == "claude":
        return kind == "result"
    if cli == "codex":
        return kind in ("turn.completed", "turn.failed")
    if cli == "pi":
        return kind == "agent_end"
    return kind == "step_finish" and (obj.get("part") or {}).get("reason") == "stop"


def parse(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``, or ``None`` for anything else (all CLIs may print other lines)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


@dataclass
class Tally:
    """Incremental reader of one CLI's stream: tool calls, tool results, end-of-run lines."""

    cli: str
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    ends: int = 0
    seen: int = 0

    def update(self, lines: list[str]) -> Tally:
        """Read the lines not read yet; return self."""
        for line in lines[self.seen :]:
            obj = parse(line)
            if obj is None:
                continue
            for event in EVENTS[self.cli](obj):
                if isinstance(event, ToolCall):
                    self.calls.append(event)
                else:
                    self.results.append(event)
            self.ends += is_run_end(self.cli, obj)
        self.seen = len(lines)
        return self


def lines_of_type(lines: list[str], kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
    """The parsed lines with ``type`` (and ``subtype`` when given)."""
    found = (parse(line) for line in lines)
    return [o for o in found if o and o.get("type") == kind and (subtype is None or o.get("subtype") == subtype)]


# --------------------------------------------------------------------------- helpers


def start(cli: str, server: FakeModelServer, tmp_path: Path, scenario: str, **kw: Any) -> GroupRun:
    """Run ``cli`` for ``scenario`` against ``server`` with the suite's timeout and grace."""
    root = require_clis()
    cmd = launch(cli, root, server, tmp_path, scenario)
    return run_group(cmd, timeout=RUN_TIMEOUT, grace=KILL_GRACE, **kw)


def explain(run: GroupRun) -> str:
    """A short diagnostic for assertion messages: why it ended, rc, the last lines, stderr tail."""
    tail = "\n".join(line[:300] for line in run.lines[-5:])
    return (f"reason={run.reason} rc={run.returncode} stopped_by={run.stopped_by} "
            f"elapsed={run.elapsed:.1f}s lines={len(run.lines)}\n{tail}\nstderr: {run.stderr[-1500:]}")


def stop_after_results(cli: str, count: int, expected: str | None = None) -> Callable[[list[str]], bool]:
    """Predicate: true once ``count`` tool results (with output ``expected``, if given) were read."""
    tally = Tally(cli)

    def enough(lines: list[str]) -> bool:
        results = tally.update(lines).results
        return sum(1 for r in results if expected is None or r.output.strip() == expected) >= count

    return enough


def assert_group_gone(run: GroupRun) -> None:
    """No process of the run's group is left: ``killpg(pgid, 0)`` fails and ``/proc`` has none."""
    assert run.leftover == [], f"processes left in group {run.pgid}: {run.leftover}"
    deadline = time.monotonic() + 2.0
    while True:
        try:
            os.killpg(run.pgid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, f"group {run.pgid} still signalable: {group_members(run.pgid)}"
        time.sleep(0.05)
    assert group_members(run.pgid) == []


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("cli", CLIS)
def test_healthy_run_ends_by_itself(cli: str, tmp_path: Path) -> None:
    """A changing command N times, then a final text: exit 0, exactly N calls and N distinct results."""
    with fake_model_server("healthy", healthy_calls=HEALTHY_CALLS) as server:
        run = start(cli, server, tmp_path, "healthy")
        requests = server.main_requests()
    tally = Tally(cli).update(run.lines)
    assert (run.reason, run.returncode, run.stopped_by) == ("exited", 0, None), explain(run)
    assert len(tally.calls) == HEALTHY_CALLS, explain(run)
    assert all(HEALTHY_COMMAND in call.command for call in tally.calls), tally.calls
    assert len(tally.results) == HEALTHY_CALLS
    assert [r.call_id for r in tally.results] == [c.call_id for c in tally.calls]
    assert len({r.output.strip() for r in tally.results}) == HEALTHY_CALLS, tally.results
    assert not any(r.failed for r in tally.results)
    assert tally.ends == 1, explain(run)
    assert FINAL_TEXT in "\n".join(run.lines)
    assert [r.tool_results for r in requests] == list(range(HEALTHY_CALLS + 1))
    assert [r.answer for r in requests] == ["tool"] * HEALTHY_CALLS + ["text"]


@pytest.mark.parametrize("cli", CLIS)
def test_wedged_run_is_stopped_group_wide(cli: str, tmp_path: Path) -> None:
    """The same command with the same output forever: stopped after 8 identical results, nothing left.

    Claude Code, Codex and Pi end at once on SIGTERM. So does OpenCode here (1.18.33, headless,
    stdin from /dev/null): its process catches neither SIGTERM nor SIGINT (``SigCgt`` in
    ``/proc/PID/status`` has neither bit) and dies of the signal (returncode -15). The reference note
    says ``opencode run`` ignores the first SIGTERM; that did not reproduce with 1.18.3, 1.18.29 or
    1.18.33, so ``run_group`` keeps its SIGKILL escalation for any CLI that does ignore it (that path
    is tested with a SIGTERM-ignoring process in test_group_runner.py).
    """
    expected = WEDGE_OUTPUT.strip()
    with fake_model_server("wedge") as server:
        run = start(cli, server, tmp_path, "wedge", stop_when=stop_after_results(cli, WEDGE_RESULTS, expected))
        requests = server.main_requests()
    tally = Tally(cli).update(run.lines)
    assert run.reason == "predicate", explain(run)
    assert run.stopped_by == "SIGTERM", explain(run)
    assert_group_gone(run)
    assert len(tally.results) >= WEDGE_RESULTS
    assert {r.output.strip() for r in tally.results} == {expected}
    assert all(WEDGE_COMMAND in call.command for call in tally.calls), tally.calls
    assert tally.ends == 0, "a stopped run must not print its end-of-run line"
    assert len(requests) >= WEDGE_RESULTS and {r.scenario for r in requests} == {"wedge"}


@pytest.mark.parametrize("cli", CLIS)
def test_failing_command_is_flagged(cli: str, tmp_path: Path) -> None:
    """The same failing command forever: every result is flagged failed in the CLI's own way."""
    with fake_model_server("failing") as server:
        run = start(cli, server, tmp_path, "failing", stop_when=stop_after_results(cli, FAILING_RESULTS))
    tally = Tally(cli).update(run.lines)
    assert run.reason == "predicate", explain(run)
    assert_group_gone(run)
    assert len(tally.results) >= FAILING_RESULTS
    assert all(r.failed for r in tally.results), tally.results
    assert all("missing-file.txt" in r.output for r in tally.results), tally.results
    assert all(FAILING_COMMAND in call.command for call in tally.calls), tally.calls


@pytest.mark.parametrize("cli", CLIS)
def test_cycle_of_two_commands_alternates(cli: str, tmp_path: Path) -> None:
    """Two commands alternating forever: calls and outputs alternate A, B, A, B, ..."""
    with fake_model_server("cycle2") as server:
        run = start(cli, server, tmp_path, "cycle2", stop_when=stop_after_results(cli, CYCLE_RESULTS))
    tally = Tally(cli).update(run.lines)
    assert run.reason == "predicate", explain(run)
    assert_group_gone(run)
    n = len(tally.results)
    assert n >= CYCLE_RESULTS
    expected_cmds = [CYCLE_COMMANDS[i % 2] for i in range(n)]
    assert all(want in call.command for want, call in zip(expected_cmds, tally.calls, strict=False))
    outputs = [r.output.strip() for r in tally.results]
    assert outputs == [CYCLE_OUTPUTS[i % 2].strip() for i in range(n)], outputs


def test_claude_retries_after_http_529(tmp_path: Path) -> None:
    """One HTTP 529 from the API: Claude Code prints ``system/api_retry`` and still ends with success."""
    with fake_model_server("retry", healthy_calls=1) as server:
        run = start("claude", server, tmp_path, "retry")
        answers = [r.answer for r in server.main_requests()]
    retries = lines_of_type(run.lines, "system", "api_retry")
    assert (run.reason, run.returncode) == ("exited", 0), explain(run)
    assert len(retries) == 1, explain(run)
    assert retries[0].get("error_status") == 529 and retries[0].get("attempt") == 1, retries
    assert answers == ["error", "tool", "text"]
    results = lines_of_type(run.lines, "result")
    assert len(results) == 1 and results[0].get("subtype") == "success", results
    assert len(Tally("claude").update(run.lines).calls) == 1
