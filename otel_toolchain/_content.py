"""A side channel that hands a call's full content to the chain without putting it on the span.

The recorder API ends a tool span inside :func:`offered`; the chain, which runs synchronously in
that ``end()`` on the same thread, reads the content with :func:`take`. So plugins see arguments
and results even when content capture keeps them off the exported span.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Content:
    """The full arguments and result of the call being ended."""

    span_id: int
    arguments: str | None
    result: str | None


_OFFERED: ContextVar[Content | None] = ContextVar("otel_toolchain_offered_content", default=None)


@contextmanager
def offered(content: Content) -> Iterator[None]:
    """Make ``content`` visible to the chain while the span with ``content.span_id`` ends."""
    token = _OFFERED.set(content)
    try:
        yield
    finally:
        _OFFERED.reset(token)


def take(span_id: int) -> Content | None:
    """The content offered for the span ``span_id``, if it is the one being ended."""
    content = _OFFERED.get()
    return content if content is not None and content.span_id == span_id else None
