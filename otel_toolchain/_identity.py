"""Call identity: canonical arguments and the keyed digest that stands for a call outside the process.

Two calls are the same when tool, arguments, working directory, result and failure all match. The
digest of that identity is keyed (BLAKE2b in keyed mode, a MAC) so that a short command cannot be
recovered from a digest by hashing guesses. The key is random per Digester (one per chain) unless configured.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Final

_CACHE_LIMIT: Final = 4096
_SEPARATOR: Final = b"\x1f"


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no insignificant white space."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_NOT_JSON = object()


class Canonicaliser:
    """Parses raw argument strings, caching the strings it has seen.

    Agents repeat themselves, so most lookups hit the cache. Parsed values are shared between
    calls with the same text: treat them as read-only. Safe to share between threads: a lost
    cache entry only costs a recomputation.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def parse(self, raw: str | None) -> Any:
        """The parsed value of ``raw``, or None when it is absent or not JSON."""
        if raw is None:
            return None
        parsed = self._cache.get(raw, _NOT_JSON)
        if parsed is _NOT_JSON:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[raw] = parsed
        return parsed


class Digester:
    """Keyed 128-bit digests of call identities."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else os.urandom(32)
        if not 1 <= len(self._key) <= 64:
            raise ValueError("a digest key holds 1 to 64 bytes")

    def digest(self, *parts: str) -> str:
        """Hex digest of ``parts``, which are joined unambiguously."""
        hasher = hashlib.blake2b(key=self._key, digest_size=16)
        for part in parts:
            hasher.update(part.encode("utf-8", "surrogatepass"))
            hasher.update(_SEPARATOR)
        return hasher.hexdigest()
