"""What the framework integrations share: finding the stop behind a framework's exception.

Frameworks wrap an exception raised from their callbacks (Strands: ``EventLoopException`` with
the callback's exception as ``__cause__``; CrewAI: ``HookAborted``); the caller should get
:class:`~otel_toolchain.TurnStopped` itself. Pure functions; no locks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_toolchain.errors import TurnStopped

if TYPE_CHECKING:
    from otel_toolchain.integrations.guard import Guard, Watch

__all__ = ["stop_behind", "stopped"]


def stop_behind(exc: BaseException) -> TurnStopped | None:
    """The TurnStopped in ``exc``'s chain of causes and contexts, if there is one (cycles are cut)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, TurnStopped):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def stopped(guard: Guard, watch: Watch) -> TurnStopped | None:
    """The stop delivered to ``watch`` (the run's context) or to the current turn, as an exception."""
    signal = watch.stop or guard.stop_signal()
    return TurnStopped(signal) if signal is not None else None
