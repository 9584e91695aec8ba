"""``otel-toolchain analyze``: calibrate repeat_guard's limit from recorded runs, without building spans.

::

    runs (streams, session stores, OTLP traces)
      -> neutral events (otel_toolchain.harnesses.streams / otel_toolchain.harnesses.stores / .otlp)
      -> per-turn figures by RepeatGuard's own rule (.measure)
      -> distributions in constant memory (.stats), labels (.labels)
      -> the separating range and a suggested limit (.suggest)
      -> text with a terminal chart (.text, .chart), JSON (.report), PNG (.plot)
"""

from __future__ import annotations

from otel_toolchain.analyze.engine import Analysis, Guard, analyze
from otel_toolchain.analyze.labels import LabelError, Labels
from otel_toolchain.analyze.measure import RunMeter, TurnFigures
from otel_toolchain.analyze.report import to_dict
from otel_toolchain.analyze.suggest import Separation
from otel_toolchain.analyze.text import render_text

__all__ = [
    "Analysis",
    "Guard",
    "LabelError",
    "Labels",
    "RunMeter",
    "Separation",
    "TurnFigures",
    "analyze",
    "render_text",
    "to_dict",
]
