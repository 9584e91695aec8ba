"""Record the four real CLIs running the scripted scenarios offline, for tests/data/recordings.

    python tests/clis/record.py --out tests/data/recordings [--cli claude] [--scenario pytest_fail]

For every (CLI, scenario) pair of tests/clis/scenarios.py: start the fake model API on 127.0.0.1
with that scenario, build the CLI's headless launch with tests/clis/harness.py (private HOME and
config dirs), write the scenario's workspace, run the CLI to its end and write:

* ``<out>/<cli>/<scenario>.jsonl``: the CLI's stdout JSON stream, line for line (non-JSON lines,
  if any, are dropped and counted in the manifest);
* ``<out>/<cli>/<scenario>.session.jsonl``: for the scenarios that keep it, the CLI's own session
  file (Claude Code's transcript, ~7 KB a call; Codex's rollout: what the model saw, e.g. Codex's
  ``Chunk ID`` lines and the arguments its exec stream leaves out);
* ``<out>/<cli>/tools.json``: the parameter schemas of the tools the CLI offered the model;
* ``<out>/manifest.json``: CLI versions, the command line and how each run ended.

The runs are real and take minutes (a few seconds per call for some CLIs); nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_models import RecordedRequest, fake_model_server
from harness import BINARIES, Launch, cli_dir, launch, run_group
from scenarios import ALL, BY_NAME, Scenario

PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "pi": "@mariozechner/pi-coding-agent",
            "opencode": "opencode-ai"}
FOLDERS = {"claude": "claude-code", "codex": "codex", "pi": "pi", "opencode": "opencode"}
TMP_ROOT = Path("/tmp/otel-toolchain-recording")
PI_SESSIONS = "config/pi-sessions"
RUN_TIMEOUT = 900.0


def cli_version(root: Path, cli: str) -> str:
    """The installed npm version of ``cli`` under ``root``."""
    manifest = root / FOLDERS[cli] / "node_modules" / PACKAGES[cli] / "package.json"
    return str(json.loads(manifest.read_text())["version"])


def write_workspace(scenario: Scenario, work: Path) -> None:
    """Write the scenario's files into ``work`` and make its scripts executable."""
    for rel, text in scenario.files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in scenario.executables:
        path = work / rel
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def write_login_profile(cmd: Launch) -> None:
    """Give the run's private HOME a ``.bash_profile`` that keeps the launch's PATH and variables.

    Codex runs every command in a login shell (``bash -lc``), where /etc/profile resets root's
    PATH and loses python's and cargo's directories; a real user's profile puts them back.
    """
    keep = {key: value for key, value in cmd.env.items() if key == "PATH" or key.startswith(("CARGO_", "RUSTUP_"))}
    lines = "".join(f"export {key}={shlex.quote(value)}\n" for key, value in sorted(keep.items()))
    (Path(cmd.env["HOME"]) / ".bash_profile").write_text(lines)


def tool_schemas(request: RecordedRequest) -> list[dict[str, Any]]:
    """Name and parameter schema of each tool a request offered (long descriptions kept: evidence)."""
    tools = []
    for tool in request.body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        tools.append({"name": fn.get("name") or tool.get("type"), "type": tool.get("type"),
                      "parameters": fn.get("parameters") or fn.get("input_schema") or {}})
    return tools


def session_file(cli: str, run_dir: Path) -> Path | None:
    """The CLI's own session file of a run, if it wrote exactly one."""
    patterns = {"claude": ("config/claude/projects", "*.jsonl"), "codex": ("config/codex/sessions", "rollout-*.jsonl"),
                "pi": (PI_SESSIONS, "*.jsonl")}
    if cli not in patterns:
        return None
    base, pattern = patterns[cli]
    found = sorted((run_dir / base).rglob(pattern)) if (run_dir / base).is_dir() else []
    return found[0] if len(found) == 1 else None


def keep_pi_session(cmd: Launch, run_dir: Path) -> Launch:
    """Pi's launch with its session kept: ``--session-dir`` under the run instead of ``--no-session``."""
    argv = list(cmd.argv)
    at = argv.index("--no-session")
    argv[at:at + 1] = ["--session-dir", str(run_dir / PI_SESSIONS)]
    return Launch(argv, cmd.env, cmd.cwd)


def json_lines(lines: list[str]) -> tuple[list[str], int]:
    """The lines that hold a JSON object, and how many others were dropped."""
    kept = []
    for line in lines:
        try:
            ok = isinstance(json.loads(line), dict)
        except ValueError:
            ok = False
        if ok:
            kept.append(line)
    return kept, len(lines) - len(kept)


def record_one(root: Path, cli: str, scenario: Scenario, out: Path, delay: float) -> dict[str, Any]:
    """Run ``cli`` through ``scenario`` and write its files under ``out``; return its manifest entry."""
    run_dir = TMP_ROOT / f"{cli}-{scenario.name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    holder: dict[str, Launch] = {}

    def observe(request: RecordedRequest) -> None:
        if scenario.react is not None and request.answer in ("tool", "text") and "cmd" in holder:
            scenario.react(request.tool_results, holder["cmd"].cwd)

    scripts = {scenario.name: scenario.script_for(cli)}
    with fake_model_server(scenario.name, delay=delay, observer=observe, scripts=scripts) as server:
        cmd = launch(cli, root, server, run_dir, scenario.name)
        cmd = Launch(cmd.argv, cmd.env | dict(scenario.env), cmd.cwd)
        if cli == "pi" and cli in scenario.sessions:
            cmd = keep_pi_session(cmd, run_dir)
        write_workspace(scenario, cmd.cwd)
        write_login_profile(cmd)
        holder["cmd"] = cmd
        started = time.time()
        run = run_group(cmd, timeout=RUN_TIMEOUT, grace=5.0, max_lines=200000)
        main = server.main_requests()
    lines, dropped = json_lines(run.lines)
    target = out / cli
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{scenario.name}.jsonl").write_text("".join(line + "\n" for line in lines))
    if main:
        (target / "tools.json").write_text(json.dumps(tool_schemas(main[0]), indent=1) + "\n")
    session = session_file(cli, run_dir) if cli in scenario.sessions else None
    if session is not None:
        shutil.copyfile(session, target / f"{scenario.name}.session.jsonl")
    argv = [arg.replace(str(run_dir), "$RUN").replace(str(root), "$CLI_DIR") for arg in cmd.argv]
    return {
        "cli": cli, "version": cli_version(root, cli), "scenario": scenario.name, "label": scenario.label,
        "designed_loop_start": scenario.loop_start or 0, "designed_period": scenario.period or 0,
        "summary": scenario.summary, "argv": argv, "cwd": str(cmd.cwd),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(run.elapsed, 1), "ended": run.reason, "returncode": run.returncode,
        "stdout_lines": len(lines), "dropped_lines": dropped, "model_requests": len(main),
        "tool_results_seen": max((r.tool_results for r in main), default=0),
        "session": f"{scenario.name}.session.jsonl" if session is not None else None,
        "stderr_tail": run.stderr[-400:],
    }


def main(argv: list[str] | None = None) -> int:
    """Record the selected pairs; merge their entries into ``<out>/manifest.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cli", action="append", choices=sorted(BINARIES))
    parser.add_argument("--scenario", action="append", choices=sorted(BY_NAME))
    parser.add_argument("--delay", type=float, default=0.1, help="seconds the fake waits before each answer")
    args = parser.parse_args(argv)
    root = cli_dir()
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for scenario in ALL:
        if args.scenario and scenario.name not in args.scenario:
            continue
        for cli in scenario.clis:
            if args.cli and cli not in args.cli:
                continue
            entry = record_one(root, cli, scenario, args.out, args.delay)
            manifest[f"{cli}/{scenario.name}"] = entry
            print(f"{cli}/{scenario.name}: {entry['ended']} rc={entry['returncode']} "
                  f"results={entry['tool_results_seen']} {entry['seconds']}s", flush=True)
            manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
