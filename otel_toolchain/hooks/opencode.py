"""OpenCode's plugin events, as the bridge plugin (``bridges/opencode.js``) hands them over, read for the chain.

What OpenCode 1.18.33 gives a plugin (measured with the real CLI offline, tests/data/hooks/README.md):

- ``tool.execute.after`` with ``input {tool, sessionID, callID, args}`` and ``output {title, output,
  metadata}``: every call whose tool returned. A shell command that exits non-zero still returns:
  ``metadata.exit`` holds its code, so the call is read as failed (``exit_code_N``).
- A tool that throws (a missing folder, a refused edit) never reaches ``tool.execute.after``; it
  comes as the ``event`` ``message.part.updated`` whose tool part has ``state.status = "error"``
  and the error text. Our own abort's parts (``Tool execution aborted``) are not calls of the turn.
- ``session.idle`` (the model ended its turn) closes the turn; ``session.deleted`` ends the session,
  and so does the process's exit, which the bridge reports as ``{"hook": "exit", "sessionID": …}``
  for each session it saw (``opencode run`` says nothing else when it is done).

No call carries its duration through ``tool.execute.after``: such calls are read with no duration.
The bridge sends ``{"hook": "tool.execute.after", "input": …, "output": …}`` or ``{"hook":
"event", "event": …}``, and ``cwd``. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from otel_toolchain.errors import BadRequest
from otel_toolchain.hooks.session import CALL, SESSION_END, TURN_END, HookEvent, HookReader, hook_call, session_of

__all__ = ["READER", "read_event"]

_AGENT: Final = "opencode"
_OUR_ABORT: Final = "Tool execution aborted"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) or value is None else str(value)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadRequest(f"opencode hook payload: {where} is not an object")
    return value


def _after(payload: Mapping[str, Any], now_ns: int) -> HookEvent:
    given = _mapping(payload.get("input"), "input")
    output = _mapping(payload.get("output") or {}, "output")
    metadata = output.get("metadata")
    exit_code = metadata.get("exit") if isinstance(metadata, Mapping) else None
    failed = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
    call = hook_call(given.get("tool"), given.get("args"), _text(output.get("output")), failed=failed,
                     error_type=f"exit_code_{exit_code}" if failed else None, call_id=given.get("callID"),
                     cwd=payload.get("cwd"), start_ns=now_ns, end_ns=now_ns)
    return HookEvent(session_of(given.get("sessionID"), _AGENT, "input.sessionID"), CALL, "tool.execute.after", call)


def _times_ns(times: Any, now_ns: int) -> tuple[int, int]:
    """A part's ``{start, end}`` (epoch milliseconds) in nanoseconds; ``now_ns`` twice without them."""
    start, end = (times.get("start"), times.get("end")) if isinstance(times, Mapping) else (None, None)
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end:
        return start * 1_000_000, end * 1_000_000
    return now_ns, now_ns


def _failed_part(part: Mapping[str, Any], cwd: Any, now_ns: int) -> HookEvent | None:
    state = part.get("state")
    if not isinstance(state, Mapping) or state.get("status") != "error" or state.get("error") == _OUR_ABORT:
        return None
    start_ns, end_ns = _times_ns(state.get("time"), now_ns)
    call = hook_call(part.get("tool"), state.get("input"), _text(state.get("error")), failed=True,
                     error_type="tool_error", call_id=part.get("callID"), cwd=cwd, start_ns=start_ns, end_ns=end_ns)
    return HookEvent(session_of(part.get("sessionID"), _AGENT, "part.sessionID"), CALL, "tool.execute.after", call)


def _event(payload: Mapping[str, Any], now_ns: int) -> HookEvent | None:
    event = _mapping(payload.get("event"), "event")
    properties = event.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    kind = event.get("type")
    if kind == "message.part.updated":
        part = properties.get("part")
        if not isinstance(part, Mapping) or part.get("type") != "tool":
            return None
        return _failed_part(part, payload.get("cwd"), now_ns)
    if kind == "session.idle":
        return HookEvent(session_of(properties.get("sessionID"), _AGENT, "properties.sessionID"), TURN_END, kind)
    if kind == "session.deleted":
        info = properties.get("info")
        session = info.get("id") if isinstance(info, Mapping) else None
        return HookEvent(session_of(session, _AGENT, "properties.info.id"), SESSION_END, kind)
    return None


def read_event(payload: Mapping[str, Any], now_ns: int) -> HookEvent | None:
    """The event a bridge payload is; None for OpenCode events the chain does not act on."""
    hook = payload.get("hook")
    if hook == "tool.execute.after":
        return _after(payload, now_ns)
    if hook == "event":
        return _event(payload, now_ns)
    if hook == "exit":  # the bridge's own: OpenCode exited, and with it every session it ran
        return HookEvent(session_of(payload.get("sessionID"), _AGENT, "sessionID"), SESSION_END, "exit")
    raise BadRequest(f"opencode hook payload: unknown hook {hook!r}")


READER: Final = HookReader(_AGENT, read_event)
