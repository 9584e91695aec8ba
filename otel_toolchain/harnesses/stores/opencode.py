"""Reader of OpenCode's session store: the SQLite ``opencode.db`` (>= 1.2.0) and the older JSON tree.

A stored tool ``part`` is the very object ``opencode run --format json`` wraps in its ``tool_use``
line, so each part goes through :class:`~otel_toolchain.harnesses.streams.OpenCodeReader`'s own handler and
a call has the identity, failure (``status:"error"``, bash ``metadata.exit``, the ``invalid``
tool) and timing (``state.time``) the stream gives it. The store adds what the stream lacks:

- **Turn:** a ``user`` message starts one (not one that only asks for a compaction); the
  assistant messages after it (one per model step, ``parentID`` = that user message) belong to
  it. It is an error when an assistant message has an ``error``, or calls are left
  ``pending``/``running`` (the CLI died), which end as ``interrupted``.
- **Retries:** ``retry`` parts. **Model:** the assistant's ``modelID``. **Usage:** ``step-finish``.
- **Sessions:** each ``session`` row is a run, sub-agents (``parent_id`` set) included. The
  database is opened read-only (``mode=ro``), so a live ``-wal`` file is honoured. The
  ``account*`` tables hold tokens and are never read. Legacy ``storage/`` sessions whose id
  the database also has were migrated and are read once, from the database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from otel_toolchain._input.lines import BadLineError, decode_line, ms_ns
from otel_toolchain.harnesses._base import FIELD_ERRORS, opt_str
from otel_toolchain.harnesses.events import Event
from otel_toolchain.harnesses.streams.opencode import OpenCodeReader

__all__ = ["OpenCodeStoreReader", "Session", "db_sessions", "is_sqlite", "is_storage_root", "storage_sessions"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
Message = tuple[dict[str, Any], list[dict[str, Any]]]
"""A message's data and its parts, in order."""


class OpenCodeStoreReader(OpenCodeReader):
    """One stored OpenCode session's messages to neutral events; see the module docstring."""

    def __init__(self, session_id: str, *, strict: bool = False, source: str = "-") -> None:
        """The session's directory is not taken as the calls' cwd: the stream has none, and a
        call's identity must not depend on where it was read from."""
        super().__init__(strict=strict, source=source)
        self.session_id = session_id

    def close(self, now_ns: int) -> list[Event]:
        """End of the session: the open turn ends, as an error if a step failed or calls are open."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            time_ns = self._stream_ns if self._stream_ns is not None else now_ns
            self._end_turn(out, time_ns, self._last_line, is_error=self._had_error or bool(self._calls))
        return out

    def message(self, info: dict[str, Any], parts: list[dict[str, Any]], line_no: int) -> list[Event]:
        """The events of one message and its parts; ``line_no`` numbers the message in its session."""
        self._last_line = line_no
        out: list[Event] = []
        times = info.get("time")
        time_ns = (ms_ns(times.get("created")) if isinstance(times, dict) else None) or self._stream_ns or 0
        self._stream_ns = time_ns or self._stream_ns
        if info.get("role") == "user":
            if not any(part.get("type") == "compaction" for part in parts):
                if self._turn_open:
                    self._end_turn(out, time_ns, line_no, is_error=self._had_error or bool(self._calls))
                self._had_error, self._last_reason = False, None
                self._start_turn(out, time_ns, line_no)
            return out
        self.model = opt_str(info, "modelID") or self.model
        if info.get("error"):
            self._begin({}, line_no, time_ns, out)
            self._had_error = True
        for part in parts:
            self._part(part, line_no, time_ns, out)
        return out

    def _part(self, part: dict[str, Any], line_no: int, time_ns: int, out: list[Event]) -> None:
        kind = part.get("type")
        obj = {"part": part, "sessionID": self.session_id, "timestamp": time_ns // 1_000_000}
        try:
            if kind == "tool":
                self._on_tool_use(obj, line_no, time_ns, out)
            elif kind == "step-finish":
                self._on_step_finish(obj, line_no, time_ns, out)
            elif kind == "retry":
                attempt = part.get("attempt")
                error = part.get("error")
                reason = error.get("message") if isinstance(error, dict) else error
                self._retry(out, attempt if isinstance(attempt, int) else 1,
                            reason if isinstance(reason, str) else None, time_ns, line_no)
        except FIELD_ERRORS as exc:
            out.extend(self._bad(line_no, f"part {kind}: {exc}", json.dumps(part)[:200]))

    def read(self, messages: Iterable[Message]) -> Iterator[Event]:
        """Every event of a session's messages, then of its end."""
        for line_no, (info, parts) in enumerate(messages, 1):
            yield from self.message(info, parts, line_no)
        yield from self.close(self._stream_ns or 0)


class Session:
    """A stored session: its id, directory and messages (read only when iterated)."""

    def __init__(self, session_id: str, cwd: str | None, messages: Callable[[], Iterator[Message]],
                 source: str) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.messages = messages
        self.source = source

    def events(self, *, strict: bool = False) -> Iterator[Event]:
        """The session's neutral events, its messages read as they are needed."""
        reader = OpenCodeStoreReader(self.session_id, strict=strict, source=self.source)
        return reader.read(self.messages())


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite database file (a regular one: a FIFO would block the read)."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as stream:
            return stream.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def _loads(text: Any) -> dict[str, Any]:
    """A stored row's JSON as a dict; a row that is not one (or breaks the limits of ``decode_line``) is empty."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        value = decode_line(text) if isinstance(text, str) else None
    except BadLineError:
        value = None
    return value if isinstance(value, dict) else {}


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection: ``mode=ro`` on the live file, so its ``-wal`` is honoured and nothing is written."""
    return sqlite3.connect("file:" + quote(str(path.resolve())) + "?mode=ro", uri=True)


def db_sessions(path: Path) -> list[Session]:
    """The sessions of an ``opencode.db``, oldest first; each reads its messages when its events are read."""
    connection = _connect(path)
    try:
        rows = connection.execute("SELECT id, directory FROM session ORDER BY time_created, id").fetchall()
    finally:
        connection.close()
    return [Session(sid, directory, partial(_db_messages, path, sid), f"{path}#{sid}") for sid, directory in rows]


def _db_messages(path: Path, session_id: str) -> Iterator[Message]:
    connection = _connect(path)
    try:
        parts: dict[str, list[dict[str, Any]]] = {}
        for message_id, part_id, data in connection.execute(
                "SELECT message_id, id, data FROM part WHERE session_id = ? ORDER BY id", (session_id,)):
            parts.setdefault(message_id, []).append({"id": part_id, **_loads(data)})
        for message_id, data in connection.execute(
                "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)):
            yield _loads(data), parts.pop(message_id, [])
    finally:
        connection.close()


def is_storage_root(path: Path) -> bool:
    """Whether ``path`` is a pre-1.2 ``storage/`` tree (``session/``, ``message/`` and ``part/`` in it)."""
    return all((path / name).is_dir() for name in ("session", "message", "part"))


def storage_sessions(root: Path, *, skip: Iterable[str] = ()) -> list[Session]:
    """The sessions of a legacy JSON tree, oldest first, less those whose id is in ``skip``."""
    known = set(skip)
    infos = [_read_json(path) for path in sorted((root / "session").glob("*/*.json"))]
    infos = [info for info in infos if isinstance(info.get("id"), str) and info["id"] not in known]
    infos.sort(key=lambda info: (_created(info), info["id"]))
    return [Session(info["id"], opt_str(info, "directory"), partial(_tree_messages, root, info["id"]),
                    f"{root}#{info['id']}") for info in infos]


def _tree_messages(root: Path, session_id: str) -> Iterator[Message]:
    infos = [_read_json(path) for path in sorted((root / "message" / session_id).glob("*.json"))]
    infos.sort(key=lambda info: (_created(info), str(info.get("id"))))
    for info in infos:
        parts = [_read_json(path) for path in sorted((root / "part" / str(info.get("id"))).glob("*.json"))]
        yield info, parts


def _created(info: dict[str, Any]) -> int:
    times = info.get("time")
    created = times.get("created") if isinstance(times, dict) else None
    return created if isinstance(created, int) else 0


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return _loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
