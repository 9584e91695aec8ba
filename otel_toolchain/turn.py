"""One turn's state inside a chain, and what plugins may do to it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["Turn"]

_T = TypeVar("_T")


class Turn:
    """A turn (one agent run) as the chain tracks it, keyed by its trace id and span id.

    Plugins read ``calls``, ``retries`` and ``stopped``, keep per-turn state with ``state_of``, and
    act through ``stop``, ``nudge`` and ``report``; the chain turns those into span status, events,
    metrics and listener calls. ``lock`` serialises the hooks of this turn (re-entrant, so a listener
    may record on the same turn).
    """

    __slots__ = (
        "_sink", "_states", "agent", "calls", "closed", "is_agent", "lock", "reports", "retries", "shadow_stopped",
        "span", "span_id", "stopped", "trace_id",
    )

    def __init__(
        self,
        trace_id: int,
        span_id: int,
        *,
        is_agent: bool,
        agent: str | None,
        span: Span | None,
        sink: TurnSink,
    ) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.is_agent = is_agent
        self.agent = agent
        self.span = span
        """The live turn span, while it is live; status and events of a stop go on it."""
        self.calls = 0
        self.retries = 0
        self.closed = False
        """The turn span has ended; a call that still arrives belongs to a turn already reported."""
        self.stopped: StopSignal | None = None
        self.shadow_stopped: StopSignal | None = None
        self.reports: list[TurnReport] = []
        self.lock = threading.RLock()
        self._states: dict[int, Any] = {}
        self._sink = sink

    @property
    def key(self) -> tuple[int, int]:
        return (self.trace_id, self.span_id)

    def state_of(self, owner: object, factory: Callable[[], _T]) -> _T:
        """The state ``owner`` keeps for this turn, made by ``factory()`` on first use."""
        state: _T | None = self._states.get(id(owner))
        if state is None:
            state = self._states[id(owner)] = factory()
        return state

    def stop(self, signal: StopSignal) -> None:
        """End the turn (or, for a shadow verdict, only record that it would have been ended).

        Only the first enforced signal of a turn reaches listeners; later ones are dropped.
        """
        self._sink.stop(self, signal)

    def nudge(self, signal: NudgeSignal) -> None:
        """Ask the harness to redirect the agent."""
        self._sink.nudge(self, signal)

    def report(self, plugin: str, label: str, value: dict[str, Any]) -> TurnReport:
        """Hand an end-of-turn report to the chain's report listeners."""
        report = TurnReport(plugin, label, self.trace_id, self.span_id, value)
        self.reports.append(report)
        self._sink.report(self, report)
        return report


class TurnSink:
    """What a Turn reports to: the chain. Listed here so plugins can be tested with a fake one."""

    def stop(self, turn: Turn, signal: StopSignal) -> None:
        if signal.shadow:
            turn.shadow_stopped = turn.shadow_stopped or signal
        elif turn.stopped is None:
            turn.stopped = signal

    def nudge(self, turn: Turn, signal: NudgeSignal) -> None:
        """Nudges go nowhere unless a chain is listening."""

    def report(self, turn: Turn, report: TurnReport) -> None:
        """Reports stay on the turn unless a chain is listening."""
