"""OpenCode's store: a database built here from the schema (1.x tables), the older JSON tree, and both."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.events import Event, Retry, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.harnesses.opener import read_stream
from otel_toolchain.harnesses.runs import runs_in

SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT, time_created INTEGER, time_updated INTEGER);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT, title TEXT,
    version TEXT, share_url TEXT, time_created INTEGER, time_updated INTEGER, time_compacting INTEGER,
    time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER,
    data TEXT);
CREATE TABLE session_message (id TEXT PRIMARY KEY, session_id TEXT, type TEXT, seq INTEGER, data TEXT);
CREATE TABLE account (id TEXT PRIMARY KEY, email TEXT, access_token TEXT);
"""
T0 = 1785420302660


def tool(call_id: str, name: str, arguments: dict[str, Any], status: str = "completed", output: str = "ok",
         start: int = 0, end: int = 0, **state: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"status": status, "input": arguments, **state}
    if status == "completed":
        body.update(output=output, title="", metadata=state.pop("metadata", {}))
    if status in ("completed", "error"):
        body["time"] = {"start": T0 + start, "end": T0 + end}
    return {"type": "tool", "tool": name, "callID": call_id, "state": body}


class Database:
    def __init__(self, path: Path, *, wal: bool = False) -> None:
        self.connection = sqlite3.connect(path)
        if wal:
            self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.executescript(SCHEMA)
        self.connection.execute("INSERT INTO account VALUES ('a', 'me@example.com', 'secret-token')")
        self.n = 0

    def session(self, sid: str, parent: str | None = None) -> None:
        self.connection.execute("INSERT INTO session (id, parent_id, directory, version, time_created) "
                                "VALUES (?, ?, '/workspace', '1.16.0', ?)", (sid, parent, T0 + self.n))
        self.n += 1

    def message(self, sid: str, role: str, parts: list[dict[str, Any]], **data: Any) -> None:
        self.n += 1
        mid = f"msg_{self.n:04d}"
        body = {"role": role, "time": {"created": T0 + self.n * 100}, **data}
        self.connection.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                                (mid, sid, T0 + self.n * 100, T0 + self.n * 100, json.dumps(body)))
        for index, part in enumerate(parts):
            self.connection.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                                    (f"prt_{self.n:04d}_{index}", mid, sid, T0, T0, json.dumps(part)))

    def commit(self) -> None:
        self.connection.commit()


def sample(db: Database) -> None:
    db.session("ses_a")
    db.message("ses_a", "user", [{"type": "text", "text": "find the spec"}])
    db.message("ses_a", "assistant", [{"type": "step-start"}, tool("c1", "glob", {"pattern": "**/SPEC.md"}, end=198),
                                      {"type": "step-finish", "reason": "tool-calls", "cost": 0.01,
                                       "tokens": {"input": 27, "output": 70, "reasoning": 0,
                                                  "cache": {"write": 0, "read": 20480}}}], modelID="deepseek-v4")
    db.message("ses_a", "assistant", [tool("c2", "bash", {"command": "make"}, output="err", metadata={"exit": 2}),
                                      {"type": "retry", "attempt": 1, "error": {"message": "overloaded"}},
                                      tool("c3", "read", {"filePath": "/x"}, status="error", error="no such file")])
    db.message("ses_a", "user", [{"type": "compaction", "auto": True}])
    db.message("ses_a", "assistant", [], summary=True)
    db.message("ses_a", "user", [{"type": "text", "text": "and run it"}])
    db.message("ses_a", "assistant", [tool("c4", "bash", {"command": "./run"}, status="running")])
    db.session("ses_b", parent="ses_a")
    db.message("ses_b", "user", [{"type": "text", "text": "sub-task"}])
    db.message("ses_b", "assistant", [tool("c5", "invalid", {"tool": "nope"}, output="bad tool")],
               error={"name": "APIError"})
    db.commit()


def read(paths: list[Path]) -> dict[str, list[Event]]:
    found = {}
    for run in runs_in(paths):
        opened = run.open()
        assert (opened.harness, opened.kind) == ("opencode", "store")
        found[run.source.rsplit("#", 1)[1]] = list(opened.events)
    return found


def test_sessions_turns_calls_and_failures(tmp_path: Path) -> None:
    db = Database(tmp_path / "opencode.db")
    sample(db)
    sessions = read([tmp_path])
    assert list(sessions) == ["ses_a", "ses_b"]
    events = sessions["ses_a"]
    assert sum(isinstance(e, TurnStarted) for e in events) == 2  # the compaction request opens no turn
    calls = [(e.call_id, e.tool, e.failed, e.error_type, e.end_ns - e.start_ns)
             for e in events if isinstance(e, ToolFinished)]
    assert calls == [("c1", "glob", False, None, 198_000_000), ("c2", "bash", True, "exit_code_2", 0),
                     ("c3", "read", True, "tool_error", 0), ("c4", "bash", True, "interrupted", 0)]
    assert [(e.attempt, e.reason) for e in events if isinstance(e, Retry)] == [(1, "overloaded")]
    ended = [e for e in events if isinstance(e, TurnEnded)]
    assert [e.is_error for e in ended] == [False, True]
    assert ended[0].usage is not None and ended[0].usage.input_tokens == 20507
    assert ended[0].model == "deepseek-v4"
    sub = sessions["ses_b"]
    assert [(e.tool, e.error_type) for e in sub if isinstance(e, ToolFinished)] == [("invalid", "invalid_tool")]
    assert [e.is_error for e in sub if isinstance(e, TurnEnded)] == [True]


def test_the_database_is_only_read_and_its_wal_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    db = Database(path, wal=True)
    sample(db)  # committed into opencode.db-wal; the writer stays open, so nothing is checkpointed
    assert (tmp_path / "opencode.db-wal").stat().st_size > 0
    before = path.read_bytes()
    assert sum(isinstance(e, ToolFinished) for e in read([path])["ses_a"]) == 4
    assert path.read_bytes() == before
    db.connection.close()


def write_tree(root: Path, sid: str, call_id: str) -> None:
    user, assistant = f"msg_{sid}_1", f"msg_{sid}_2"
    for folder, name, body in (
            ("session/global", sid, {"id": sid, "directory": "/w", "time": {"created": T0}}),
            (f"message/{sid}", user, {"id": user, "sessionID": sid, "role": "user", "time": {"created": T0}}),
            (f"message/{sid}", assistant, {"id": assistant, "sessionID": sid, "role": "assistant",
                                           "time": {"created": T0 + 5}}),
            (f"part/{assistant}", "prt_1", {"id": "prt_1", "messageID": assistant, "sessionID": sid,
                                            **tool(call_id, "bash", {"command": "ls"}, end=4)})):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / f"{name}.json").write_text(json.dumps(body))


def test_the_older_json_tree_and_sessions_migrated_from_it(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    write_tree(storage, "ses_old", "k1")
    write_tree(storage, "ses_a", "k2")  # migrated: the database has it too, and wins
    Database(tmp_path / "opencode.db").commit()
    db = Database(tmp_path / "opencode-beta.db")
    sample(db)
    sessions = read([tmp_path])
    assert list(sessions) == ["ses_a", "ses_b", "ses_old"]
    assert [e.call_id for e in sessions["ses_old"] if isinstance(e, ToolFinished)] == ["k1"]
    assert [e.call_id for e in sessions["ses_a"] if isinstance(e, ToolFinished)] == ["c1", "c2", "c3", "c4"]


def test_a_stored_part_has_the_identity_the_stream_reader_gives_it(tmp_path: Path) -> None:
    db = Database(tmp_path / "opencode.db")
    part = tool("c2", "bash", {"command": "make", "description": "build"}, output="err", metadata={"exit": 2},
                start=10, end=30)
    db.session("ses_a")
    db.message("ses_a", "user", [{"type": "text", "text": "go"}])
    db.message("ses_a", "assistant", [part])
    db.commit()
    stored = [e for e in read([tmp_path])["ses_a"] if isinstance(e, (ToolStarted, ToolFinished))]
    line = json.dumps({"type": "tool_use", "timestamp": T0 + 30, "sessionID": "ses_a", "part": part})
    streamed = [e for e in read_stream([line], "opencode") if isinstance(e, (ToolStarted, ToolFinished))]
    assert [replace(e, line_no=0) for e in stored] == [replace(e, line_no=0) for e in streamed]


@pytest.mark.parametrize("bad", [b"", b"SQLite format 3\x00 but truncated"])
def test_a_broken_database_is_an_error_not_a_crash(tmp_path: Path, bad: bytes) -> None:
    (tmp_path / "opencode.db").write_bytes(bad)
    if not bad:
        assert list(runs_in([tmp_path])) == []  # not SQLite at all: not a store
        return
    (run,) = list(runs_in([tmp_path]))
    with pytest.raises(StreamError, match="not an OpenCode database"):
        run.open()
