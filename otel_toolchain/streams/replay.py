"""Picking a reader: by name, by recognising a file's first lines, and replaying a whole file.

A file is either a headless stream (``claude -p --output-format stream-json``, ``codex exec
--json``, ``opencode run --format json``, ``pi --mode json``) or a session-store file the CLI
keeps on disk (``~/.claude/projects``, ``~/.codex/sessions``, ``~/.pi/agent/sessions``);
:func:`detect_format` tells which from the first lines, and :func:`read_stream` gives either the
same neutral events, through :mod:`otel_toolchain.sessions` for store files.
"""

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

__all__ = ["HARNESSES", "STORE", "STREAM", "detect_format", "detect_harness", "read_stream", "reader_for"]

_READERS: dict[str, type[BaseReader]] = {
    reader.harness: reader for reader in (ClaudeCodeReader, CodexReader, OpenCodeReader, PiReader)
}
HARNESSES: tuple[str, ...] = tuple(sorted(_READERS))
"""The harness names :func:`reader_for` knows."""

_DETECT_LINES = 8
STREAM = "stream"
STORE = "store"
_PI_TYPES = frozenset({
    "session", "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
    "message_end", "tool_execution_start", "tool_execution_end", "auto_retry_start", "agent_settled",
})
_CLAUDE_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event", "rate_limit_event"})
_CLAUDE_STORE_KEYS = ("sessionId", "parentUuid", "isSidechain", "leafUuid")
_CLAUDE_STORE_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation", "ai-title", "custom-title",
                                 "last-prompt", "agent-setting", "pr-link"})
_CODEX_STORE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_PI_STORE_TYPES = frozenset({"model_change", "thinking_level_change", "compaction", "branch_summary", "label",
                             "session_info", "custom_message"})
_PI_V1_HEADER_KEYS = ("provider", "modelId", "thinkingLevel", "branchedFrom")


def _pi_store_line(obj: dict[str, object], kind: object) -> bool:
    if kind == "message":
        return isinstance(obj.get("message"), dict)
    return kind in _PI_STORE_TYPES or (kind == "session" and any(key in obj for key in _PI_V1_HEADER_KEYS))


def _store_harness_of(obj: dict[str, object], kind: object) -> str | None:
    """The harness whose session store writes a line like ``obj``, if only a store writes it."""
    harness: str | None = None
    if (kind in _CODEX_STORE_TYPES and "payload" in obj) or (kind is None and "instructions" in obj and "id" in obj):
        harness = "codex"
    elif kind in _CLAUDE_STORE_TYPES or any(key in obj for key in _CLAUDE_STORE_KEYS):
        harness = "claude-code"
    elif _pi_store_line(obj, kind):
        harness = "pi"
    return harness


def _harness_of(obj: dict[str, object]) -> str | None:
    kind = obj.get("type")
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


def detect_format(first_lines: list[str]) -> tuple[str, str] | None:
    """(harness, ``"stream"`` or ``"store"``) of the file these first lines come from, or None.

    A line only a session store writes decides at once: Claude Code's camelCase ``sessionId``,
    ``parentUuid`` or store-only types (``summary``, ``file-history-snapshot``…), Codex's
    ``{"type", "payload"}`` envelope (or the bare era's ``instructions`` header), Pi's
    ``message``/``model_change``… entries or v1 header. Otherwise the first line a stream
    writes decides (see :func:`detect_harness`). Pi's ``session`` header starts both a Pi
    stream and a Pi store file, so it decides only if nothing after it does: as a stream.
    Lines that are not JSON are passed over.
    """
    pi_header = False
    for line in first_lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        store = _store_harness_of(obj, kind)
        if store is not None:
            return store, STORE
        harness = _harness_of(obj)
        if harness == "pi" and kind == "session":
            pi_header = True
        elif harness is not None:
            return harness, STREAM
    return ("pi", STREAM) if pi_header else None


def detect_harness(first_lines: list[str]) -> str | None:
    """The harness that wrote these lines (its first few suffice), or None if none fits.

    OpenCode lines carry ``sessionID``; Codex types are dotted (``thread.started``); Pi's are its
    ``agent_*``/``message_*``/``tool_execution_*`` names and the ``session`` header; Claude Code
    lines carry ``session_id``. Session-store files are recognised too (:func:`detect_format`).
    Lines that are not JSON are passed over.
    """
    found = detect_format(first_lines)
    return found[0] if found is not None else None


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

    ``harness="auto"`` recognises the harness from its first lines; a named harness is taken as
    given. Either way a session-store file is read by that harness's store reader (its lines
    carry their own times). ``clock`` gives each line's arrival
    time in ns; by default it is one fixed time for the whole replay, so a call lasts 0 unless
    the stream has times of its own (OpenCode), as a recording cannot tell when lines arrived.
    """
    it = iter(lines)
    head = list(islice(it, _DETECT_LINES))
    found = detect_format(head)
    if harness == "auto":
        if not any(line.strip() for line in head):
            return
        if found is None:
            raise StreamError(f"not a stream of any of {', '.join(HARNESSES)}, nor a session-store file", source=source,
                              line_no=1)
        harness = found[0]
    kind = found[1] if found is not None and found[0] == harness else STREAM
    reader = reader_for(harness, strict, source=source) if kind == STREAM else _store_reader(harness, strict, source)
    if clock is None:
        fixed = time.time_ns()
        clock = lambda: fixed  # noqa: E731
    for line_no, line in enumerate(chain(head, it), 1):
        yield from reader.feed(line, line_no, clock())
    yield from reader.close(clock())


def _store_reader(harness: str, strict: bool, source: str) -> StreamReader:
    from otel_toolchain.sessions import store_reader_for  # noqa: PLC0415 (the store readers import this package)

    return store_reader_for(harness, strict, source=source)
