"""The supervisor where it cannot be a subreaper: a documented one-line warning, the command still runs.

The platform is faked (``sys.platform`` set before the supervisor reads it) in a real Python
subprocess, since no other platform is at hand; the command and its exit code are real.
"""

from __future__ import annotations

import subprocess
import sys

from opentelemetry.sdk.trace import TracerProvider

from otel_toolchain.harnesses import supervisor
from otel_toolchain.harnesses.live import run_harness
from otel_toolchain.recorder import AgentRecorder

FOLDER = supervisor.__file__.rsplit("/", 1)[0]


def test_without_a_subreaper_the_supervisor_warns_once_and_runs_the_command() -> None:
    code = (f"import os, sys; sys.platform = 'darwin'; sys.path.insert(0, {FOLDER!r}); import supervisor; "
            "r, w = os.pipe(); sys.exit(supervisor.main(['--watch-fd', str(r), '--grace', '0.1', '--', "
            "'sh', '-c', 'echo out; exit 4']))")
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (4, "out\n")
    assert done.stderr == ("otel-toolchain: no child subreaper on this platform: a process the agent detaches "
                           "(setsid, double fork) may outlive the run\n")


def test_the_command_line_runs_the_supervisor_isolated() -> None:
    argv = supervisor.command_line(["claude", "-p", "x"], watch_fd=7, grace_s=3.0)
    assert argv == [sys.executable, "-I", supervisor.__file__, "--watch-fd", "7", "--grace", "3.0", "--",
                    "claude", "-p", "x"]


def test_a_command_that_exits_at_once_keeps_its_exit_code_through_the_supervisor() -> None:
    """A quick command's exit status is the supervisor's to collect, not lost to a finaliser."""
    recorder = AgentRecorder(TracerProvider())
    codes = [run_harness(["sh", "-c", f"exit {code}"], recorder, harness="none").exit_code for code in (4, 0, 1)]
    assert codes == [4, 0, 1]
    assert run_harness(["sh", "-c", "kill -TERM $$"], recorder, harness="none").exit_code == 128 + 15
