"""A PNG of the distribution of turns by peak repeats, healthy and wedged turns and the limits marked.

Needs the optional extra ``plot`` (matplotlib); without it :func:`write_plot` raises
:class:`~otel_toolchain.harnesses.stores.MissingExtra` naming the extra, and the terminal chart remains.
Turns are stacked per peak value (unlabelled, polling, healthy, wedged) on a log x axis (log y too
when one value has over 50 turns; turns without calls are left out); the
separating range is shaded, the suggested limit is a solid line, the chain's a dashed one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_toolchain.analyze.engine import Analysis
from otel_toolchain.analyze.stats import Histogram
from otel_toolchain.harnesses.stores import MissingExtra

__all__ = ["write_plot"]

_COLOURS = {"unlabelled": "#9aa5b1", "polling": "#f0a202", "healthy": "#2e8b57", "wedged": "#c0392b"}


def _pyplot() -> Any:
    try:
        import matplotlib  # noqa: PLC0415 (the optional extra plot)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise MissingExtra("--plot needs matplotlib: pip install 'otel-toolchain[plot]'") from None
    return plt


def _series(analysis: Analysis) -> dict[str, Histogram]:
    """Turns per peak by kind; unlabelled turns that are polls count as polling, not unlabelled."""
    aggregate = analysis.aggregate
    unlabelled = Histogram()
    for value, count in aggregate.unlabelled.counts.items():
        unlabelled.add(value, count)
    polling = Histogram()
    for value, count in aggregate.polling.counts.items():
        moved = min(count, unlabelled.counts[value])
        polling.add(value, moved)
        unlabelled.counts[value] -= moved
    return {"unlabelled": unlabelled, "polling": polling, **aggregate.labelled}


def write_plot(analysis: Analysis, path: str | Path) -> None:
    """Draw the distribution into ``path`` (PNG)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9, 5), dpi=110)
    repeats = analysis.aggregate.figures["repeats"]
    values = sorted(value for value in repeats.counts if value > 0)  # turns without calls have no place on a log axis
    bottom = dict.fromkeys(values, 0)
    for name, histogram in _series(analysis).items():
        heights = [histogram.counts.get(value, 0) for value in values]
        if any(heights):
            axes.bar(values, heights, bottom=[bottom[v] for v in values], width=[v * 0.15 for v in values],
                     color=_COLOURS[name], label=f"{name} ({sum(heights)})")
            for value, height in zip(values, heights, strict=True):
                bottom[value] += height
    separation, guard = analysis.separation, analysis.guard
    if separation.suggested is not None and separation.low is not None:
        high = separation.high if separation.high is not None else max(values, default=1) * 2
        axes.axvspan(separation.low - 0.5, high + 0.5, color=_COLOURS["healthy"], alpha=0.08,
                     label=f"limits that separate ({separation.low}-{separation.high or '∞'})")
        axes.axvline(separation.suggested, color="black", linewidth=1.5,
                     label=f"suggested limit {separation.suggested}")
    if guard.limit is not None:
        axes.axvline(guard.limit, color="black", linestyle="--", linewidth=1, label=f"chain limit {guard.limit}")
    axes.set_xscale("log")
    if max(bottom.values(), default=0) > 50:
        axes.set_yscale("log")
    axes.set_xlabel("most repeats of one cycle of calls in the turn (a limit at or below stops the turn)")
    axes.set_ylabel("turns")
    idle = repeats.counts.get(0, 0)
    axes.set_title(f"{analysis.aggregate.turns} turns in {analysis.aggregate.runs} runs"
                   + (f" ({idle} without calls not shown)" if idle else ""))
    axes.legend(loc="best", fontsize="small", framealpha=0.9)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
