"""The analysis as one JSON-able dict: what ``--format json`` prints and the text rendering reads.

Keys: ``runs``, ``turns``, ``calls``, ``inputs``; ``chain`` (the manifest's repeat_guard);
``distributions`` (p50/p90/p99/max of each per-turn figure, ``repeats_by_period`` per period);
``repeats_histogram`` (turns by their peak); ``candidates`` (per limit: turns stopped, and of
them polling, healthy, wedged); ``stopped_by_manifest``; ``labels``; ``separating_range``;
``suggested_limit`` (``limit``, ``margin_below``, ``margin_above``; null when nothing is
labelled or nothing separates); ``suggested_limits`` (per-period ``limits``, ``poll_limit``,
``presumed_healthy``, ``stops``: per limit, the turns it would stop by label group; null with no
label); ``overlap``; ``polling``; ``seed_range`` (the turns any limit
from 15 to 40 would stop); ``top_turns``; ``notes``; ``errors``.
"""

from __future__ import annotations

from typing import Any, Final

from otel_toolchain.analyze.engine import Analysis
from otel_toolchain.analyze.measure import TurnFigures
from otel_toolchain.analyze.stats import FIGURES, Histogram
from otel_toolchain.analyze.suggest import SEED_RANGE, PeriodSuggestion

__all__ = ["LADDER", "candidate_limits", "to_dict", "turn_dict"]

LADDER: Final = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000)


def turn_dict(fig: TurnFigures) -> dict[str, Any]:
    """One listed turn."""
    return {"turn": fig.key, "harness": fig.harness, "session_id": fig.session_id, "line": fig.line_no,
            "calls": fig.calls, "repeats": fig.peak, "period": fig.peak_period, "cycle": fig.peak_cycle,
            "at_call": fig.peak_at, "stop_at": fig.stop_at, "polling": fig.polling, "label": fig.label,
            "content": fig.content}


def candidate_limits(analysis: Analysis) -> list[int]:
    """The limits to tabulate: the ladder up to just past the highest peak, and the chain's and suggested limits."""
    top = analysis.aggregate.figures["repeats"].max
    ladder = [limit for limit in LADDER if limit <= top]
    ladder += [limit for limit in LADDER if limit > top][:1]
    extra = {analysis.guard.limit, analysis.separation.suggested}
    return sorted({*ladder, *(limit for limit in extra if limit is not None)})


def _candidates(analysis: Analysis) -> list[dict[str, Any]]:
    aggregate = analysis.aggregate
    healthy, wedged = aggregate.labelled["healthy"], aggregate.labelled["wedged"]
    return [{"limit": limit, "stops": aggregate.figures["repeats"].at_least(limit),
             "polling": aggregate.polling.at_least(limit), "healthy": healthy.at_least(limit),
             "wedged": wedged.at_least(limit), "wedged_missed": wedged.total - wedged.at_least(limit)}
            for limit in candidate_limits(analysis)]


def _polling(analysis: Analysis) -> dict[str, Any]:
    aggregate, limit = analysis.aggregate, analysis.guard.limit
    suggested = analysis.separation.suggested
    groups = []
    for cycle, histogram in sorted(aggregate.polling_groups.items(), key=lambda item: (-item[1].max, item[0])):
        groups.append({"cycle": cycle, "turns": histogram.total, "max_repeats": histogram.max,
                       "stopped_by_chain_limit": histogram.at_least(limit) if limit else 0,
                       "stopped_by_suggested": histogram.at_least(suggested) if suggested else None})
    return {"turns": aggregate.polling.total, "groups": groups}


def _histogram(histogram: Histogram) -> dict[str, int]:
    return {str(value): histogram.counts[value] for value in sorted(histogram.counts)}


def _separation(analysis: Analysis) -> dict[str, Any]:
    found = analysis.separation
    suggested = None
    if found.suggested is not None:
        suggested = {"limit": found.suggested, "margin_below": found.margin_below, "margin_above": found.margin_above,
                     "healthy_peak": found.healthy_peak, "wedged_floor": found.wedged_floor,
                     "presumed_healthy": found.presumed_healthy}
    labelled = found.healthy or found.wedged
    overlap = None
    if labelled and not found.separable:
        overlap = {"healthy": [turn_dict(fig) for fig in found.overlap_healthy],
                   "wedged": [turn_dict(fig) for fig in found.overlap_wedged]}
    return {
        "labels": {"source": analysis.labels or ("recorded stops" if found.wedged else None),
                   "healthy": found.healthy, "wedged": found.wedged, "presumed_healthy": found.presumed_healthy,
                   "unused": analysis.unused_labels},
        "separating_range": {"low": found.low, "high": found.high} if labelled and found.separable else None,
        "suggested_limit": suggested,
        "overlap": overlap,
    }


def _periods(found: PeriodSuggestion | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"limits": {str(period): limit for period, limit in found.limits.items()}, "poll_limit": found.poll_limit,
            "presumed_healthy": found.presumed_healthy, "stops": found.stops}


def to_dict(analysis: Analysis) -> dict[str, Any]:
    """The whole analysis; see the module docstring for the keys."""
    aggregate, guard = analysis.aggregate, analysis.guard
    repeats = aggregate.figures["repeats"]
    top = aggregate.top.turns()
    low, high = SEED_RANGE
    return {
        "runs": aggregate.runs, "turns": aggregate.turns, "calls": aggregate.calls, "failed_calls": aggregate.failed,
        "bad_lines": aggregate.bad_lines, "inputs": dict(sorted(aggregate.inputs.items())),
        "chain": {"manifest": analysis.manifest,
                  "repeat_guard": {"limit": guard.limit, "max_period": guard.max_period, "mode": guard.mode}
                  if guard.limit is not None else None},
        "distributions": {**{name: aggregate.figures[name].summary() for name in FIGURES},
                          "repeats_by_period": {str(p + 1): h.summary() for p, h in enumerate(aggregate.by_period)}},
        "repeats_histogram": _histogram(repeats),
        "candidates": _candidates(analysis),
        "stopped_by_manifest": {"limit": guard.limit, "turns": analysis.stopped_turns,
                                "examples": [turn_dict(fig) for fig in top if fig.stop_at is not None]},
        **_separation(analysis),
        "suggested_limits": _periods(analysis.periods),
        "polling": _polling(analysis),
        "seed_range": {"low": low, "high": high, "turns": repeats.at_least(low),
                       "examples": [turn_dict(fig) for fig in top if fig.peak >= low]},
        "top_turns": [turn_dict(fig) for fig in top if fig.peak > 1],
        "notes": analysis.notes,
        "errors": analysis.errors,
    }
