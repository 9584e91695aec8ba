"""One agent session's chain between hook invocations, whatever agent sends the events.

Each invocation is a fresh process: the turn's calls so far are kept in the session's state file
(:mod:`.state`) and run through a fresh chain before the new one, with no listener attached, so
plugin state is rebuilt exactly and only the new call's verdict is answered. The answer has Claude
Code's hook shape for every agent (the OpenCode and Pi bridges read the same): a stop as
``{"continue": false, "stopReason": …}``, a nudge as ``hookSpecificOutput.additionalContext``. A
stopped session answers every later call with the same stop. An agent's events are read by its
:class:`HookReader` (:mod:`.claude_code`, :mod:`.opencode`, :mod:`.pi`). Pure but for the state
file; may block on its lock.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import BadRequest
from otel_toolchain.hooks.state import SessionState, locked_session
from otel_toolchain.manifest import Manifest
from otel_toolchain.signals import NudgeSignal, StopSignal
from otel_toolchain.turn import Turn

__all__ = ["HookAnswer", "HookEvent", "HookReader", "Kind", "Reporting", "answer_json", "handle_event",
           "hook_call", "session_of", "trace_id_of"]

Kind = Literal["call", "turn_end", "session_end"]
CALL: Final = "call"
TURN_END: Final = "turn_end"
SESSION_END: Final = "session_end"


@dataclass(frozen=True)
class HookEvent:
    """One event as the chain needs it: its session, what it is, and the finished call it reports.

    ``kind``: ``call`` (``call`` is set), ``turn_end`` (the model ended its turn: the turn is closed,
    plugins report, the next call opens a new turn) or ``session_end`` (the same, and the session's
    state is removed). ``name`` is the agent's own name for the event, echoed in a nudge's answer.
    """

    session: str
    kind: Kind
    name: str
    call: ToolCall | None = None


@dataclass(frozen=True)
class HookReader:
    """How one agent's hook events are read: ``read(payload, now_ns)`` gives the event, or None for one
    this hook does not act on; it raises BadRequest for a payload without a session (:func:`session_of`)."""

    agent: str
    read: Callable[[Mapping[str, Any], int], HookEvent | None]


@dataclass(frozen=True)
class HookAnswer:
    """What the hook prints (None: nothing), the stop it answers, if any, the session's id, and whether the
    event closed a turn."""

    output: dict[str, Any] | None
    stop: StopSignal | None = None
    session: str = ""
    closed: bool = False


Reporting = Callable[[Toolchain], object]
"""Wires the chain that closes a turn to telemetry (``chain.install(...)``) before its calls are replayed."""


def hook_call(tool: Any, arguments: Any, result: str | None, *, failed: bool, error_type: str | None, call_id: Any,
              cwd: Any, start_ns: int, end_ns: int) -> ToolCall:
    """The ToolCall a hook payload's fields describe: a tool without a name is ``unknown``, and an id or a
    folder that is not text is none (payloads are the agent's, and untrusted)."""
    return ToolCall(str(tool or "unknown"), arguments, result, failed, error_type,
                    call_id if isinstance(call_id, str) else None, cwd if isinstance(cwd, str) else None,
                    start_ns, end_ns)


def session_of(value: object, agent: str, field: str) -> str:
    """``value`` as a session id; BadRequest naming the agent and ``field`` when it is missing or not text."""
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{agent} hook payload has no {field}")
    return value


def trace_id_of(session_id: str) -> int:
    """The session id as a 128-bit trace id (a UUID's own digits, else a digest), so the hook's telemetry can
    be found by it."""
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


def handle_event(payload: Mapping[str, Any], reader: HookReader, manifest: Manifest, state_root: Path, *,
                 reporting: Reporting | None = None) -> HookAnswer:
    """Run one hook event through its session's chain; raises BadRequest (from ``reader``) on a bad payload.

    ``reporting`` is called only when an end event closes a turn that made calls, with the chain
    that closes it, before the turn's calls are replayed through it: the one place where the
    plugins' telemetry (tool_stats' counts and end-of-turn event) is exported, once per turn. The
    chains that answer single calls are never wired, so nothing is counted twice. It runs under the
    session's lock: it may build exporters but should not wait on them.
    """
    event = reader.read(payload, time.time_ns())
    if event is None:
        return HookAnswer(None)  # an event this hook does not act on: nothing to say
    with locked_session(state_root, event.session) as (state, _path):
        if event.kind != CALL or event.call is None:
            _close(state, manifest, event.session, reader.agent, reporting)
            # An end that arrives after the session's end (agents do not wait for each other's events)
            # finds a fresh state: nothing to keep, so nothing is written back.
            state.ended = event.kind == SESSION_END or state.turns == 0
            return HookAnswer(None, session=event.session, closed=True)
        if state.stopped is not None:
            answer = str(state.stopped.get("answer", "otel-toolchain: stopped"))
            return HookAnswer(_stop_answer(answer), session=event.session)
        if _seen(state, event.call.call_id):
            return HookAnswer(None, session=event.session)  # the same call handed over twice: counted once
        return _call(state, manifest, event, reader.agent)


def _seen(state: SessionState, call_id: str | None) -> bool:
    """A call of the open turn with this id was counted already (an agent, or a plugin of its, sent it again)."""
    return call_id is not None and any(len(row) > 5 and row[5] == call_id for row in state.calls)


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


def _replayed(state: SessionState, manifest: Manifest, session: str, agent: str,
              reporting: Reporting | None = None) -> tuple[Toolchain, Turn]:
    chain = manifest.toolchain()
    if reporting is not None:
        reporting(chain)
    if not state.span_id:
        state.span_id = secrets.randbits(64) or 1
    turn = chain.open_turn(trace_id_of(session), state.span_id, agent=agent)
    for row in state.calls:
        call = _from_row(row)
        if call is not None:
            chain.tool_call(turn, call)
    return chain, turn


def _call(state: SessionState, manifest: Manifest, event: HookEvent, agent: str) -> HookAnswer:
    assert event.call is not None  # checked by the caller
    chain, turn = _replayed(state, manifest, event.session, agent)
    stops: list[StopSignal] = []
    nudges: list[NudgeSignal] = []
    chain.on_stop(stops.append)
    chain.on_nudge(nudges.append)
    chain.tool_call(turn, event.call)
    state.calls.append(_row(event.call))
    if stops:
        state.stopped = stops[0].to_dict() | {"answer": _reason(stops[0])}
        return HookAnswer(_stop_answer(_reason(stops[0])), stops[0], event.session)
    if nudges:
        return HookAnswer({"hookSpecificOutput": {"hookEventName": event.name,
                                                  "additionalContext": nudges[-1].message}}, session=event.session)
    return HookAnswer(None, session=event.session)


def _reason(stop: StopSignal) -> str:
    return f"otel-toolchain: stopped by {stop.plugin} at call {stop.at_call}: {stop.reason}"


def _close(state: SessionState, manifest: Manifest, session: str, agent: str, reporting: Reporting | None) -> None:
    if not state.calls:
        return  # a turn without calls is no turn: nothing to close, nothing counted
    chain, turn = _replayed(state, manifest, session, agent, reporting)
    chain.close_turn(turn)
    state.calls = []
    state.stopped = None
    state.span_id = 0
    state.turns += 1


def answer_json(answer: HookAnswer) -> str:
    """The line to print (empty when there is nothing to say)."""
    return json.dumps(answer.output) if answer.output is not None else ""
