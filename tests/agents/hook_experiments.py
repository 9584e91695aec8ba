"""Claude Code hooks measured with the real CLI headless (``-p``) against the fake Anthropic model.

Each experiment writes a project ``.claude/settings.json`` into the run's working directory that
sends the hook events of :data:`EVENTS` to :mod:`hook_probe`, runs Claude Code in a scenario of
tests/clis/fake_models, and reports what happened: the stream's ``result`` line, the exit code, the
tool calls the model saw, the hook invocations (from the probe's records) and where, if anywhere, the
hook's text reached the model's next request.

Usage: ``python tests/agents/hook_experiments.py [NAME ...]`` writes ``tests/data/hooks/claude-code/``:
``experiments.json`` (one entry per experiment) and ``<Event>[.<variant>].json`` payload samples.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import recording  # puts tests/clis on sys.path
from fake_models import FakeModelServer, RecordedRequest
from harness import claude_launch, cli_dir, run_group
from hook_probe import BLOCK_REASON, FAIL_TEXT, NUDGE, STOP_REASON

OUT = Path(__file__).resolve().parents[1] / "data" / "hooks" / "claude-code"
PROBE = Path(__file__).resolve().parent / "hook_probe.py"
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Stop", "StopFailure",
          "SessionStart", "SessionEnd", "UserPromptSubmit")
MARKERS = (NUDGE, STOP_REASON, BLOCK_REASON, FAIL_TEXT, "this is {not json")


@dataclass(frozen=True)
class Experiment:
    """One run: fake scenario, probe mode, hook timeout (s, or None for the default), call limit."""

    scenario: str
    mode: str
    timeout: int | None = None
    stop_after_calls: int | None = None
    run_timeout: float = 120.0


EXPERIMENTS = {
    "payloads-healthy": Experiment("healthy", "log"),
    "payloads-failing": Experiment("failing", "log", stop_after_calls=3),
    "stop": Experiment("wedge", "stop-after:3", stop_after_calls=8),
    "context": Experiment("wedge", "context-after:2", stop_after_calls=4),
    "block": Experiment("wedge", "block-after:2", stop_after_calls=4),
    "exit1": Experiment("wedge", "fail:1", stop_after_calls=3),
    "exit2": Experiment("wedge", "fail:2", stop_after_calls=3),
    "garbage": Experiment("wedge", "garbage", stop_after_calls=3),
    "slow-3s": Experiment("wedge", "sleep:3", stop_after_calls=3),
    "hang-timeout-2s": Experiment("wedge", "sleep:30", timeout=2, stop_after_calls=3),
    "hang-default-timeout": Experiment("wedge", "sleep-once:75", stop_after_calls=2, run_timeout=200.0),
}


class TimedModel(FakeModelServer):
    """The fake Anthropic model, also noting when each request arrived."""

    def __init__(self, scenario: str) -> None:
        super().__init__(scenario, delay=0.1, healthy_calls=recording.HEALTHY_CALLS)
        self.arrivals: list[tuple[float, RecordedRequest]] = []
        self._times = threading.Lock()

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Any:
        """Record the arrival time, then answer as the fake does."""
        now = time.time()
        reply = super().answer(method, path, body)
        with self._times:
            self.arrivals.append((now, self.snapshot()[-1]))
        return reply


def settings(exp: Experiment) -> dict[str, Any]:
    """The project settings.json: every event of :data:`EVENTS` to the probe."""
    hook: dict[str, Any] = {"type": "command", "command": f"{sys.executable} {PROBE}"}
    if exp.timeout is not None:
        hook["timeout"] = exp.timeout
    return {"hooks": {event: [{"matcher": "*", "hooks": [hook]}] for event in EVENTS}}


def _where(text: str, body: dict[str, Any]) -> list[str]:
    """Where in a Messages request ``text`` occurs: ``messages[i].content[j].<type>`` paths."""
    found = []
    for i, msg in enumerate(body.get("messages") or []):
        blocks = msg.get("content") if isinstance(msg.get("content"), list) else [msg.get("content")]
        for j, block in enumerate(blocks):
            if text in json.dumps(block):
                kind = block.get("type") if isinstance(block, dict) else "text"
                found.append(f"messages[{i}].content[{j}].{kind} ({msg.get('role')})")
    if text in json.dumps(body.get("system", "")):
        found.append("system")
    return found


def _hook_rows(probe_dir: Path) -> list[dict[str, Any]]:
    """The probe's records, in invocation order."""
    rows = []
    for path in sorted(probe_dir.glob("*.json")):
        text = path.read_text()
        rows.append(json.loads(text) | {"file": path.name} if text else {"file": path.name, "payload": None})
    return rows


def run(name: str, exp: Experiment, tmp: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one experiment; return its report and the probe's records."""
    probe_dir = tmp / "probe"
    probe_dir.mkdir()
    server = TimedModel(exp.scenario)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        base = claude_launch(cli_dir(), server, tmp, exp.scenario)
        (base.cwd / ".claude").mkdir()
        (base.cwd / ".claude" / "settings.json").write_text(json.dumps(settings(exp), indent=1))
        launch = type(base)(base.argv, base.env | {"HOOK_PROBE_DIR": str(probe_dir), "HOOK_PROBE_MODE": exp.mode},
                            base.cwd)
        limit = exp.stop_after_calls

        def stop_when(_lines: list[str]) -> bool:
            return limit is not None and max((r.tool_results for r in server.main_requests()), default=0) >= limit

        started = time.time()
        result = run_group(launch, timeout=exp.run_timeout, stop_when=stop_when)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    hooks = _hook_rows(probe_dir)
    return report(name, exp, started, result, server, hooks), hooks


def report(name: str, exp: Experiment, started: float, result: Any, server: TimedModel,
           hooks: list[dict[str, Any]]) -> dict[str, Any]:
    """What one experiment showed (see the module docstring)."""
    lines = [json.loads(line) for line in result.lines if line.startswith("{")]
    final = next((line for line in reversed(lines) if line.get("type") == "result"), None)
    main = [(t, r) for t, r in server.arrivals if r.answer in ("tool", "text")]
    reached = {m: [(k, _where(m, r.body)) for k, (_, r) in enumerate(main) if _where(m, r.body)][:1] for m in MARKERS}
    post = [h for h in hooks if h.get("file", "").endswith("-PostToolUse.json")]
    waits = []
    for h in post:
        later = [t for t, _ in main if t > h["started"]]
        if later:
            waits.append(round(later[0] - h["started"], 3))
    counts = Counter(f"{line.get('type')}/{line.get('subtype') or ''}/{line.get('hook_event') or ''}".rstrip("/")
                     for line in lines)
    session_end = [h["payload"] for h in hooks if h.get("file", "").endswith("-SessionEnd.json") and h.get("payload")]
    return {
        "experiment": name, "scenario": exp.scenario, "probe_mode": exp.mode, "hook_timeout_s": exp.timeout,
        "returncode": result.returncode, "stopped_by_test": result.stopped_by, "elapsed_s": round(result.elapsed, 2),
        "tool_results_seen_by_model": max((r.tool_results for _, r in main), default=0),
        "result_line": {k: final.get(k) for k in ("subtype", "is_error", "terminal_reason", "stop_reason", "result",
                                                  "num_turns")} if final else None,
        "hook_invocations": [h["file"].split("-", 1)[1].removesuffix(".json") for h in hooks],
        "post_tool_use_seconds_to_next_model_request": waits,
        "hook_text_reached_model": {m[:40]: v for m, v in reached.items() if v},
        "hook_text_in_stream": [m[:40] for m in MARKERS if any(m in line for line in result.lines)],
        "hook_text_in_transcript": _transcript_hits(hooks),
        "stream_line_counts": dict(sorted(counts.items())),
        "session_end_reason": session_end[0].get("reason") if session_end else None,
        "probe_exits": sorted({h.get("exit") for h in hooks if h.get("file", "").endswith("-PostToolUse.json")},
                              key=str),
        "stderr_tail": result.stderr[-400:],
    }


def _transcript_hits(hooks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """For each marker text: the ``type``/``attachment.type`` of the transcript entries holding it."""
    paths = {h["payload"].get("transcript_path") for h in hooks if isinstance(h.get("payload"), dict)}
    entries = []
    for path in paths:
        if path and Path(path).is_file():
            entries += [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    hits: dict[str, list[str]] = {}
    for marker in MARKERS:
        kinds = [f"{e.get('type')}/{(e.get('attachment') or {}).get('type', '')}".rstrip("/")
                 for e in entries if marker in json.dumps(e)]
        if kinds:
            hits[marker[:40]] = sorted(set(kinds))
    return hits


def main(names: list[str]) -> int:
    """Run the named experiments (default: all) and write their outputs."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "experiments.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for name in names or list(EXPERIMENTS):
        with tempfile.TemporaryDirectory(prefix=f"hook-{name}-") as tmp:
            rep, hooks = run(name, EXPERIMENTS[name], Path(tmp))
        results[name] = rep
        if name.startswith("payloads"):
            variant = name.split("-", 1)[1]
            for event in dict.fromkeys(h["file"].split("-", 1)[1].removesuffix(".json") for h in hooks):
                sample = next(h for h in hooks if h["file"].endswith(f"-{event}.json"))
                (OUT / f"{event}.{variant}.json").write_text(json.dumps(sample["payload"], indent=1) + "\n")
        print(json.dumps(rep)[:600], flush=True)
        path.write_text(json.dumps(results, indent=1) + "\n")
    shutil.rmtree(OUT / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
