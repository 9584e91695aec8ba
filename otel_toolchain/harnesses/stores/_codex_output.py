"""What a Codex rollout's tool output says: the result text, failure and duration, by CLI version.

A rollout stores no success flag; the output text is all there is, and its layout changed:

- **<= 0.4x** (``shell``): a JSON string ``{"output": "...", "metadata": {"exit_code": 1,
  "duration_seconds": 0.0}}``.
- **later** ``shell``: ``Exit code: N`` / ``Wall time: X seconds`` / ``Output:`` then the output.
- **unified exec** (``exec_command``, ``write_stdin``): ``Chunk ID: …`` / ``Wall time: …`` /
  ``Process exited with code N`` or ``Process running with session ID N`` /
  ``Original token count: …`` / ``Output:`` then the output.
- **plain strings** for what never ran: ``failed in sandbox … exit code: N …``,
  ``patch rejected by user``, ``execution error: …``, ``apply_patch verification failed…``.

The result kept for a call's identity is the output itself: the header lines that change on
every call (chunk id, wall time, token count) are dropped, so two polls that saw the same output
read the same; a process still running keeps its ``Process running…`` line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from otel_toolchain._input.lines import BadLineError, decode_line

__all__ = ["Outcome", "outcome_of"]

_HEADER = re.compile(r"^(Exit code|Wall time|Chunk ID|Original token count|Total output lines|Process exited with code"
                     r"|Process running with session ID)\b:?\s*(.*)$")
_SANDBOX_EXIT = re.compile(r"exit code:\s*(-?\d+)")
_MAX_SECONDS = 10_000_000.0
"""Longest call time believed (about 115 days); beyond is no duration a call had."""
_SECONDS = re.compile(r"^([0-9.]+)\s*s")
_DECLINED = ("patch rejected by user", "exec command rejected by user", "rejected by user")
_ERRORS = ("failed in sandbox", "execution error:", "apply_patch verification failed", "sandbox error")


@dataclass(frozen=True, slots=True)
class Outcome:
    """A call's result text, whether it failed and how, and its own duration where the text says."""

    result: str | None
    failed: bool = False
    error_type: str | None = None
    duration_ns: int | None = None


def _exit(code: int) -> tuple[bool, str | None]:
    return (True, f"exit_code_{code}") if code != 0 else (False, None)


def _from_json(text: str) -> Outcome | None:
    try:
        data = decode_line(text)
    except BadLineError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return None
    metadata = data.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    code = metadata.get("exit_code")
    failed, error_type = _exit(code) if isinstance(code, int) else (False, None)
    seconds = metadata.get("duration_seconds")
    duration = int(seconds * 1e9) if isinstance(seconds, (int, float)) and 0 <= seconds < _MAX_SECONDS else None
    return Outcome(data["output"], failed, error_type, duration)


def _from_header(text: str) -> Outcome | None:
    head, marker, body = text.partition("\nOutput:\n")
    if not marker and text.endswith("\nOutput:"):
        head, marker, body = text[: -len("\nOutput:")], "x", ""
    lines = head.split("\n")
    fields = [_HEADER.match(line) for line in lines]
    if not marker or not all(fields):
        return None
    failed, error_type, duration, kept = False, None, None, []
    for match in fields:
        assert match is not None
        name, value = match.group(1), match.group(2).strip()
        if name in ("Exit code", "Process exited with code") and value.lstrip("-").isdigit():
            failed, error_type = _exit(int(value))
        elif name == "Wall time" and (seconds := _SECONDS.match(value)):
            duration = int(min(float(seconds.group(1)), _MAX_SECONDS) * 1e9)
        elif name == "Process running with session ID":
            kept.append(match.group(0))
    return Outcome("\n".join([*kept, body]) if kept else body, failed, error_type, duration)


def _from_plain(text: str) -> Outcome:
    lowered = text.lower()
    if lowered.startswith(_DECLINED):
        return Outcome(text, True, "declined")
    if lowered.startswith(_ERRORS):
        code = _SANDBOX_EXIT.search(text)
        return Outcome(text, True, f"exit_code_{code.group(1)}" if code else "tool_error")
    return Outcome(text)


def _text(output: Any) -> str | None:
    if output is None or isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(item.get("text")) for item in output if isinstance(item, dict) and "text" in item)
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return str(output["content"])
    return json.dumps(output, sort_keys=True)


def outcome_of(output: Any) -> Outcome:
    """Read a ``function_call_output``/``custom_tool_call_output`` payload's ``output``."""
    text = _text(output)
    if text is None:
        return Outcome(None)
    if text.startswith("{"):
        found = _from_json(text)
        if found is not None:
            return found
    if "\nOutput:" in text:
        found = _from_header(text)
        if found is not None:
            return found
    return _from_plain(text)
