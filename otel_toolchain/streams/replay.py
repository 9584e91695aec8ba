"""Picking a reader: by name, by recognising a stream's first lines, and replaying a whole stream."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice

from otel_toolchain.errors import StreamError
from otel_toolchain.streams._base import BaseReader, StreamReader
from otel_toolchain.streams.claude_code import ClaudeCodeReader
from otel_toolchain.streams.codex import CodexReader
from otel_toolchain.streams.events import Event
from otel_toolchain.streams.opencode import OpenCodeReader
from otel_toolchain.streams.pi import PiReader

__all__ = ["HARNESSES", "detect_harness", "read_stream", "reader_for"]

_READERS: dict[str, type[BaseReader]] = {
    reader.harness: reader for reader in (ClaudeCodeReader, CodexReader, OpenCodeReader, PiReader)
}
HARNESSES: tuple[str, ...] = tuple(sorted(_READERS))
"""The harness names :func:`reader_for` knows."""

_DETECT_LINES = 5
_PI_TYPES = frozenset({
    "session", "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
    "message_end", "tool_execution_start", "tool_execution_end", "auto_retry_start", "agent_settled",
})
_CLAUDE_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event", "rate_limit_event"})


def _harness_of(line: str) -> str | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    kind = obj.get("type") if isinstance(obj, dict) else None
    if not isinstance(kind, str):
        return None
    harness: str | None = None
    if "sessionID" in obj:
        harness = "opencode"
    elif kind.startswith(("thread.", "turn.", "item.")):
        harness = "codex"
    elif kind in _PI_TYPES:
        harness = "pi"
    elif "session_id" in obj or kind in _CLAUDE_TYPES:
        harness = "claude-code"
    return harness


def detect_harness(first_lines: list[str]) -> str | None:
    """The harness that wrote these lines (its first few suffice), or None if none fits.

    OpenCode lines carry ``sessionID``; Codex types are dotted (``thread.started``); Pi's are its
    ``agent_*``/``message_*``/``tool_execution_*`` names and the ``session`` header; Claude Code
    lines carry ``session_id``. Lines that are not JSON are passed over.
    """
    for line in first_lines:
        harness = _harness_of(line)
        if harness is not None:
            return harness
    return None


def reader_for(name: str, strict: bool = False, *, source: str = "-") -> StreamReader:
    """A fresh reader for harness ``name``; ``strict`` raises StreamError on a bad line."""
    reader = _READERS.get(name)
    if reader is None:
        raise ValueError(f"unknown harness {name!r}; valid: {', '.join(HARNESSES)}")
    return reader(strict=strict, source=source)


def read_stream(
    lines: Iterable[str],
    harness: str = "auto",
    strict: bool = False,
    clock: Callable[[], int] | None = None,
    *,
    source: str = "-",
) -> Iterator[Event]:
    """Replay a recorded stream: the events of every line, then those of its end.

    ``harness="auto"`` recognises it from its first lines. ``clock`` gives each line's arrival
    time in ns; by default it is one fixed time for the whole replay, so a call lasts 0 unless
    the stream has times of its own (OpenCode), as a recording cannot tell when lines arrived.
    """
    it = iter(lines)
    if harness == "auto":
        head = list(islice(it, _DETECT_LINES))
        if not any(line.strip() for line in head):
            return
        detected = detect_harness(head)
        if detected is None:
            raise StreamError(f"not a stream of any of {', '.join(HARNESSES)}", source=source, line_no=1)
        harness, it = detected, chain(head, it)
    reader = reader_for(harness, strict, source=source)
    if clock is None:
        fixed = time.time_ns()
        clock = lambda: fixed  # noqa: E731
    for line_no, line in enumerate(it, 1):
        yield from reader.feed(line, line_no, clock())
    yield from reader.close(clock())
