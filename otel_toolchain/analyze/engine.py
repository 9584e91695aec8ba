"""``analyze`` itself: read every run, measure every turn, aggregate, and place the limit. No spans.

Inputs are files and folders of streams, session stores and OTLP traces files (see
:func:`otel_toolchain.harnesses.stores.runs_in` and :mod:`.otlp`); with none, the stores
:func:`otel_toolchain.harnesses.stores.discover` finds on this machine. A file that cannot be read is
reported and passed over; the others are still analysed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from otel_toolchain.analyze.labels import Labels, RunLabeller
from otel_toolchain.analyze.measure import RunMeter, TurnFigures
from otel_toolchain.analyze.otlp import is_otlp_traces, otlp_turns
from otel_toolchain.analyze.stats import Aggregate
from otel_toolchain.analyze.suggest import PeriodSuggestion, Separation, separate, suggest_periods
from otel_toolchain.errors import StreamError, ToolchainError
from otel_toolchain.harnesses.detect import STORE
from otel_toolchain.harnesses.runs import expand, runs_in, size_of
from otel_toolchain.harnesses.stores import discover
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.harnesses.stores.discover import CLAUDE_RETENTION_DAYS, claude_retention_note
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugins.repeat_guard import RepeatGuard

__all__ = ["Analysis", "Guard", "analyze"]

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Guard:
    """The manifest's repeat_guard as ``analyze`` applies it; ``limit`` None when the chain has none."""

    limit: int | None
    max_period: int
    mode: str | None


@dataclass
class Analysis:
    """Everything ``analyze`` found; the renderers read it."""

    aggregate: Aggregate
    separation: Separation
    guard: Guard
    manifest: str
    labels: str | None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unused_labels: list[str] = field(default_factory=list)
    periods: PeriodSuggestion | None = None
    """Suggested per-period limits and poll limit (see :func:`~otel_toolchain.analyze.suggest.suggest_periods`)."""

    @property
    def stopped_turns(self) -> int:
        """Turns that reach the manifest's limit (what ``stopped_by_manifest`` reports); 0 with no repeat_guard."""
        limit = self.guard.limit
        return self.aggregate.figures["repeats"].at_least(limit) if limit else 0


def _guard_of(manifest: Manifest) -> tuple[RepeatGuard, Guard]:
    for spec in manifest.plugins:
        if issubclass(spec.plugin_class, RepeatGuard):
            guard = spec.build()
            assert isinstance(guard, RepeatGuard)
            return guard, Guard(guard.limit, guard.max_period, guard.mode)
    return RepeatGuard(limit=1), Guard(None, 3, None)


class _Reader:
    """Feeds runs through meters and labels into one aggregate."""

    def __init__(self, manifest: Manifest, labels: Labels | None, harness: str, listed: int,
                 codex_home: CodexHome | None) -> None:
        self.codex_home = codex_home
        self.guard, self.settings = _guard_of(manifest)
        self.labels = labels
        self.harness = harness
        self.aggregate = Aggregate(self.guard.max_period, listed=listed)
        self.errors: list[str] = []
        self.claude_oldest: float | None = None

    def count(self, meter: RunMeter, figures: Iterable[TurnFigures], labeller: RunLabeller) -> None:
        for fig in figures:
            self.aggregate.add(fig)
            for turn, label in labeller.label(fig):
                self.aggregate.label(turn, label)
        for turn, label in labeller.finish():
            self.aggregate.label(turn, label)
        self.aggregate.runs += 1
        self.aggregate.bad_lines += meter.bad_lines

    def read_runs(self, files: Sequence[Path], progress: Progress | None) -> None:
        for run in runs_in(files, harness=self.harness, calls_only=True, codex_home=self.codex_home):
            try:
                opened = run.open(progress)
                meter = RunMeter(self.guard, limit=self.settings.limit, source=run.source, harness=opened.harness)
                self.count(meter, meter.feed(opened.events), RunLabeller(self.labels))
            except (ToolchainError, OSError, sqlite3.Error, UnicodeError) as exc:
                self.errors.append(str(exc) if isinstance(exc, StreamError) else f"{run.source}: {exc}")
                continue
            self.aggregate.inputs[f"{opened.harness} {opened.kind}"] += 1
            if opened.harness == "claude-code" and opened.kind == STORE:
                self._note_claude_file(run.source)

    def read_otlp(self, path: Path, progress: Progress | None) -> None:
        meter = RunMeter(self.guard, limit=self.settings.limit, source=str(path), harness="otlp")
        bad_lines: list[StreamError] = []
        try:
            figures = []
            for turn in otlp_turns(path, bad_lines):
                for fig in meter.feed(turn.events):
                    fig.recorded_stop, fig.content = turn.recorded_stop, turn.content
                    figures.append(fig)
        except StreamError as exc:  # names the file and the line
            self.errors.append(str(exc))
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self.errors.append(f"{path}: not a readable OTLP JSON traces file: {exc}")
            return
        if progress is not None:
            progress(size_of(path))
        meter.bad_lines += len(bad_lines)  # one broken line loses only itself, as in the other readers
        self.count(meter, figures, RunLabeller(self.labels))
        self.aggregate.inputs["otlp traces"] += 1

    def _note_claude_file(self, source: str) -> None:
        try:
            mtime = Path(source).stat().st_mtime
        except OSError:
            return
        self.claude_oldest = mtime if self.claude_oldest is None else min(self.claude_oldest, mtime)


def _sort(files: Iterable[Path], errors: list[str]) -> tuple[list[Path], list[Path]]:
    """(OTLP traces files, everything else); OTLP metrics and logs files are passed over."""
    traces: list[Path] = []
    others: list[Path] = []
    for path in files:
        kind = None
        if path.is_file() and path.name.endswith(".jsonl"):
            try:
                with path.open(encoding="utf-8", errors="replace") as stream:
                    kind = is_otlp_traces(stream.read(64))
            except OSError as exc:
                errors.append(f"{path}: cannot read: {exc.strerror or exc}")
                continue
        if kind is True:
            traces.append(path)
        elif kind is None:
            others.append(path)
    return traces, others


def inputs_of(paths: Sequence[str | Path], environ: Mapping[str, str] | None,
              notes: list[str]) -> tuple[list[Path], int]:
    """The files to read, and Claude Code's retention in days; with no paths, this machine's stores."""
    if paths:
        return expand(paths), CLAUDE_RETENTION_DAYS
    found = discover(environ)
    notes.extend(found.notes)
    if not found.paths:
        notes.append("no session store of Claude Code, Codex, OpenCode or Pi was found on this machine")
    for harness, roots in found.paths.items():
        notes.append(f"{harness}: {', '.join(str(root) for root in roots)}")
    return expand(found.all_paths), found.claude_retention_days


def analyze(paths: Sequence[str | Path] = (), *, harness: str = "auto", manifest: Manifest | None = None,
            labels: Labels | None = None, environ: Mapping[str, str] | None = None, listed: int = 20,
            progress: Callable[[list[Path]], Progress | None] | None = None,
            codex_home: CodexHome | None = None) -> Analysis:
    """Analyse the runs in ``paths`` (none: this machine's stores) under ``manifest``'s repeat_guard.

    ``progress`` is given the files to read and returns a callback that hears of bytes read.
    ``codex_home``: where Codex streams' rollouts are looked for, as ``replay`` does.
    """
    manifest = manifest or Manifest.default()
    notes: list[str] = []
    files, retention = inputs_of(paths, environ, notes)
    reader = _Reader(manifest, labels, harness, listed, codex_home)
    traces, others = _sort(files, reader.errors)
    advance = progress(files) if progress is not None else None
    reader.read_runs(others, advance)
    for path in traces:
        reader.read_otlp(path, advance)
    if reader.claude_oldest is not None:
        note = claude_retention_note(reader.claude_oldest, retention)
        if note:
            notes.append(note)
    if reader.aggregate.without_content:
        notes.append(f"{reader.aggregate.without_content} turn(s) from OTLP files carry no tool arguments or results "
                     "(content capture was off): their calls compare by tool and failure only, so their repeats "
                     "are upper bounds")
    return Analysis(reader.aggregate, separate(reader.aggregate), reader.settings, manifest.source,
                    "file" if labels is not None else None, notes, reader.errors,
                    labels.unused if labels is not None else [], suggest_periods(reader.aggregate))
