"""Replay recorded runs: each file (or standard input) is one run, turned into spans under the chain.

A run is a headless stream or a session-store file (Claude Code, Codex ``.jsonl``/``.jsonl.zst``,
Pi), told apart by their first lines; an OpenCode database holds one run per session, and a
folder holds whatever runs are in it (see :func:`otel_toolchain.harnesses.runs.runs_in`).
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.cli.progress import Progress
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.opener import open_lines
from otel_toolchain.harnesses.runs import Run, runs_in
from otel_toolchain.harnesses.stores import MissingExtra
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.harnesses.writer import SpanWriter, TurnOutcome
from otel_toolchain.outcome import cycle_text
from otel_toolchain.recorder import AgentRecorder

__all__ = ["format_outcome", "replay_lines", "replay_path"]

_log = logging.getLogger("otel_toolchain")


def replay_lines(lines: Iterable[str], recorder: AgentRecorder, *, source: str, harness: str = "auto",
                 strict: bool = False, codex_home: CodexHome | None = None) -> list[TurnOutcome]:
    """Replay one run's lines through ``recorder``; returns its turns' outcomes.

    ``codex_home``: where a Codex stream's rollout is looked for, to learn where its commands ran.

    Raises:
        StreamError: the harness could not be recognised, or (strict) a line could not be read.
    """
    opened = open_lines(lines, harness, strict, source=source, codex_home=codex_home)
    if opened is None:
        return []
    writer = SpanWriter(recorder, source=source, harness=opened.harness)
    for event in opened.events:
        writer.handle(event)
    return writer.close()


def _lines(stream: IO[str], progress: Progress | None) -> Iterator[str]:
    for line in stream:
        if progress is not None:
            progress.advance(len(line))
        yield line


def replay_path(path: str, recorder: AgentRecorder, *, harness: str = "auto", strict: bool = False,
                progress: Progress | None = None, codex_home: CodexHome | None = None) -> list[TurnOutcome]:
    """Replay the file or folder at ``path`` (``-``: standard input); returns every run's turns' outcomes.

    In a folder, a file that is no run of a known harness is logged and passed over (``strict``:
    raised), so one odd file does not lose the others.

    Raises:
        StreamError: ``path`` cannot be read, or is a file that is no run of a known harness.
    """
    if path == "-":
        return replay_lines(_lines(sys.stdin, progress), recorder, source="-", harness=harness, strict=strict,
                            codex_home=codex_home)
    folder = Path(path).is_dir()
    outcomes: list[TurnOutcome] = []
    for run in runs_in([path], harness=harness, strict=strict, codex_home=codex_home):
        try:
            outcomes.extend(_replay_run(run, recorder, progress))
        except (StreamError, MissingExtra, OSError, sqlite3.Error) as exc:
            if folder and not strict:
                _log.warning("otel_toolchain: %s: passed over: %s", terminal_safe(run.source), terminal_safe(str(exc)))
                continue
            if isinstance(exc, StreamError):
                raise
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StreamError(f"cannot read: {detail}", source=run.source) from exc
    return outcomes


def _replay_run(run: Run, recorder: AgentRecorder, progress: Progress | None) -> list[TurnOutcome]:
    opened = run.open(progress.advance if progress is not None else None)
    writer = SpanWriter(recorder, source=run.source, harness=opened.harness)
    for event in opened.events:
        writer.handle(event)
    return writer.close()


def format_outcome(outcome: TurnOutcome, width: int | None = None) -> str:
    """The text summary of a turn: calls, classes, failures, retries, and the stop with its cycle.

    ``width`` (a terminal's columns) wraps each line to fit, continued four spaces in; None: one line each.
    """
    stats: dict[str, Any] = outcome.tool_stats or {}
    classes = ", ".join(f"{name} {count}" for name, count in sorted(
        stats.get("classes", {}).items(), key=lambda item: (-item[1], item[0])))
    line = f"{outcome.source} ({outcome.harness})"
    if outcome.session_id:
        line += f" session {outcome.session_id}"
    line += f": {outcome.calls} calls" + (f" ({classes})" if classes else "")
    line += f", {outcome.failed} failed, {stats.get('retries', 0)} retries"
    if stats.get("longest_fail_streak"):
        line += f", longest failure streak {stats['longest_fail_streak']}"
    if outcome.bad_lines:
        numbers = ", ".join(str(bad.line_no) for bad in outcome.bad_lines[:5])
        line += f", {len(outcome.bad_lines)} bad line(s) (line {numbers})"
    lines = [line]
    if outcome.stopped is not None:
        stop = outcome.stopped
        cycle = cycle_text(stop)
        lines.append(f"  STOPPED by {stop.plugin} at call {stop.at_call}: {stop.reason}")
        if cycle:
            lines.append(f"  cycle: {cycle}")
    if width is not None:
        lines = [textwrap.fill(line, width, subsequent_indent="    ", break_on_hyphens=False,
                               break_long_words=False) for line in lines]
    return "\n".join(lines)
