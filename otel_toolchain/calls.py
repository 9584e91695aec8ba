"""The values plugins receive: a finished tool call and a provider retry.

Each is built once, by whoever saw the call (the recorder, a harness adapter, the OTLP receiver,
the span reader for other instrumentations), and handed on unchanged: immutable, safe to keep
and to pass between threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from otel_toolchain.identity import UNKNOWN_TOOL, parse_arguments

__all__ = ["UNKNOWN_TOOL", "Retry", "ToolCall"]


class ToolCall(NamedTuple):
    """A finished tool call, as the plugins of one turn see it, in order.

    ``arguments`` is the input as the source had it: a parsed value (usually a dict) where the source
    parsed it, else its JSON text; :attr:`parsed_arguments` always gives the value (text that is not
    JSON stays text; None when there was none or it was not recorded), parsed once per distinct
    text. ``result`` is the result as text. ``has_content`` is False when the source recorded
    neither arguments nor result (an instrumentation with content capture off): such a call can be
    counted but not told apart from another one.

    Plugins see the full arguments and result whether or not the span records them. A tuple under
    the hood, so building one costs little on the hot path; compare calls with
    :class:`otel_toolchain.identity.Identity`, not ``==``.
    """

    tool: str
    arguments: Any = None
    result: str | None = None
    failed: bool = False
    error_type: str | None = None
    call_id: str | None = None
    cwd: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    trace_id: int = 0
    span_id: int = 0
    has_content: bool = True

    @property
    def parsed_arguments(self) -> Any:
        """The arguments as a value: JSON text parsed (cached by text), anything else as it is."""
        arguments = self.arguments
        return parse_arguments(arguments) if isinstance(arguments, str) else arguments

    @property
    def duration_ms(self) -> int:
        """Milliseconds from the call to its result (0 where the harness reports them together)."""
        return max(0, self.end_ns - self.start_ns) // 1_000_000

    @property
    def rebuilt(self) -> bool:
        """A call rebuilt from a lone result: its tool and arguments are unknown."""
        return self.tool == UNKNOWN_TOOL and self.arguments is None


@dataclass(frozen=True, slots=True)
class Retry:
    """A provider retry: the model API call failed and the harness tried again.

    ``line_no`` is the stream line it was read from (0 where it did not come from a stream).
    """

    attempt: int = 1
    reason: str | None = None
    error_type: str | None = None
    time_ns: int = 0
    line_no: int = 0

