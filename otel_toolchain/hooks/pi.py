"""Pi's extension events, as the bridge extension (``bridges/pi.ts``) hands them over, read for the chain.

What Pi 0.73.1 gives an extension (measured with the real CLI offline, tests/data/hooks/README.md):

- ``tool_result`` with ``toolName``, ``toolCallId``, ``input``, ``content`` (text parts) and
  ``isError``: every call that ran, failed ones included. A failed shell command says its exit code
  only as the text's last line, ``Command exited with code N`` (read as ``exit_code_N``).
- Calls Pi refuses before running them (an unknown tool, arguments that fail validation) skip
  ``tool_result``; the bridge sends their ``tool_execution_end`` (with the input it saw in
  ``tool_call``), read as failed calls: a model repeating a malformed call is a wedge too.
- ``agent_end`` (the run of one prompt ended) closes the turn; ``session_shutdown`` ends the session
  (but for ``reason: "reload"``, where the session goes on: that only closes the turn).

No event carries a call's duration: calls are read with none. The bridge sends ``{"event": …,
"session_id": …, "cwd": …}``. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from otel_toolchain.calls import ToolCall
from otel_toolchain.errors import BadRequest
from otel_toolchain.hooks.session import CALL, SESSION_END, TURN_END, HookEvent, HookReader, Kind, hook_call, session_of

__all__ = ["READER", "read_event"]

_AGENT: Final = "pi"
_EXIT: Final = re.compile(r"Command exited with code (-?\d+)\s*$")
_ENDS: Final[dict[str, Kind]] = {"agent_end": TURN_END, "session_shutdown": SESSION_END}
_CALLS: Final = ("tool_result", "tool_execution_end")


def _text(parts: Any) -> str | None:
    """The text of a result's content parts (images are left out), or of a result given as text."""
    if isinstance(parts, Mapping):
        parts = parts.get("content")
    if isinstance(parts, str) or parts is None:
        return parts
    if not isinstance(parts, list):
        return str(parts)
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("type") == "text")


def _call(event: Mapping[str, Any], cwd: Any, now_ns: int) -> ToolCall:
    failed = event.get("isError") is True
    result = _text(event.get("content") if event.get("type") == "tool_result" else event.get("result"))
    error_type = None
    if failed:
        code = _EXIT.search(result or "")
        error_type = f"exit_code_{code.group(1)}" if code else "tool_error"
    return hook_call(event.get("toolName"), event.get("input"), result, failed=failed, error_type=error_type,
                     call_id=event.get("toolCallId"), cwd=cwd, start_ns=now_ns, end_ns=now_ns)


def read_event(payload: Mapping[str, Any], now_ns: int) -> HookEvent | None:
    """The event a bridge payload is; None for Pi events the chain does not act on."""
    event = payload.get("event")
    if not isinstance(event, Mapping):
        raise BadRequest("pi hook payload: event is not an object")
    session = session_of(payload.get("session_id"), _AGENT, "session_id")
    kind = str(event.get("type"))
    if kind in _CALLS:
        return HookEvent(session, CALL, kind, _call(event, payload.get("cwd"), now_ns))
    end = _ENDS.get(kind)
    if end == SESSION_END and event.get("reason") == "reload":
        end = TURN_END  # the extensions reload; the session goes on
    return HookEvent(session, end, kind) if end is not None else None


READER: Final = HookReader(_AGENT, read_event)
