"""The records plugins receive: a finished tool call and a provider retry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from otel_toolchain import semconv
from otel_toolchain._identity import Canonicaliser, Digester, canonical_json

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["Retry", "ToolCall"]

_DEFAULT_CANONICALISER = Canonicaliser()


@dataclass(slots=True, eq=False)
class ToolCall:
    """A finished tool call, as the plugins of one turn see it, in order.

    Plugins always see the full arguments and result, whether or not the span records them.
    ``tags`` carries what earlier plugins said of the call (``classify`` puts its class under
    ``"class"``); :meth:`tag` also writes the tag to the span while the span is still live.
    """

    tool: str
    call_id: str | None = None
    raw_arguments: str | None = None
    result: str | None = None
    failed: bool = False
    error_type: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    cwd: str | None = None
    index: int = 0
    """1-based position of the call in its turn."""
    trace_id: int = 0
    span_id: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    span: Span | None = field(default=None, repr=False)
    """The live tool span while plugins run before it ends; None when it has already ended."""
    digester: Digester | None = field(default=None, repr=False)
    canonicaliser: Canonicaliser = field(default=_DEFAULT_CANONICALISER, repr=False)
    _parsed: Any = field(default=None, repr=False)
    _is_parsed: bool = field(default=False, repr=False)
    _digest: str | None = field(default=None, repr=False)

    @property
    def arguments(self) -> str:
        """The arguments as canonical JSON (sorted keys), or as given when they are not JSON."""
        parsed = self.parsed_arguments
        return canonical_json(parsed) if parsed is not None else (self.raw_arguments or "")

    @property
    def parsed_arguments(self) -> Any:
        """The arguments as a Python value, or None when they are absent or not JSON (read-only)."""
        if not self._is_parsed:
            self._parsed = self.canonicaliser.parse(self.raw_arguments)
            self._is_parsed = True
        return self._parsed

    @property
    def identity(self) -> tuple[str, Any, str, str, bool]:
        """What makes two calls the same: tool, arguments, working directory, result and failure.

        Arguments compare as parsed JSON, so key order does not matter (dicts compare by content)
        and no canonical text has to be written on the hot path; text that is not JSON compares as is.
        """
        parsed = self.parsed_arguments
        return (self.tool, parsed if parsed is not None else self.raw_arguments or "", self.cwd or "",
                self.result or "", self.failed)

    @property
    def duration_ms(self) -> int:
        """Milliseconds from the call to its result (0 where the harness reports them together)."""
        return max(0, self.end_ns - self.start_ns) // 1_000_000

    @property
    def digest(self) -> str:
        """Keyed digest of the call's identity: tool, arguments, working directory, result, failure."""
        if self._digest is None:
            digester = self.digester or Digester(b"otel_toolchain-unkeyed")
            self._digest = digester.digest(self.tool, self.arguments, self.cwd or "", self.result or "",
                                           "1" if self.failed else "0")
        return self._digest

    def tag(self, key: str, value: str) -> None:
        """Tag the call for later plugins, and the live span as ``otel_toolchain.tool.<key>``."""
        self.tags[key] = value
        if self.span is not None and self.span.is_recording():
            self.span.set_attribute(semconv.TOOL_TAG_PREFIX + key, value)



@dataclass(frozen=True, slots=True)
class Retry:
    """A provider retry: the model API call failed and the harness tried again."""

    attempt: int = 1
    reason: str | None = None
    error_type: str | None = None
    time_ns: int = 0
