"""Per-turn measures of a run's neutral events, by repeat_guard's own rule and no spans.

A turn's calls are counted in the order they finish, as the chain sees them. Repetition is
measured by :class:`~otel_toolchain.plugins.repeat_guard.RepeatGuard` itself: each call goes
through the guard's own :class:`~otel_toolchain.plugins.repeat_guard.RepeatCounter`, so "the same call" (tool, parsed
arguments, cwd, result, failure) and "a cycle repeated n times" mean exactly what they mean to
the guard, and ``stop_at`` is the call at which the manifest's guard would have stopped the turn.
The per-period figures read the guard's run counters the way the guard reads them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from otel_toolchain.calls import ToolCall
from otel_toolchain.harnesses.events import BadLine, Event, Retry, ToolFinished, ToolStarted, TurnEnded, TurnStarted
from otel_toolchain.plugins._polls import cycle_key, is_poll
from otel_toolchain.plugins.repeat_guard import RepeatCounter, RepeatGuard

__all__ = ["RunMeter", "TurnFigures"]


@dataclass(slots=True)
class TurnFigures:
    """What one turn did, in the figures ``analyze`` reports."""

    source: str
    turn: int
    """1-based number of the turn in its run."""
    harness: str
    session_id: str | None = None
    line_no: int = 0
    calls: int = 0
    failed: int = 0
    retries: int = 0
    longest_fail_streak: int = 0
    by_period: list[int] = field(default_factory=list)
    """Most repetitions of a cycle of each period (index 0: period 1, the longest run of identical calls)."""
    loop_by_period: list[int] = field(default_factory=list)
    """As ``by_period``, for cycles with a call that is no poll (what per-period ``limits`` stop)."""
    poll_peak: int = 0
    """Most repetitions of a cycle made only of polls (what ``poll_limit`` stops)."""
    peak: int = 0
    """Most repetitions of any cycle: the turn is stopped by every limit up to this."""
    peak_period: int = 0
    peak_at: int = 0
    """The call at which the peak was reached."""
    peak_cycle: str = ""
    """The peak's cycle as ``tool (class) -> …``."""
    polling: bool = False
    """The peak's cycle is all polls (waiting for something whose output had not changed yet)."""
    stop_at: int | None = None
    """The call at which the manifest's repeat_guard stops the turn; None if it never does."""
    content: bool = True
    """False when the calls carried no arguments or results (an OTLP file without content)."""
    recorded_stop: bool = False
    """The run itself records that the chain stopped this turn (shadow stops included)."""
    label: str | None = None
    """``healthy`` or ``wedged`` once labelled."""

    @property
    def key(self) -> str:
        return f"{self.source}#{self.turn}"


class _TurnState:
    __slots__ = ("cycle", "fig", "guard_state", "polls", "streak")

    def __init__(self, fig: TurnFigures, guard: RepeatGuard) -> None:
        self.fig = fig
        self.guard_state = RepeatCounter(guard.max_period, guard.identity)
        self.cycle: list[ToolCall] = []
        """The calls of the peak's cycle."""
        self.streak = 0
        self.polls: deque[bool] = deque(maxlen=guard.max_period)
        """Whether each of the last calls is a poll."""


class RunMeter:
    """Turns one run's events into :class:`TurnFigures`, a turn at a time; memory is per open turn."""

    def __init__(self, guard: RepeatGuard, *, limit: int | None, source: str, harness: str) -> None:
        self.guard = guard
        self.limit = limit
        self.source = source
        self.harness = harness
        self.bad_lines = 0
        self._turns = 0
        self._open: _TurnState | None = None

    def feed(self, events: Iterable[Event]) -> Iterator[TurnFigures]:
        """The figures of each turn the events end, in order; the run's last turn ends with the events."""
        for event in events:
            kind = type(event)
            if kind is ToolStarted:
                continue  # the chain sees a call when it finishes
            if kind is ToolFinished:
                assert isinstance(event, ToolFinished)
                self._call(event)
            elif isinstance(event, TurnStarted):
                yield from self._close()
                self._begin(event.harness, event.session_id, event.line_no)
            elif isinstance(event, TurnEnded):
                if self._open is not None and event.session_id and not self._open.fig.session_id:
                    self._open.fig.session_id = event.session_id
                yield from self._close()
            elif isinstance(event, Retry):
                self._ensure().fig.retries += 1
            elif isinstance(event, BadLine):
                self.bad_lines += 1
        yield from self._close()

    def _begin(self, harness: str, session_id: str | None, line_no: int) -> _TurnState:
        self._turns += 1
        periods = self.guard.max_period
        fig = TurnFigures(self.source, self._turns, harness, session_id, line_no, by_period=[0] * periods,
                          loop_by_period=[0] * periods)
        self._open = _TurnState(fig, self.guard)
        return self._open

    def _ensure(self) -> _TurnState:
        return self._open if self._open is not None else self._begin(self.harness, None, 0)

    def _close(self) -> Iterator[TurnFigures]:
        if self._open is not None:
            state, self._open = self._open, None
            _describe_peak(state.fig, state.cycle)
            yield state.fig

    def _call(self, event: ToolFinished) -> None:
        state = self._ensure()
        fig = state.fig
        fig.calls += 1
        call = ToolCall(event.tool, event.arguments, event.result, event.failed, event.error_type, event.call_id,
                        event.cwd, event.start_ns, event.end_ns)
        self._count(state, call)

    def _count(self, state: _TurnState, call: ToolCall) -> None:
        fig = state.fig
        if call.failed:
            fig.failed += 1
            state.streak += 1
            fig.longest_fail_streak = max(fig.longest_fail_streak, state.streak)
        else:
            state.streak = 0
        guard_state = state.guard_state
        period, repeats = guard_state.add(call)
        state.polls.append(is_poll(call.tool, call.parsed_arguments))
        index = guard_state.calls
        by_period, loops = fig.by_period, fig.loop_by_period
        if index <= len(by_period):  # a cycle of p calls is there once from the p-th call on
            by_period[index - 1] = max(by_period[index - 1], 1)
        if any(guard_state.runs):
            polls = list(state.polls)
            for slot, run in enumerate(guard_state.runs):
                reached = (run + slot + 1) // (slot + 1)  # as RepeatGuard reads its run counters
                by_period[slot] = max(by_period[slot], reached)
                if run and all(polls[-slot - 1:]):  # the cycle ending here is all polls: poll_limit's
                    fig.poll_peak = max(fig.poll_peak, reached)
                elif run:
                    loops[slot] = max(loops[slot], reached)
        if repeats > fig.peak:
            fig.peak, fig.peak_period, fig.peak_at = repeats, period, index
            state.cycle = list(guard_state.recent)[-period:]
        if fig.stop_at is None and self.limit is not None and repeats >= self.limit:
            fig.stop_at = index


def _describe_peak(fig: TurnFigures, calls: list[ToolCall]) -> None:
    """Fill in the peak's cycle text and whether it is all polls, from the cycle's calls."""
    described = [(call.tool, call.arguments if call.arguments is not None else {}) for call in calls]
    fig.peak_cycle = cycle_key(described)
    fig.polling = bool(described) and all(is_poll(tool, arguments) for tool, arguments in described)
