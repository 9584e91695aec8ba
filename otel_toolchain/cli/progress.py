"""The one progress bar of the commands that read many files (``replay``, ``analyze``).

One line on standard error, drawn only when that is a terminal and there is enough to read to
need it; redrawn at most ten times a second. Called on the reading thread; never blocks but on
the terminal's write.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from otel_toolchain.harnesses.runs import size_of

__all__ = ["Progress"]

_MIN_FILES = 4
_MIN_BYTES = 2_000_000
_WIDTH = 30


class Progress:
    """Bytes read against the total size of the inputs, and (with :meth:`next_file`) which input."""

    def __init__(self, total: int, files: int, out: IO[str], label: str) -> None:
        self.total = total
        self.files = files
        self.file_no = 0
        self.done = 0
        self.out = out
        self.label = label
        self._drawn = 0.0

    @classmethod
    def maybe(cls, paths: Sequence[Path], out: IO[str], label: str) -> Progress | None:
        """A bar for ``paths`` (files or folders) if ``out`` is a terminal and they are many or big."""
        if not out.isatty():
            return None
        total = sum(size_of(path) for path in paths)
        return cls(total, len(paths), out, label) if len(paths) >= _MIN_FILES or total >= _MIN_BYTES else None

    def next_file(self) -> None:
        """The next input is being read (shown as ``file k/n``)."""
        self.file_no += 1

    def advance(self, size: int) -> None:
        """Note ``size`` more bytes read."""
        self.done += size
        now = time.monotonic()
        if now - self._drawn >= 0.1:
            self._drawn = now
            share = min(1.0, self.done / self.total) if self.total else 0.0
            where = f"file {self.file_no}/{self.files}" if self.file_no else f"of {self.files} files"
            self.out.write(f"\r{self.label} [{'#' * int(share * _WIDTH):<{_WIDTH}}] {share:4.0%} {where}")
            self.out.flush()

    def finish(self) -> None:
        """Clear the line."""
        self.out.write("\r" + " " * 72 + "\r")
        self.out.flush()
