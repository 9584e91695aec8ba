"""Reader of the Codex CLI's rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-…jsonl[.zst]``.

- **Lines:** ``{"timestamp", "type", "payload"}`` (Sept 2025 on); the first, bare era has no
  envelope and no times (line 1 is ``{"id", "timestamp", "instructions", …}``, items follow bare).
- **Turn:** ``event_msg`` ``user_message`` starts one (in the bare era, a ``message`` item with
  role ``user`` that is not an ``<environment_context>``/``<user_instructions>`` block);
  ``task_started``/``turn_started`` open one if none is open; ``task_complete``/``turn_complete``
  end it, ``turn_aborted`` ends it as an error. ``turn_context`` is per model request: it only
  gives cwd and model.
- **Calls, named as ``codex exec --json`` names them**, so a call reads the same in a rollout and
  in a stream: ``shell``, ``container.exec``, ``local_shell_call`` and ``exec_command`` become
  ``command_execution`` with ``{"command": <script>}`` (the ``bash -lc`` wrapper dropped; a
  ``justification`` kept, for the stop evidence: identity ignores it) and the call's ``workdir``
  as its cwd; ``web_search_call`` becomes ``web_search``. Other tools
  (``update_plan``, ``write_stdin``, ``apply_patch``, MCP tools) keep their names and arguments.
- **Failure and duration** come from the output text, whose layout changed by version
  (:mod:`._codex_output`); the call's own time (``duration_seconds``, ``Wall time``) stands
  where the call and its output share one timestamp (0.40).
- **Copies:** a forked rollout repeats its parent's history; calls whose id is in ``skip``
  (the parent's, when the parent is read too) are not calls here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from otel_toolchain._input.lines import BadLineError, decode_line, iso_ns
from otel_toolchain.harnesses._base import BaseReader, opt_str, req_str
from otel_toolchain.harnesses.events import Event
from otel_toolchain.harnesses.stores._codex_output import outcome_of
from otel_toolchain.harnesses.streams.codex import command_text

__all__ = ["CodexStoreReader"]

_SHELL_FUNCTIONS = frozenset({"shell", "container.exec", "exec_command"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_CONTEXT_BLOCKS = ("<environment_context>", "<user_instructions>")


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return decode_line(raw)
    except BadLineError:
        return raw


def describe(payload: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(tool, arguments, workdir) of a call item, in the names ``codex exec --json`` uses."""
    kind = payload["type"]
    if kind == "local_shell_call":
        action = payload.get("action") or {}
        return "command_execution", {"command": command_text(action["command"])}, opt_str(action, "working_directory")
    if kind == "web_search_call":
        action = payload.get("action") or {}
        query = action.get("query") if isinstance(action, dict) else None
        return "web_search", {"query": query or "", "action": action}, None
    name = req_str(payload, "name")
    arguments = _arguments(payload.get("arguments") if kind == "function_call" else payload.get("input"))
    if name in _SHELL_FUNCTIONS and isinstance(arguments, dict):
        command = arguments.get("command", arguments.get("cmd"))
        if command is not None:
            shown: dict[str, Any] = {"command": command_text(command)}
            if isinstance(arguments.get("justification"), str):  # kept so a stop can say it was ignored
                shown["justification"] = arguments["justification"]
            return "command_execution", shown, opt_str(arguments, "workdir")
    return name, arguments, None


class CodexStoreReader(BaseReader):
    """Codex rollout lines to neutral events; see the module docstring."""

    harness = "codex"
    shell_tools = frozenset({"command_execution"})

    def __init__(self, *, strict: bool = False, source: str = "-", skip: Collection[str] = ()) -> None:
        super().__init__(strict=strict, source=source)
        self.skip = skip
        self.forked_from: str | None = None
        self._workdirs: dict[str, str | None] = {}
        self._prompted = False
        self._done: set[str] = set()
        """Calls ended in this turn and the one before: an output that comes after its turn was
        aborted is not a new call (two turns' ids suffice, so memory does not grow with the file)."""
        self._done_before: set[str] = set()
        self._last_ns = 0
        self._bare = False
        items = {kind: self._on_item for kind in (*_CALLS, *_OUTPUTS, "message")}  # the bare era's items
        self._handlers = {"session_meta": self._on_meta, "turn_context": self._on_context,
                          "event_msg": self._on_event, "response_item": self._on_item, **items}

    def feed(self, line: str, line_no: int, now_ns: int) -> list[Event]:
        """As BaseReader, plus the bare era's first line, which has no ``type``."""
        if line_no == 1 and line.startswith("{") and '"instructions"' in line and '"type"' not in line[:200]:
            self._bare = True
            try:
                header = decode_line(line)
            except BadLineError as exc:
                return self._bad(line_no, str(exc), line)
            self.session_id = opt_str(header, "id") if isinstance(header, dict) else None
            return []
        if self._bare and line.startswith('{"record_type"'):
            return []
        if _passed_over(line) and line.rstrip().endswith("}"):  # a cut-off line is read, so it counts as bad
            self._last_line = line_no
            return []
        return super().feed(line, line_no, now_ns)

    def close(self, now_ns: int) -> list[Event]:
        """End of file: the open turn ends, as an error when calls are still open."""
        out: list[Event] = []
        if self._turn_open or self._calls:
            self._end_turn(out, self._last_ns or now_ns, self._last_line, is_error=bool(self._calls))
        return out

    def _time(self, obj: dict[str, Any], now_ns: int) -> int:
        time_ns = iso_ns(obj.get("timestamp"))
        if time_ns is not None:
            self._last_ns = time_ns
        return self._last_ns or now_ns

    def _new_turn(self, out: list[Event], time_ns: int, line_no: int) -> None:
        """A prompt: a new turn, unless the open one was opened by ``task_started`` and awaits it."""
        if self._turn_open and self._prompted:
            self._end_turn(out, time_ns, line_no, is_error=False)
        self._prompted = True
        self._start_turn(out, time_ns, line_no)

    def _end_turn(self, out: list[Event], time_ns: int, line_no: int, **kwargs: Any) -> None:
        super()._end_turn(out, time_ns, line_no, **kwargs)
        self._prompted = False
        self._done_before, self._done = self._done, set()

    def _finish_call(self, out: list[Event], call_id: str, result: str | None, **kwargs: Any) -> None:
        self._done.add(call_id)
        super()._finish_call(out, call_id, result, **kwargs)

    def _on_meta(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        payload = obj["payload"]
        meta_id = opt_str(payload, "id")
        if self.session_id is None:
            self.session_id = meta_id
            self.cwd = opt_str(payload, "cwd") or self.cwd
        elif meta_id and meta_id != self.session_id:
            self.forked_from = self.forked_from or meta_id

    def _on_context(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        payload = obj["payload"]
        self.cwd = opt_str(payload, "cwd") or self.cwd
        self.model = opt_str(payload, "model") or self.model

    def _on_event(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        kind = obj["payload"].get("type")
        time_ns = self._time(obj, now_ns)
        if kind == "user_message":
            self._new_turn(out, time_ns, line_no)
        elif kind in ("task_started", "turn_started"):
            self._start_turn(out, time_ns, line_no)
        elif kind in ("task_complete", "turn_complete", "turn_aborted") and self._turn_open:
            self._end_turn(out, time_ns, line_no, is_error=kind == "turn_aborted")

    def _on_item(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        payload = obj.get("payload", obj)
        kind = payload.get("type")
        time_ns = self._time(obj, now_ns)
        if kind == "message":
            if self._bare and payload.get("role") == "user" and not _is_context(payload):
                self._new_turn(out, time_ns, line_no)
            return
        if kind not in _CALLS and kind not in _OUTPUTS:
            return  # reasoning, and items of later versions that are not calls
        call_id = opt_str(payload, "call_id") or opt_str(payload, "id") or f"line {line_no}"
        if call_id in self.skip or call_id in self._done or call_id in self._done_before:
            return
        if kind in _OUTPUTS:
            self._finish(out, call_id, payload, time_ns, line_no)
            return
        tool, arguments, workdir = describe(payload)
        self._workdirs[call_id] = workdir
        self._start_call(out, call_id, tool, arguments, time_ns=time_ns, line_no=line_no)
        if kind == "web_search_call":  # no output item follows: the call ends where it is written
            self._finish_call(out, call_id, None, failed=False, error_type=None, end_ns=time_ns, line_no=line_no)

    def _finish(self, out: list[Event], call_id: str, payload: dict[str, Any], time_ns: int, line_no: int) -> None:
        outcome = outcome_of(payload.get("output"))
        started = self._calls.get(call_id)
        end_ns = time_ns
        if started is not None and outcome.duration_ns is not None:
            end_ns = max(time_ns, started.time_ns + outcome.duration_ns)
        self._finish_call(
            out, call_id, outcome.result, failed=outcome.failed, error_type=outcome.error_type, end_ns=end_ns,
            line_no=line_no, cwd=self._workdirs.pop(call_id, None),
        )


_PAYLOAD = '"payload":{"type":"'
_PASSED_OVER = frozenset({"reasoning", "token_count", "agent_reasoning", "agent_message", "agent_reasoning_delta"})


def _passed_over(line: str) -> bool:
    """A line this reader ignores, known by its payload's type without parsing (often the biggest lines).

    Codex writes ``timestamp``, ``type`` and then ``payload`` with its ``type`` tag first.
    """
    at = line.find(_PAYLOAD, 0, 120)
    if at < 0:
        return False
    start = at + len(_PAYLOAD)
    return line[start: line.find('"', start, start + 40)] in _PASSED_OVER


def _is_context(payload: dict[str, Any]) -> bool:
    content = payload.get("content")
    texts = [c.get("text", "") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    return bool(texts) and all(str(text).lstrip().startswith(_CONTEXT_BLOCKS) for text in texts)
