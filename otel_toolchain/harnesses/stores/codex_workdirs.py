"""Where each command of a Codex ``exec --json`` stream ran, read from the rollout Codex writes beside it.

The stream names no working directory: a ``command_execution`` item holds the command, never the
``workdir`` argument the model gave it, so ``make check`` run in six package folders reads as one
call repeated six times. Codex records the same thread in its rollout,
``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``, and writes each call there
(its ``function_call`` item, with ``workdir``) before the command starts: with Codex 0.171 the
call was in the rollout by the time its ``item.started`` line reached the stream (measured on the
six calls of the ``cd_dirs`` scenario under the fake model; a bounded wait covers the rest).
:class:`RolloutWorkdirs` follows that file and answers, for each command the stream starts, the
folder it runs in: the call's
``workdir`` as the model gave it (relative folders stay relative, as the rollout reader keeps
them), else the session's cwd. So a stream read with its rollout has the same call identities as
the rollout read alone.

Matching is by order and command text: the n-th command the stream starts is the first rollout
call not yet matched whose command (the ``bash -lc`` wrapper dropped, as both readers do) is the
same, among the calls of the rollout's latest turn (a ``codex exec resume`` appends a turn to the
thread's rollout; one exec stream is that one turn). Calls Codex never ran (refused) are in the
rollout only and are passed over. Where the
rollout is missing (``--ephemeral``, another machine, an id that is no Codex thread id), the
answer is None and the call reads as before: cwd unknown.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from otel_toolchain._input.lines import MAX_LINE_BYTES, BadLineError, decode_line, open_binary
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses._base import opt_str
from otel_toolchain.harnesses.stores.codex import describe
from otel_toolchain.harnesses.stores.discover import codex_folders

__all__ = ["CodexHome", "RolloutWorkdirs"]

_log = logging.getLogger("otel_toolchain")
_THREAD_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
_WANTED = ('"function_call"', '"local_shell_call"', '"custom_tool_call"', '"session_meta"', '"turn_context"',
           '"task_started"', '"turn_started"')
"""What the lines this follower reads hold near their start (the others are not parsed)."""
_CHUNK = 1 << 20
_MAX_PENDING = 1024
"""Rollout calls kept unmatched at most (the oldest go first): calls the stream never shows."""
_POLL_S = 0.005


@dataclass(frozen=True)
class CodexHome:
    """Codex's rollout folders, and how long a live reader may wait for a call to be written there.

    ``wait_s`` is 0 for files read after the fact (the rollout is complete) and small under ``run``,
    where a stream line may in principle arrive before Codex has flushed the call it shows.
    """

    folders: tuple[Path, ...]
    wait_s: float = 0.0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], home: Path | None = None, *, wait_s: float = 0.0) -> CodexHome:
        """``$CODEX_HOME`` (or ``~/.codex``): its ``sessions`` and ``archived_sessions`` folders, there yet or
        not (a first ``codex`` run under ``run`` creates them). ``home``: the user's folder, by default
        ``environ``'s ``HOME``, else the process's."""
        if home is None:
            home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
        return cls(tuple(codex_folders(environ, home, existing=False)), wait_s)

    def workdirs(self) -> RolloutWorkdirs:
        """A fresh follower, for one stream."""
        return RolloutWorkdirs(self)


@dataclass
class _Rollout:
    """One rollout being followed: the file, the bytes of a line not yet ended, what it said so far."""

    stream: IO[bytes]
    held: bytearray = field(default_factory=bytearray)
    skipping: bool = False
    cwd: str | None = None
    pending: deque[tuple[str, str | None]] = field(default_factory=lambda: deque(maxlen=_MAX_PENDING))


class RolloutWorkdirs:
    """Answers where a stream's commands ran, from the thread's rollout; see the module docstring.

    Called on the stream reader's thread; may block up to ``wait_s``, and only until one command is
    not found in time; never raises (a rollout that cannot be read is logged once and the answers
    are None from then on).
    """

    def __init__(self, home: CodexHome, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._home = home
        self._clock = clock
        self._sleep = sleep
        self._thread: str | None = None
        self._rollout: _Rollout | None = None
        self._searched = False
        self._patient = home.wait_s > 0
        """Whether to wait for a call not in the rollout yet: until the first that never comes."""

    def __call__(self, thread_id: str, command: str) -> str | None:
        """The folder the next stream command ``command`` of thread ``thread_id`` runs in, or None."""
        rollout = self._open(thread_id)
        if rollout is None:
            return None
        deadline = self._clock() + (self._home.wait_s if self._patient else 0.0)
        while True:
            try:
                self._catch_up(rollout)
            except (OSError, StreamError) as exc:
                _log.warning("otel_toolchain: Codex rollout of thread %s: cannot read: %s", thread_id, exc)
                self.close()  # _searched stays set: not looked for again in this thread
                return None
            found = _take(rollout.pending, command)
            if found is not None:
                return found[0]
            if self._clock() >= deadline:
                # A call the rollout never got (a version that writes it otherwise): waiting for the
                # next would only slow the stream down.
                self._patient = False
                return None
            self._sleep(_POLL_S)

    def close(self) -> None:
        if self._rollout is not None:
            self._rollout.stream.close()
            self._rollout = None

    def _open(self, thread_id: str) -> _Rollout | None:
        if thread_id != self._thread:  # a new thread (a retried attempt): look again
            self.close()
            self._thread, self._searched = thread_id, False
        if self._rollout is not None or self._searched:
            return self._rollout
        path = self._find(thread_id)
        if path is None and self._patient:  # live: Codex may not have created it yet
            self._sleep(self._home.wait_s)
            path = self._find(thread_id)
        self._searched = True
        if path is not None:
            try:
                self._rollout = _Rollout(open_binary(path))
            except (OSError, StreamError) as exc:
                _log.warning("otel_toolchain: Codex rollout %s: cannot read: %s", path, exc)
        return self._rollout

    def _find(self, thread_id: str) -> Path | None:
        if not _THREAD_ID.fullmatch(thread_id):
            return None  # no glob pattern or path out of a stream's text
        for folder in self._home.folders:
            found = sorted(folder.glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
            if found:
                return found[-1]
        return None

    def _catch_up(self, rollout: _Rollout) -> None:
        """Read what Codex has appended; only lines that end in ``\\n`` are taken (the last may be half-written)."""
        while chunk := rollout.stream.read(_CHUNK):
            if rollout.skipping:  # inside a line too long to keep: drop it up to its end
                cut = chunk.find(b"\n")
                if cut < 0:
                    continue
                rollout.skipping, chunk = False, chunk[cut + 1:]
            rollout.held.extend(chunk)
            cut = rollout.held.rfind(b"\n")
            if cut < 0:
                if len(rollout.held) > MAX_LINE_BYTES:
                    rollout.held.clear()
                    rollout.skipping = True
                continue
            for raw in bytes(rollout.held[:cut]).split(b"\n"):
                _read_line(rollout, raw.decode("utf-8", "replace"))
            del rollout.held[:cut + 1]


def _read_line(rollout: _Rollout, line: str) -> None:
    head = line[:200]
    if not any(kind in head for kind in _WANTED):
        return  # most of a rollout: messages, reasoning, token counts, outputs
    try:
        obj = decode_line(line)
    except BadLineError:
        return
    payload = obj.get("payload") if isinstance(obj, dict) else None
    if isinstance(payload, dict):
        _take_line(rollout, obj.get("type"), payload)


def _take_line(rollout: _Rollout, kind: object, payload: dict[str, Any]) -> None:
    if kind in ("session_meta", "turn_context"):
        rollout.cwd = opt_str(payload, "cwd") or rollout.cwd
    elif kind == "event_msg" and payload.get("type") in ("task_started", "turn_started"):
        rollout.pending.clear()  # one exec is one turn: the calls of the turns before it are no candidates
    elif kind == "response_item":
        try:
            tool, arguments, workdir = describe(payload)
        except (KeyError, TypeError, ValueError, AttributeError):
            return
        if tool == "command_execution" and isinstance(arguments, dict):
            rollout.pending.append((str(arguments["command"]), workdir or rollout.cwd))


def _take(pending: deque[tuple[str, str | None]], command: str) -> tuple[str | None] | None:
    """The folder of the first pending call running ``command`` (dropping the unmatched calls before it)."""
    for index, (text, folder) in enumerate(pending):
        if text == command:
            for _ in range(index + 1):
                pending.popleft()
            return (folder,)
    return None
