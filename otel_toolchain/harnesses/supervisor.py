"""The supervisor between ``run`` and the agent: no process of the agent outlives the run.

``run`` starts ``python -I supervisor.py --watch-fd N --grace S -- COMMAND…`` as the leader of a
new process group; the supervisor starts the command in that group and:

- becomes a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so every descendant
  that detaches (``setsid``, a double fork) is re-parented to it instead of to init, and stays
  findable as a descendant;
- holds the read end of a pipe whose only writer is ``run``: when ``run`` dies, however (SIGKILL
  included), the pipe reads end-of-file and the supervisor ends every descendant, SIGTERM then
  SIGKILL after the grace period, and exits;
- forwards SIGTERM, SIGINT and SIGHUP (which reach it with the group) to the descendants that
  left the group, and once the command has exited gives what is left of it the grace period to
  finish, then SIGKILLs it.

Elsewhere than Linux there is no subreaper nor ``/proc``: the supervisor warns once on standard
error and ends its own process group only; a detached descendant may then survive.

This file imports nothing but the standard library, so it starts quickly as a script; ``run``
imports :func:`descendants` from it to end detached descendants when it escalates to SIGKILL.
It never writes to standard output (the agent's stream).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["command_line", "descendants", "main"]

_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.01


def command_line(command: Sequence[str], *, watch_fd: int, grace_s: float) -> list[str]:
    """The argv that runs ``command`` under the supervisor (``-I``: no user site, no PYTHON* variables)."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), "--watch-fd", str(watch_fd),
            "--grace", repr(grace_s), "--", *command]


def descendants(root: int) -> list[tuple[int, int]]:
    """(pid, process group) of every live descendant of ``root`` (not zombies), read from ``/proc``.

    Empty where there is no ``/proc``. A process that exits while this reads is simply left out.
    """
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            fd = os.open(entry.path + "/stat", os.O_RDONLY)
            try:
                stat = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()  # the command name may hold spaces and ")"
        if fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append((int(entry.name), int(fields[2])))
    found: list[tuple[int, int]] = []
    todo = [root]
    while todo:
        for pid, pgid in children.get(todo.pop(), ()):
            found.append((pid, pgid))
            todo.append(pid)
    return found


def _signal_all(pids: Sequence[int], signo: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signo)


def _has_children() -> bool:
    """Whether any child (live or not yet reaped) is left: as a subreaper, every live descendant
    has an ancestor among our children, so none means there is nothing to end."""
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    if pid != 0:  # one exited just now: reaped here, so look again
        return _has_children()
    return True


def _reap() -> dict[int, int]:
    """Collect every child that has exited (as a subreaper, orphans are ours to wait for)."""
    codes: dict[int, int] = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return codes
        if pid == 0:
            return codes
        codes[pid] = os.waitstatus_to_exitcode(status)


class _Supervisor:
    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.me = os.getpid()
        self.group = os.getpgrp()
        self.agent_code: int | None = None
        self.agent_pid = 0
        self.agent: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def detached(self) -> list[int]:
        return [pid for pid, pgid in descendants(self.me) if pgid != self.group]

    def forward(self, signo: int, _frame: object) -> None:
        """A signal the group got: pass it on to the descendants that left the group.

        On a thread: reading ``/proc`` takes milliseconds, and the handler must not hold up the
        main thread, whose exit is what tells ``run`` that the group is gone.
        """
        threading.Thread(target=lambda: _signal_all(self.detached(), signo), daemon=True).start()

    def end_everything(self, *, terminate: bool) -> None:
        """End every descendant and reap them all: SIGKILL what is left after the grace period.

        ``terminate``: send SIGTERM first (``run`` is gone); otherwise (the command exited) the
        descendants get the grace period to finish on their own, as ``run`` gave them before.
        """
        with self._lock:
            if not terminate and not _has_children():
                return  # the usual end: no descendant can be left without a child of ours
            has_proc = os.path.isdir("/proc")
            alive = [pid for pid, _ in descendants(self.me)]
            if not has_proc and terminate:  # no way to see detached ones: the group is what we know
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.group, signal.SIGTERM)
            if terminate:
                _signal_all(alive, signal.SIGTERM)
            deadline = time.monotonic() + self.grace_s
            while alive and time.monotonic() < deadline:
                self._record(_reap())
                time.sleep(_POLL_S)
                alive = [pid for pid, _ in descendants(self.me)]
            while alive:  # SIGKILL until nothing is left: a process may fork while we look
                _signal_all(alive, signal.SIGKILL)
                time.sleep(_POLL_S)
                self._record(_reap())
                alive = [pid for pid, _ in descendants(self.me)]
            self._record(_reap())

    def _record(self, codes: dict[int, int]) -> None:
        if self.agent_pid in codes and self.agent_code is None:
            self.agent_code = codes[self.agent_pid]

    def watch(self, fd: int) -> None:
        """Block until ``run`` is gone (the pipe's writer closed), then end everything and exit."""
        with contextlib.suppress(OSError):
            while os.read(fd, 4096):
                pass
        self.end_everything(terminate=True)
        os._exit(_exit_code(self.agent_code if self.agent_code is not None else -signal.SIGKILL))

    def wait_for_agent(self) -> int:
        while self.agent_code is None:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == self.agent_pid:
                self.agent_code = os.waitstatus_to_exitcode(status)
        return self.agent_code if self.agent_code is not None else 0


def _exit_code(code: int) -> int:
    return code if code >= 0 else 128 - code


def _set_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parse(argv: Sequence[str]) -> tuple[int, float, list[str]]:
    split = list(argv).index("--")
    options = dict(zip(argv[:split:2], argv[1:split:2], strict=True))
    return int(options["--watch-fd"]), float(options["--grace"]), list(argv[split + 1:])


def main(argv: Sequence[str]) -> int:
    """Run the command under supervision; its exit code (128+N when a signal N ended it)."""
    watch_fd, grace_s, command = _parse(argv)
    supervisor = _Supervisor(grace_s)
    if not _set_subreaper():
        print("otel-toolchain: no child subreaper on this platform: a process the agent detaches "
              "(setsid, double fork) may outlive the run", file=sys.stderr, flush=True)
    for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signo, supervisor.forward)
    try:
        # Keep the Popen referenced: its finaliser would reap the command (and lose its exit
        # code) before the wait below when the command is quick.
        supervisor.agent = subprocess.Popen(command)
        supervisor.agent_pid = supervisor.agent.pid
    except OSError as exc:
        print(f"otel-toolchain: cannot run {command[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    threading.Thread(target=supervisor.watch, args=(watch_fd,), daemon=True).start()
    code = supervisor.wait_for_agent()
    supervisor.end_everything(terminate=False)
    return _exit_code(code)


if __name__ == "__main__":
    _code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(_code)  # no interpreter teardown: the group is gone the moment the work is done
