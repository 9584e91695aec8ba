"""Per-session hook state between invocations: a small JSON file per session, under a lock.

Each hook invocation is a new process, so the turn's calls so far live in
``<state dir>/<session>.json`` (the folder is created 0700, files 0600). :func:`locked_session`
holds an exclusive ``flock`` on the session's lock file for the whole read-modify-write, so
parallel calls of one session run one after the other and sessions never wait for each other.
Bounded: a session keeps its last :data:`MAX_CALLS` calls (enough for repeat_guard's longest cycle
at its highest sensible limit), and state files untouched for :data:`STALE_S` are removed when a
session ends. May block (on the lock); raises OSError when the folder cannot be used.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from otel_toolchain._input.lines import decode_line

__all__ = ["MAX_CALLS", "SessionState", "locked_session", "remove_session", "remove_stale"]

MAX_CALLS: Final = 512
STALE_S: Final = 7 * 24 * 3600.0
_SAFE: Final = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


@dataclass
class SessionState:
    """What one session's hook remembers: the open turn's calls (as JSON-ready rows) and its stop."""

    calls: list[list[Any]] = field(default_factory=list)
    stopped: dict[str, Any] | None = None
    turns: int = 0
    span_id: int = 0
    """The open turn's span id (random, drawn at its first call: a resumed session's turns never share one)."""
    ended: bool = False
    """Set when the session ended, or when there is nothing worth keeping: its files are removed instead of
    written back."""

    def to_json(self) -> str:
        return json.dumps({"calls": self.calls[-MAX_CALLS:], "stopped": self.stopped, "turns": self.turns,
                           "span_id": self.span_id})

    @classmethod
    def from_json(cls, text: str) -> SessionState:
        """The state in ``text``; an empty or unreadable file is a fresh state (never an error)."""
        try:
            data = decode_line(text) if text.strip() else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        calls = data.get("calls")
        stopped = data.get("stopped")
        turns = data.get("turns")
        span_id = data.get("span_id")
        return cls([c for c in calls if isinstance(c, list)] if isinstance(calls, list) else [],
                   stopped if isinstance(stopped, dict) else None, turns if isinstance(turns, int) else 0,
                   span_id if isinstance(span_id, int) and 0 < span_id < 1 << 64 else 0)


def _name(session_id: str) -> str:
    return session_id if _SAFE.match(session_id) else hashlib.sha256(session_id.encode()).hexdigest()[:40]


def _folder(root: Path) -> Path:
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)  # mkdir's mode is masked by the umask, and the folder may predate us
    return root


@contextlib.contextmanager
def locked_session(root: Path, session_id: str) -> Iterator[tuple[SessionState, Path]]:
    """The session's state, locked; written back when the block ends without an exception."""
    folder = _folder(root)
    name = _name(session_id)
    path = folder / f"{name}.json"
    lock_fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        os.utime(lock_fd)  # a live session's lock is never stale, however old the session
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        state = SessionState.from_json(text)
        yield state, path
        if state.ended:
            remove_session(folder, session_id)
        else:
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(state.to_json())
            os.replace(tmp, path)
    finally:
        os.close(lock_fd)


def remove_session(root: Path, session_id: str) -> None:
    """Forget a session (its state and lock files); missing files are fine."""
    name = _name(session_id)
    for suffix in (".json", ".lock", ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            (root / f"{name}{suffix}").unlink()


def remove_stale(root: Path, now: float | None = None) -> int:
    """Remove state of sessions untouched for :data:`STALE_S` (sessions killed before their end), and
    the lock and log files of warm hook servers (in ``warm/``) that are gone and were last started as long ago.

    Regular files only: a folder, link or socket in the state folder is left as it is.
    """
    now = time.time() if now is None else now
    removed = 0
    for folder in (root, root / "warm"):
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for path in folder.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    info = path.lstat()
                    live_server = folder != root and path.with_suffix(".sock").exists()
                    if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_S and not live_server:
                        path.unlink()
                        removed += 1
    return removed
