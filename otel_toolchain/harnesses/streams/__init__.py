"""Readers of four coding-agent CLIs' headless JSON event streams, giving neutral events.

::

    claude -p --output-format stream-json --verbose   ->  ClaudeCodeReader  ("claude-code")
    codex exec --json                                 ->  CodexReader       ("codex")
    opencode run --format json                        ->  OpenCodeReader    ("opencode")
    pi --mode json                                    ->  PiReader          ("pi")

A reader takes lines as they arrive (``feed(line, line_no, now_ns)``) and returns the events
each one gives; ``close(now_ns)`` ends the stream, failing calls still open as ``interrupted``
and ending a turn whose end line never came. Unknown event types are skipped; a line that is not
JSON, or a known event missing a field, becomes a :class:`BadLine` (``strict=True``: a
:class:`~otel_toolchain.errors.StreamError`). The readers build no spans.
"""

from __future__ import annotations

from otel_toolchain.harnesses._base import StreamReader
from otel_toolchain.harnesses.events import (
    BadLine,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from otel_toolchain.harnesses.streams.claude_code import ClaudeCodeReader
from otel_toolchain.harnesses.streams.codex import CodexReader, Workdirs
from otel_toolchain.harnesses.streams.opencode import OpenCodeReader
from otel_toolchain.harnesses.streams.pi import PiReader

__all__ = [
    "BadLine",
    "ClaudeCodeReader",
    "CodexReader",
    "Event",
    "OpenCodeReader",
    "PiReader",
    "Retry",
    "StreamReader",
    "ToolFinished",
    "ToolStarted",
    "TurnEnded",
    "TurnStarted",
    "Usage",
    "reader_for",
]

_READERS: dict[str, type[ClaudeCodeReader | CodexReader | OpenCodeReader | PiReader]] = {
    reader.harness: reader for reader in (ClaudeCodeReader, CodexReader, OpenCodeReader, PiReader)
}


def reader_for(name: str, strict: bool = False, *, source: str = "-", workdirs: Workdirs | None = None) -> StreamReader:
    """A fresh stream reader for harness ``name``; ``strict`` raises StreamError on a bad line.

    ``workdirs`` tells the Codex reader where each command ran (its stream does not say); the
    other streams say it themselves, and their readers take no such argument.

    Raises:
        ValueError: ``name`` is not one of :data:`~otel_toolchain.harnesses.detect.HARNESSES`.
    """
    reader = _READERS.get(name)
    if reader is None:
        raise ValueError(f"unknown harness {name!r}; valid: {', '.join(sorted(_READERS))}")
    if reader is CodexReader:
        return CodexReader(strict=strict, source=source, workdirs=workdirs)
    return reader(strict=strict, source=source)

