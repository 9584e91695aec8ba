"""Claude Code's hook events read into the chain, and the chain's verdict as the hook's answer.

Events (Claude Code 2.1.332, tests/data/hooks/README.md):

- ``PostToolUse``: a finished call: ``tool_name``, ``tool_input``, ``tool_response``, ``tool_use_id``,
  ``duration_ms``. ``PostToolUseFailure`` comes instead for a failed call, with ``error``
  (``"Exit code 1\\n<stderr>"``): the failure and its text, which Claude Code's OTLP never sends.
- ``Stop``: the model ended its turn: the turn is closed (plugins report, and only here is what they
  report exported) and the next call opens a new one.
- ``SessionEnd``: the turn is closed and the session's state removed.

Each invocation is a fresh process: the turn's calls so far are kept in the session's state file
(:mod:`.state`) and run through a fresh chain before the new one, with no listener attached, so
plugin state is rebuilt exactly and only the new call's verdict is answered: a stop as
``{"continue": false, "stopReason": …}`` (the session ends, ``terminal_reason: hook_stopped``), a
nudge as ``additionalContext`` for the model. A stopped session answers every later call with the
same stop. Pure but for the state file; may block on its lock.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import BadRequest
from otel_toolchain.hooks.state import SessionState, locked_session
from otel_toolchain.identity import canonical_json
from otel_toolchain.manifest import Manifest
from otel_toolchain.signals import NudgeSignal, StopSignal

__all__ = ["CALL_EVENTS", "HookAnswer", "Reporting", "call_of", "handle_event", "trace_id_of"]

CALL_EVENTS: Final = ("PostToolUse", "PostToolUseFailure")
END_EVENTS: Final = ("Stop", "SessionEnd")
_EXIT: Final = re.compile(r"^Exit code (-?\d+)")


@dataclass(frozen=True)
class HookAnswer:
    """What the hook prints (None: nothing) and the stop it answers, if any."""

    output: dict[str, Any] | None
    stop: StopSignal | None = None


def trace_id_of(session_id: str) -> int:
    """The session id (a UUID) as a 128-bit trace id, so the hook's telemetry can be found by it."""
    digits = session_id.replace("-", "")
    if len(digits) != 32:
        return _hashed(session_id)
    try:
        return int(digits, 16) or 1
    except ValueError:
        return _hashed(session_id)


def _hashed(text: str) -> int:
    import hashlib  # noqa: PLC0415 (only for session ids that are not UUIDs)

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "big") or 1


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
    call_id = payload.get("tool_use_id")
    cwd = payload.get("cwd")
    return ToolCall(str(payload.get("tool_name") or "unknown"), payload.get("tool_input"), result, failed, error_type,
                    call_id if isinstance(call_id, str) else None, cwd if isinstance(cwd, str) else None, start,
                    now_ns)


def _row(call: ToolCall) -> list[Any]:
    return [call.tool, call.arguments, call.result, call.failed, call.error_type, call.call_id, call.cwd,
            call.start_ns, call.end_ns]


def _from_row(row: list[Any]) -> ToolCall | None:
    try:
        return ToolCall(*row[:9])
    except TypeError:
        return None


def _stop_answer(reason: str) -> dict[str, Any]:
    return {"continue": False, "stopReason": reason}


Reporting = Callable[[Toolchain], object]
"""Wires the chain that closes a turn to telemetry (``chain.install(...)``) before its calls are replayed."""


def handle_event(payload: Mapping[str, Any], manifest: Manifest, state_root: Path, *,
                 reporting: Reporting | None = None) -> HookAnswer:
    """Run one hook event through the session's chain; raises BadRequest on a payload without a session.

    ``reporting`` is called only when an end event closes a turn that made calls, with the chain
    that closes it, before the turn's calls are replayed through it: the one place where the
    plugins' telemetry (tool_stats' counts and end-of-turn event) is exported, once per turn. The
    chains that answer single calls are never wired, so nothing is counted twice. It runs under the
    session's lock: it may build exporters but should not wait on them.
    """
    session = payload.get("session_id")
    event = payload.get("hook_event_name")
    if not isinstance(session, str) or not session:
        raise BadRequest("hook payload has no session_id")
    if event not in CALL_EVENTS + END_EVENTS:
        return HookAnswer(None)  # an event this hook was not installed for: nothing to say
    with locked_session(state_root, session) as (state, _path):
        if event in END_EVENTS:
            _close(state, manifest, session, reporting)
            state.ended = event == "SessionEnd"
            return HookAnswer(None)
        if state.stopped is not None:
            return HookAnswer(_stop_answer(str(state.stopped.get("answer", "otel-toolchain: stopped"))))
        return _call(state, manifest, session, call_of(payload, time.time_ns()), str(event))


def _replayed(state: SessionState, manifest: Manifest, session: str,
              reporting: Reporting | None = None) -> tuple[Any, Any]:
    chain = manifest.toolchain()
    if reporting is not None:
        reporting(chain)
    turn = chain.open_turn(trace_id_of(session), state.turns + 1, agent="claude-code")
    for row in state.calls:
        call = _from_row(row)
        if call is not None:
            chain.tool_call(turn, call)
    return chain, turn


def _call(state: SessionState, manifest: Manifest, session: str, call: ToolCall, event: str) -> HookAnswer:
    chain, turn = _replayed(state, manifest, session)
    stops: list[StopSignal] = []
    nudges: list[NudgeSignal] = []
    chain.on_stop(stops.append)
    chain.on_nudge(nudges.append)
    chain.tool_call(turn, call)
    state.calls.append(_row(call))
    if stops:
        state.stopped = stops[0].to_dict() | {"answer": _reason(stops[0])}
        return HookAnswer(_stop_answer(_reason(stops[0])), stops[0])
    if nudges:
        return HookAnswer({"hookSpecificOutput": {"hookEventName": event, "additionalContext": nudges[-1].message}})
    return HookAnswer(None)


def _reason(stop: StopSignal) -> str:
    return f"otel-toolchain: stopped by {stop.plugin} at call {stop.at_call}: {stop.reason}"


def _close(state: SessionState, manifest: Manifest, session: str, reporting: Reporting | None) -> None:
    if state.calls:
        chain, turn = _replayed(state, manifest, session, reporting)
        chain.close_turn(turn)
    state.calls = []
    state.stopped = None
    state.turns += 1


def answer_json(answer: HookAnswer) -> str:
    """The line to print (empty when there is nothing to say)."""
    return json.dumps(answer.output) if answer.output is not None else ""
