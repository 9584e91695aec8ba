"""A one-line progress bar over many files, on standard error, and only when that is a terminal."""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

__all__ = ["Progress"]

_MIN_FILES = 4
_MIN_BYTES = 2_000_000


class Progress:
    """Counts bytes read against the total size of the inputs; redraws at most ten times a second."""

    def __init__(self, total: int, files: int, out: IO[str], label: str = "analyze") -> None:
        self.total = total
        self.files = files
        self.done = 0
        self.out = out
        self.label = label
        self._drawn = 0.0

    @classmethod
    def maybe(cls, paths: list[Path], out: IO[str]) -> Progress | None:
        """A bar for ``paths`` if ``out`` is a terminal and there is enough to read to need one."""
        if not out.isatty():
            return None
        total = sum(_size(path) for path in paths)
        return cls(total, len(paths), out) if len(paths) >= _MIN_FILES or total >= _MIN_BYTES else None

    def __call__(self, size: int) -> None:
        """Note ``size`` more bytes read."""
        self.done += size
        now = time.monotonic()
        if now - self._drawn >= 0.1:
            self._drawn = now
            share = min(1.0, self.done / self.total) if self.total else 0.0
            self.out.write(f"\r{self.label} [{'#' * int(share * 30):<30}] {share:4.0%} of {self.files} files")
            self.out.flush()

    def finish(self) -> None:
        """Clear the line."""
        self.out.write("\r" + " " * 72 + "\r")
        self.out.flush()


def _size(path: Path) -> int:
    try:
        if path.is_dir():
            return sum(child.stat().st_size for child in path.rglob("*") if child.is_file())
        return path.stat().st_size
    except OSError:
        return 0
