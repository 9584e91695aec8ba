"""Where the CLIs keep their sessions on this machine, honouring what moves each store.

========== ===================================================================================
Claude     ``$CLAUDE_CONFIG_DIR/projects`` (a comma-separated list is accepted), else
           ``~/.claude/projects`` and ``$XDG_CONFIG_HOME/claude/projects`` (``~/.config``)
Codex      ``$CODEX_HOME/{sessions,archived_sessions}`` (comma-separated too), else ``~/.codex/…``
Pi         ``$PI_CODING_AGENT_SESSION_DIR``, else ``sessionDir`` in ``<agent dir>/settings.json``
           or a project's ``.pi/settings.json``, else ``<agent dir>/sessions``; the agent dir
           is ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``
OpenCode   ``$OPENCODE_DB`` (absolute, or relative to the data dir; ``:memory:`` stores
           nothing, so what earlier runs left is read), else every
           ``opencode*.db`` (channel builds) in ``$XDG_DATA_HOME/opencode``
           (``~/.local/share/opencode``), plus a pre-1.2 ``storage/`` tree left there
========== ===================================================================================

Claude Code deletes transcripts older than ``cleanupPeriodDays`` (settings.json, default 30)
when it starts, so a short history is usually a cut one: :func:`claude_retention_note` says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_toolchain._input.lines import decode_line
from otel_toolchain.harnesses.stores.opencode import is_sqlite, is_storage_root

__all__ = ["CLAUDE_RETENTION_DAYS", "Discovery", "claude_retention_note", "codex_folders", "discover"]

CLAUDE_RETENTION_DAYS = 30
_DAY = 86_400.0


@dataclass
class Discovery:
    """The stores found: the paths to read per harness, and what the user should know about them."""

    paths: dict[str, list[Path]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    claude_retention_days: int = CLAUDE_RETENTION_DAYS

    @property
    def all_paths(self) -> list[Path]:
        return [path for paths in self.paths.values() for path in paths]


def _list(value: str | None) -> list[Path]:
    return [Path(part.strip()).expanduser() for part in (value or "").split(",") if part.strip()]


def _settings(path: Path) -> dict[str, Any]:
    try:
        data = decode_line(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):  # BadLineError is a ValueError: deep, non-finite, not JSON
        return {}
    return data if isinstance(data, dict) else {}


def _claude(env: Mapping[str, str], home: Path) -> tuple[list[Path], int]:
    configs = _list(env.get("CLAUDE_CONFIG_DIR")) or [
        home / ".claude", Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "claude"]
    days = CLAUDE_RETENTION_DAYS
    for config in configs:
        value = _settings(config / "settings.json").get("cleanupPeriodDays")
        if isinstance(value, int) and not isinstance(value, bool):
            days = value
    return [config / "projects" for config in configs if (config / "projects").is_dir()], days


def codex_folders(env: Mapping[str, str], home: Path, *, existing: bool = True) -> list[Path]:
    """Codex's rollout folders: ``sessions`` and ``archived_sessions`` of each ``$CODEX_HOME``.

    ``existing``: only those there now.
    """
    homes = _list(env.get("CODEX_HOME")) or [home / ".codex"]
    folders = [base / sub for base in homes for sub in ("sessions", "archived_sessions")]
    return [folder for folder in folders if folder.is_dir()] if existing else folders


def _pi(env: Mapping[str, str], home: Path, cwd: Path) -> list[Path]:
    agent = Path(env["PI_CODING_AGENT_DIR"]).expanduser() if env.get("PI_CODING_AGENT_DIR") else home / ".pi" / "agent"
    found: list[Path] = []
    if env.get("PI_CODING_AGENT_SESSION_DIR"):
        found.append(Path(env["PI_CODING_AGENT_SESSION_DIR"]).expanduser())
    else:
        for settings in (agent / "settings.json", cwd / ".pi" / "settings.json"):
            value = _settings(settings).get("sessionDir")
            if isinstance(value, str) and value:
                found.append(cwd / Path(value).expanduser())  # relative: to the project, where pi runs
        found.append(agent / "sessions")
    return list(dict.fromkeys(path.resolve() for path in found if path.is_dir()))


def _opencode(env: Mapping[str, str], home: Path) -> list[Path]:
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "opencode"
    named = env.get("OPENCODE_DB")
    if named and named != ":memory:":
        databases = [Path(named).expanduser() if Path(named).expanduser().is_absolute() else data / named]
    else:
        databases = sorted(data.glob("opencode*.db")) if data.is_dir() else []
    found = [path for path in databases if path.is_file() and is_sqlite(path)]
    if is_storage_root(data / "storage"):
        found.append(data / "storage")
    return found


def discover(environ: Mapping[str, str] | None = None, *, home: Path | None = None, cwd: Path | None = None,
             now: float | None = None) -> Discovery:
    """The session stores of every CLI found here (only those that exist), with a retention note."""
    env = os.environ if environ is None else environ
    home = home or Path(env.get("HOME") or Path.home())
    claude, days = _claude(env, home)
    found = Discovery(claude_retention_days=days)
    for harness, paths in (("claude-code", claude), ("codex", codex_folders(env, home)),
                           ("pi", _pi(env, home, cwd or Path.cwd())), ("opencode", _opencode(env, home))):
        if paths:
            found.paths[harness] = paths
    oldest = _oldest_mtime(claude)
    note = claude_retention_note(oldest, days, now=now) if oldest is not None else None
    if note:
        found.notes.append(note)
    return found


def _oldest_mtime(roots: list[Path]) -> float | None:
    times = [path.stat().st_mtime for root in roots for path in root.rglob("*.jsonl")]
    return min(times) if times else None


def claude_retention_note(oldest_mtime: float, days: int = CLAUDE_RETENTION_DAYS, *,
                          now: float | None = None) -> str | None:
    """A warning when Claude Code's history looks cut off by its ``cleanupPeriodDays`` deletion, else None."""
    if days <= 0:
        return ("Claude Code's cleanupPeriodDays is 0, which stops transcripts being written at all: "
                "only what was there before is read")
    age = ((now if now is not None else time.time()) - oldest_mtime) / _DAY
    if not days - 2 <= age <= days + 14:  # much older: nothing was deleted lately
        return None
    return (f"Claude Code deletes transcripts older than cleanupPeriodDays ({days} days here; 30 by default) "
            f"when it starts, and the oldest one here is {age:.0f} days old: the history looks cut off. Raise "
            "cleanupPeriodDays in ~/.claude/settings.json to calibrate on more than a month")
