"""Which harness wrote some lines, and whether they are a stream or a session-store file.

A file is either a headless stream (``claude -p --output-format stream-json``, ``codex exec
--json``, ``opencode run --format json``, ``pi --mode json``) or a session-store file the CLI
keeps on disk (``~/.claude/projects``, ``~/.codex/sessions``, ``~/.pi/agent/sessions``);
:func:`detect_format` tells which from the first :data:`DETECT_LINES` lines. Everything that
detects (replay, ``run`` and its ``--log``, analyze) reads that same window, through
:mod:`otel_toolchain.harnesses.opener`. Pure functions of the lines: no I/O, never raises.
"""

from __future__ import annotations

from typing import Final

from otel_toolchain._input.lines import BadLineError, decode_line

__all__ = ["DETECT_LINES", "HARNESSES", "STORE", "STREAM", "detect_format", "detect_harness", "harness_mismatch",
           "starts_another_run"]

HARNESSES: Final = ("claude-code", "codex", "opencode", "pi")
"""The harnesses whose streams and stores are read."""

DETECT_LINES: Final = 8
"""How many first lines detection reads, everywhere."""

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
            obj = decode_line(line)
        except BadLineError:
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind is not None and not isinstance(kind, str):
            continue  # {"type": {}}: no harness writes that, and it must not reach the set lookups
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


def harness_mismatch(first_lines: list[str], harness: str) -> str | None:
    """Why ``--harness harness`` looks wrong for a run whose first lines are these, or None if it fits.

    A named harness is read as given; this says when the lines are another harness's, or no
    harness's at all, so the guard is never off without a word.
    """
    found = detect_harness(first_lines)
    if found == harness:
        return None
    if found is None:
        return (f"--harness {harness}: none of the first {len(first_lines)} lines looks like a {harness} "
                "stream or session file; reading it as one anyway, which may find no tool calls")
    return f"--harness {harness}, but the first lines are a {found} stream or session file"


_RUN_START_MARKS = ("thread.started", '"init"', "sessionID", "agent_start", '"session"')


def starts_another_run(line: str, harness: str) -> str | None:
    """The harness whose run this line starts, if it is not ``harness`` (a second stream appended to a file).

    Cheap for the lines of a run: only lines with a start marker (``thread.started``, Claude Code's
    ``init``, OpenCode's ``sessionID``, Pi's ``session``/``agent_start``) are parsed.
    """
    if not any(mark in line for mark in _RUN_START_MARKS):
        return None
    found = detect_harness([line])
    return found if found is not None and found != harness else None
