"""Distributions across turns, kept in constant memory: value counts, and a few turns worth listing.

Per-turn figures are small integers, so a histogram (value -> turns) holds any number of turns in
the room of its distinct values; percentiles and "how many turns would limit L stop" are read off
it exactly. The turns ``analyze`` lists by name (the most repetitive, the labelled ones nearest the
boundary) are kept in bounded heaps. Memory therefore stays flat however many turns are read.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from typing import Final

from otel_toolchain.analyze.measure import TurnFigures

__all__ = ["FIGURES", "Aggregate", "Histogram", "TopTurns"]

FIGURES: Final = ("calls", "identical_in_a_row", "repeats", "longest_fail_streak", "retries")
GROUPS: Final = ("healthy", "wedged", "unlabelled")
"""The figures every turn gets a distribution of (``repeats``: most repetitions of any cycle)."""
QUANTILES: Final = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))


class Histogram:
    """How many turns had each value of one figure."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.total = 0

    def add(self, value: int, times: int = 1) -> None:
        self.counts[value] += times
        self.total += times

    def percentile(self, share: float) -> int:
        """The nearest-rank percentile: the smallest value at least ``share`` of the turns do not exceed."""
        if not self.total:
            return 0
        rank = max(1, math.ceil(share * self.total))
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen >= rank:
                return value
        return max(self.counts)

    @property
    def max(self) -> int:
        return max(self.counts) if self.counts else 0

    @property
    def min(self) -> int:
        return min(self.counts) if self.counts else 0

    def at_least(self, value: int) -> int:
        """Turns whose figure is ``value`` or more: for ``repeats``, the turns limit ``value`` stops."""
        return sum(count for seen, count in self.counts.items() if seen >= value)

    def summary(self) -> dict[str, int]:
        """p50, p90, p99 and max."""
        return {**{name: self.percentile(share) for name, share in QUANTILES}, "max": self.max}


class TopTurns:
    """The ``size`` turns with the highest (or, ``lowest=True``, lowest) ``peak``, first seen first on ties."""

    def __init__(self, size: int, *, lowest: bool = False) -> None:
        self.size = size
        self.lowest = lowest
        self._heap: list[tuple[int, int, TurnFigures]] = []
        self._order = itertools.count()

    def add(self, fig: TurnFigures) -> None:
        key = -fig.peak if self.lowest else fig.peak
        entry = (key, -next(self._order), fig)
        if len(self._heap) < self.size:
            heapq.heappush(self._heap, entry)
        elif entry[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)

    def turns(self) -> list[TurnFigures]:
        """Most extreme first."""
        return [fig for _, _, fig in sorted(self._heap, key=lambda entry: entry[:2], reverse=True)]


class Aggregate:
    """Everything ``analyze`` reports across turns; see the module docstring."""

    def __init__(self, max_period: int, *, listed: int = 20) -> None:
        self.max_period = max_period
        self.runs = 0
        self.calls = 0
        self.failed = 0
        self.bad_lines = 0
        self.without_content = 0
        self.inputs: Counter[str] = Counter()
        self.figures = {name: Histogram() for name in FIGURES}
        self.by_period = [Histogram() for _ in range(max_period)]
        self.polling = Histogram()
        self.polling_groups: dict[str, Histogram] = {}
        self.labelled = {"healthy": Histogram(), "wedged": Histogram()}
        self.top = TopTurns(listed)
        self.top_healthy = TopTurns(listed)
        self.low_wedged = TopTurns(listed, lowest=True)
        self.unlabelled = Histogram()
        self.loops = {group: [Histogram() for _ in range(max_period)] for group in GROUPS}
        """Per label group and period, the turns by their most repetitions of a cycle that is no poll."""
        self.poll_peaks = {group: Histogram() for group in GROUPS}
        """Per label group, the turns by their most repetitions of a cycle made only of polls."""

    @property
    def turns(self) -> int:
        return self.figures["calls"].total

    def add(self, fig: TurnFigures) -> None:
        """Count a turn in (whatever its label, which :meth:`label` adds)."""
        self.calls += fig.calls
        self.failed += fig.failed
        self.without_content += not fig.content
        values = (fig.calls, fig.by_period[0] if fig.by_period else 0, fig.peak, fig.longest_fail_streak, fig.retries)
        for name, value in zip(FIGURES, values, strict=True):
            self.figures[name].add(value)
        for histogram, value in zip(self.by_period, fig.by_period, strict=True):
            histogram.add(value)
        if fig.polling and fig.peak > 1:
            self.polling.add(fig.peak)
            self.polling_groups.setdefault(fig.peak_cycle, Histogram()).add(fig.peak)
        self.top.add(fig)

    def label(self, fig: TurnFigures, label: str | None) -> None:
        """Note a turn's label (``healthy``, ``wedged``, or None for an unlabelled turn)."""
        fig.label = label
        group = label or "unlabelled"
        for histogram, value in zip(self.loops[group], fig.loop_by_period, strict=False):  # figures made by hand: none
            histogram.add(value)
        self.poll_peaks[group].add(fig.poll_peak)
        if label is None:
            self.unlabelled.add(fig.peak)
            return
        self.labelled[label].add(fig.peak)
        (self.top_healthy if label == "healthy" else self.low_wedged).add(fig)
