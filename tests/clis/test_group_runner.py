"""The process-group runner of tests/clis/harness.py, on small Python child processes (no CLI needed)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from harness import Launch, group_members, run_group

# Prints a line, starts a grandchild in the same process group, then prints "tick" lines forever.
# With IGNORE_TERM set, both ignore SIGTERM, so only SIGKILL can stop the group.
TICKER = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    if os.environ.get("IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time\\nfor _ in range(600): time.sleep(0.1)"])
    print("started", child.pid, flush=True)
    for i in range(600):
        print("tick", i, flush=True)
        time.sleep(0.05)
    """
)


def ticker(tmp_path: Path, *, ignore_term: bool) -> Launch:
    """A launch of :data:`TICKER` in ``tmp_path/work``."""
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", **({"IGNORE_TERM": "1"} if ignore_term else {})}
    return Launch([sys.executable, "-c", TICKER], env, work)


def test_exits_by_itself_with_all_lines(tmp_path: Path) -> None:
    """A command that ends by itself: every line, its exit code, no signal sent."""
    work = tmp_path / "work"
    work.mkdir()
    script = "import sys\nprint('a')\nprint('b')\nsys.exit(3)"
    run = run_group(Launch([sys.executable, "-c", script], {}, work), timeout=20)
    assert (run.lines, run.returncode, run.stopped_by, run.reason) == (["a", "b"], 3, None, "exited")


def test_predicate_stops_group_with_sigterm(tmp_path: Path) -> None:
    """The predicate ends the run; SIGTERM to the group stops the child and the grandchild."""
    run = run_group(ticker(tmp_path, ignore_term=False), timeout=20,
                    stop_when=lambda lines: len(lines) >= 4)
    assert run.reason == "predicate" and run.stopped_by == "SIGTERM"
    assert run.lines[0].startswith("started") and run.returncode == -15
    assert run.leftover == [] and group_members(run.pgid) == []


def test_ignored_sigterm_escalates_to_sigkill(tmp_path: Path) -> None:
    """A group that ignores SIGTERM is killed with SIGKILL after the grace period."""
    run = run_group(ticker(tmp_path, ignore_term=True), timeout=2.0, grace=0.5)
    assert run.reason == "timeout" and run.stopped_by == "SIGKILL" and run.returncode == -9
    assert 2.0 <= run.elapsed < 10.0
    assert run.leftover == [] and group_members(run.pgid) == []


def test_max_lines_bounds_the_read(tmp_path: Path) -> None:
    """``max_lines`` stops an endless writer."""
    run = run_group(ticker(tmp_path, ignore_term=False), timeout=20, max_lines=5)
    assert run.reason == "max_lines" and len(run.lines) == 5 and run.leftover == []
