"""``run`` leaves no process behind: SIGKILL of ``run`` itself, a stop (exit 75), a normal exit.

Real processes throughout: the real ``otel-toolchain run`` (``python -m otel_toolchain``) wraps a
small agent script that detaches a tool process with the real ``setsid`` binary (or a double
fork) and then prints the fake Claude Code stream of ``tests/fixtures/fake_claude.py``. Leftovers
are found by a token unique to each test in their command line (read from ``/proc``), and any
found is ended by its PID in the test's cleanup. Waits are bounded polls for a condition, never
timing assertions.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and a child subreaper")

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_claude.py"

# argv: MODE TOKEN FAKE_MODE. ``setsid``: a tool process in a session of its own that ignores
# SIGTERM (an ignored signal stays ignored across exec); ``double-fork``: a daemon whose parent
# exited at once, re-parented away from the agent. Then the agent prints the fake stream.
AGENT = """
import os, subprocess, sys
mode, token, fake_mode = sys.argv[1:4]
sleeper = ["sleep", token]
if mode == "setsid":
    subprocess.Popen(["setsid", "sh", "-c", "trap '' TERM; exec sleep " + token])
elif mode == "double-fork":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", sleeper)
        os._exit(0)
    os.wait()
os.execv(sys.executable, [sys.executable, sys.argv[4], fake_mode, sys.argv[5]])
"""


def with_token(token: str) -> list[int]:
    """PIDs of live processes whose command line holds ``token`` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def wait_until_none(token: str, bound_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + bound_s
    while (left := with_token(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_until_some(token: str, count: int, bound_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + bound_s
    while len(found := with_token(token)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


@pytest.fixture
def token() -> Iterator[str]:
    """A ``sleep`` duration unique to the test (300.<random digits> seconds); leftovers killed by PID."""
    value = f"300.{uuid.uuid4().int % 10**9:09d}"
    yield value
    for pid in with_token(value):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_cli(tmp_path: Path, mode: str, token: str, fake_mode: str, calls: int = 1_000_000,
            *extra: str) -> subprocess.Popen[bytes]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "telemetry")}
    return subprocess.Popen(
        [sys.executable, "-m", "otel_toolchain", "run", "--grace", "0.5", *extra, "--",
         sys.executable, str(agent), mode, token, fake_mode, str(FAKE), str(calls)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def test_sigkill_of_run_leaves_no_agent_process_nor_detached_tool_process(tmp_path: Path, token: str) -> None:
    # limit 10**6 via a manifest: the wedge never stops on its own; only the SIGKILL ends it.
    manifest = tmp_path / "pack.toml"
    manifest.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 1000000\n')
    proc = run_cli(tmp_path, "setsid", token, "wedge", 1_000_000, "--manifest", str(manifest))
    assert proc.stdout is not None
    for _ in range(20):  # the agent is streaming: it and its tool process are up
        assert proc.stdout.readline()
    # the run's command line, the agent's and the detached sleep's (sh execs into sleep)
    before = wait_until_some(token, 3)
    assert len(before) >= 3, before
    proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    assert wait_until_none(token) == []


def test_a_stop_ends_a_setsid_tool_process_that_ignores_sigterm(tmp_path: Path, token: str) -> None:
    proc = run_cli(tmp_path, "setsid", token, "wedge")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    assert b"otel-toolchain: stopped by repeat_guard at call 25" in err
    assert wait_until_none(token) == []


@pytest.mark.parametrize("mode", ["setsid", "double-fork"])
def test_a_normal_exit_ends_detached_tool_processes(tmp_path: Path, token: str, mode: str) -> None:
    proc = run_cli(tmp_path, mode, token, "healthy", 3)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.count(b"\n") == 8  # init, 3 x (tool use, tool result), result: passed through
    assert wait_until_none(token) == []


def test_without_run_the_detached_process_would_survive(tmp_path: Path, token: str) -> None:
    """The control: the same agent run directly leaves its setsid tool process behind."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    done = subprocess.run([sys.executable, str(agent), "setsid", token, "healthy", str(FAKE), "3"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
    assert done.returncode == 0
    assert len(wait_until_some(token, 1)) == 1
