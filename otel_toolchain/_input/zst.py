"""Bounded reading of zstandard-compressed files: a zip bomb, a corrupt or a cut-off file is an error for that file.

Compressed bytes go to the decompressor in small pieces (:data:`_PIECE`), so one call can
expand only so far (zstd's densest block, 128 KiB of one byte, costs 4 bytes: at most 16 MiB
per piece), and the totals are checked after each piece. A file ends cleanly only at the end
of a frame; anything else is "truncated".

Not thread-safe; one reader per file.
"""

from __future__ import annotations

import sys
from typing import IO, Any, Final

from otel_toolchain.errors import MissingExtra, StreamError

__all__ = ["MAX_ZST_BYTES", "MAX_ZST_RATIO", "ZstdLinesReader", "zstd_reader"]

MAX_ZST_BYTES: Final = 8 << 30
"""Most bytes one ``.zst`` file may expand to (8 GiB)."""
MAX_ZST_RATIO: Final = 1000
"""Most bytes out per compressed byte (real rollouts compress 5-20x; 4 GB of zeros in 131 KB is 30,000x)."""
_FLOOR: Final = 1 << 20
"""A small file may always expand to 1 MiB, whatever its ratio."""
_PIECE = 512
_RAW_CHUNK = 1 << 16


def zstd_reader(raw: IO[bytes], size: int, source: str) -> ZstdLinesReader:
    """A bounded decompressing reader of ``raw`` (``size`` compressed bytes).

    Raises:
        MissingExtra: neither ``zstandard`` nor Python 3.14's ``compression.zstd`` is there.
    """
    if sys.version_info >= (3, 14):  # pragma: no cover - not the CI's Python
        from compression import zstd  # noqa: PLC0415 (optional: only for .zst files)

        return ZstdLinesReader(raw, zstd.ZstdDecompressor, zstd.ZstdError, size, source)
    try:
        import zstandard  # noqa: PLC0415 (the optional extra zstd, only for .zst files)
    except ImportError:
        raise MissingExtra(
            f"{source}: reading .zst rollouts needs the 'zstandard' package: pip install 'otel-toolchain[zstd]'"
        ) from None
    return ZstdLinesReader(raw, zstandard.ZstdDecompressor().decompressobj, zstandard.ZstdError, size, source)


class ZstdLinesReader:
    """``read(size)`` of the decompressed bytes; raises StreamError past the limits, or on a bad or cut frame."""

    def __init__(self, raw: IO[bytes], new: Any, error: type[Exception], size: int, source: str) -> None:
        self._raw = raw
        self._new = new
        self._error = error
        self._obj: Any = None
        self._limit = min(MAX_ZST_BYTES, max(size * MAX_ZST_RATIO, _FLOOR))
        self._out = 0
        self._source = source
        self._buffer = bytearray()
        self._input = b""

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when negative); b"" at the end."""
        want = size if size >= 0 else MAX_ZST_BYTES
        while len(self._buffer) < want and self._fill():
            pass
        data = bytes(self._buffer[:want])
        del self._buffer[:want]
        return data

    def _fill(self) -> bool:
        """Decompress one more piece into the buffer; False at the clean end of input."""
        if not self._input:
            self._input = self._raw.read(_RAW_CHUNK)
            if not self._input:
                if self._obj is not None and not self._obj.eof:
                    raise StreamError("truncated .zst: the file ends inside a frame", source=self._source)
                return False
        piece, self._input = self._input[:_PIECE], self._input[_PIECE:]
        if self._obj is None:
            self._obj = self._new()
        try:
            out = self._obj.decompress(piece)
        except self._error as exc:
            raise StreamError(f"corrupt .zst: {exc}", source=self._source) from None
        if self._obj.eof:  # one frame ended; what follows it starts the next one
            self._input, self._obj = self._obj.unused_data + self._input, None
        self._out += len(out)
        if self._out > self._limit:
            raise StreamError(
                f".zst expands past {self._limit:,} bytes (limits: {MAX_ZST_BYTES:,} bytes, {MAX_ZST_RATIO}x "
                "the file's size): not read further", source=self._source)
        self._buffer += out
        return True

    def close(self) -> None:
        """Close the file underneath."""
        self._raw.close()

    def __enter__(self) -> ZstdLinesReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
