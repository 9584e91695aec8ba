"""Where the CLI writes: standard output that survives a reader going away, notes and warnings on stderr.

:class:`Out` is standard output for results: when the reader has gone (``otel-toolchain replay F |
head``), the rest is dropped silently (stdout is pointed at ``/dev/null`` so nothing raises at exit)
and the command carries on, finishing its work and export; its exit code is the one it would
have had. :func:`screen_for` turns the environment into a :class:`~otel_toolchain.cli.tree.Screen`
(``COLUMNS``, ``NO_COLOR``, ``FORCE_COLOR``, the stream's encoding). :func:`setup_logging` sends the
package's log records to stderr, one line each, at the level ``-q``/``-v`` chose.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, TextIO

from otel_toolchain._terminal import terminal_safe

if TYPE_CHECKING:
    from otel_toolchain.cli.tree import Screen

__all__ = ["Out", "note", "screen_for", "setup_logging", "warn"]

_log = logging.getLogger("otel_toolchain.cli")


class Out:
    """Results on ``stream``; a reader that went away ends the output, not the command."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def line(self, text: str) -> None:
        """Print ``text`` and a newline, flushed, unless the reader has gone."""
        with self.guard():
            print(terminal_safe(text), file=self.stream, flush=True)

    @contextlib.contextmanager
    def guard(self) -> Iterator[TextIO]:
        """Write inside this block; a BrokenPipeError in it marks the output gone and is swallowed."""
        if self.gone:
            yield open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed at exit; a sink)
            return
        try:
            yield self.stream
        except BrokenPipeError:
            self.gone = True
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())


def screen_for(stream: TextIO, environ: Mapping[str, str]) -> Screen:
    """How to draw on ``stream``: its width (``COLUMNS``, else the terminal's, else unlimited for a pipe),
    colour (``NO_COLOR`` off, ``FORCE_COLOR`` on, else a terminal only) and box characters if it can encode them."""
    tty = _isatty(stream)
    width: int | None = None
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    elif tty:
        width = shutil.get_terminal_size().columns
    if environ.get("NO_COLOR"):
        color = False
    elif environ.get("FORCE_COLOR") not in (None, "", "0", "false"):
        color = True
    else:
        color = tty and environ.get("TERM") != "dumb"
    # Imported here: the tree brings rich, which --help (this module's first user) does without.
    from otel_toolchain.cli.tree import ASCII, UNICODE, Screen  # noqa: PLC0415

    return Screen(width, color, UNICODE if _encodes(stream, "├─│└\u00d7…◀↻") else ASCII)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def _encodes(stream: TextIO, text: str) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().removeprefix("otel_toolchain: ")
        prefix = "warning: " if record.levelno == logging.WARNING else ""
        return f"otel-toolchain: {prefix}{message}"


def setup_logging(verbosity: int) -> None:
    """Log records of ``otel_toolchain`` to stderr: -1 (``-q``) warnings only, 0 notes too, 1+ (``-v``) debug."""
    logger = logging.getLogger("otel_toolchain")
    for handler in [h for h in logger.handlers if getattr(h, "_otel_toolchain_cli", False)]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._otel_toolchain_cli = True  # type: ignore[attr-defined]  # found again by a second main() in-process
    handler.setFormatter(_OneLine())
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG)
    logger.propagate = False


def note(message: str) -> None:
    """A note on stderr (hidden by ``-q``)."""
    _log.info(terminal_safe(message))


def warn(message: str) -> None:
    """A warning on stderr (always shown)."""
    _log.warning(terminal_safe(message))
