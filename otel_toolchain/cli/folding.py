"""Fold a turn's calls for display: a run of the same call, or of the same cycle of calls, becomes one group.

Pure functions over :class:`~otel_toolchain.outcome.CallRecord` lists; what counts as "the same"
is :meth:`CallRecord.same_as` (tool, class, command or digest, failure; calls with sub-calls never fold).
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_toolchain.outcome import CallRecord

__all__ = ["MAX_PERIOD", "Group", "fold"]

MAX_PERIOD = 3
"""The longest cycle folded, as ``repeat_guard``'s default ``max_period``."""


@dataclass(frozen=True)
class Group:
    """``calls`` (one cycle: a single call for a plain run) done ``repeats`` times in a row."""

    calls: tuple[CallRecord, ...]
    repeats: int
    first: int
    """The 1-based index of the group's first call (as the chain counted it)."""
    last: int
    """The index of its last call."""


def _repeats(calls: list[CallRecord], start: int, period: int) -> int:
    count = 1
    while start + (count + 1) * period <= len(calls) and all(
            calls[start + count * period + k].same_as(calls[start + k]) for k in range(period)):
        count += 1
    return count


def fold(calls: list[CallRecord]) -> list[Group]:
    """The calls as groups, in order; the shortest period that covers the most calls wins."""
    groups: list[Group] = []
    start = 0
    while start < len(calls):
        best_period, best_repeats = 1, 1
        for period in range(1, MAX_PERIOD + 1):
            if start + 2 * period > len(calls):
                break
            repeats = _repeats(calls, start, period)
            if repeats >= 2 and period * repeats > best_period * best_repeats:
                best_period, best_repeats = period, repeats
        end = start + best_period * best_repeats
        groups.append(Group(tuple(calls[start:start + best_period]), best_repeats, calls[start].index,
                            calls[end - 1].index))
        start = end
    return groups
