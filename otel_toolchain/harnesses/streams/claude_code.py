"""Reader of Claude Code's ``claude -p --output-format stream-json --verbose`` stream.

- **Turn:** ``system/init`` starts it (init is not always line 1: hook lines may come first; a
  stream without init starts the turn at its first assistant or user line). ``result`` ends it,
  with ``is_error`` from the line. A later init or message after ``result`` starts the next turn.
  Calls still open at ``result`` (a background sub-agent's, which ``-p`` does not wait for) end
  there as ``interrupted``, so every call ends inside its turn.
- **Calls:** each ``tool_use`` block of an ``assistant`` line starts one, the ``tool_result``
  block of a ``user`` line with the same id ends it. Each content block comes on its own line.
  ``server_tool_use`` blocks run on the provider's side and have no result line, so they are not
  calls here. Durations are arrival-time differences (the stream has no times of its own).
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

    def _usage_of(self, raw: Any) -> Usage | None:
        return usage_of(raw)

    def _on_system(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
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

    def _on_assistant(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        message = obj["message"]
        if self.session_id is None:
            self.session_id = opt_str(obj, "session_id")
        parent = obj.get("parent_tool_use_id")
        if self.model is None and parent is None:
            model = message.get("model")
            self.model = model if isinstance(model, str) and model != _SYNTHETIC_MODEL else None
        message_id = message.get("id")
        if isinstance(message_id, str):
            self._usage[message_id] = message.get("usage")
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
        self._finish_call(
            out, call_id, result, failed=failed, error_type=error_type, end_ns=now_ns, line_no=line_no,
        )

    def _on_result(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        if self.session_id is None:
            self.session_id = opt_str(obj, "session_id")
        usage = usage_of(obj.get("usage"), obj.get("total_cost_usd"))
        self._end_turn(out, now_ns, line_no, is_error=obj.get("is_error") is True, usage=usage)

