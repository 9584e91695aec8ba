"""Reader of Pi's session store: ``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`` (v1 to v3).

- **Entries:** a ``session`` header (``id``, ``cwd``; v1 adds ``modelId`` and, for a branched
  file, ``branchedFrom``; v3 ``parentSession``), then ``message`` entries with an ISO
  ``timestamp``. v1 entries have no ``id``/``parentId``; v3 ones do; both read the same here,
  in file order (``/tree`` branches stay in one file).
- **Turn:** a ``user`` message starts one; it runs to the next user message or end of file.
  It is an error when its last assistant message stopped with ``error`` or ``aborted``.
- **Calls:** the ``toolCall`` blocks of an assistant message start at the entry's time (written
  at ``message_end``); the ``toolResult`` with the same ``toolCallId`` ends them at its
  ``message.timestamp`` (ms). Calls of a message that stopped with ``aborted`` or ``error``
  never ran (Pi streams no ``tool_execution_start`` for them) and are not calls. ``bashExecution``
  messages are the user's own ``!cmd``, not the agent's.
- **Failure:** ``isError``; ``Command exited with code N`` gives ``exit_code_N``, as in the stream.
- **Retries:** the store keeps no retry events; an assistant message that failed (``error``)
  followed by another in the same turn was retried, which is a Retry, and its usage is dropped.
- **Copies:** calls whose id is in ``skip`` (a branched file's copy of its parent) are left out.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from otel_toolchain._input.lines import iso_ns, ms_ns
from otel_toolchain.harnesses._base import BaseReader, opt_str, req_str, text_of
from otel_toolchain.harnesses.events import Event, Usage
from otel_toolchain.harnesses.streams.pi import _usage as pi_usage
from otel_toolchain.harnesses.streams.pi import error_type_of as pi_error_type

__all__ = ["PiStoreReader"]

_FAILED_STOPS = frozenset({"error", "aborted"})


class PiStoreReader(BaseReader):
    """Pi session-store entries to neutral events; see the module docstring."""

    harness = "pi"
    shell_tools = frozenset({"bash"})

    def __init__(self, *, strict: bool = False, source: str = "-", skip: Collection[str] = (),
                 calls_only: bool = False) -> None:
        """``calls_only``: leave the turns' usage unknown (``analyze`` does not need it)."""
        super().__init__(strict=strict, source=source)
        self.skip = skip
        self.calls_only = calls_only
        self.version = 1
        self._last_ns = 0
        self._last_stop: str | None = None
        self._failed: tuple[str, str | None, int] | None = None
        """(usage key, error message, time) of a failed assistant message not yet known to be retried."""
        self._attempts = 0
        self._handlers = {"session": self._on_session, "message": self._on_message, "model_change": self._on_model}

    def close(self, now_ns: int) -> list[Event]:
        """End of file ends the open turn; see the module docstring for when it is an error."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            self._end_turn(out, self._last_ns or now_ns, self._last_line, is_error=self._turn_failed())
        return out

    def _usage_of(self, raw: Any) -> Usage | None:
        return None if self.calls_only else pi_usage(raw)

    def _turn_failed(self) -> bool:
        return bool(self._calls) or self._last_stop in _FAILED_STOPS

    def _time(self, obj: dict[str, Any], now_ns: int) -> int:
        time_ns = iso_ns(obj.get("timestamp"))
        if time_ns is not None:
            self._last_ns = time_ns
        return self._last_ns or now_ns

    def _on_session(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self.session_id = req_str(obj, "id")
        self.cwd = opt_str(obj, "cwd")
        self.model = opt_str(obj, "modelId") or self.model
        version = obj.get("version")
        self.version = version if isinstance(version, int) else 1

    def _on_model(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self.model = opt_str(obj, "modelId") or self.model

    def _on_message(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        message = obj["message"]
        role = message.get("role")
        time_ns = self._time(obj, now_ns)
        if role == "user":
            if self._turn_open:
                self._end_turn(out, time_ns, line_no, is_error=self._turn_failed())
            self._last_stop, self._failed, self._attempts = None, None, 0
            self._start_turn(out, time_ns, line_no)
        elif role == "assistant":
            self._on_assistant(message, line_no, time_ns, out)
        elif role == "toolResult":
            self._on_result(message, line_no, time_ns, out)

    def _on_assistant(self, message: dict[str, Any], line_no: int, time_ns: int, out: list[Event]) -> None:
        self.model = opt_str(message, "model") or self.model
        if self._failed is not None:  # the failed message before this one was retried
            key, reason, failed_ns = self._failed
            self._drop_usage(key)
            self._attempts += 1
            self._retry(out, self._attempts, reason, failed_ns, line_no)
        stop = opt_str(message, "stopReason")
        self._last_stop = stop
        key = f"line {line_no}"
        self._note_usage(key, message.get("usage"))
        self._failed = (key, opt_str(message, "errorMessage"), time_ns) if stop == "error" else None
        if stop in _FAILED_STOPS:
            self._start_turn(out, time_ns, line_no)
            return
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                call_id = req_str(block, "id")
                if call_id not in self.skip:
                    self._start_call(out, call_id, req_str(block, "name"), block.get("arguments") or {},
                                     time_ns=time_ns, line_no=line_no)

    def _on_result(self, message: dict[str, Any], line_no: int, time_ns: int, out: list[Event]) -> None:
        call_id = req_str(message, "toolCallId")
        if call_id in self.skip:
            return
        result = text_of(message.get("content"))
        failed = message.get("isError") is True
        error_type = pi_error_type(result) if failed else None
        end_ns = ms_ns(message.get("timestamp")) or time_ns
        self._finish_call(out, call_id, result, failed=failed, error_type=error_type, end_ns=end_ns,
                          line_no=line_no, tool=opt_str(message, "toolName") or "unknown")
