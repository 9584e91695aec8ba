"""Readers of the session stores the coding-agent CLIs keep on disk, giving the streams' neutral events.

::

    ~/.claude/projects/<dir>/<session>.jsonl (+ sub-agents)   ->  ClaudeStoreReader   ("claude-code")
    ~/.codex/sessions/**/rollout-*.jsonl[.zst]                ->  CodexStoreReader    ("codex")
    ~/.pi/agent/sessions/--<cwd>--/*.jsonl (v1 to v3)         ->  PiStoreReader       ("pi")
    ~/.local/share/opencode/opencode.db, or storage/ (old)    ->  OpenCodeStoreReader ("opencode")

A stored session becomes the same :mod:`otel_toolchain.harnesses.streams` events a recorded stream does
(TurnStarted, ToolStarted/ToolFinished, Retry, TurnEnded, BadLine), with the same call identity
(tool, canonical arguments, cwd, result, failure), so ``replay``, ``analyze`` and the chain treat
a stored session exactly like a stream. Each module's docstring says how its store maps onto
turns and calls. :func:`discover` finds the stores on this machine, honouring the settings and
variables that move them; :mod:`otel_toolchain.harnesses.runs` reads files and folders of either kind.
"""

from __future__ import annotations

from collections.abc import Collection

from otel_toolchain._input.lines import MissingExtra, iter_lines
from otel_toolchain.harnesses._base import StreamReader
from otel_toolchain.harnesses.stores.claude_code import ClaudeStoreReader
from otel_toolchain.harnesses.stores.codex import CodexStoreReader
from otel_toolchain.harnesses.stores.discover import Discovery, discover
from otel_toolchain.harnesses.stores.opencode import OpenCodeStoreReader
from otel_toolchain.harnesses.stores.pi import PiStoreReader

__all__ = [
    "ClaudeStoreReader",
    "CodexStoreReader",
    "Discovery",
    "MissingExtra",
    "OpenCodeStoreReader",
    "PiStoreReader",
    "discover",
    "iter_lines",
    "store_reader_for",
]


def store_reader_for(harness: str, strict: bool = False, *, source: str = "-",
                     skip: Collection[str] = (), calls_only: bool = False) -> StreamReader:
    """A fresh line reader for ``harness``'s session-store files (OpenCode's store has no lines).

    ``skip`` names call ids to leave out: a forked rollout's or branched Pi file's copies of calls
    its parent, read too, already has. ``calls_only`` lets a reader pass over what only usage
    and the model need (see :class:`ClaudeStoreReader`).
    """
    if harness == "claude-code":
        return ClaudeStoreReader(strict=strict, source=source, calls_only=calls_only)
    if harness == "codex":
        return CodexStoreReader(strict=strict, source=source, skip=skip)
    if harness == "pi":
        return PiStoreReader(strict=strict, source=source, skip=skip, calls_only=calls_only)
    raise ValueError(f"no line-based session store for harness {harness!r} (claude-code, codex, pi)")
