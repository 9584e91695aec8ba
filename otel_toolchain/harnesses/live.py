"""``otel-toolchain run``: wrap a live harness, stream its output through the chain, stop it when it wedges.

The harness runs in a process group of its own. Its standard output passes through unchanged
(byte for byte, line by line, so a pipeline after ``run`` still works) and is teed to ``--log``;
each line is read into events and spans as it arrives. When a plugin stops the turn, the whole
group gets SIGTERM, then SIGKILL after ``grace`` seconds; ``run`` prints one line on standard
error naming the plugin, the reason and the cycle, and exits 75 (EX_TEMPFAIL: a stopped turn is
a retryable failure). SIGINT and SIGTERM sent to ``run`` are forwarded to the group, with the
same escalation; the turn is closed and exported either way. No process of the group is left.

The harness runs under :mod:`~otel_toolchain.harnesses.supervisor` (a small process that is the
group's leader and, on Linux, its child subreaper): if ``run`` itself is killed, even by SIGKILL,
the supervisor ends every process of the harness; a process the harness detached (``setsid``, a
double fork) is ended too, at a stop and at exit. A line is held up to ``MAX_LINE_BYTES`` (read
1 MiB at a time): a longer one is passed through and logged whole but recorded as one bad line, so output
without newlines costs bounded memory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Final

from opentelemetry.trace import Link, SpanContext, TraceFlags

from otel_toolchain._input.lines import MAX_LINE_BYTES, split_lines
from otel_toolchain.errors import CannotRun, StreamError
from otel_toolchain.harnesses import supervisor
from otel_toolchain.harnesses._base import StreamReader
from otel_toolchain.harnesses.detect import DETECT_LINES, detect_harness
from otel_toolchain.harnesses.opener import reader_of
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.harnesses.writer import SpanWriter, TurnOutcome
from otel_toolchain.outcome import stop_line
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.signals import StopSignal

__all__ = ["EXIT_STOPPED", "MAX_LINE_BYTES", "ProcessGroup", "RunResult", "run_harness"]

EXIT_STOPPED: Final = 75
"""The longest line recorded (as the hardened line decoder's); a longer one is passed through and
counted as a bad line."""


@dataclass
class RunResult:
    """How a wrapped run ended, over all its attempts."""

    exit_code: int
    outcomes: list[TurnOutcome] = field(default_factory=list)
    stops: list[StopSignal] = field(default_factory=list)
    stop_latencies_s: list[float] = field(default_factory=list)
    """From the arrival of the line that completed a cycle to the process group being gone."""


class ProcessGroup:
    """The harness's process group: signalled as a whole, escalated to SIGKILL after a grace period."""

    def __init__(self, process: subprocess.Popen[bytes], grace_s: float) -> None:
        self.process = process
        self.pgid = process.pid  # start_new_session made the child its group's leader
        self.grace_s = grace_s
        self._timer: threading.Timer | None = None

    def alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member we may not signal still exists
            return True
        return True

    def send(self, signo: int) -> None:
        if signo == signal.SIGKILL:  # the supervisor dies with the group: end what left it first
            for pid, pgid in supervisor.descendants(self.process.pid):
                if pgid != self.pgid:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
        try:
            os.killpg(self.pgid, signo)
        except ProcessLookupError:
            return
        if self._timer is None and signo != signal.SIGKILL:
            self._timer = threading.Timer(self.grace_s, self.send, (signal.SIGKILL,))
            self._timer.daemon = True
            self._timer.start()

    def reap(self) -> int:
        """Wait for the harness, then make sure nothing of its group is left; its exit code."""
        code = self.process.wait()
        deadline = time.monotonic() + self.grace_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.alive():
            self.send(signal.SIGKILL)
            while self.alive():
                time.sleep(0.01)
        if self._timer is not None:
            self._timer.cancel()
        return code if code >= 0 else 128 - code


def _wait_gone(group: ProcessGroup, line_time: float, latencies: list[float]) -> None:
    while group.alive():
        time.sleep(0.001)
    latencies.append(time.monotonic() - line_time)


class _Attempt:
    """One run of the command: its lines, its reader and its spans."""

    def __init__(self, command: Sequence[str], recorder: AgentRecorder, *, harness: str, strict: bool,
                 log: IO[bytes] | None, out: IO[bytes] | None, grace_s: float, links: list[Link],
                 max_line_bytes: int = MAX_LINE_BYTES, number: int = 1,
                 codex_home: CodexHome | None = None) -> None:
        self.command = command
        self.codex_home = codex_home
        self.recorder = recorder
        self.harness = harness
        self.strict = strict
        self.log = log
        self.out = out
        self.grace_s = grace_s
        self.links = links
        self.max_line_bytes = max_line_bytes
        self.number = number
        self.stop: StopSignal | None = None
        self.latencies: list[float] = []
        self._line_time = 0.0
        self._watchers: list[threading.Thread] = []
        self._reader: StreamReader | None = None
        self._writer: SpanWriter | None = None
        self._eof = threading.Event()
        self._group: ProcessGroup | None = None

    def run(self, group_holder: list[ProcessGroup]) -> tuple[int, list[TurnOutcome]]:
        """Run the command to its end; whatever happens here, the group is ended and the turn closed."""
        _check_runnable(self.command[0])
        # The supervisor watches the read end; this process holds the only write end, so the
        # pipe reads end-of-file exactly when this process is gone, however it went.
        watch_read, watch_write = os.pipe()
        try:
            process = subprocess.Popen(
                supervisor.command_line(self.command, watch_fd=watch_read, grace_s=self.grace_s),
                stdout=subprocess.PIPE, start_new_session=True, pass_fds=(watch_read,))
        except OSError as exc:
            os.close(watch_write)
            raise CannotRun(f"cannot run {self.command[0]!r}: {exc.strerror or exc}") from exc
        finally:
            os.close(watch_read)
        try:
            return self._watch(process, group_holder)
        finally:
            os.close(watch_write)

    def _watch(self, process: subprocess.Popen[bytes],
               group_holder: list[ProcessGroup]) -> tuple[int, list[TurnOutcome]]:
        group = self._group = ProcessGroup(process, self.grace_s)
        group_holder[:] = [group]
        assert process.stdout is not None
        threading.Thread(target=self._end_stragglers, args=(group,), daemon=True).start()
        try:
            self._read(process.stdout, group)
        except BaseException:
            group.send(signal.SIGTERM)  # we can no longer watch it: end it rather than leave it running
            raise
        finally:
            self._eof.set()
            process.stdout.close()
            code = group.reap()
            for watcher in self._watchers:
                watcher.join()
            outcomes = self._finish()
        return code, outcomes

    def _read(self, stdout: IO[bytes], group: ProcessGroup) -> None:
        head: list[str] = []
        # split_lines bounds memory (a line past max_line_bytes is skipped, not held); the bytes are
        # passed through as they arrive, whole, whatever the lines
        for line_no, text in enumerate(split_lines(_Tee(stdout, self), self.max_line_bytes), 1):
            if self._reader is None:
                head.append(text)
                self._reader, self._writer = self._start_reading(head, group)
                for number, earlier in enumerate(head if self._reader else [], line_no - len(head) + 1):
                    self._feed(earlier, number)
                continue
            self._feed(text, line_no)

    def _arrived(self, chunk: bytes) -> None:
        self._line_time = time.monotonic()
        self._pass_through(chunk)

    def _end_stragglers(self, group: ProcessGroup) -> None:
        """Once the harness has exited, end what it left in its group holding standard output open."""
        group.process.wait()
        if not self._eof.wait(self.grace_s):
            group.send(signal.SIGKILL)

    def _finish(self) -> list[TurnOutcome]:
        if self._reader is None or self._writer is None:
            return []
        for event in self._reader.close(time.time_ns()):
            self._writer.handle(event)
        return self._writer.close()

    def _pass_through(self, raw: bytes) -> None:
        # A consumer that went away (``run … | head``) would have sent the harness SIGPIPE: end it the
        # same way, recording what it still prints. A full disk must not end the watch: stop writing
        # there, say so once, and keep recording.
        if self.out is not None:
            try:
                self.out.write(raw)
                self.out.flush()
            except BrokenPipeError:
                self.out = None
                if self._group is not None:
                    self._group.send(signal.SIGTERM)
            except OSError as exc:
                self.out = None
                print(f"otel-toolchain: standard output failed ({exc}); still watching", file=sys.stderr)
        if self.log is not None:
            try:
                self.log.write(raw)
                self.log.flush()
            except OSError as exc:
                self.log = None
                print(f"otel-toolchain: cannot write the log ({exc.strerror or exc}); still watching",
                      file=sys.stderr)

    def _start_reading(self, head: list[str], group: ProcessGroup) -> tuple[StreamReader | None, SpanWriter | None]:
        # The same detection window as a replay of the --log, so both reach the same verdict.
        found = detect_harness(head)
        if self.harness == "none" or (self.harness == "auto" and found is None and len(head) < DETECT_LINES):
            return None, None
        if self.harness != "auto" and found is not None and found != self.harness:
            # A wrong --harness would read nothing and leave the turn unguarded: auto-detection takes over.
            print(f"otel-toolchain: warning: --harness {self.harness}, but the output is a {found} stream: "
                  f"reading it as {found}", file=sys.stderr)
            self.harness = "auto"
        try:
            harness, _kind, reader = reader_of(head, self.harness, self.strict, source=" ".join(self.command[:1]),
                                               codex_home=self.codex_home)
        except StreamError:
            print("otel-toolchain: the output is not a stream of a known harness; passing it through "
                  "without spans (name one with --harness)", file=sys.stderr)
            self.harness = "none"
            return None, None

        def on_stop(stop: StopSignal, outcome: TurnOutcome) -> None:
            self.stop = stop
            group.send(signal.SIGTERM)
            watcher = threading.Thread(target=_wait_gone, args=(group, self._line_time, self.latencies), daemon=True)
            watcher.start()
            self._watchers.append(watcher)

        writer = SpanWriter(self.recorder, source=" ".join(self.command), harness=harness, on_stop=on_stop,
                            links=self.links, attempt=self.number)
        return reader, writer

    def _feed(self, text: str, line_no: int) -> None:
        if self.stop is not None or self._reader is None or self._writer is None:
            return  # the turn is over: what a dying harness still prints is passed through, not recorded
        for event in self._reader.feed(text, line_no, time.time_ns()):
            self._writer.handle(event)


class _Tee:
    """The harness's standard output as split_lines reads it: what has arrived, passed through on the way."""

    def __init__(self, stdout: IO[bytes], attempt: _Attempt) -> None:
        self._read = getattr(stdout, "read1", stdout.read)  # read1: what is there, without waiting for more
        self._attempt = attempt

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self._read(size)
        if chunk:
            self._attempt._arrived(chunk)
        return chunk


def run_harness(
    command: Sequence[str],
    recorder: AgentRecorder,
    *,
    harness: str = "auto",
    retries: int = 0,
    log_path: Path | None = None,
    grace_s: float = 3.0,
    strict: bool = False,
    out: IO[bytes] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    codex_home: CodexHome | None = None,
) -> RunResult:
    """Run ``command`` until it ends or a plugin stops it; rerun a stopped one up to ``retries`` times.

    ``codex_home``: where a Codex command's rollout is followed, to learn where its commands run
    (give it a ``wait_s``: the stream line may come first; see
    :mod:`~otel_toolchain.harnesses.stores.codex_workdirs`).

    Raises:
        CannotRun: the command could not be started (a log that cannot be opened is only reported).
        ValueError: ``retries`` or ``grace_s`` is negative, or ``max_line_bytes`` below 1.

    Must be called from the main thread (it installs SIGINT and SIGTERM handlers for the run and
    restores the previous ones). Blocks until every attempt has ended.
    """
    if retries < 0 or grace_s < 0 or max_line_bytes < 1:
        raise ValueError("retries and grace_s must not be negative, max_line_bytes must be positive")
    out = out if out is not None else sys.stdout.buffer
    result = RunResult(exit_code=0)
    group_holder: list[ProcessGroup] = []
    interrupted: list[int] = []

    def forward(signo: int, frame: FrameType | None) -> None:
        interrupted.append(signo)
        if group_holder:
            group_holder[0].send(signo)

    try:
        log = _open_private(log_path) if log_path is not None else None
    except OSError as exc:  # the log is a copy: losing it must not leave the run unguarded or unstarted
        print(f"otel-toolchain: warning: cannot open the log {str(log_path)!r}: {exc.strerror or exc}; running "
              "without it", file=sys.stderr, flush=True)
        log = None
    previous = {signo: signal.signal(signo, forward) for signo in (signal.SIGINT, signal.SIGTERM)}
    links: list[Link] = []
    try:
        for number in range(1, retries + 2):
            attempt = _Attempt(command, recorder, harness=harness, strict=strict, log=log, out=out,
                               grace_s=grace_s, links=links, max_line_bytes=max_line_bytes, number=number,
                               codex_home=codex_home)
            code, outcomes = attempt.run(group_holder)
            result.outcomes.extend(outcomes)
            result.stop_latencies_s.extend(attempt.latencies)
            if attempt.stop is None or interrupted:
                result.exit_code = code if attempt.stop is None else EXIT_STOPPED
                if attempt.stop is not None:
                    result.stops.append(attempt.stop)
                break
            result.stops.append(attempt.stop)
            result.exit_code = EXIT_STOPPED
            print(stop_line(attempt.stop, attempt=(number, retries + 1)), file=sys.stderr, flush=True)
            links = [Link(SpanContext(attempt.stop.trace_id, attempt.stop.span_id, is_remote=False,
                                      trace_flags=TraceFlags(TraceFlags.SAMPLED)))]
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
        if log is not None:
            with contextlib.suppress(OSError):  # already reported when a write failed
                log.close()
    return result


def _open_private(path: Path) -> IO[bytes]:
    """Open the log for appending; a new one is created 0600 (it holds full tool arguments and results)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")


def _check_runnable(program: str) -> None:
    """Raise CannotRun, as starting it would, when ``program`` cannot be executed (the supervisor runs it)."""
    if shutil.which(program) is not None:
        return
    exists = os.path.exists(program) if os.sep in program else False
    reason = "Permission denied" if exists else "No such file or directory"
    raise CannotRun(f"cannot run {program!r}: {reason}")
