"""Reader of Claude Code's ``claude -p --output-format stream-json --verbose`` stream.

- **Turn:** ``system/init`` starts it (init is not always line 1: hook lines may come first; a
  stream without init starts the turn at its first assistant or user line). ``result`` ends it,
  with ``is_error`` from the line. A later init or message after ``result`` starts the next turn.
  Calls still open at ``result`` (a background sub-agent's, which ``-p`` does not wait for) end
  there as ``interrupted``, so every call ends inside its turn.
- **Calls:** each ``tool_use`` block of an ``assistant`` line starts one, the ``tool_result``
  block of a ``user`` line with the same id ends it. Each content block comes on its own line.
  ``server_tool_use`` blocks run on the provider's side and have no result line, so they are not
  calls here. Durations are the differences of the lines' own ``timestamp`` (ISO-8601, on every
  assistant and user line since 2.1.x): a call lasts from its use line to its result line. The
  stamps are laid on the arrival clock (the first stamped line arrives when it arrives, the
  later ones as far after it as their stamps say; a line with no stamp at its arrival, never
  before the last time), so a replay, whose lines all arrive at once, still has real durations
  and a live run keeps its time before the first message. Lines without stamps (older versions)
  give arrival-time differences: 0 in a replay.
- **Failure:** ``is_error`` on the result block; a Bash failure's text starts with
  ``Exit code N``, which gives ``exit_code_N``; any other failure is ``tool_error``.
- **Sub-agents:** lines inside an Agent/Task call carry ``parent_tool_use_id``; it becomes the
  ``parent_call_id`` of the calls started on them.
- **Retries:** ``system/api_retry`` (CLI >= 2.1.81); ``error`` is an open string, used as reason.
- **Usage:** ``result.usage`` and ``total_cost_usd`` when the turn ends with ``result``: they are
  the CLI's own totals, sub-agents and helper calls included. The per-message usage on assistant
  lines is repeated on every content-block line of one message and its ``output_tokens`` is
  provisional (written before the message finished: 125 against a final 3,154 in a real run), so
  it is kept once per ``message.id`` (the last copy) and summed only for a turn that ends
  without ``result``, as a lower bound.
"""

from __future__ import annotations

from typing import Any

from otel_toolchain._input.lines import iso_ns
from otel_toolchain.harnesses._base import BaseReader, exit_code_label, opt_int, opt_str, req_str, text_of
from otel_toolchain.harnesses.events import Event, Usage

__all__ = ["ClaudeCodeReader"]

_SYNTHETIC_MODEL = "<synthetic>"
_EXIT_PREFIX = "Exit code "


def usage_of(raw: Any, cost: Any = None) -> Usage | None:
    """Claude usage (input excludes the cache) as Usage (input includes it)."""
    if not isinstance(raw, dict):
        return None
    cache_read = opt_int(raw, "cache_read_input_tokens")
    cache_write = opt_int(raw, "cache_creation_input_tokens")
    return Usage(
        opt_int(raw, "input_tokens") + cache_read + cache_write, opt_int(raw, "output_tokens"), cache_read, cache_write,
        0, float(cost) if isinstance(cost, (int, float)) else None,
    )


class ClaudeCodeReader(BaseReader):
    """Claude Code stream-json lines to neutral events; see the module docstring."""

    harness = "claude-code"
    shell_tools = frozenset({"Bash"})

    def __init__(self, *, strict: bool = False, source: str = "-") -> None:
        super().__init__(strict=strict, source=source)
        self._inited = False
        """An init line has started a run: another one while its turn is open starts a new run (``run --retries``)."""
        self._handlers = {
            "system": self._on_system,
            "assistant": self._on_assistant,
            "user": self._on_user,
            "result": self._on_result,
        }
        self._stamp_offset: int | None = None
        """Arrival clock minus stamp clock, fixed at the first stamped line."""
        self._clock_ns = 0

    def _usage_of(self, raw: Any) -> Usage | None:
        return usage_of(raw)

    def close(self, now_ns: int) -> list[Event]:
        """End of input; see :class:`~otel_toolchain.harnesses._base.StreamReader` (never before the last line)."""
        return super().close(max(now_ns, self._clock_ns))

    def _on_system(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        now_ns = self._line_time(obj, now_ns)
        subtype = obj.get("subtype")
        if subtype == "init":
            if self._turn_open and self._inited:  # a run cut off before its result (a killed attempt), then the next
                self._end_turn(out, now_ns, line_no, is_error=True)
            self._inited = True
            self.session_id = opt_str(obj, "session_id") or self.session_id
            self.model = opt_str(obj, "model") or self.model
            self.cwd = opt_str(obj, "cwd") or self.cwd
            self._start_turn(out, now_ns, line_no)
        elif subtype == "api_retry":
            attempt = obj["attempt"]
            if not isinstance(attempt, int):
                raise TypeError("field 'attempt' is not an integer")
            error = obj.get("error")
            self._retry(out, attempt, error if isinstance(error, str) else None, now_ns, line_no)

    def _line_time(self, obj: dict[str, Any], now_ns: int) -> int:
        """The line's time on the arrival clock: its stamp, moved by the offset; else its arrival."""
        stamp = iso_ns(obj.get("timestamp"))
        if stamp is None:
            time_ns = max(now_ns, self._clock_ns)
        else:
            if self._stamp_offset is None:
                self._stamp_offset = max(now_ns, self._clock_ns) - stamp
            time_ns = stamp + self._stamp_offset
        self._clock_ns = max(self._clock_ns, time_ns)
        return time_ns

    def _on_assistant(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        now_ns = self._line_time(obj, now_ns)
        message = obj["message"]
        if self.session_id is None:
            self.session_id = opt_str(obj, "session_id")
        parent = obj.get("parent_tool_use_id")
        if self.model is None and parent is None:
            model = message.get("model")
            self.model = model if isinstance(model, str) and model != _SYNTHETIC_MODEL else None
        message_id = message.get("id")
        if isinstance(message_id, str):
            self._note_usage(message_id, message.get("usage"))
        if not self._turn_open:
            self._start_turn(out, now_ns, line_no)
        for block in message["content"]:
            if block.get("type") == "tool_use":
                self._start_call(
                    out, req_str(block, "id"), req_str(block, "name"), block.get("input", {}),
                    parent=parent if isinstance(parent, str) else None, time_ns=now_ns, line_no=line_no,
                )

    def _on_user(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        if obj.get("isReplay"):
            return
        now_ns = self._line_time(obj, now_ns)
        if self.session_id is None:
            self.session_id = opt_str(obj, "session_id")
        content = obj["message"]["content"]
        if isinstance(content, str):
            return
        for block in content:
            if block.get("type") == "tool_result":
                self._on_tool_result(block, line_no, now_ns, out)

    def _on_tool_result(self, block: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        call_id = req_str(block, "tool_use_id")
        result = text_of(block.get("content"))
        failed = block.get("is_error") is True
        error_type = None
        if failed:
            if result and result.startswith(_EXIT_PREFIX):
                error_type = exit_code_label(result[len(_EXIT_PREFIX):])
            error_type = error_type or "tool_error"
        started = self._calls.get(call_id)
        if started is not None and now_ns < started.time_ns:  # a stamp earlier than its call's: no time
            now_ns = started.time_ns
        self._finish_call(
            out, call_id, result, failed=failed, error_type=error_type, end_ns=now_ns, line_no=line_no,
        )

    def _on_result(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        now_ns = self._line_time(obj, now_ns)
        if self.session_id is None:
            self.session_id = opt_str(obj, "session_id")
        usage = usage_of(obj.get("usage"), obj.get("total_cost_usd"))
        self._end_turn(out, now_ns, line_no, is_error=obj.get("is_error") is True, usage=usage)

