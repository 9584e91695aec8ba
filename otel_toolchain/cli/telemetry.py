"""``otel-toolchain run --telemetry -- CMD …``: guard one agent run through the agent's own OTLP export.

A receiver (see :mod:`otel_toolchain.cli.serve`) listens on a free loopback port for the run; the
child's export is pointed at it (:mod:`otel_toolchain.receiver.launch`). The child keeps the
terminal: its standard streams are ours, it runs in a process group of its own which is made the
terminal's foreground group (so an interactive TUI reads keys and gets Ctrl-C itself). A stop ends
the whole group as stream mode does (SIGTERM, SIGKILL after ``--grace``; nothing of it is left) and
the exit code is 75; otherwise it is the child's own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

from otel_toolchain.cli import commands
from otel_toolchain.cli.serve import start_guard
from otel_toolchain.errors import CannotRun
from otel_toolchain.harnesses.live import EXIT_STOPPED, ProcessGroup
from otel_toolchain.manifest import Manifest
from otel_toolchain.receiver.launch import child_argv, child_env
from otel_toolchain.signals import StopSignal

__all__ = ["run_with_telemetry"]


def _terminal() -> int | None:
    """Our controlling terminal's descriptor when we are its foreground group, else None."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
    return None


def _hand_terminal(fd: int | None, pgid: int) -> None:
    if fd is None:
        return
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background tcsetpgrp would stop us
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgid)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def run_with_telemetry(command: Sequence[str], manifest: Manifest, *, grace_s: float = 3.0) -> int:
    """Run ``command`` guarded through its OTLP export; returns the exit code (75 when stopped).

    Raises CannotRun when the command cannot be started. Must run on the main thread (it installs
    SIGINT/SIGTERM handlers for the run and restores them). Blocks until the group is gone.
    """
    guard = start_guard(manifest, ("127.0.0.1", 0), None)
    endpoint = guard.http.endpoint
    stops: list[StopSignal] = []
    group_holder: list[ProcessGroup] = []

    def on_stop(stop: StopSignal) -> None:
        stops.append(stop)
        if group_holder:
            group_holder[0].send(signal.SIGTERM)

    guard.receiver.chain.on_stop(on_stop)
    terminal = _terminal()
    try:
        try:
            process = subprocess.Popen(child_argv(command, endpoint), env=child_env(command, endpoint, os.environ),
                                       process_group=0)
        except OSError as exc:
            raise CannotRun(f"cannot run {command[0]!r}: {exc.strerror or exc}") from exc
        group = ProcessGroup(process, grace_s)
        group_holder.append(group)
        _hand_terminal(terminal, group.pgid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group.pgid, signal.SIGCONT)  # had it read the terminal before it was its own, it stopped
        if stops:  # a stop before the group existed (not possible today, but never lose one)
            group.send(signal.SIGTERM)
        code = _wait(group)
    finally:
        _hand_terminal(terminal, os.getpgrp())
        guard.close()
        commands.finish_telemetry(guard.pipeline)
    if stops:
        return EXIT_STOPPED
    return code


def _wait(group: ProcessGroup) -> int:
    def forward(signo: int, frame: FrameType | None) -> None:
        group.send(signo)

    previous: dict[int, Any] = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return group.reap()
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
        sys.stderr.flush()
