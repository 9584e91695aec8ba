"""Which turns are wedged and which healthy: a labels file, or the stops the runs themselves record.

The labels file is CSV, one ``run,label`` per row (a header row and ``#`` comments are allowed);
the label is ``wedged`` or ``healthy``. A run is named by its path as given to ``analyze``, its
file name, its file name without ``.jsonl``/``.jsonl.zst``, or its session id; ``RUN#N`` names
its N-th turn. A run labelled healthy makes all of its turns healthy; a run labelled wedged
stands for its most repetitive turn (a run wedges once; its other turns stay unlabelled), unless
the file names the wedged turn itself. Without a label, a turn whose run records a stop by the
chain (an OTLP file's stop event, shadow stops included) counts as wedged.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from otel_toolchain.analyze.measure import TurnFigures
from otel_toolchain.errors import LabelError

__all__ = ["LABELS", "LabelError", "Labels", "RunLabeller"]

LABELS = ("healthy", "wedged")
_SUFFIXES = (".jsonl.zst", ".jsonl", ".json", ".db")


def _names(source: str, session_id: str | None) -> list[str]:
    """Every name a run answers to."""
    path, _, inner = source.partition("#")
    base = Path(path).name
    names = [source, str(Path(path).resolve()) + (f"#{inner}" if inner else ""), base + (f"#{inner}" if inner else "")]
    for suffix in _SUFFIXES:
        if base.endswith(suffix):
            names.append(base[: -len(suffix)] + (f"#{inner}" if inner else ""))
    if inner:
        names.append(inner)
    if session_id:
        names.append(session_id)
    return names


@dataclass
class Labels:
    """The rows of a labels file, by run name."""

    rows: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, path: str | Path) -> Labels:
        """Read a labels file; raises :class:`LabelError` naming the row that is wrong."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise LabelError(f"{path}: cannot read the labels: {exc.strerror or exc}") from exc
        rows: dict[str, str] = {}
        header_seen = False
        for number, row in enumerate(csv.reader(text.splitlines()), 1):
            cells = [cell.strip() for cell in row]
            if not cells or not cells[0] or cells[0].startswith("#"):
                continue
            if len(cells) == 1 and (";" in cells[0] or "\t" in cells[0]):
                raise LabelError(f"{path}:{number}: separate the run and its label with a comma (run,label), "
                                 f"not {';' if ';' in cells[0] else 'a tab'}")
            label = cells[1].lower() if len(cells) > 1 else ""
            if not rows and not header_seen and label == "label":
                header_seen = True
                continue  # a header row (the first row that is no comment)
            if len(cells) == 1:
                raise LabelError(f"{path}:{number}: no label: a row is run,label with label one of {', '.join(LABELS)}")
            if label not in LABELS:
                raise LabelError(f"{path}:{number}: the label must be one of {', '.join(LABELS)}, not {label!r}")
            rows[cells[0]] = label
        return cls(rows)

    def of_turn(self, fig: TurnFigures) -> str | None:
        """The label the file gives this very turn (``RUN#N``), if any."""
        for name in _names(fig.source, fig.session_id):
            label = self.rows.get(f"{name}#{fig.turn}")
            if label is not None:
                self.used.add(f"{name}#{fig.turn}")
                return label
        return None

    def of_run(self, source: str, session_id: str | None) -> str | None:
        """The label the file gives the whole run, if any."""
        for name in _names(source, session_id):
            label = self.rows.get(name)
            if label is not None:
                self.used.add(name)
                return label
        return None

    @property
    def unused(self) -> list[str]:
        """Rows that named no run read: usually a typo, or a run that was not among the inputs."""
        return sorted(set(self.rows) - self.used)


class RunLabeller:
    """Labels the turns of one run as they come; :meth:`finish` gives the held wedged turn."""

    def __init__(self, labels: Labels | None) -> None:
        self.labels = labels
        self._run_label: str | None = None
        self._run_known = False
        self._held: TurnFigures | None = None

    def label(self, fig: TurnFigures) -> list[tuple[TurnFigures, str | None]]:
        """(turn, label) pairs ready to count; a wedged run's best turn waits for the run's end."""
        if self.labels is not None:
            own = self.labels.of_turn(fig)
            if own is not None:
                return [(fig, own)]
            if not self._run_known:
                self._run_label, self._run_known = self.labels.of_run(fig.source, fig.session_id), True
        if self._run_label == "healthy":
            return [(fig, "healthy")]
        if self._run_label == "wedged":
            if self._held is None or fig.peak > self._held.peak:
                released, self._held = self._held, fig
                return [(released, None)] if released is not None else []
            return [(fig, None)]
        return [(fig, "wedged" if fig.recorded_stop else None)]

    def finish(self) -> list[tuple[TurnFigures, str | None]]:
        held, self._held = self._held, None
        return [(held, "wedged")] if held is not None else []
