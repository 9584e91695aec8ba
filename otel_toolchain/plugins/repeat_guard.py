"""``repeat_guard``: stop the turn when the agent goes round the same cycle of calls ``limit`` times.

The rule (the seed's): a cycle is one call, or two or three calls taking turns (up to
``max_period``). Two calls are the same when tool, arguments (canonical JSON), working directory,
result and failure all match, so a poll whose output changes is progress and the same command in
another directory is another call. The turn is stopped at the call that completes the ``limit``-th
repetition of a cycle; when several periods get there on the same call, the shortest is reported.

``limit`` counts repetitions of the cycle, not calls: period 2 at limit 25 stops at the 50th call.

Incrementally, per period p the guard counts how many calls in a row matched the call p places
before them (``runs[p]``); the last ``runs[p] + p`` calls are then the same p-call block repeated,
and ``(runs[p] + p) // p`` complete repetitions have been made. That is O(max_period) per call.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from opentelemetry.metrics import CallbackOptions, Observation
from pydantic import BaseModel, ConfigDict, Field, model_validator

from otel_toolchain import semconv
from otel_toolchain.plugin import Telemetry, ToolPlugin
from otel_toolchain.signals import CycleCall, NudgeSignal, StopSignal

if TYPE_CHECKING:
    from otel_toolchain.calls import ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["RepeatCounter", "RepeatGuard", "RepeatGuardConfig"]

STOP_CODE = "repeated_cycle"


class RepeatGuardConfig(BaseModel):
    """Settings of ``repeat_guard`` as the manifest gives them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: int = Field(ge=1, description="Repetitions of a cycle that stop the turn (required).")
    max_period: int = Field(default=3, ge=1, le=16, description="Longest cycle, in calls, that counts.")
    mode: Literal["enforce", "shadow"] = "enforce"
    nudge_at: int | None = Field(default=None, ge=1, description="Repetitions at which to nudge, once per streak.")

    @model_validator(mode="after")
    def _nudge_before_limit(self) -> RepeatGuardConfig:
        if self.nudge_at is not None and self.nudge_at >= self.limit:
            raise ValueError(f"nudge_at ({self.nudge_at}) must be below limit ({self.limit})")
        return self


class RepeatCounter:
    """The rule, call by call, for one turn: how many times in a row a cycle has just repeated.

    ``add(call)`` returns the period with the most repetitions now and that count (the shortest
    period wins a tie). ``runs[p - 1]`` is how many calls in a row matched the call p places
    before them; ``recent`` holds the last ``max_period`` calls. Not thread-safe: one per turn
    (the chain serialises a turn's hooks). Usable without a chain, as ``analyze`` does.
    """

    __slots__ = ("__weakref__", "best", "current", "max_period", "recent", "runs")

    def __init__(self, max_period: int = 3) -> None:
        self.max_period = max_period
        self.recent: deque[ToolCall] = deque(maxlen=max_period)
        self.runs = [0] * max_period
        self.current = 0
        """Repetitions of the best cycle after the last call."""
        self.best = 0
        """The most repetitions reached in the turn so far."""

    def add(self, call: ToolCall) -> tuple[int, int]:
        identity = call.identity
        recent, runs = self.recent, self.runs
        best_period, best_repeats = 1, 0
        for index in range(self.max_period):
            period = index + 1
            if len(recent) >= period and recent[-period].identity == identity:
                runs[index] += 1
            else:
                runs[index] = 0
            repeats = (runs[index] + period) // period if len(recent) + 1 >= period else 0
            if repeats > best_repeats:  # strict: the shortest period wins a tie
                best_period, best_repeats = period, repeats
        recent.append(call)
        self.current = best_repeats
        self.best = max(self.best, best_repeats)
        return best_period, best_repeats


class _GuardState(RepeatCounter):
    __slots__ = ("nudged",)

    def __init__(self, max_period: int) -> None:
        super().__init__(max_period)
        self.nudged = False


class RepeatGuard(ToolPlugin):
    """Stops a turn that repeats a cycle of calls; see the module docstring for the exact rule."""

    name: ClassVar[str] = "repeat_guard"
    Config: ClassVar[type[BaseModel]] = RepeatGuardConfig
    stop_codes: ClassVar[tuple[str, ...]] = (STOP_CODE,)

    def __init__(
        self,
        limit: int,
        max_period: int = 3,
        mode: Literal["enforce", "shadow"] = "enforce",
        nudge_at: int | None = None,
    ) -> None:
        settings = RepeatGuardConfig(limit=limit, max_period=max_period, mode=mode, nudge_at=nudge_at)
        self.limit = settings.limit
        self.max_period = settings.max_period
        self.mode = settings.mode
        self.nudge_at = settings.nudge_at
        self._open: weakref.WeakSet[_GuardState] = weakref.WeakSet()
        self._open_lock = threading.Lock()
        self._streaks = Telemetry.disabled().meter.create_histogram(semconv.METRIC_TURN_REPEAT_STREAK)

    def describe(self) -> dict[str, Any]:
        return {"limit": self.limit, "max_period": self.max_period, "mode": self.mode, "nudge_at": self.nudge_at}

    def setup(self, telemetry: Telemetry) -> None:
        meter = telemetry.meter
        self._streaks = meter.create_histogram(
            semconv.METRIC_TURN_REPEAT_STREAK, unit="{repeat}",
            description="Most repetitions of one cycle of calls in a turn.",
            explicit_bucket_boundaries_advisory=list(semconv.COUNT_BUCKETS),
        )
        meter.create_observable_gauge(
            semconv.METRIC_OPEN_REPEAT_STREAK, [self._observe_open], unit="{repeat}",
            description="Highest current repetition count among open turns (early warning before a stop).",
        )
        meter.create_observable_gauge(
            semconv.METRIC_REPEAT_LIMIT, [self._observe_limit], unit="{repeat}",
            description="The repeat_guard limit, to compare the open streak with.",
        )

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        state = turn.state_of(self, self._new_state)
        period, repeats = self._advance(state, call)
        if self.nudge_at is not None and repeats >= self.nudge_at and not state.nudged:
            state.nudged = True
            turn.nudge(self._nudge(state, turn, period, repeats))
        already = turn.shadow_stopped if self.mode == "shadow" else turn.stopped
        if repeats >= self.limit and already is None:
            turn.stop(self._verdict(state, turn, call, period, repeats))

    def on_turn_end(self, turn: Turn) -> None:
        state = turn.state_of(self, self._new_state)
        self._streaks.record(state.best)
        with self._open_lock:
            self._open.discard(state)

    # -- the rule -------------------------------------------------------------------------------------
    def _advance(self, state: _GuardState, call: ToolCall) -> tuple[int, int]:
        """Count ``call`` in; return the period with the most repetitions now, and that count."""
        period, repeats = state.add(call)
        if repeats <= 1:
            state.nudged = False  # the streak is broken: a new one may be nudged again
        return period, repeats

    def _new_state(self) -> _GuardState:
        state = _GuardState(self.max_period)
        with self._open_lock:
            self._open.add(state)
        return state

    def _verdict(self, state: _GuardState, turn: Turn, call: ToolCall, period: int, repeats: int) -> StopSignal:
        cycle = tuple(CycleCall(c.tool, c.call_id, c.digest) for c in list(state.recent)[-period:])
        tools = " -> ".join(c.tool for c in cycle)
        what = "call" if period == 1 else f"cycle of {period} calls"
        return StopSignal(
            plugin=self.name,
            code=STOP_CODE,
            reason=f"the same {what} ({tools}) repeated {repeats} times in a row with the same results",
            trace_id=turn.trace_id,
            span_id=turn.span_id,
            period=period,
            repeats=repeats,
            at_call=call.index,
            cycle=cycle,
            shadow=self.mode == "shadow",
        )

    def _nudge(self, state: _GuardState, turn: Turn, period: int, repeats: int) -> NudgeSignal:
        tools = tuple(c.tool for c in list(state.recent)[-period:])
        # Name the tools, never the arguments: echoing a repeated command back tends to reinforce it.
        message = (
            f"The last {repeats * period} tool calls ({' -> '.join(tools)}) repeated with identical results, "
            "so repeating them again will not make progress. Change approach: inspect the situation "
            "differently, or stop and report what is blocking you."
        )
        return NudgeSignal(self.name, message, turn.trace_id, turn.span_id, period, repeats, tools)

    # -- observable gauges (called on the metric reader's thread) --------------------------------------
    def _observe_open(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._open_lock:
            current = max((state.current for state in self._open), default=0)
        return [Observation(current, {semconv.PLUGIN: self.name})]

    def _observe_limit(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(self.limit, {semconv.PLUGIN: self.name})]
