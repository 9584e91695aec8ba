"""Lines of a session-store file (plain ``.jsonl`` or zstandard-compressed ``.jsonl.zst``), and their times.

Lines are split on ``\\n`` bytes only, never with ``str.splitlines()``: the CLIs write JSON with
U+2028, U+2029 and U+0085 left raw inside strings, and those must not cut a line. Bytes that are
not UTF-8 are replaced, so a file a user redacted by hand still reads; the broken line then
fails to parse and becomes a ``BadLine``. Files are read in chunks, so memory stays flat
whatever their size.

``.zst`` needs the optional extra ``zstd`` (the ``zstandard`` package), or Python 3.14's own
``compression.zstd``; without either, :class:`MissingExtra` says what to install.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from otel_toolchain.errors import MissingExtra

__all__ = ["ZST_SUFFIX", "MissingExtra", "iso_ns", "iter_lines", "ms_ns", "open_binary", "split_lines"]

ZST_SUFFIX = ".zst"
_CHUNK = 1 << 18
_MS = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def open_binary(path: Path) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed when it ends in ``.zst``."""
    raw = path.open("rb")
    if path.suffix != ZST_SUFFIX:
        return raw
    try:
        return _zstd_reader(raw)
    except BaseException:
        raw.close()
        raise


def _zstd_reader(raw: IO[bytes]) -> IO[bytes]:
    if sys.version_info >= (3, 14):  # pragma: no cover - not the CI's Python
        from compression import zstd  # noqa: PLC0415 (optional: only for .zst files)

        return zstd.ZstdFile(raw)
    try:
        import zstandard  # noqa: PLC0415 (the optional extra zstd, only for .zst files)
    except ImportError:
        raise MissingExtra(
            f"{getattr(raw, 'name', 'the file')}: reading .zst rollouts needs the 'zstandard' package: "
            "pip install 'otel-toolchain[zstd]'"
        ) from None
    return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)


def iter_lines(path: Path) -> Iterator[str]:
    """The lines of ``path`` (each without its ``\\n``), decoded as UTF-8 with replacement."""
    with open_binary(path) as stream:
        yield from split_lines(stream)


def split_lines(stream: IO[bytes]) -> Iterator[str]:
    """Split a byte stream on ``\\n``; a last line without one is yielded too."""
    tail = b""
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        buffer = tail + chunk
        cut = buffer.rfind(b"\n")
        if cut < 0:
            tail = buffer
            continue
        tail = buffer[cut + 1:]
        # a \n byte is never inside a UTF-8 sequence: decoding up to one is safe, and str.split("\n")
        # (unlike splitlines) leaves U+2028, U+2029 and U+0085 inside their lines
        yield from buffer[:cut].decode("utf-8", "replace").split("\n")
    if tail:
        yield tail.decode("utf-8", "replace")


def iso_ns(value: Any) -> int | None:
    """An ISO-8601 time (``2025-09-25T01:22:20.083Z``) as ns since the epoch, else None.

    A time without a zone is taken as UTC, which is what every store writes.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    delta = stamp - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def ms_ns(value: Any) -> int | None:
    """Milliseconds since the epoch as ns, or None if ``value`` is not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * _MS)
    return None
