"""Saying, once, that an instrumentation records no tool content, and how to turn it on.

When a tool span carries neither arguments nor result, repeat_guard can only compare what is
there (tool name, failure, working directory). The chain says so once per process and
instrumentation (a WARNING log line naming the setting to change) and once per turn (the
attribute ``otel_toolchain.turn.content_capture=off`` on the turn span, while it is live).

Thread-safe (a lock around the set of scopes already logged); never blocks beyond logging.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Final

from otel_toolchain import semconv
from otel_toolchain._recognise.shapes import capture_hint

if TYPE_CHECKING:
    from otel_toolchain.turn import Turn

__all__ = ["CONTENT_CAPTURE", "ContentNotes"]

CONTENT_CAPTURE: Final = semconv.TURN_CONTENT_CAPTURE
"""Turn span attribute: ``off`` when a tool span of the turn carried no arguments and no result."""

_log = logging.getLogger("otel_toolchain")


class _Noted:
    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


class ContentNotes:
    """Remembers which instrumentations were already reported as recording no content."""

    def __init__(self) -> None:
        self._scopes: set[str] = set()
        self._lock = threading.Lock()

    def missing(self, turn: Turn, scope: str, span_id: int) -> None:
        """The tool span ``span_id`` of ``turn``, from instrumentation ``scope``, carried no content.

        A tool span that is its own turn (a trace of one call) gets no turn attribute.
        """
        noted = turn.state_of(self, _Noted)
        if not noted.done and turn.span_id != span_id:
            noted.done = True
            if turn.span is not None and turn.span.is_recording():
                turn.span.set_attribute(CONTENT_CAPTURE, "off")
        with self._lock:
            if scope in self._scopes:
                return
            self._scopes.add(scope)
        _log.warning(
            "otel_toolchain: tool spans from %r carry no arguments or results (content capture is off), "
            "so repeat_guard compares tool names and failures only. To capture content: %s",
            scope or "<unnamed instrumentation>", capture_hint(scope),
        )
