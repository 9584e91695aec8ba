"""Claude Code's hook events, read for the chain (:mod:`.session` keeps the session and answers).

Events (Claude Code 2.1.332, tests/data/hooks/README.md):

- ``PostToolUse``: a finished call: ``tool_name``, ``tool_input``, ``tool_response``, ``tool_use_id``,
  ``duration_ms``. ``PostToolUseFailure`` comes instead for a failed call, with ``error``
  (``"Exit code 1\\n<stderr>"``): the failure and its text, which Claude Code's OTLP never sends.
- ``Stop``: the model ended its turn: the turn is closed (plugins report, and only here is what they
  report exported) and the next call opens a new one.
- ``SessionEnd``: the turn is closed and the session's state removed.

The answer is Claude Code's own: ``{"continue": false, "stopReason": …}`` ends the session
(``terminal_reason: hook_stopped``), ``additionalContext`` reaches the model. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from otel_toolchain.calls import ToolCall
from otel_toolchain.hooks.session import CALL, SESSION_END, TURN_END, HookEvent, HookReader, Kind, hook_call, session_of
from otel_toolchain.identity import canonical_json

__all__ = ["CALL_EVENTS", "READER", "call_of", "read_event"]

CALL_EVENTS: Final = ("PostToolUse", "PostToolUseFailure")
_ENDS: Final[dict[str, Kind]] = {"Stop": TURN_END, "SessionEnd": SESSION_END}
_EXIT: Final = re.compile(r"^Exit code (-?\d+)")


def _result_text(response: Any) -> str | None:
    if response is None or isinstance(response, str):
        return response
    return canonical_json(response)


def call_of(payload: Mapping[str, Any], now_ns: int) -> ToolCall:
    """The ToolCall a ``PostToolUse`` / ``PostToolUseFailure`` payload describes."""
    duration = payload.get("duration_ms")
    start = now_ns - int(duration) * 1_000_000 if isinstance(duration, int) and duration >= 0 else now_ns
    failed = payload.get("hook_event_name") == "PostToolUseFailure"
    result = str(payload.get("error", "")) if failed else _result_text(payload.get("tool_response"))
    error_type = None
    if failed:
        code = _EXIT.match(result or "")
        error_type = f"exit_code_{code.group(1)}" if code else ("interrupted" if payload.get("is_interrupt")
                                                               else "tool_error")
    return hook_call(payload.get("tool_name"), payload.get("tool_input"), result, failed=failed, error_type=error_type,
                     call_id=payload.get("tool_use_id"), cwd=payload.get("cwd"), start_ns=start, end_ns=now_ns)


def read_event(payload: Mapping[str, Any], now_ns: int) -> HookEvent | None:
    """The event a Claude Code hook payload is; None for events the hook was not installed for."""
    session = session_of(payload.get("session_id"), "claude-code", "session_id")
    name = str(payload.get("hook_event_name"))
    if name in CALL_EVENTS:
        return HookEvent(session, CALL, name, call_of(payload, now_ns))
    end = _ENDS.get(name)
    return HookEvent(session, end, name) if end is not None else None


READER: Final = HookReader("claude-code", read_event)
