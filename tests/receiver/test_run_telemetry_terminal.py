"""``run --telemetry`` hands the terminal to the agent: it is the foreground group, reads keys, gets Ctrl-C.

A real pseudo-terminal (``pty.fork``: the forked child is a session leader whose controlling
terminal is the pty), the real ``otel-toolchain run --telemetry`` in it, and a small Python program
as the interactive agent: it reports whether it is the terminal's foreground group, echoes a line
typed at the keyboard, then waits for Ctrl-C. The test types into the pty's master side as a user
would. Nothing is faked; no agent CLI is needed for what is tested here (the terminal, not OTLP).
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

AGENT = r"""
import os, signal, sys
print("foreground", os.tcgetpgrp(0) == os.getpgrp(), "own-group", os.getpgrp() != os.getsid(0), flush=True)
print("sigint-blocked", signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []), flush=True)
print("ready", flush=True)
print("typed", sys.stdin.readline().strip(), flush=True)
signal.signal(signal.SIGINT, lambda *_: (print("interrupted", flush=True), sys.exit(42)))
print("waiting", flush=True)
signal.pause()
"""


def _read_until(fd: int, text: str, seen: bytearray, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {text!r} in {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the pty's other side is closed
                break
            if not chunk:
                break
            seen.extend(chunk)
    return seen.decode(errors="replace")


def test_the_agent_owns_the_terminal_and_ctrl_c_reaches_it_alone(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path / "out"), "TERM": "dumb"}
    pid, master = pty.fork()
    if pid == 0:  # the child: exec at once (nothing of pytest runs here)
        # As a login shell would start it: no signal blocked or ignored that pytest's process had (a
        # shell's background job ignores SIGINT; library threads may have left a mask).
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for signo in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
            signal.signal(signo, signal.SIG_DFL)
        os.execve(sys.executable, [sys.executable, "-m", "otel_toolchain", "-q", "run", "--telemetry", "--",
                                   sys.executable, str(script)], env)
    seen = bytearray()
    status = None
    try:
        _read_until(master, "ready", seen)  # before typing: the terminal echoes what is typed
        os.write(master, b"hello from the keyboard\n")
        _read_until(master, "waiting", seen)
        os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to its foreground group only
        out = _read_until(master, "interrupted", seen)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)  # the session's terminal hangs up: SIGHUP to whatever is left of it
        if status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert "foreground True own-group True" in out
    assert "sigint-blocked False" in out
    assert "typed hello from the keyboard" in out
    # run itself was not interrupted: it waited for the agent and exits with the agent's own code
    assert os.waitstatus_to_exitcode(status) == 42, out
