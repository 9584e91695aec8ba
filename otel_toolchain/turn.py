"""One turn's state inside a chain, what plugins may do to it, and who hears of its verdicts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from otel_toolchain.identity import IdentityKey

__all__ = ["Turn", "TurnObserver", "TurnSink"]

_T = TypeVar("_T")


class TurnObserver:
    """Hears of one turn's verdicts as they happen: the adapter that opened the turn, usually.

    Called on the thread that handed the chain the call (or ended the turn); guarded like a
    listener, so an observer that raises is counted and never reaches the agent. No-ops here.
    """

    def on_stop(self, signal: StopSignal) -> None:
        """The turn was stopped (only the first enforced stop, never a shadow one)."""

    def on_nudge(self, signal: NudgeSignal) -> None:
        """A plugin asks the harness to redirect the agent."""

    def on_report(self, report: TurnReport) -> None:
        """A plugin's end-of-turn report."""


class Turn:
    """A turn (one agent run) as the chain tracks it, keyed by its trace id and span id.

    Plugins read ``calls`` (the number of calls so far, the current one included: its 1-based
    index), ``retries``, ``stopped`` and ``tags`` (what earlier plugins said of the current call),
    keep per-turn state with ``state_of`` (or ``states``, the dict behind it, on a hot path), and
    act through ``tag``, ``stop``, ``nudge`` and ``report``; the chain turns those into span
    attributes, status, events, metrics and observer calls. ``lock`` serialises the hooks of this
    turn (re-entrant, so a listener may record on the same turn).
    """

    __slots__ = (
        "_sink", "agent", "calls", "closed", "evicted", "is_agent", "lock", "nudges", "observer",
        "reports", "retries", "shadow_stopped", "span", "span_id", "states", "stopped", "tags", "tokens", "trace_id",
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
        observer: TurnObserver | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.is_agent = is_agent
        self.agent = agent
        self.span = span
        """The live turn span, while it is live; status and events of a stop go on it."""
        self.observer = observer
        self.calls = 0
        self.retries = 0
        self.tokens: int | None = None
        """Input and output tokens the turn has used so far, where the adapter knows (None: unknown)."""
        self.closed = False
        """The turn has ended; a call that still arrives belongs to a turn already reported."""
        self.evicted = False
        """The chain dropped the turn's state to stay within ``max_open_turns``; its calls are no longer run."""
        self.stopped: StopSignal | None = None
        self.shadow_stopped: StopSignal | None = None
        self.nudges: list[NudgeSignal] = []
        self.reports: list[TurnReport] = []
        self.tags: dict[str, str] = {}
        self.lock = threading.RLock()
        self.states: dict[object, Any] = {}
        """Per-turn state by owner (plugins hash by identity); :meth:`state_of` is the usual way in."""
        self._sink = sink

    @property
    def key(self) -> tuple[int, int]:
        return (self.trace_id, self.span_id)

    def state_of(self, owner: object, factory: Callable[[], _T]) -> _T:
        """The state ``owner`` keeps for this turn, made by ``factory()`` on first use."""
        state: _T | None = self.states.get(owner)
        if state is None:
            state = self.states[owner] = factory()
        return state

    def drop_states(self) -> None:
        """Forget every plugin's state (the turn was evicted, or has been reported)."""
        self.states.clear()

    def tag(self, key: str, value: str) -> None:
        """Say something of the current call: later plugins read it in ``tags``, and it goes on the
        call's span as ``otel_toolchain.tool.<key>``."""
        self.tags[key] = value

    def stop(self, signal: StopSignal) -> None:
        """End the turn (or, for a shadow verdict, only record that it would have been ended).

        Only the first enforced signal of a turn reaches listeners; later ones are dropped.
        """
        self._sink.stop(self, signal)

    def nudge(self, signal: NudgeSignal) -> None:
        """Ask the harness to redirect the agent."""
        self._sink.nudge(self, signal)

    def report(self, plugin: str, label: str, value: dict[str, Any]) -> TurnReport:
        """Hand an end-of-turn report to the chain."""
        report = TurnReport(plugin, label, self.trace_id, self.span_id, value)
        self.reports.append(report)
        self._sink.report(self, report)
        return report

    def digest(self, key: IdentityKey) -> str:
        """The keyed digest of a call's identity, as it may leave the process (see ``Toolchain(digest_key=)``)."""
        return self._sink.digest(key)


class TurnSink:
    """What a Turn reports to: the chain. Usable alone, so plugins can be tested without one."""

    def stop(self, turn: Turn, signal: StopSignal) -> None:
        if signal.shadow:
            turn.shadow_stopped = turn.shadow_stopped or signal
        elif turn.stopped is None:
            turn.stopped = signal

    def nudge(self, turn: Turn, signal: NudgeSignal) -> None:
        turn.nudges.append(signal)

    def report(self, turn: Turn, report: TurnReport) -> None:
        """Reports stay on the turn unless a chain is listening."""

    def digest(self, key: IdentityKey) -> str:
        from otel_toolchain.identity import Digester  # noqa: PLC0415 (only turns without a chain need it)

        return Digester(b"otel_toolchain-unkeyed").of_identity(key)
