"""The limit that separates wedged turns from healthy ones, and the one to suggest inside that range.

A limit L stops a turn exactly when the turn's peak (most repetitions of one cycle) is L or more.
So every wedged turn is stopped by any L up to the mildest wedge's peak, and no healthy turn by
any L above the worst healthy peak: the separating range is ``[healthy peak + 1, wedged floor]``,
empty when a healthy turn repeats as much as a wedged one (then the overlapping turns are listed).

Inside the range the suggestion is the healthy peak plus 75 %, rounded up, and at least 8, kept
within the range: headroom for healthy turns not yet seen, which repeat a little more than the
worst seen so far, while a wedge is still stopped early, since every repeat before the stop is
wasted. That is how the seed's limit of 25 follows from its healthy peak of 14 (and it sits in the
seed's range 15 to 40). The floor of 8 comes from the seed's larger sample, where 7 of 999 healthy
turns made 6 identical calls in a row: a small sample without repetition does not show that
healthy work repeats that much, but it does; the floor yields only to the mildest wedge.
The margins say how far the suggestion is from either side: repeats above the worst healthy turn,
and repeats to spare below the mildest wedge.

With wedged turns labelled but no healthy ones, the unlabelled turns are presumed healthy (and
the report says so); with no labels at all nothing is suggested.

**Per-period limits and a poll limit** (:func:`suggest_periods`), now that results are compared:
for each period p, ``limits[p]`` is one more than the most repetitions of a p-call cycle that is
no poll in any healthy turn (the unlabelled ones when none is labelled), and never below the
early chain's :data:`EARLY_LIMITS` (4, 3, 3: where the quickest peers react; no need to react
earlier); ``poll_limit`` is one more than the healthy turns' most repeated all-poll cycle, at least
:data:`POLL_FLOOR` and at least every period's limit (waiting gets more room than looping). Each
limit comes with what it would have stopped: the turns, healthy, wedged and unlabelled, whose
figure reaches it. No headroom is added: with results compared, a healthy turn repeats a call
with the same result mostly while waiting, which ``poll_limit`` covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from otel_toolchain.analyze.measure import TurnFigures
from otel_toolchain.analyze.stats import Aggregate

__all__ = ["EARLY_LIMITS", "FLOOR", "HEADROOM", "POLL_FLOOR", "SEED_RANGE", "PeriodSuggestion", "Separation",
           "separate", "suggest_periods"]

HEADROOM: Final = 1.75
FLOOR: Final = 8
"""No suggestion below this unless a wedge forces it (see the module docstring)."""
SEED_RANGE: Final = (15, 40)
"""The limits that separated the seed's 1,198 turns; the default 25 sits in it."""
EARLY_LIMITS: Final = (4, 3, 3)
"""Per period (1, 2, 3; later periods take the last), the lowest limit suggested."""
POLL_FLOOR: Final = 25
"""The lowest poll limit suggested: the seed's limit, as waiting is no loop."""


@dataclass
class Separation:
    """Where the labelled turns put the limit."""

    healthy: int = 0
    wedged: int = 0
    healthy_peak: int | None = None
    wedged_floor: int | None = None
    presumed_healthy: bool = False
    """No turn was labelled healthy, so the unlabelled ones stood in for them."""
    low: int | None = None
    high: int | None = None
    suggested: int | None = None
    margin_below: int | None = None
    margin_above: int | None = None
    overlap_healthy: list[TurnFigures] = field(default_factory=list)
    overlap_wedged: list[TurnFigures] = field(default_factory=list)

    @property
    def separable(self) -> bool:
        """Some limit stops every wedged turn and no healthy one."""
        return self.low is not None and (self.high is None or self.low <= self.high)


def separate(aggregate: Aggregate) -> Separation:
    """The separating range, the suggested limit and its margins (see the module docstring)."""
    healthy, wedged = aggregate.labelled["healthy"], aggregate.labelled["wedged"]
    found = Separation(healthy=healthy.total, wedged=wedged.total)
    if not healthy.total and not wedged.total:
        return found
    if not healthy.total:
        healthy, found.presumed_healthy = aggregate.unlabelled, True
    found.healthy_peak = healthy.max if healthy.total else None
    found.wedged_floor = wedged.min if wedged.total else None
    found.low = max(1, (found.healthy_peak or 0) + 1)
    found.high = found.wedged_floor
    if not found.separable:
        floor, peak = found.wedged_floor or 0, found.healthy_peak or 0
        candidates = aggregate.top.turns() if found.presumed_healthy else aggregate.top_healthy.turns()
        found.overlap_healthy = [fig for fig in candidates if fig.peak >= floor and fig.label != "wedged"]
        found.overlap_wedged = [fig for fig in aggregate.low_wedged.turns() if fig.peak <= peak]
        return found
    suggested = max(found.low, math.ceil(HEADROOM * (found.healthy_peak or 1)), FLOOR)
    found.suggested = min(suggested, found.high) if found.high is not None else suggested
    found.margin_below = found.suggested - (found.healthy_peak or 0)
    found.margin_above = found.high - found.suggested if found.high is not None else None
    return found


@dataclass
class PeriodSuggestion:
    """Suggested per-period limits and poll limit, each with the turns it would have stopped."""

    limits: dict[int, int] = field(default_factory=dict)
    poll_limit: int = POLL_FLOOR
    presumed_healthy: bool = False
    stops: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per limit (``"1"``, ``"2"``… and ``"poll"``): turns stopped, by group (healthy, wedged, unlabelled)."""


def suggest_periods(aggregate: Aggregate) -> PeriodSuggestion | None:
    """Per-period limits and a poll limit from the turns' figures (None with no label); see the module docstring."""
    if not aggregate.labelled["healthy"].total and not aggregate.labelled["wedged"].total:
        return None
    healthy = "healthy" if aggregate.labelled["healthy"].total else "unlabelled"
    found = PeriodSuggestion(presumed_healthy=healthy == "unlabelled")
    for slot, histogram in enumerate(aggregate.loops[healthy]):
        floor = EARLY_LIMITS[min(slot, len(EARLY_LIMITS) - 1)]
        found.limits[slot + 1] = max(floor, (histogram.max if histogram.total else 0) + 1)
    polls = aggregate.poll_peaks[healthy]
    found.poll_limit = max(POLL_FLOOR, (polls.max if polls.total else 0) + 1, *found.limits.values())
    for period, limit in found.limits.items():
        found.stops[str(period)] = {group: histograms[period - 1].at_least(limit)
                                    for group, histograms in aggregate.loops.items()}
    found.stops["poll"] = {group: histogram.at_least(found.poll_limit)
                           for group, histogram in aggregate.poll_peaks.items()}
    return found
