"""What every stream reader shares: line decoding, dispatch, open calls, turn state and errors.

A reader subclass fills ``_handlers`` with one small method per event type it knows. ``feed``
decodes the line once, looks its ``type`` up and calls the handler, which appends events to a
list. Unknown types cost one dict lookup and yield nothing. A handler that trips over a missing
or mistyped field (``KeyError``, ``TypeError``, ``ValueError``, ``AttributeError``) turns the
line into a :class:`BadLine`, or a :class:`StreamError` when the reader is strict; events the
handler emitted before it tripped are kept, so every started call still finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from otel_toolchain._input.lines import BadLineError, decode_line
from otel_toolchain.calls import UNKNOWN_TOOL
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.events import (
    BadLine,
    Event,
    Retry,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from otel_toolchain.identity import canonical_json

__all__ = ["FIELD_ERRORS", "StreamReader"]

Handler = Callable[[dict[str, Any], int, int, list[Event]], None]
"""(decoded line, line number, arrival time in ns, events out) -> None."""

_TEXT_LIMIT = 200
FIELD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError, RecursionError)
"""What a handler tripping over a missing, mistyped or out-of-range field raises: a bad line, never a crash."""
_INT64 = 1 << 63


class StreamReader(Protocol):
    """Turns one harness's JSON lines into neutral events, a line at a time."""

    harness: str

    def feed(self, line: str, line_no: int, now_ns: int) -> list[Event]:
        """The events of one line; ``now_ns`` is when the line arrived."""
        ...

    def close(self, now_ns: int) -> list[Event]:
        """End of input: fail the calls still open as ``interrupted`` and end an open turn."""
        ...


def req_str(obj: dict[str, Any], key: str) -> str:
    """``obj[key]``, which must be a string (KeyError or TypeError otherwise)."""
    value = obj[key]
    if not isinstance(value, str):
        raise TypeError(f"field {key!r} is {type(value).__name__}, not a string")
    return value


def opt_str(obj: dict[str, Any], key: str) -> str | None:
    """``obj[key]`` if it is a string, else None."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def opt_int(obj: dict[str, Any], key: str) -> int:
    """``obj[key]`` if it is a number within int64, else 0 (usage is read at a turn's end, when no line is
    left to blame: a count no exporter could carry counts as absent)."""
    value = obj.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not -_INT64 < value < _INT64:
        return 0
    return int(value)


def text_of(content: Any) -> str | None:
    """Result text: a string as it is, or the text blocks of a block list joined by newlines."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"] for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return canonical_json(content)


def exit_code_label(number: str) -> str | None:
    """``exit_code_<n>`` from the text of a number (its first word), or None if it is not one."""
    word = number.split(None, 1)[0] if number and not number.isspace() else ""
    return f"exit_code_{int(word)}" if word.lstrip("-").isdigit() else None


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "missing field"
    return str(exc) or type(exc).__name__


class BaseReader:
    """Shared state and helpers of the four readers; see the module docstring."""

    harness: str
    shell_tools: frozenset[str] = frozenset()
    """Tool names that run shell commands; their ToolFinished carries the session cwd."""

    def __init__(self, *, strict: bool = False, source: str = "-") -> None:
        self.strict = strict
        self.source = source
        self.session_id: str | None = None
        self.model: str | None = None
        self.cwd: str | None = None
        self._turn_open = False
        self._calls: dict[str, ToolStarted] = {}
        """The calls started and not yet finished, by call id."""
        self._usage: dict[str, Any] = {}
        """Raw usage records of the open turn by key (message id, step id...), read at its end."""
        self._tokens_by_key: dict[str, int] = {}
        self._tokens = 0
        """Input and output tokens of ``_usage`` so far (kept as records come: no sum per call)."""
        self._last_line = 0
        self._handlers: dict[str, Handler] = {}

    def feed(self, line: str, line_no: int, now_ns: int) -> list[Event]:
        """The events of one line; see :class:`StreamReader`."""
        self._last_line = line_no
        try:
            obj = decode_line(line)
        except BadLineError as exc:
            return [] if not line.strip() else self._bad(line_no, str(exc), line)
        if not isinstance(obj, dict):
            return self._bad(line_no, "not a JSON object", line)
        kind = obj.get("type")
        if not isinstance(kind, str):
            return self._bad(line_no, "no 'type' field", line)
        handler = self._handlers.get(kind)
        if handler is None:
            return []
        out: list[Event] = []
        try:
            handler(obj, line_no, now_ns, out)
        except FIELD_ERRORS as exc:
            out.extend(self._bad(line_no, f"{kind}: {_describe(exc)}", line))
        return out

    def close(self, now_ns: int) -> list[Event]:
        """End of input; see :class:`StreamReader`."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            self._end_turn(out, now_ns, self._last_line, is_error=True)
        return out

    def _usage_of(self, raw: Any) -> Usage | None:
        """One raw usage record as Usage; readers that record usage override this."""
        return None

    def _note_usage(self, key: str, raw: Any) -> None:
        """Keep a usage record of the open turn (a later copy of ``key`` replaces the earlier one)."""
        self._usage[key] = raw
        usage = self._usage_of(raw)
        self._tokens -= self._tokens_by_key.pop(key, 0)
        if usage is not None:  # a record that is no usage (or usage not read) leaves the tokens unknown
            self._tokens += usage.input_tokens + usage.output_tokens
            self._tokens_by_key[key] = usage.input_tokens + usage.output_tokens

    def _drop_usage(self, key: str) -> None:
        """Forget a usage record (a failed request that was retried)."""
        self._usage.pop(key, None)
        self._tokens -= self._tokens_by_key.pop(key, 0)

    def _tokens_so_far(self) -> int | None:
        """The open turn's tokens so far, or None if no usage record has come."""
        return self._tokens if self._tokens_by_key else None

    def _total_usage(self) -> Usage | None:
        total: Usage | None = None
        for raw in self._usage.values():
            usage = self._usage_of(raw)
            if usage is not None:
                total = usage if total is None else total.plus(usage)
        return total

    def _bad(self, line_no: int, reason: str, line: str) -> list[Event]:
        if self.strict:
            raise StreamError(reason, source=self.source, line_no=line_no)
        return [BadLine(line_no, reason, line.rstrip("\r\n")[:_TEXT_LIMIT])]

    def _start_turn(self, out: list[Event], time_ns: int, line_no: int) -> None:
        if not self._turn_open:
            self._turn_open = True
            out.append(TurnStarted(self.harness, self.session_id, self.model, self.cwd, time_ns, line_no))

    def _retry(self, out: list[Event], attempt: int, reason: str | None, time_ns: int, line_no: int) -> None:
        self._start_turn(out, time_ns, line_no)
        out.append(Retry(attempt, reason, None, time_ns, line_no))

    def _start_call(
        self, out: list[Event], call_id: str, tool: str, arguments: Any, *, parent: str | None = None,
        time_ns: int, line_no: int,
    ) -> None:
        if not self._turn_open:
            self._start_turn(out, time_ns, line_no)
        if call_id in self._calls:  # a repeated start line: the call is already open, and ends once
            return
        self._calls[call_id] = started = ToolStarted(call_id, tool, arguments, parent, time_ns, line_no)
        out.append(started)

    def _finish_call(
        self, out: list[Event], call_id: str, result: str | None, *, failed: bool, error_type: str | None,
        end_ns: int, line_no: int, tool: str = UNKNOWN_TOOL, arguments: Any = None, cwd: str | None = None,
    ) -> None:
        """Finish ``call_id``; a call never seen starting finishes with start = end and ``tool``."""
        call = self._calls.pop(call_id, None)
        if call is None:
            self._start_turn(out, end_ns, line_no)
            call = ToolStarted(call_id, tool, arguments, None, end_ns, line_no)
        if cwd is None and call.tool in self.shell_tools:
            cwd = self.cwd
        out.append(ToolFinished(
            call_id, call.tool, call.arguments if arguments is None else arguments, result, failed,
            error_type if failed else None, call.parent_call_id, call.time_ns, end_ns, cwd, line_no,
            self._tokens_so_far(),
        ))

    def _end_turn(
        self, out: list[Event], time_ns: int, line_no: int, *, is_error: bool, usage: Usage | None = None,
    ) -> None:
        """Fail the open calls as interrupted, emit TurnEnded and forget the turn's state."""
        self._start_turn(out, time_ns, line_no)
        for call_id in reversed(list(self._calls)):  # innermost (latest) first, so sub-agent calls nest
            self._finish_call(
                out, call_id, None, failed=True, error_type="interrupted", end_ns=time_ns, line_no=line_no,
            )
        if usage is None and self._usage:
            usage = self._total_usage()
        out.append(TurnEnded(time_ns, line_no, is_error, usage, self.model, self.session_id))
        self._turn_open = False
        self._usage.clear()
        self._tokens_by_key.clear()
        self._tokens = 0

