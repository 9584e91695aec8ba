"""Reader of the Pi coding agent's ``pi --mode json`` stream.

- **Turn: one prompt, retries included.** Pi's own "turn" (``turn_start``/``turn_end``) is one
  assistant response with its tool calls, too small a unit; its "run" (``agent_start``/
  ``agent_end``) is closer, but an automatic provider retry ends the run and starts a new one
  with no new user message. Claude Code and Codex report such retries inside one turn, and the
  plugins count retries per turn, so here a turn runs from an ``agent_start`` to the
  ``agent_end`` that no retry follows: a retry is a :class:`Retry` inside the turn.
  Newer Pi says so on the line (``agent_end.willRetry``). Older Pi says it only with the
  ``auto_retry_start`` that follows, so when ``willRetry`` is absent and the run's last
  assistant message failed, the TurnEnded is held until the next line shows whether a retry
  (or an overflow compaction that retries) comes; ``agent_start``, ``agent_settled`` or end of
  input release it. A run after a finished one (a queued follow-up) is a new turn.
- **Calls:** ``tool_execution_start`` / ``tool_execution_end`` by ``toolCallId``; durations
  are arrival-time differences (newer Pi writes ends in completion order, v0.58 in source order).
- **Failure:** ``isError``; a bash failure's text ends ``Command exited with code N``
  (``exit_code_N``), any other failure is ``tool_error``.
- **Retries:** ``auto_retry_start`` (attempt, ``errorMessage``); ``auto_retry_end`` with
  ``success: false`` makes the turn an error.
- **Usage:** the sum of the assistant ``message_end`` usages and costs, less the failed message
  a retry replaced. Pi's input excludes cache reads and writes, so they are added back.
- **Session:** the header line gives ``id`` and ``cwd``; assistant messages give the model.
"""

from __future__ import annotations

from typing import Any

from otel_toolchain.harnesses._base import (
    BaseReader,
    exit_code_label,
    opt_int,
    opt_str,
    req_str,
    text_of,
)
from otel_toolchain.harnesses.events import Event, Usage

__all__ = ["PiReader", "error_type_of"]

_EXIT_MARKER = "Command exited with code "
_FAILED_STOPS = frozenset({"error", "aborted"})


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    read, write = opt_int(raw, "cacheRead"), opt_int(raw, "cacheWrite")
    cost = raw.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    return Usage(
        opt_int(raw, "input") + read + write, opt_int(raw, "output"), read, write, 0,
        float(total) if isinstance(total, (int, float)) else None,
    )


class PiReader(BaseReader):
    """Pi ``--mode json`` lines to neutral events; see the module docstring."""

    harness = "pi"
    shell_tools = frozenset({"bash"})

    def __init__(self, *, strict: bool = False, source: str = "-") -> None:
        super().__init__(strict=strict, source=source)
        self._last_stop: str | None = None
        self._failed_usage_key: str | None = None
        self._retry_failed = False
        self._held_end: tuple[int, int, bool] | None = None
        self._handlers = {
            "session": self._on_session,
            "agent_start": self._on_agent_start,
            "agent_end": self._on_agent_end,
            "agent_settled": self._on_agent_settled,
            "message_end": self._on_message_end,
            "tool_execution_start": self._on_tool_start,
            "tool_execution_end": self._on_tool_end,
            "auto_retry_start": self._on_retry_start,
            "auto_retry_end": self._on_retry_end,
            "auto_compaction_start": self._on_continuation,
            "compaction_start": self._on_continuation,
        }

    def close(self, now_ns: int) -> list[Event]:
        """End of input: release a held TurnEnded, else end an open turn as an error."""
        out: list[Event] = []
        self._release(out)
        out.extend(super().close(now_ns))
        return out

    def _usage_of(self, raw: Any) -> Usage | None:
        return _usage(raw)

    def _release(self, out: list[Event]) -> None:
        if self._held_end is not None:
            time_ns, line_no, is_error = self._held_end
            self._held_end = None
            self._end_turn(out, time_ns, line_no, is_error=is_error)

    def _on_session(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self.session_id = req_str(obj, "id")
        self.cwd = opt_str(obj, "cwd")

    def _on_agent_start(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._release(out)
        if not self._turn_open:
            self._last_stop = None
            self._retry_failed = False
            self._start_turn(out, now_ns, line_no)

    def _on_agent_end(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        will_retry = obj.get("willRetry")
        if will_retry is True:
            return
        is_error = self._retry_failed or self._last_stop in _FAILED_STOPS
        if will_retry is None and self._last_stop == "error":
            self._held_end = (now_ns, line_no, is_error)
        else:
            self._end_turn(out, now_ns, line_no, is_error=is_error)

    def _on_agent_settled(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._release(out)
        if self._turn_open:
            self._end_turn(out, now_ns, line_no, is_error=self._retry_failed or self._last_stop in _FAILED_STOPS)

    def _on_continuation(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._held_end = None

    def _on_message_end(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        message = obj["message"]
        if message.get("role") != "assistant":
            return
        self.model = opt_str(message, "model") or self.model
        self._last_stop = opt_str(message, "stopReason")
        key = f"line {line_no}"
        self._note_usage(key, message.get("usage"))
        self._failed_usage_key = key if self._last_stop == "error" else None

    def _on_tool_start(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._start_call(
            out, req_str(obj, "toolCallId"), req_str(obj, "toolName"), obj.get("args") or {},
            time_ns=now_ns, line_no=line_no,
        )

    def _on_tool_end(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        call_id, tool = req_str(obj, "toolCallId"), req_str(obj, "toolName")
        raw = obj.get("result")
        result = text_of(raw.get("content") if isinstance(raw, dict) else raw)
        failed = obj.get("isError") is True
        error_type = error_type_of(result) if failed else None
        self._finish_call(
            out, call_id, result, failed=failed, error_type=error_type, end_ns=now_ns, line_no=line_no, tool=tool,
        )

    def _on_retry_start(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        attempt = obj["attempt"]
        if not isinstance(attempt, int):
            raise TypeError("field 'attempt' is not an integer")
        self._held_end = None
        if self._failed_usage_key is not None:
            self._usage.pop(self._failed_usage_key, None)
            self._failed_usage_key = None
        self._retry(out, attempt, opt_str(obj, "errorMessage"), now_ns, line_no)

    def _on_retry_end(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        if obj.get("success") is False:
            self._retry_failed = True


def error_type_of(result: str | None) -> str:
    """The error type of a failed Pi call: ``exit_code_<n>`` from bash's closing line, else ``tool_error``."""
    marker_at = result.rfind(_EXIT_MARKER) if result else -1
    if result and marker_at >= 0:
        return exit_code_label(result[marker_at + len(_EXIT_MARKER):]) or "tool_error"
    return "tool_error"
