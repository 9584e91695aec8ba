"""Reader of Claude Code's session store: ``~/.claude/projects/<dir>/<session>.jsonl`` and its sub-agents.

The tool blocks are the ones the stream carries, so calls, arguments, results and failures come
from :class:`~otel_toolchain.harnesses.streams.ClaudeCodeReader`'s own handlers; what differs is handled here:

- **Times:** every chain line has an ISO ``timestamp``; a call runs from its ``tool_use`` line
  to its ``tool_result`` line (the use line is written when its block finished streaming).
- **Turn:** a user line whose text is a prompt starts one: not ``isMeta``, not
  ``isCompactSummary``, not a ``<local-command-…>``/``<session-start-hook>``/``<tick>``
  wrapper. ``system/turn_duration`` (2.1.x) ends it; so does the next prompt, a slash command
  (``<command-name>``: the next activity then opens a turn of its own), and a
  ``[Request interrupted by user…]`` line (as an error). A turn at end of file ends there, as an
  error only when calls are still open (a live or crashed session).
- **Sub-agents:** a file whose first chain line has ``isSidechain:true`` is a sub-agent's
  transcript (``<session>/subagents/agent-<id>.jsonl``, or ``agent-<id>.jsonl`` beside the
  sessions): its prompt opens its one turn. Inline sidechain lines of old main files (<= 1.0.x)
  stay inside the parent's turn, as a stream's sub-agent calls do; their prompts open nothing.
  ``progress`` lines embed copies of sub-agent messages and are not read.
- **Copies:** a ``tool_use`` id seen before (sidechain replays) is not a new call, nor is a
  result that comes after its call was ended; ids are remembered for two turns.
- **Retries:** ``system/api_error`` lines with ``retryAttempt``; a synthetic assistant message
  with ``isApiErrorMessage`` makes the turn an error.
"""

from __future__ import annotations

from typing import Any

from otel_toolchain._input.lines import iso_ns
from otel_toolchain.harnesses._base import opt_str
from otel_toolchain.harnesses.events import Event, Usage
from otel_toolchain.harnesses.streams.claude_code import ClaudeCodeReader

__all__ = ["ClaudeStoreReader"]

_NOT_PROMPTS = ("<local-command-", "<session-start-hook>", "<tick>", "<goal>", "<ide_opened_file>", "<ide_selection>")
_COMMANDS = ("<command-name>", "<command-message>")
_INTERRUPTED = "[Request interrupted by user"
_PROMPT, _COMMAND, _INTERRUPT, _NOTHING = "prompt", "command", "interrupt", "nothing"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]


def prompt_kind(obj: dict[str, Any], content: Any) -> str:
    """What a user line without tool results is: a prompt, a command, an interruption, or nothing."""
    if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isVisibleInTranscriptOnly"):
        return _NOTHING
    texts = [text.strip() for text in _texts(content)]
    texts = [text for text in texts if text and not text.startswith(_NOT_PROMPTS)]
    if not texts:
        return _NOTHING
    if all(text.startswith(_INTERRUPTED) for text in texts):
        return _INTERRUPT
    if any(text.startswith(_COMMANDS) for text in texts):
        return _COMMAND
    return _PROMPT


class ClaudeStoreReader(ClaudeCodeReader):
    """Claude Code session-store lines to neutral events; see the module docstring."""

    def __init__(self, *, strict: bool = False, source: str = "-", calls_only: bool = False) -> None:
        """``calls_only``: leave out what only usage and the model need (``analyze``'s reading):
        an assistant line with no tool call, in an open turn, is then not even parsed, and the
        turn's usage is left unknown."""
        super().__init__(strict=strict, source=source)
        self.calls_only = calls_only
        self._handlers = {"user": self._on_store_user, "assistant": self._on_store_assistant,
                          "system": self._on_store_system}
        self._started: set[str] = set()
        self._done: set[str] = set()
        self._earlier: tuple[set[str], set[str]] = (set(), set())
        """The previous turn's started and ended ids: copies and late results come next to their
        originals, so two turns' ids suffice and memory does not grow with the file."""
        self._sidechain_file: bool | None = None
        self._turn_failed = False
        self._stamp: object = None
        self._read_stamp: object = None
        self._last_ns = 0

    def feed(self, line: str, line_no: int, now_ns: int) -> list[Event]:
        """As the stream reader; with ``calls_only``, text and thinking lines pass unparsed.

        Inner quotes are escaped in JSON text, so ``"type":"assistant"`` unescaped in a line is a
        key and its value: the line is an assistant message (or a progress line, which is not
        read anyway); without ``"tool_use"`` it holds no call.
        """
        if self.calls_only and self._turn_open and '"type":"assistant"' in line and '"tool_use"' not in line \
                and '"tool_result"' not in line and "isApiErrorMessage" not in line:
            self._last_line = line_no
            return []
        return super().feed(line, line_no, now_ns)

    def _usage_of(self, raw: Any) -> Usage | None:
        return None if self.calls_only else super()._usage_of(raw)

    def _line_time(self, obj: dict[str, Any], now_ns: int) -> int:
        return now_ns  # the store's handlers pass the line's own time already (see _time)

    def close(self, now_ns: int) -> list[Event]:
        """End of file: a store has no end line, so the open turn ends cleanly unless calls are open."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            failed = self._turn_failed or bool(self._calls)
            self._end_turn(out, self._time(now_ns), self._last_line, is_error=failed)
        return out

    def _note(self, obj: dict[str, Any], now_ns: int) -> None:
        """Take the line's session, cwd, sidechain flag and time (read only when an event needs it)."""
        self.session_id = opt_str(obj, "sessionId") or self.session_id
        self.cwd = opt_str(obj, "cwd") or self.cwd
        if self._sidechain_file is None:
            self._sidechain_file = obj.get("isSidechain") is True
        stamp = obj.get("timestamp")
        if stamp is not None:
            self._stamp = stamp

    def _time(self, now_ns: int) -> int:
        """The time of the latest line that had one, as ns (``now_ns`` before any had)."""
        if self._stamp is not self._read_stamp:
            self._read_stamp = self._stamp
            time_ns = iso_ns(self._stamp)
            if time_ns is not None:
                self._last_ns = time_ns
        return self._last_ns or now_ns

    def _end_turn(self, out: list[Event], time_ns: int, line_no: int, **kwargs: Any) -> None:
        super()._end_turn(out, time_ns, line_no, **kwargs)
        self._turn_failed = False
        self._earlier, self._started, self._done = (self._started, self._done), set(), set()

    def _seen(self, call_id: object, done: bool) -> bool:
        index = 1 if done else 0
        return call_id in (self._done if done else self._started) or call_id in self._earlier[index]

    def _finish_call(self, out: list[Event], call_id: str, result: str | None, **kwargs: Any) -> None:
        self._done.add(call_id)
        super()._finish_call(out, call_id, result, **kwargs)

    def _on_store_user(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._note(obj, now_ns)
        time_ns = self._time(now_ns)
        content = obj["message"]["content"]
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(content, list) else []
        if results:
            for block in results:
                if not self._seen(block.get("tool_use_id"), done=True):
                    self._on_tool_result(block, line_no, time_ns, out)
            return
        if obj.get("isSidechain") is True and not self._sidechain_file:
            return  # an inline sub-agent's prompt: the parent's turn goes on
        kind = prompt_kind(obj, content)
        if kind != _NOTHING and self._turn_open:
            self._end_turn(out, time_ns, line_no, is_error=self._turn_failed or kind == _INTERRUPT)
        if kind == _PROMPT:
            self._start_turn(out, time_ns, line_no)

    def _on_store_assistant(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._note(obj, now_ns)
        message = obj["message"]
        blocks = message["content"]
        if not isinstance(blocks, list):
            return
        uses = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        failed = obj.get("isApiErrorMessage")
        if not uses and not failed and self._turn_open:  # text or thinking: only the model and usage count
            self._on_assistant(obj, line_no, now_ns, out)
            return
        time_ns = self._time(now_ns)
        if failed:
            self._start_turn(out, time_ns, line_no)
            self._turn_failed = True
        if any(self._seen(use, done=False) for use in uses):  # a replayed copy of a message already read
            fresh = [b for b in blocks if not (isinstance(b, dict) and self._seen(b.get("id"), done=False))]
            obj = {**obj, "message": {**message, "content": fresh}}
        self._started.update(use for use in uses if isinstance(use, str))
        self._on_assistant(obj, line_no, time_ns, out)

    def _on_store_system(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._note(obj, now_ns)
        time_ns = self._time(now_ns)
        subtype = obj.get("subtype")
        if subtype == "turn_duration" and self._turn_open:
            self._end_turn(out, time_ns, line_no, is_error=self._turn_failed)
        elif subtype == "api_error" and isinstance(obj.get("retryAttempt"), int):
            self._retry(out, obj["retryAttempt"], _api_error_reason(obj), time_ns, line_no)


def _api_error_reason(obj: dict[str, Any]) -> str | None:
    """The most specific words an ``api_error`` line has: the error's message, else its cause's code."""
    for holder in (obj.get("error"), obj):
        if not isinstance(holder, dict):
            continue
        message = holder.get("message")
        if isinstance(message, str) and message:
            return message
        cause = holder.get("cause")
        if isinstance(cause, dict) and isinstance(cause.get("code"), str):
            return str(cause["code"])
    return None
