"""Lines of a session-store or stream file (plain, or zstandard-compressed ``.zst``), decoded safely.

Lines are split on ``\\n`` bytes only, never with ``str.splitlines()``: the CLIs write JSON with
U+2028, U+2029 and U+0085 left raw inside strings, and those must not cut a line. Bytes that are
not UTF-8 are replaced, so a file a user redacted by hand still reads; the broken line then
fails to parse and becomes a ``BadLine``. Files are read in chunks, so memory stays flat
whatever their size.

Limits (every reader of lines goes through :func:`split_lines` and :func:`decode_line`):

- a line longer than :data:`MAX_LINE_BYTES` is not kept: it is skipped in linear time, holding
  at most one chunk of it, and yielded as a :class:`LongLine` (its first bytes), which the
  readers count as a bad line;
- a JSON value nested deeper than :data:`MAX_DEPTH` is a bad line;
- numbers must be finite (``NaN``, ``Infinity``, ``1e400`` are bad lines), integers at most
  :data:`MAX_INT_DIGITS` digits;
- lone surrogate escapes (``"\\ud800"``) become U+FFFD, so every string is valid UTF-8;
- a byte-order mark at the start of line 1 is dropped.

``.zst`` needs the optional extra ``zstd`` (the ``zstandard`` package), or Python 3.14's own
``compression.zstd``; without either, :class:`MissingExtra` says what to install. Decompression
is bounded (:data:`MAX_ZST_BYTES` out, :data:`MAX_ZST_RATIO` out per byte in); past either, or
on a corrupt or truncated frame, reading raises :class:`BadFile` for that file.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Final, Protocol

from otel_toolchain._input.zst import MAX_ZST_BYTES, MAX_ZST_RATIO, zstd_reader
from otel_toolchain.errors import MissingExtra, StreamError

__all__ = [
    "MAX_DEPTH", "MAX_INT_DIGITS", "MAX_LINE_BYTES", "MAX_ZST_BYTES", "MAX_ZST_RATIO", "ZST_SUFFIX", "BadLineError",
    "LongLine", "MissingExtra", "decode_line", "iso_ns", "iter_lines", "ms_ns", "open_binary", "regular_file",
    "split_lines", "valid_text",
]

ZST_SUFFIX = ".zst"
MAX_LINE_BYTES: Final = 64 << 20
"""Longest line kept (64 MiB): real lines reach a few MB (a file read whole into a tool result)."""
MAX_DEPTH: Final = 64
"""Deepest nesting of arrays and objects in one line; the CLIs' own lines stay under 20."""
MAX_INT_DIGITS: Final = 30
"""Longest integer literal; int64 has 19 digits, so anything longer is no count or time."""
_CHUNK = 1 << 18
_MS = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_BOM = "\ufeff"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LONG_PREFIX = 200
_MAX_MS = (1 << 63) // 1_000_000
_MAX_DAYS = (1 << 63) // 86_400_000_000_000


class Readable(Protocol):
    """What :func:`split_lines` reads: ``read(size)`` giving bytes, ``b""`` at the end."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes."""
        ...


class BadLineError(ValueError):
    """A line the hardened decoder refuses; ``str()`` says why, in a few words."""


class LongLine(str):
    """A line longer than :data:`MAX_LINE_BYTES`: only its first bytes, and ``size``, its length in bytes."""

    size: int

    def __new__(cls, prefix: str, size: int) -> LongLine:
        line = super().__new__(cls, prefix)
        line.size = size
        return line


def regular_file(path: Path) -> None:
    """Refuse anything but a regular file (after links): a FIFO would block, a device never end.

    Raises:
        StreamError: ``path`` is a FIFO, device, socket or folder, a dangling link, or cannot be examined.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        kind = "dangling symbolic link" if path.is_symlink() else (exc.strerror or str(exc))
        raise StreamError(f"cannot read: {kind}", source=str(path)) from None
    if not stat.S_ISREG(mode):
        raise StreamError(f"not a regular file ({_kind_of(mode)}): skipped", source=str(path))


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return "special file"


def open_binary(path: Path) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed (bounded) when it ends in ``.zst``.

    Opened without blocking, so a FIFO that slipped past :func:`regular_file` cannot hang the open.

    Raises:
        StreamError: not a regular file (see :func:`regular_file`).
        MissingExtra: a ``.zst`` file and no zstandard to read it.
    """
    regular_file(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    raw = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped after the check
        raw.close()
        raise StreamError("not a regular file: skipped", source=str(path))
    if path.suffix != ZST_SUFFIX:
        return raw
    try:
        return zstd_reader(raw, os.fstat(fd).st_size, str(path))  # type: ignore[return-value]
    except BaseException:
        raw.close()
        raise


def iter_lines(path: Path) -> Iterator[str]:
    """The lines of ``path`` (each without its ``\\n``), decoded as UTF-8 with replacement; see :func:`split_lines`.

    Raises:
        StreamError: not a regular file, or a ``.zst`` that is corrupt, truncated or too big.
    """
    with open_binary(path) as stream:
        yield from split_lines(stream)


def split_lines(stream: Readable, limit: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Split a byte stream on ``\\n``; a last line without one is yielded too.

    Linear in the input whatever the line lengths; a line longer than ``limit`` bytes is yielded
    as a :class:`LongLine` and never held whole.
    """
    parts: list[bytes] = []
    held = 0
    skipped = -1  # bytes of an over-long line skipped so far; -1 while the line is kept
    prefix = b""
    first = True
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            cut = chunk.find(b"\n", start)
            piece = chunk[start:] if cut < 0 else chunk[start:cut]
            if skipped >= 0:
                skipped += len(piece)
            elif held + len(piece) > limit:
                skipped, parts, held = held + len(piece), [], 0
            elif piece:
                parts.append(piece)
                held += len(piece)
            if len(prefix) < _LONG_PREFIX and piece:  # a LongLine's text: its first bytes, kept as they pass
                prefix += piece[:_LONG_PREFIX - len(prefix)]
            if cut < 0:
                break
            yield _line(parts, skipped, prefix, first)
            first, parts, held, skipped, prefix = False, [], 0, -1, b""
            start = cut + 1
    if parts or skipped > 0:
        yield _line(parts, skipped, prefix, first)


def _line(parts: list[bytes], skipped: int, prefix: bytes, first: bool) -> str:
    if skipped >= 0:
        return LongLine(prefix.decode("utf-8", "replace"), skipped)
    # a \n byte is never inside a UTF-8 sequence, so each line decodes on its own; split("\n")
    # (unlike splitlines) leaves U+2028, U+2029 and U+0085 inside their lines
    text = (parts[0] if len(parts) == 1 else b"".join(parts)).decode("utf-8", "replace")
    return text[1:] if first and text.startswith(_BOM) else text


def _refuse_constant(name: str) -> Any:
    raise BadLineError(f"{name} is not a number here")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadLineError(f"number {text[:20]} out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise BadLineError(f"integer of {len(text)} digits")
    return int(text)


_DECODER = json.JSONDecoder(parse_float=_finite, parse_int=_bounded_int, parse_constant=_refuse_constant)


def decode_line(line: str) -> Any:
    """One line of JSON, within the limits of the module docstring.

    Never raises anything but :class:`BadLineError`, whose text names what was wrong.
    """
    if isinstance(line, LongLine):
        raise BadLineError(f"line of {line.size:,} bytes, longer than the limit of {MAX_LINE_BYTES:,}")
    if line.startswith(_BOM):
        line = line[1:]
    try:
        value = _DECODER.decode(line)
    except BadLineError:
        raise
    except RecursionError:
        raise BadLineError(f"nested deeper than {MAX_DEPTH}") from None
    except (ValueError, TypeError, OverflowError):
        raise BadLineError("not JSON") from None
    if isinstance(value, (dict, list)):
        brackets = line.count("{") + line.count("[")
        fix = _SURROGATE_ESCAPE.search(line) is not None
        if brackets > MAX_DEPTH or fix:
            value = _checked(value, fix)
    elif isinstance(value, str) and _SURROGATE_ESCAPE.search(line):
        value = valid_text(value)
    return value


def valid_text(value: str) -> str:
    """``value`` with each lone surrogate replaced by U+FFFD, so it encodes as UTF-8; ``value`` itself if clean.

    The one repair for text bound for an encoder (spans, logs, metric attributes). Pure; never raises;
    one regular-expression scan.
    """
    return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value


def _checked(value: Any, fix: bool) -> Any:
    """``value`` with lone surrogates replaced (when ``fix``); BadLineError past :data:`MAX_DEPTH`.

    Iterative, so a deep value cannot exhaust the stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadLineError(f"nested deeper than {MAX_DEPTH}")
        if isinstance(node, dict):
            if fix and any(isinstance(k, str) and _SURROGATE.search(k) for k in node):
                fixed = {_SURROGATE.sub("\ufffd", k): v for k, v in node.items()}
                node.clear()
                node.update(fixed)
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, child in list(items):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            elif fix and isinstance(child, str) and _SURROGATE.search(child):
                node[key] = _SURROGATE.sub("\ufffd", child)
    return value


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
    if not 0 <= delta.days < _MAX_DAYS:  # before 1970 or past int64 ns (2262): no time a store writes
        return None
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def ms_ns(value: Any) -> int | None:
    """Milliseconds since the epoch as ns, or None if ``value`` is not a number from 1970 to 2262 (int64 ns)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < _MAX_MS:
        return int(value * _MS)
    return None
