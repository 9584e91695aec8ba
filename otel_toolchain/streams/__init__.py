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

from otel_toolchain.streams._base import StreamReader
from otel_toolchain.streams.claude_code import ClaudeCodeReader
from otel_toolchain.streams.codex import CodexReader
from otel_toolchain.streams.events import (
    BadLine,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from otel_toolchain.streams.opencode import OpenCodeReader
from otel_toolchain.streams.pi import PiReader
from otel_toolchain.streams.replay import detect_harness, read_stream, reader_for

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
    "detect_harness",
    "read_stream",
    "reader_for",
]
