"""One way to open a recorded or live run: detect the harness, pick its reader, read the lines into events.

Every reader of runs goes through :func:`open_lines`: ``replay`` (files and standard input),
``analyze`` and the session stores (through :mod:`otel_toolchain.harnesses.runs`), and a live
``run`` (whose ``--log`` therefore replays to the same verdict). The harness is recognised from
the first :data:`~otel_toolchain.harnesses.detect.DETECT_LINES` lines, the same window everywhere.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice

from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses._base import StreamReader
from otel_toolchain.harnesses.detect import (
    DETECT_LINES,
    HARNESSES,
    STORE,
    STREAM,
    detect_format,
    harness_mismatch,
    starts_another_run,
)
from otel_toolchain.harnesses.events import Event
from otel_toolchain.harnesses.stores import store_reader_for
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.harnesses.streams import reader_for

__all__ = ["Opened", "open_lines", "read_stream", "reader_of"]

_log = logging.getLogger("otel_toolchain")


@dataclass(frozen=True)
class Opened:
    """A run being read: which harness wrote it, whether a stream or a store, and its events."""

    harness: str
    kind: str
    events: Iterator[Event]


def reader_of(head: list[str], harness: str = "auto", strict: bool = False, *, source: str = "-",
              skip: Collection[str] = (), calls_only: bool = False,
              codex_home: CodexHome | None = None) -> tuple[str, str, StreamReader]:
    """(harness, kind, a fresh reader) for a run whose first lines are ``head``.

    ``harness="auto"`` recognises it; a named harness is taken as given (with a warning on the
    ``otel_toolchain`` logger when the lines look like another harness's or none's; ``strict``: an
    error), and a session-store file of that harness is still read by its store reader. ``skip`` and
    ``calls_only`` go to store readers (see :func:`~otel_toolchain.harnesses.stores.store_reader_for`).
    ``codex_home``: where a Codex stream's rollout is looked for, to learn where its commands ran
    (:mod:`~otel_toolchain.harnesses.stores.codex_workdirs`); None: not looked for.

    Raises:
        StreamError: ``auto`` and the lines are no stream or store file of a known harness; ``strict``
            and a named harness the lines do not match.
    """
    found = detect_format(head)
    if harness != "auto" and (problem := harness_mismatch(head, harness)) is not None:
        if strict:
            raise StreamError(problem, source=source, line_no=1)
        _log.warning("%s: %s", source, problem)
    if harness == "auto":
        if found is None:
            raise StreamError(f"not a stream of any of {', '.join(HARNESSES)}, nor a session-store file; "
                              "name one with --harness", source=source, line_no=1)
        harness = found[0]
    kind = found[1] if found is not None and found[0] == harness else STREAM
    if kind == STORE:
        return harness, kind, store_reader_for(harness, strict, source=source, skip=skip, calls_only=calls_only)
    workdirs = codex_home.workdirs() if codex_home is not None and harness == "codex" else None
    return harness, kind, reader_for(harness, strict, source=source, workdirs=workdirs)


def open_lines(lines: Iterable[str], harness: str = "auto", strict: bool = False, *, source: str = "-",
               clock: Callable[[], int] | None = None, skip: Collection[str] = (),
               calls_only: bool = False, codex_home: CodexHome | None = None) -> Opened | None:
    """Start reading a run's lines; None when it has no line that is not blank.

    ``clock`` gives each line's arrival time in ns; by default it is one fixed time for the whole
    run, so a call lasts 0 unless the lines have times of their own, as a recording cannot tell
    when lines arrived.

    Raises:
        StreamError: see :func:`reader_of`; and, when ``strict``, at the first bad line, as read.
    """
    it = iter(lines)
    head = list(islice(it, DETECT_LINES))
    if not any(line.strip() for line in head):
        return None
    name, kind, reader = reader_of(head, harness, strict, source=source, skip=skip, calls_only=calls_only,
                                   codex_home=codex_home)
    return Opened(name, kind, _events(reader, chain(head, it), clock, name, source))


def read_stream(lines: Iterable[str], harness: str = "auto", strict: bool = False,
                clock: Callable[[], int] | None = None, *, source: str = "-") -> Iterator[Event]:
    """The events of a whole run (nothing for blank input); see :func:`open_lines`."""
    opened = open_lines(lines, harness, strict, source=source, clock=clock)
    return opened.events if opened is not None else iter(())


def _events(reader: StreamReader, lines: Iterable[str], clock: Callable[[], int] | None, harness: str,
            source: str) -> Iterator[Event]:
    if clock is None:
        fixed = time.time_ns()
        clock = lambda: fixed  # noqa: E731
    feed = reader.feed
    warned = False
    for line_no, line in enumerate(lines, 1):
        events = feed(line, line_no, clock())
        if events:
            yield from events
        elif not warned and line_no > DETECT_LINES and (other := starts_another_run(line, harness)) is not None:
            warned = True  # once per run: the reader skips the rest of the other stream's lines
            _log.warning("%s:%d: a %s run starts here, inside a %s run: its calls are not read (one run per "
                         "file: split it, or replay the part on its own)", source, line_no, other, harness)
    yield from reader.close(clock())
