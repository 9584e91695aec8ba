"""Launch the four coding-agent CLIs headless against a fake model, and stop them group-wide.

``launch(cli, cli_dir, server, tmp_path, scenario)`` builds a :class:`Launch` (argv, env, cwd) for a
run that prints its JSON event stream on stdout. Each launch gets fresh directories under
``tmp_path`` (home, config, XDG dirs, working directory), so nothing of the real user's is read or
written; the environment is built from scratch, keeping only ``PATH``.

``run_group(launch, ...)`` runs a command in its own process group with a time limit, collects its
stdout lines, stops when a predicate on the lines says so, and always kills the whole group:
SIGTERM first, SIGKILL after a grace period. Later tests replace it with ``otel-toolchain run``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fake_models import SCENARIOS, WORKSPACE_FILES, FakeModelServer

CLIS = ("claude", "codex", "pi", "opencode")
DEFAULT_CLI_DIR = "/opt/otel-toolchain-clis"
PROMPT = "Follow the scripted task: run the shell commands you are asked for."
FAKE_KEY = "sk-fake-offline-key"

#: Executable per CLI, relative to the CLI dir that .ci/install-clis fills.
BINARIES = {
    "claude": "claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    "codex": "codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    "pi": "pi/node_modules/@mariozechner/pi-coding-agent/dist/cli.js",
    "opencode": "opencode/node_modules/opencode-linux-x64/bin/opencode",
}


def cli_dir() -> Path:
    """The CLI install dir: ``$OTEL_TOOLCHAIN_CLI_DIR`` or ``/opt/otel-toolchain-clis``."""
    return Path(os.environ.get("OTEL_TOOLCHAIN_CLI_DIR") or DEFAULT_CLI_DIR)


def missing_binaries(root: Path) -> list[Path]:
    """The CLI executables that are absent under ``root`` (empty when all four are installed)."""
    return [root / rel for rel in BINARIES.values() if not (root / rel).is_file()]


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one headless CLI run."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


# --------------------------------------------------------------------------- per-CLI launches


def _dirs(tmp_path: Path) -> dict[str, Path]:
    """Create and return the private directories of one run, and the workspace files."""
    names = ("home", "work", "tmp", "config", "data", "cache", "state", "agent")
    dirs = {name: tmp_path / name for name in names}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    for name, text in WORKSPACE_FILES.items():
        (dirs["work"] / name).write_text(text)
    return dirs


def _base_env(dirs: dict[str, Path]) -> dict[str, str]:
    """A minimal environment: ``PATH`` from ours, everything else private to the run."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(dirs["home"]),
        "USER": "tester",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "true",
        "TMPDIR": str(dirs["tmp"]),
        "XDG_CONFIG_HOME": str(dirs["config"]),
        "XDG_DATA_HOME": str(dirs["data"]),
        "XDG_CACHE_HOME": str(dirs["cache"]),
        "XDG_STATE_HOME": str(dirs["state"]),
        "DO_NOT_TRACK": "1",
        "NO_UPDATE_NOTIFIER": "1",
        "npm_config_update_notifier": "false",
        "npm_config_offline": "true",
    }


def claude_launch(root: Path, server: FakeModelServer, tmp_path: Path, scenario: str) -> Launch:
    """Claude Code: ``-p`` with ``stream-json``; Bash allowed by flag (root may not skip permissions).

    No ``--model``: Claude Code warns about unknown model names, so the server instance's scenario
    drives it (the request carries Claude Code's default model name).
    """
    del scenario
    dirs = _dirs(tmp_path)
    env = _base_env(dirs) | {
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CONFIG_DIR": str(dirs["config"] / "claude"),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }
    argv = [str(root / BINARIES["claude"]), "-p", PROMPT, "--output-format", "stream-json", "--verbose",
            "--allowedTools", "Bash"]
    return Launch(argv, env, dirs["work"])


def _codex_config(server: FakeModelServer) -> str:
    """``config.toml`` for Codex: the fake as its only provider, no retries, nothing online."""
    return f"""\
model = "gpt-5.5"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{server.base_url}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"

[features]
plugins = false
apps = false
"""


def codex_launch(root: Path, server: FakeModelServer, tmp_path: Path, scenario: str) -> Launch:
    """Codex: ``exec --json`` with a private ``CODEX_HOME``; the server's scenario drives it."""
    del scenario  # Codex must use a catalog model (gpt-5.5); the server instance holds the scenario
    dirs = _dirs(tmp_path)
    codex_home = dirs["config"] / "codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(_codex_config(server))
    env = _base_env(dirs) | {"OPENAI_API_KEY": FAKE_KEY, "CODEX_HOME": str(codex_home)}
    argv = [str(root / BINARIES["codex"]), "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", PROMPT]
    return Launch(argv, env, dirs["work"])


def _pi_models(server: FakeModelServer) -> dict[str, object]:
    """Pi's ``models.json``: provider ``fake`` with one model per scenario."""
    models = [
        {"id": f"fake-{name}", "name": f"Fake {name}", "reasoning": False, "input": ["text"],
         "contextWindow": 128000, "maxTokens": 4096,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
        for name in SCENARIOS
    ]
    provider = {"baseUrl": f"{server.base_url}/v1", "api": "openai-completions", "apiKey": FAKE_KEY,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": models}
    return {"providers": {"fake": provider}}


def pi_launch(root: Path, server: FakeModelServer, tmp_path: Path, scenario: str) -> Launch:
    """Pi: ``--mode json -p --offline --no-session`` with a private ``PI_CODING_AGENT_DIR``."""
    dirs = _dirs(tmp_path)
    (dirs["agent"] / "models.json").write_text(json.dumps(_pi_models(server), indent=1))
    env = _base_env(dirs) | {"PI_CODING_AGENT_DIR": str(dirs["agent"]), "PI_OFFLINE": "1"}
    argv = ["node", str(root / BINARIES["pi"]), "--mode", "json", "-p", "--offline", "--no-session",
            "--provider", "fake", "--model", f"fake-{scenario}", PROMPT]
    return Launch(argv, env, dirs["work"])


def _opencode_config(server: FakeModelServer, scenario: str) -> dict[str, object]:
    """``opencode.json`` for the working directory: provider ``fake``, everything allowed, no sharing."""
    models = {f"fake-{name}": {"name": f"Fake {name}", "tool_call": True} for name in SCENARIOS}
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                "options": {"baseURL": f"{server.base_url}/v1", "apiKey": FAKE_KEY}, "models": models}
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"fake/fake-{scenario}",
        "small_model": f"fake/fake-{scenario}",
        "provider": {"fake": provider},
        "permission": {"bash": "allow", "read": "allow", "edit": "allow", "external_directory": "allow"},
    }


def opencode_launch(root: Path, server: FakeModelServer, tmp_path: Path, scenario: str) -> Launch:
    """OpenCode: ``run --format json`` with ``opencode.json`` in the working directory."""
    dirs = _dirs(tmp_path)
    config = _opencode_config(server, scenario)
    (dirs["work"] / "opencode.json").write_text(json.dumps(config, indent=1))
    env = _base_env(dirs) | {
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    }
    argv = [str(root / BINARIES["opencode"]), "run", "--format", "json", "--model",
            f"fake/fake-{scenario}", PROMPT]
    return Launch(argv, env, dirs["work"])


LAUNCHERS: dict[str, Callable[[Path, FakeModelServer, Path, str], Launch]] = {
    "claude": claude_launch,
    "codex": codex_launch,
    "pi": pi_launch,
    "opencode": opencode_launch,
}


def launch(cli: str, root: Path, server: FakeModelServer, tmp_path: Path, scenario: str) -> Launch:
    """Build the :class:`Launch` of ``cli`` (one of :data:`CLIS`) for ``scenario``."""
    return LAUNCHERS[cli](root, server, tmp_path, scenario)


# --------------------------------------------------------------------------- running a process group


@dataclass
class GroupRun:
    """Outcome of :func:`run_group`.

    ``returncode`` is the leader's exit status (negative: killed by that signal). ``stopped_by`` is
    ``None`` when the command exited by itself, else ``"SIGTERM"`` or ``"SIGKILL"``: the signal that
    made the group go away. ``leftover`` lists pids of the group still alive after the kill (should be
    empty).
    """

    pgid: int
    lines: list[str]
    returncode: int | None
    stopped_by: str | None
    reason: str
    elapsed: float
    leftover: list[int] = field(default_factory=list)
    stderr: str = ""


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is ``pgid``, from ``/proc``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _group_gone(pgid: int) -> bool:
    """True when no live process is left in group ``pgid``."""
    return not group_members(pgid)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_gone(proc: subprocess.Popen[bytes], pgid: int, grace: float) -> bool:
    """Reap the leader and wait up to ``grace`` s for the whole group to disappear."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()
        if proc.returncode is not None and _group_gone(pgid):
            return True
        time.sleep(0.05)
    proc.poll()
    return proc.returncode is not None and _group_gone(pgid)


def stop_group(proc: subprocess.Popen[bytes], pgid: int, grace: float) -> str | None:
    """Stop the group: SIGTERM, then SIGKILL after ``grace`` s. Return the signal that ended it."""
    if proc.poll() is not None and _group_gone(pgid):
        return None
    _signal_group(pgid, signal.SIGTERM)
    if _wait_gone(proc, pgid, grace):
        return "SIGTERM"
    _signal_group(pgid, signal.SIGKILL)
    _wait_gone(proc, pgid, 5.0)
    return "SIGKILL"


def _pump(stream: IO[bytes], lines: queue.Queue[str | None]) -> None:
    """Copy ``stream``'s lines into ``lines``; ``None`` marks the end (EOF or a closed stream)."""
    try:
        for raw in stream:
            lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
    except (OSError, ValueError):
        pass
    finally:
        lines.put(None)


def run_group(
    cmd: Launch,
    *,
    timeout: float,
    stop_when: Callable[[list[str]], bool] | None = None,
    grace: float = 3.0,
    max_lines: int = 20000,
) -> GroupRun:
    """Run ``cmd`` in a new process group, collect stdout lines, always leave no process behind.

    The run ends when the command exits by itself, when ``stop_when(lines)`` becomes true (checked
    after each line), after ``timeout`` seconds, or after ``max_lines`` lines. In the last three cases
    the group gets SIGTERM, then SIGKILL after ``grace`` seconds. Stderr goes to ``stderr.log`` in the
    launch's working directory's parent and is returned (tail) in :attr:`GroupRun.stderr`.
    """
    err_path = cmd.cwd.parent / "stderr.log"
    start = time.monotonic()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd.argv, env=cmd.env, cwd=cmd.cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    pgid = proc.pid
    assert proc.stdout is not None
    lines: list[str] = []
    feed: queue.Queue[str | None] = queue.Queue()
    pump = threading.Thread(target=_pump, args=(proc.stdout, feed), daemon=True)
    pump.start()
    reason = "exited"
    try:
        reason = _collect(proc, feed, lines, start + timeout, stop_when, max_lines)
    finally:
        stopped_by = stop_group(proc, pgid, grace)
        pump.join(timeout=2.0)  # EOF follows once the group is gone
        if not pump.is_alive():
            proc.stdout.close()
    return GroupRun(pgid, lines, proc.returncode, stopped_by, reason, time.monotonic() - start,
                    group_members(pgid), err_path.read_text(errors="replace")[-4000:])


def _collect(proc: subprocess.Popen[bytes], feed: queue.Queue[str | None], lines: list[str],
             deadline: float, stop_when: Callable[[list[str]], bool] | None, max_lines: int) -> str:
    """Move lines from ``feed`` to ``lines`` until EOF, the predicate, the deadline or ``max_lines``.

    Return why it ended: ``exited``, ``predicate``, ``timeout`` or ``max_lines``.
    """
    while len(lines) < max_lines:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            line = feed.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                return "timeout"
            return "exited"
        lines.append(line)
        if stop_when is not None and stop_when(lines):
            return "predicate"
    return "max_lines"
