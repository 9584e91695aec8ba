"""Where the embedded default writes, from the environment: the standard library only.

Apart from :mod:`.settings` (pydantic) so that the Claude Code hook's client, which must start in
milliseconds, finds the hook's state folder without importing anything else of the package.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["OUTPUT_DIR_ENV", "default_output_dir", "expand_path"]

OUTPUT_DIR_ENV: Final = "OTEL_TOOLCHAIN_OUTPUT_DIR"
_VARIABLE: Final = re.compile(r"\$(?:(\w+)|\{(\w+)\})")


def expand_path(text: str, environ: Mapping[str, str]) -> Path:
    """``~`` and ``$VAR``/``${VAR}`` expanded from ``environ`` (unknown variables are left as written)."""
    home = environ.get("HOME")
    if text.startswith("~") and home and (len(text) == 1 or text[1] == "/"):
        text = home + text[1:]
    text = os.path.expanduser(text)
    return Path(_VARIABLE.sub(lambda m: environ.get(m.group(1) or m.group(2), m.group(0)), text))


def default_output_dir(environ: Mapping[str, str]) -> Path:
    """Where the embedded default writes, given the environment."""
    if environ.get(OUTPUT_DIR_ENV):
        return expand_path(environ[OUTPUT_DIR_ENV], environ)
    state = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(state) / "otel-toolchain"
