"""``repeat_guard``: stop the turn when the agent goes round the same cycle of calls too many times.

The rule (the seed's): a cycle is one call, or two or three calls taking turns (up to
``max_period``). Two calls are the same when :class:`~otel_toolchain.identity.Identity` says so
(tool, arguments less annotation fields, working directory, result with a failure's volatile
tokens masked, failure). The turn is stopped at the call that completes the limit-th repetition
of a cycle; when several periods get there on the same call, the shortest is reported.

Limits count repetitions of the cycle, not calls: period 2 at limit 25 stops at the 50th call.
``limit`` applies to every period; ``limits`` sets it per period (``{1 = 4, 2 = 3, 3 = 3}``
reacts as early as the quickest peers); ``poll_limit`` replaces the period's limit for a cycle
made only of polls (sleep, ``tail``, BashOutput/TaskOutput, an empty ``write_stdin``: see
``_polls``), so waiting gets more room than looping.

No stop without evidence: a cycle with a call whose content the chain never saw (an
instrumentation with content capture off) could be a poll whose output changes; its verdict is
shadow-only (counted and shown, sent to no listener), whatever the mode.

Incrementally, per period p the guard counts how many calls in a row matched the call p places
before them (``runs[p]``); the last ``runs[p] + p`` calls are then the same p-call block repeated,
and ``(runs[p] + p) // p`` complete repetitions have been made. That is O(max_period) per call, and
no comparison at all for a call that did not fail and whose result none of the last calls had.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from opentelemetry.metrics import CallbackOptions, Observation
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from otel_toolchain import semconv
from otel_toolchain._telemetry import Telemetry
from otel_toolchain.identity import UNKNOWN_TOOL, Identity, IdentityKey, same
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins._polls import is_poll
from otel_toolchain.signals import CycleCall, NudgeSignal, StopSignal

if TYPE_CHECKING:
    from otel_toolchain.calls import ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["RepeatCounter", "RepeatGuard", "RepeatGuardConfig"]

STOP_CODE = "repeated_cycle"
_NO_CONTENT = "a call of the cycle carried no arguments or results, so a changing poll cannot be told from a loop"


class RepeatGuardConfig(BaseModel):
    """Settings of ``repeat_guard`` as the manifest gives them (strictly typed: no ``"25"`` or ``true``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    limit: int = Field(ge=1, le=1_000_000, description="Repetitions of a cycle that stop the turn (required).")
    max_period: int = Field(default=3, ge=1, le=16, description="Longest cycle, in calls, that counts.")
    limits: dict[int, int] = Field(default_factory=dict, description="Per period, its own limit.")
    poll_limit: int | None = Field(default=None, ge=1, le=1_000_000,
                                   description="The limit of a cycle made only of polls.")
    mode: Literal["enforce", "shadow"] = "enforce"
    nudge_at: int | None = Field(default=None, ge=1, description="Repetitions at which to nudge, once per streak.")
    ignore_args: dict[str, list[str]] = Field(
        default_factory=dict, description="Per tool, more argument fields left out of a call's identity.")
    mask_failures: bool = Field(default=True, description="Mask volatile tokens of failed results.")
    unordered_failures: bool = Field(default=True, description="Compare a failed result's lines in any order.")

    @field_validator("limits", mode="before")
    @classmethod
    def _period_keys(cls, value: Any) -> Any:
        # TOML table keys are always strings: "1" = 4 names period 1.
        if isinstance(value, Mapping):
            return {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RepeatGuardConfig:
        for period, limit in self.limits.items():
            if not 1 <= period <= self.max_period:
                raise ValueError(f"limits: period {period} is not between 1 and max_period ({self.max_period})")
            if not 1 <= limit <= 1_000_000:
                raise ValueError(f"limits: the limit of period {period} must be between 1 and 1000000")
        lowest = min(self.limit_of(p) for p in range(1, self.max_period + 1))
        if self.nudge_at is not None and self.nudge_at >= lowest:
            raise ValueError(f"nudge_at ({self.nudge_at}) must be below every limit (the lowest is {lowest})")
        return self

    def limit_of(self, period: int) -> int:
        return self.limits.get(period, self.limit)


class RepeatCounter:
    """The rule, call by call, for one turn: how many times in a row a cycle has just repeated.

    ``add(call)`` returns the period with the most repetitions now and that count (the shortest
    period wins a tie). ``runs[p - 1]`` is how many calls in a row matched the call p places
    before them; ``recent``, ``results`` and ``keys`` hold the last ``max_period`` calls, their results
    and their identities.
    Not thread-safe: one per turn (the chain serialises a turn's hooks). Usable without a chain,
    as ``analyze`` does.
    """

    __slots__ = ("__weakref__", "_zeros", "best", "calls", "current", "identity", "keys", "marks", "max_period",
                 "recent", "results", "runs", "start_tokens", "starts")

    def __init__(self, max_period: int = 3, identity: Identity | None = None) -> None:
        self.max_period = max_period
        self.identity = identity or Identity()
        # Short lists trimmed by hand, not deques: an empty deque allocates a 64-slot block (about
        # 760 bytes), and every open turn holds four of these (bench_memory).
        self.recent: list[ToolCall] = []
        self.results: list[str | None] = []
        """The results of ``recent``, to tell at once a call whose result is like none of theirs."""
        self.keys: list[IdentityKey | None] = []
        """The identities of ``recent``, where one was needed (None until then)."""
        self.runs = [0] * max_period
        self._zeros = _zeros(max_period)
        self.starts = [0] * max_period
        """Per period, the start time (ns) of the first call of the current repeated block."""
        self.marks: list[int | None] = []
        """The turn's tokens after each of the last calls (see ``add``'s ``tokens``); empty while none are known."""
        self.start_tokens: list[int | None] = [None] * max_period
        """Per period, the turn's tokens before the first call of the current repeated block."""
        self.calls = 0
        self.current = 0
        """Repetitions of the best cycle after the last call."""
        self.best = 0
        """The most repetitions reached in the turn so far."""

    def add(self, call: ToolCall, tokens: int | None = None) -> tuple[int, int]:
        """Count ``call``; ``tokens``: the turn's tokens so far, where known (for a stop's cost)."""
        recent, results, result = self.recent, self.results, call[2]
        self.calls += 1
        key: IdentityKey | None = None
        if call[3] or result in results:
            best_period, best_repeats, key = self._compare(call)
        else:  # the usual call: it did not fail and no kept call had its result, so it repeats none of them
            best_period, best_repeats = 1, 1
            self.runs[:] = self._zeros
        recent.append(call)
        results.append(result)
        self.keys.append(key)
        if len(recent) > self.max_period:
            del recent[0], results[0], self.keys[0]
        if tokens is not None or self.marks:  # while no tokens are known, every mark would be None
            self._mark(tokens)
        self.current = best_repeats
        if best_repeats > self.best:  # noqa: PLR1730 (max() is a call on the hot path)
            self.best = best_repeats
        return best_period, best_repeats

    def _compare(self, call: ToolCall) -> tuple[int, int, IdentityKey | None]:
        """Compare ``call`` with each kept call, period by period: the best period, its repeats, ``call``'s
        identity if one was built."""
        recent, runs = self.recent, self.runs
        best_period, best_repeats = 1, 1
        tool, arguments, result, failed = call[0], call[1], call[2], call[3]
        key: IdentityKey | None = None
        for index in range(len(recent)):
            earlier = recent[-1 - index]
            # Most calls differ from the calls before them in tool or result: tell them apart without
            # building identities; build one only where normalising could make two calls the same.
            if earlier[0] != tool:
                runs[index] = 0
                continue
            same_result = earlier[2] == result  # compared once: results are the longest texts here
            if same_result and earlier[1] == arguments and earlier[6] == call[6] and earlier[3] == failed:
                match = arguments is not None or tool != UNKNOWN_TOOL  # a rebuilt call is never the same
            elif not same_result and not (failed and earlier[3]):
                match = False  # different results, not two failures: no mask can make them the same
            else:
                if key is None:
                    key = self.identity.key(call)
                match = same(self._key(index), key)
            if not match:
                runs[index] = 0
                continue
            if runs[index] == 0:
                self._start_block(index, earlier[7])
            runs[index] += 1
            repeats = (runs[index] + index + 1) // (index + 1)
            if repeats > best_repeats:  # strict: the shortest period wins a tie
                best_period, best_repeats = index + 1, repeats
        return best_period, best_repeats, key

    def _start_block(self, index: int, start_ns: int) -> None:
        """A repeated block of period ``index + 1`` starts: keep its start time and the tokens before it."""
        self.starts[index] = start_ns
        marks = self.marks  # the call before the block's first is index + 2 back (none: the turn start)
        self.start_tokens[index] = marks[-2 - index] if len(marks) >= index + 2 else None

    def _mark(self, tokens: int | None) -> None:
        """Keep ``tokens`` as the mark of the call just added, and the last ``max_period + 1`` marks."""
        marks = self.marks
        if not marks:  # the first tokens known: the calls kept before them had none
            marks.extend([None] * min(self.calls - 1, self.max_period + 1))
        marks.append(tokens)
        del marks[:-1 - self.max_period]

    def _key(self, back: int) -> IdentityKey:
        """The identity of the call ``back + 1`` places back, built on first use."""
        key = self.keys[-1 - back]
        if key is None:
            key = self.keys[-1 - back] = self.identity.key(self.recent[-1 - back])
        return key

    def identities(self, period: int) -> list[IdentityKey]:
        """The identities of the last ``period`` calls."""
        return [self._key(back) for back in range(period - 1, -1, -1)]

    def repeats(self, period: int) -> int:
        """Complete repetitions of the last ``period`` calls, as of the last call."""
        return (self.runs[period - 1] + period) // period if self.calls >= period else 0

    def loop_start(self, period: int) -> int:
        """1-based index of the first call of the current repeated block of ``period`` calls."""
        return self.calls - (self.runs[period - 1] + period) + 1

    def cycle(self, period: int) -> list[ToolCall]:
        return list(self.recent)[-period:]


@functools.cache
def _zeros(max_period: int) -> tuple[int, ...]:
    """``max_period`` zeros, one tuple shared by the counters of that period (resetting every run at once)."""
    return (0,) * max_period


def _spent(now: int | None, before: int | None) -> int | None:
    """Tokens used since ``before``; a harness that reports usage had used none before its first record."""
    return now - (before or 0) if now is not None else None


class _GuardState(RepeatCounter):
    __slots__ = ("nudged",)

    def __init__(self, max_period: int, identity: Identity) -> None:
        super().__init__(max_period, identity)
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
        *,
        limits: Mapping[int, int] | None = None,
        poll_limit: int | None = None,
        ignore_args: Mapping[str, list[str]] | None = None,
        mask_failures: bool = True,
        unordered_failures: bool = True,
    ) -> None:
        settings = RepeatGuardConfig(limit=limit, max_period=max_period, mode=mode, nudge_at=nudge_at,
                                     limits=dict(limits or {}), poll_limit=poll_limit,
                                     ignore_args=dict(ignore_args or {}), mask_failures=mask_failures,
                                     unordered_failures=unordered_failures)
        self.settings = settings
        self.limit = settings.limit
        self.max_period = settings.max_period
        self.mode = settings.mode
        self.nudge_at = settings.nudge_at
        self.poll_limit = settings.poll_limit
        self.period_limits = tuple(settings.limit_of(p) for p in range(1, self.max_period + 1))
        self._lowest = min(self.period_limits) if self.poll_limit is None else min(*self.period_limits,
                                                                                   self.poll_limit)
        self.identity = Identity({tool: set(fields) for tool, fields in settings.ignore_args.items()},
                                 mask_failures=settings.mask_failures,
                                 unordered_failures=settings.unordered_failures)
        self._open: weakref.WeakSet[_GuardState] = weakref.WeakSet()
        self._open_lock = threading.Lock()
        self._streaks = Telemetry.disabled().meter.create_histogram(semconv.METRIC_TURN_REPEAT_STREAK)

    def describe(self) -> dict[str, Any]:
        return {"limit": self.limit, "max_period": self.max_period, "limits": dict(self.settings.limits),
                "poll_limit": self.poll_limit, "mode": self.mode, "nudge_at": self.nudge_at,
                "ignore_args": dict(self.settings.ignore_args), "mask_failures": self.settings.mask_failures,
                "unordered_failures": self.settings.unordered_failures}

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
        state = turn.states.get(self)
        if state is None:
            state = turn.states[self] = self._new_state()
        period, repeats = state.add(call, turn.tokens)
        if repeats == 1:
            state.nudged = False  # the streak is broken: a new one may be nudged again
            if self._lowest > 1:
                return
        if self.nudge_at is not None and repeats >= self.nudge_at and not state.nudged:
            state.nudged = True
            turn.nudge(self._nudge(state, turn, period, repeats))
        if repeats >= self._lowest:
            self._judge(state, turn)

    def on_turn_end(self, turn: Turn) -> None:
        state = turn.state_of(self, self._new_state)
        self._streaks.record(state.best)
        with self._open_lock:
            self._open.discard(state)

    # -- the rule -------------------------------------------------------------------------------------
    def _judge(self, state: _GuardState, turn: Turn) -> None:
        """Stop the turn if a cycle has reached its limit: the shortest such period is the verdict."""
        for period in range(1, self.max_period + 1):
            repeats = state.repeats(period)
            if repeats < min(self.period_limits[period - 1], self.poll_limit or 1_000_000):
                continue
            cycle = state.cycle(period)
            limit = self.period_limits[period - 1]
            if self.poll_limit is not None and all(is_poll(c.tool, c.parsed_arguments) for c in cycle):
                limit = self.poll_limit
            if repeats < limit:
                continue
            blind = not all(c.has_content for c in cycle)
            shadow = self.mode == "shadow" or blind
            if (turn.shadow_stopped if shadow else turn.stopped) is None:
                turn.stop(self._verdict(state, turn, period, repeats, shadow=shadow, blind=blind))
            return

    def _new_state(self) -> _GuardState:
        state = _GuardState(self.max_period, self.identity)
        with self._open_lock:
            self._open.add(state)
        return state

    def _verdict(self, state: _GuardState, turn: Turn, period: int, repeats: int, *, shadow: bool,
                 blind: bool) -> StopSignal:
        cycle = state.cycle(period)
        keys = state.identities(period)
        ignored: set[str] = set()
        masks: dict[str, None] = {}
        for call in cycle:
            dropped, kinds = self.identity.normalised(call)
            ignored.update(dropped)
            masks.update(dict.fromkeys(kinds))
        tools = " -> ".join(c.tool for c in cycle)
        what = "call" if period == 1 else f"cycle of {period} calls"
        loop_start = state.loop_start(period)
        last = cycle[-1]
        return StopSignal(
            plugin=self.name,
            code=STOP_CODE,
            reason=f"the same {what} ({tools}) repeated {repeats} times in a row with the same results",
            trace_id=turn.trace_id,
            span_id=turn.span_id,
            period=period,
            repeats=repeats,
            at_call=turn.calls,
            cycle=tuple(CycleCall(c.tool, c.call_id, turn.digest(k)) for c, k in zip(cycle, keys, strict=True)),
            shadow=shadow,
            loop_start=loop_start,
            loop_calls=turn.calls - loop_start + 1,
            loop_seconds=max(0, last.end_ns - state.starts[period - 1]) / 1e9 if state.starts[period - 1] else 0.0,
            loop_tokens=_spent(turn.tokens, state.start_tokens[period - 1]),
            ignored_fields=tuple(sorted(ignored)),
            masked=bool(masks),
            masks=tuple(masks),
            note=_NO_CONTENT if blind and self.mode == "enforce" else "",
        )

    def _nudge(self, state: _GuardState, turn: Turn, period: int, repeats: int) -> NudgeSignal:
        tools = tuple(c.tool for c in state.cycle(period))
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
