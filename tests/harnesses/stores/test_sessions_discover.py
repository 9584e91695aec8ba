"""Finding the stores: default places, the variables and settings that move them, and Claude's retention."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from otel_toolchain.harnesses.stores import discover
from otel_toolchain.harnesses.stores.discover import claude_retention_note

DAY = 86_400


def touch(path: Path, text: str = "{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def database(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(path).execute("CREATE TABLE session (id TEXT)").connection.close()
    return path


def test_default_places_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home / ".claude" / "projects" / "-w" / "s.jsonl")
    touch(home / ".codex" / "sessions" / "2026" / "01" / "01" / "rollout-x.jsonl")
    touch(home / ".codex" / "archived_sessions" / "rollout-y.jsonl")
    touch(home / ".pi" / "agent" / "sessions" / "--w--" / "s.jsonl")
    database(home / ".local" / "share" / "opencode" / "opencode.db")
    database(home / ".local" / "share" / "opencode" / "opencode-beta.db")
    for name in ("session", "message", "part"):
        (home / ".local" / "share" / "opencode" / "storage" / name).mkdir(parents=True)
    found = discover({"HOME": str(home)}, cwd=tmp_path)
    assert found.paths == {
        "claude-code": [home / ".claude" / "projects"],
        "codex": [home / ".codex" / "sessions", home / ".codex" / "archived_sessions"],
        "pi": [(home / ".pi" / "agent" / "sessions").resolve()],
        "opencode": [home / ".local" / "share" / "opencode" / name for name in
                     ("opencode-beta.db", "opencode.db", "storage")],
    }


def test_nothing_found_is_nothing(tmp_path: Path) -> None:
    assert discover({"HOME": str(tmp_path)}, cwd=tmp_path).paths == {}


def test_variables_move_every_store(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "nobody"),
           "CLAUDE_CONFIG_DIR": f"{tmp_path / 'c1'},{tmp_path / 'c2'}",
           "CODEX_HOME": str(tmp_path / "codex"),
           "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
           "XDG_DATA_HOME": str(tmp_path / "data"),
           "OPENCODE_DB": "custom.db"}
    for folder in ("c1/projects", "c2/projects", "codex/sessions", "pi/sessions"):
        (tmp_path / folder).mkdir(parents=True)
    database(tmp_path / "data" / "opencode" / "custom.db")
    database(tmp_path / "data" / "opencode" / "opencode.db")  # not read: OPENCODE_DB names another
    found = discover(env, cwd=tmp_path)
    assert found.paths["claude-code"] == [tmp_path / "c1" / "projects", tmp_path / "c2" / "projects"]
    assert found.paths["codex"] == [tmp_path / "codex" / "sessions"]
    assert found.paths["pi"] == [(tmp_path / "pi" / "sessions").resolve()]
    assert found.paths["opencode"] == [tmp_path / "data" / "opencode" / "custom.db"]
    absolute = database(tmp_path / "elsewhere.db")
    assert discover({**env, "OPENCODE_DB": str(absolute)}, cwd=tmp_path).paths["opencode"] == [absolute]
    in_memory = discover({**env, "OPENCODE_DB": ":memory:"}, cwd=tmp_path)  # keeps nothing: older runs are on disk
    assert in_memory.paths["opencode"] == [tmp_path / "data" / "opencode" / "opencode.db"]


def test_xdg_config_home_holds_claude_too(tmp_path: Path) -> None:
    (tmp_path / "cfg" / "claude" / "projects").mkdir(parents=True)
    found = discover({"HOME": str(tmp_path / "h"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}, cwd=tmp_path)
    assert found.paths["claude-code"] == [tmp_path / "cfg" / "claude" / "projects"]


def test_pi_session_dir_by_variable_or_by_setting(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    (tmp_path / "by-variable").mkdir()
    env = {"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}
    chosen = discover({**env, "PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "by-variable")}, cwd=tmp_path)
    assert chosen.paths["pi"] == [(tmp_path / "by-variable").resolve()]
    project = tmp_path / "project"
    (project / ".pi" / "sessions").mkdir(parents=True)
    touch(project / ".pi" / "settings.json", json.dumps({"sessionDir": ".pi/sessions"}))
    (tmp_path / "global-sessions").mkdir()
    touch(agent / "settings.json", json.dumps({"sessionDir": str(tmp_path / "global-sessions")}))
    found = discover(env, cwd=project)
    assert found.paths["pi"] == [(tmp_path / "global-sessions").resolve(), (project / ".pi" / "sessions").resolve(),
                                 (agent / "sessions").resolve()]


def test_claude_history_cut_by_retention_is_said(tmp_path: Path) -> None:
    now = time.time()
    old = touch(tmp_path / ".claude" / "projects" / "-w" / "old.jsonl")
    os.utime(old, (now - 29.5 * DAY, now - 29.5 * DAY))
    found = discover({"HOME": str(tmp_path)}, cwd=tmp_path, now=now)
    assert len(found.notes) == 1 and "cleanupPeriodDays" in found.notes[0] and "30 days" in found.notes[0]
    touch(tmp_path / ".claude" / "settings.json", json.dumps({"cleanupPeriodDays": 365}))
    assert discover({"HOME": str(tmp_path)}, cwd=tmp_path, now=now).notes == []


def test_retention_note_only_near_the_period() -> None:
    now = 1_000 * DAY
    assert claude_retention_note(now - 3 * DAY, 30, now=now) is None
    assert claude_retention_note(now - 30 * DAY, 30, now=now) is not None
    assert claude_retention_note(now - 200 * DAY, 30, now=now) is None  # nothing was deleted lately
    assert "0" in (claude_retention_note(now, 0, now=now) or "")
