"""Reader of OpenCode's ``opencode run --format json`` stream.

- **Turn:** the first line starts it; ``done`` (newest versions only) ends it, else end of
  input does. A stream that ends after a ``step_finish`` with reason ``stop`` and no ``error``
  line ended cleanly (that is how released versions end); any other end is an error.
- **Calls:** OpenCode writes one ``tool_use`` line per call, after it ended, so each gives a
  ToolStarted immediately followed by its ToolFinished, keyed by ``part.callID``. Should a
  version ever write ``pending``/``running`` lines, they start the call and the final line
  finishes it. Sub-agents run in child sessions, which this stream does not show.
- **Times:** the stream's own. A call runs from ``part.state.time.start`` to ``.end`` (ms epoch).
  Where those are missing, the line's ``timestamp`` (the ms it was written) stands for the
  missing end and the start falls back to the end, so such a call lasts 0; a line without a
  ``timestamp`` takes the last stream time seen, and only a stream with no time at all uses
  arrival times. The turn starts and ends at stream times too, so turn and calls share a clock.
- **Failure:** ``state.status == "error"`` (``tool_error``; versions before Feb 2026 drop failed
  calls altogether), a bash call's ``state.metadata.exit`` other than 0 (``exit_code_N``; it comes
  as ``completed``), and the ``invalid`` tool of a malformed call (``invalid_tool``).
- **Retries:** not in this stream. **Usage:** the sum of ``step_finish.part.tokens`` and
  ``.cost``; OpenCode's input excludes the cache and its output excludes reasoning, so both are
  added back. No model and no cwd in the stream.
"""

from __future__ import annotations

from typing import Any

from otel_toolchain._input.lines import ms_ns
from otel_toolchain.harnesses._base import BaseReader, opt_int, opt_str, req_str
from otel_toolchain.harnesses.events import Event, Usage

__all__ = ["OpenCodeReader"]

_UNFINISHED = frozenset({"pending", "running"})


def _outcome(tool: str, state: dict[str, Any]) -> tuple[str | None, bool, str | None]:
    """(result, failed, error_type) of a finished tool state."""
    if state["status"] == "error":
        return opt_str(state, "error"), True, "tool_error"
    output = opt_str(state, "output")
    if tool == "invalid":
        return output, True, "invalid_tool"
    metadata = state.get("metadata")
    exit_code = metadata.get("exit") if isinstance(metadata, dict) else None
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        return output, True, f"exit_code_{exit_code}"
    return output, False, None


def _step_usage(part: Any) -> Usage | None:
    tokens = part.get("tokens") if isinstance(part, dict) else None
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    read, write = opt_int(cache, "read"), opt_int(cache, "write")
    reasoning = opt_int(tokens, "reasoning")
    cost = part.get("cost")
    return Usage(
        opt_int(tokens, "input") + read + write, opt_int(tokens, "output") + reasoning, read, write,
        reasoning, float(cost) if isinstance(cost, (int, float)) else None,
    )


class OpenCodeReader(BaseReader):
    """OpenCode ``run --format json`` lines to neutral events; see the module docstring."""

    harness = "opencode"
    shell_tools = frozenset({"bash"})

    def __init__(self, *, strict: bool = False, source: str = "-") -> None:
        super().__init__(strict=strict, source=source)
        self._stream_ns: int | None = None
        self._had_error = False
        self._last_reason: str | None = None
        self._handlers = {
            "step_start": self._on_step_start,
            "tool_use": self._on_tool_use,
            "step_finish": self._on_step_finish,
            "error": self._on_error,
            "done": self._on_done,
        }

    def close(self, now_ns: int) -> list[Event]:
        """End of input: the normal end of released versions; see the module docstring."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            clean = not self._had_error and self._last_reason == "stop"
            time_ns = now_ns if self._stream_ns is None else self._stream_ns
            self._end_turn(out, time_ns, self._last_line, is_error=not clean)
        return out

    def _usage_of(self, raw: Any) -> Usage | None:
        return _step_usage(raw)

    def _line_time(self, obj: dict[str, Any], now_ns: int) -> int:
        stamp = ms_ns(obj.get("timestamp"))
        if stamp is not None:
            self._stream_ns = stamp
            return stamp
        return now_ns if self._stream_ns is None else self._stream_ns

    def _begin(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> int:
        """Note the session, start the turn if needed, and return the line's time."""
        time_ns = self._line_time(obj, now_ns)
        if not self._turn_open:
            self.session_id = opt_str(obj, "sessionID") or self.session_id
            self._had_error = False
            self._last_reason = None
            self._start_turn(out, time_ns, line_no)
        return time_ns

    def _on_step_start(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._begin(obj, line_no, now_ns, out)
        self._last_reason = None

    def _on_tool_use(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        part = obj["part"]
        state = part["state"]
        status = req_str(state, "status")
        tool = req_str(part, "tool")
        call_id = opt_str(part, "callID") or req_str(part, "id")
        time_ns = self._begin(obj, line_no, now_ns, out)
        times = state.get("time")
        times = times if isinstance(times, dict) else {}
        end_ns = ms_ns(times.get("end")) or time_ns
        start_ns = ms_ns(times.get("start"))
        if status in _UNFINISHED:
            if call_id not in self._calls:
                self._start_call(out, call_id, tool, state.get("input") or {},
                                 time_ns=start_ns or time_ns, line_no=line_no)
            return
        arguments = state.get("input") or {}
        if call_id not in self._calls:
            self._start_call(out, call_id, tool, arguments, time_ns=start_ns or end_ns, line_no=line_no)
        result, failed, error_type = _outcome(tool, state)
        self._finish_call(
            out, call_id, result, failed=failed, error_type=error_type, end_ns=end_ns, line_no=line_no,
            arguments=arguments,
        )

    def _on_step_finish(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        part = obj["part"]
        self._begin(obj, line_no, now_ns, out)
        self._last_reason = opt_str(part, "reason")
        self._note_usage(opt_str(part, "id") or f"line {line_no}", part)

    def _on_error(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._begin(obj, line_no, now_ns, out)
        self._had_error = True

    def _on_done(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        time_ns = self._begin(obj, line_no, now_ns, out)
        self._end_turn(out, time_ns, line_no, is_error=self._had_error)
