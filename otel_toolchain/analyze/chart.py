"""A compact terminal chart of turns by their peak repeats, with the limits marked; no dependencies.

::

      repeats   turns
            1  ████████████████████████    201  healthy 191
            2                                0
          3-4  ██████                        2  polling 2
          7-9                                0  ◀ suggested 8
        25-39  ███                           1  wedged 1  ◀ chain limit 25

Bars are on a log scale (a wedge or two must show beside hundreds of healthy turns); the counts
are exact. A row says how many of its turns are labelled and how many are polls.
"""

from __future__ import annotations

import math
from typing import Final

from otel_toolchain.analyze.stats import Histogram

__all__ = ["BUCKETS", "bucket_of", "render_chart"]

BUCKETS: Final = ((0, 0), (1, 1), (2, 2), (3, 4), (5, 6), (7, 9), (10, 14), (15, 24), (25, 39), (40, 99), (100, 249),
                  (250, 499), (500, 999), (1000, 1 << 62))
_WIDTH = 24


def bucket_of(value: int) -> int:
    """The index of the bucket ``value`` falls in."""
    for index, (low, high) in enumerate(BUCKETS):
        if low <= value <= high:
            return index
    return 0


def _label(low: int, high: int) -> str:
    if low == high:
        return str(low)
    return f"{low}+" if high >= 1 << 62 else f"{low}-{high}"


def _in(histogram: Histogram, low: int, high: int) -> int:
    return sum(count for value, count in histogram.counts.items() if low <= value <= high)


def render_chart(repeats: Histogram, *, healthy: Histogram, wedged: Histogram, polling: Histogram,
                 marks: dict[str, int | None]) -> list[str]:
    """The chart's lines: buckets from 1 up to the highest peak or mark; ``marks`` name limits to point at."""
    top = max([repeats.max, *(value for value in marks.values() if value)], default=1)
    first = 0 if repeats.counts.get(0) else 1
    last = bucket_of(max(top, 1))
    scale = math.log10(max(repeats.counts.values(), default=1) + 1)
    lines = ["  repeats   turns"]
    for low, high in BUCKETS[first: last + 1]:
        count = _in(repeats, low, high)
        bar = "█" * max(1 if count else 0, round(_WIDTH * math.log10(count + 1) / scale)) if scale else ""
        notes = [f"{name} {n}" for name, n in (("healthy", _in(healthy, low, high)), ("wedged", _in(wedged, low, high)),
                                               ("polling", _in(polling, low, high))) if n]
        pointers = [f"◀ {name} {value}" for name, value in marks.items() if value and low <= value <= high]
        line = f"  {_label(low, high):>7}  {bar:<{_WIDTH}} {count:>6}"
        line += f"  {', '.join(notes)}" if notes else ""
        line += f"  {'  '.join(pointers)}" if pointers else ""
        lines.append(line.rstrip())
    return lines
