"""Adding the hook to Claude Code's ``settings.json`` and taking it out again, touching nothing else.

Entries are added for ``PostToolUse`` and ``PostToolUseFailure`` (matcher ``*``), ``Stop`` and
``SessionEnd``; ours are recognised by their command (``… hook claude-code …``), so installing twice
replaces them and uninstalling removes only them (an event left with no entry is removed, then an
empty ``hooks``). Every other key, event and entry stays as it was. The file is written atomically;
one that is not a JSON object raises ManifestError naming it, and is left alone.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Final

from otel_toolchain.errors import ManifestError

__all__ = ["HOOK_EVENTS", "install", "is_ours", "settings_path", "uninstall"]

HOOK_EVENTS: Final = ("PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd")
_TOOL_EVENTS: Final = ("PostToolUse", "PostToolUseFailure")
_OURS: Final = re.compile(r"(otel-toolchain|-m otel_toolchain)\S*\s+hook\s+claude-code\b")


def settings_path(scope: str, cwd: Path, home: Path, config_dir: str | None) -> Path:
    """``<cwd>/.claude/settings.json`` (project) or the user's (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    return (Path(config_dir) if config_dir else home / ".claude") / "settings.json"


def is_ours(entry: Any) -> bool:
    """A matcher group holding our command."""
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return isinstance(hooks, list) and any(isinstance(h, dict) and _OURS.search(str(h.get("command", "")))
                                           for h in hooks)


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ManifestError(f"{path}: not JSON ({exc}); fix or remove it, it was left unchanged") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: not a JSON object; it was left unchanged")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ManifestError(f"{path}: \"hooks\" is not an object; it was left unchanged")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".otel-toolchain.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event, entries in hooks.items():
        if event in HOOK_EVENTS and isinstance(entries, list):
            kept = [e for e in entries if not is_ours(e)]
            if kept:
                out[event] = kept
        else:
            out[event] = entries
    return out


def install(path: Path, command: str) -> None:
    """Add (or replace) our entries in the settings file at ``path``."""
    data = _read(path)
    hooks = _without_ours(data.get("hooks", {}))
    for event in HOOK_EVENTS:
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if event in _TOOL_EVENTS:
            entry = {"matcher": "*", **entry}
        hooks.setdefault(event, []).append(entry)
    data["hooks"] = hooks
    _write(path, data)


def uninstall(path: Path) -> bool:
    """Remove our entries; False when there were none (the file is then not rewritten)."""
    data = _read(path)
    hooks = data.get("hooks", {})
    kept = _without_ours(hooks)
    if kept == hooks:
        return False
    if kept:
        data["hooks"] = kept
    else:
        data.pop("hooks", None)
    _write(path, data)
    return True
