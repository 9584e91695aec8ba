"""The bridge files that hand OpenCode's and Pi's tool calls to ``otel-toolchain hook``: where they go, and
writing and removing them.

OpenCode loads every ``plugin/*.js`` of its config folders, Pi every ``extensions/*.ts`` of its own
(both measured with the real CLIs, tests/data/hooks/README.md), so installing is writing one file,
``otel-toolchain.js`` / ``otel-toolchain.ts``, from the template in ``bridges/`` with the hook's
command line written in. A file is ours when its first line is the template's; uninstalling removes
only such a file, and installing never overwrites another. Raises ManifestError for a file in the way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from otel_toolchain.errors import ManifestError

__all__ = ["BRIDGED", "bridge_path", "install", "uninstall"]

BRIDGED: Final = ("opencode", "pi")
_TEMPLATES: Final = {"opencode": "opencode.js", "pi": "pi.ts"}
_COMMAND_SLOT: Final = "__OTEL_TOOLCHAIN_COMMAND__"


def bridge_path(agent: str, scope: str, cwd: Path, home: Path, environ: Mapping[str, str]) -> Path:
    """Where ``agent``'s bridge goes: the project's folder, or the user's (``XDG_CONFIG_HOME`` for OpenCode,
    ``PI_CODING_AGENT_DIR`` for Pi, as those CLIs read them)."""
    if agent == "opencode":
        if scope == "project":
            return cwd / ".opencode" / "plugin" / "otel-toolchain.js"
        config = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
        return config / "opencode" / "plugin" / "otel-toolchain.js"
    if scope == "project":
        return cwd / ".pi" / "extensions" / "otel-toolchain.ts"
    agent_dir = Path(environ["PI_CODING_AGENT_DIR"]) if environ.get("PI_CODING_AGENT_DIR") else home / ".pi" / "agent"
    return agent_dir / "extensions" / "otel-toolchain.ts"


def _template(agent: str) -> str:
    return resources.files("otel_toolchain.hooks").joinpath("bridges", _TEMPLATES[agent]).read_text(encoding="utf-8")


def _is_ours(path: Path, agent: str) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as text:
            first = text.readline()
    except FileNotFoundError:
        return False
    return first == _template(agent).splitlines(keepends=True)[0]


def install(agent: str, path: Path, command: Sequence[str]) -> None:
    """Write (or rewrite) our bridge at ``path``, running ``command`` for each event."""
    if path.exists() and not _is_ours(path, agent):
        raise ManifestError(f"{path}: a file that otel-toolchain did not write is there; it was left unchanged")
    text = _template(agent).replace(_COMMAND_SLOT, json.dumps(list(command)))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".otel-toolchain.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def uninstall(agent: str, path: Path) -> bool:
    """Remove our bridge; False when there is none (another file there is left alone)."""
    if not _is_ours(path, agent):
        return False
    path.unlink()
    return True
