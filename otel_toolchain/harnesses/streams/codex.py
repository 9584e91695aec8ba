"""Reader of the Codex CLI's ``codex exec --json`` stream (the ``thread.*/turn.*/item.*`` format).

- **Turn:** one ``codex exec`` run is one turn: ``turn.started`` starts it, ``turn.completed``
  (usage) or ``turn.failed`` ends it. ``thread.started`` only names the session.
- **Calls:** ``item.started`` / ``item.completed`` with the same ``item.id``. A completed item
  without a started line (``file_change`` in older versions) is a call with start = end. The
  completed item's fields are the call's final arguments (``web_search`` starts with an empty
  query). Items that are not tool calls (``agent_message``, ``reasoning``, ``error``, and
  ``todo_list``, a plan shown for the whole turn) are skipped.
- **Names and arguments:** ``command_execution`` keeps Codex's item type as its tool name; its
  argument is ``{"command": <script>}``. Codex reports the command as the argv it ran, joined as
  one string (``/bin/bash -lc 'cargo test'``; a list in old versions): when that argv is just a
  shell wrapper (``bash|sh|zsh|dash -c|-lc SCRIPT``) the script alone is the command, so the same
  command reads the same under Claude Code's Bash, Pi's bash and Codex. Anything else is kept as
  it came. MCP calls are named ``mcp__<server>__<tool>`` as in Claude Code.
- **Failure:** ``status`` ``failed`` or ``declined``, or a non-zero ``exit_code``; error types
  ``exit_code_N``, ``declined`` or ``tool_error``.
- **Retries:** a top-level ``error`` whose message starts ``Reconnecting...`` (``n/m (details)``);
  any other ``error`` is left to the ``turn.failed`` that confirms it.
- **Usage:** ``turn.completed.usage``, as reported: cumulative over the thread in newer versions,
  so a resumed thread's first turn includes earlier turns. ``input_tokens`` includes cached input.
- **Times:** none in the stream; durations are arrival-time differences. No model, and no cwd:
  an item carries none (a ``cwd`` field is taken if a version adds one). Given ``workdirs`` (a
  follower of the thread's rollout, :mod:`otel_toolchain.harnesses.stores.codex_workdirs`), a
  command's cwd is asked of it when the command starts, so the same command in two folders is
  two calls.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any, Protocol

from otel_toolchain.harnesses._base import BaseReader, opt_int, opt_str, req_str, text_of
from otel_toolchain.harnesses.events import Event, Usage

__all__ = ["CodexReader", "Workdirs"]



class Workdirs(Protocol):
    """Where a stream's commands run, learnt outside the stream (Codex's rollout)."""

    def __call__(self, thread_id: str, command: str) -> str | None:
        """The folder the thread's next command ``command`` runs in, or None if unknown."""
        ...

    def close(self) -> None:
        """The stream has ended: let go of what was held to answer."""
        ...

_RECONNECTING = "Reconnecting..."
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SHELL_FLAGS = frozenset({"-c", "-lc"})
_FAILED = frozenset({"failed", "declined"})


def _kind(item: dict[str, Any]) -> str:
    """The item's type; the first new-format releases (PR #4525, Sept 2025) called it ``item_type``."""
    return req_str(item, "type" if "type" in item else "item_type")


def _script(argv: list[str]) -> str | None:
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return argv[2]
    return None


def command_text(command: Any) -> str:
    """The command a ``command_execution`` ran, without a ``bash -lc`` style wrapper."""
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        return _script(command) or shlex.join(command)
    if not isinstance(command, str):
        raise TypeError("field 'command' is neither a string nor a list of strings")
    if command.split(" ", 1)[0].rsplit("/", 1)[-1] not in _SHELLS:
        return command
    try:
        return _script(shlex.split(command)) or command
    except ValueError:
        return command


def _mcp(item: dict[str, Any]) -> tuple[str, Any]:
    return f"mcp__{req_str(item, 'server')}__{req_str(item, 'tool')}", item.get("arguments") or {}


def _web_search(item: dict[str, Any]) -> tuple[str, Any]:
    arguments = {"query": item.get("query") or ""}
    if item.get("action") is not None:
        arguments["action"] = item["action"]
    return "web_search", arguments


def _collab(item: dict[str, Any]) -> tuple[str, Any]:
    keys = ("prompt", "receiver_thread_ids")
    return req_str(item, "tool"), {key: item[key] for key in keys if item.get(key) is not None}


_DESCRIBE: dict[str, Callable[[dict[str, Any]], tuple[str, Any]]] = {
    "command_execution": lambda item: ("command_execution", {"command": command_text(item["command"])}),
    "mcp_tool_call": _mcp,
    "file_change": lambda item: ("file_change", {"changes": item.get("changes") or []}),
    "web_search": _web_search,
    "collab_tool_call": _collab,
}


def _result(kind: str, item: dict[str, Any]) -> str | None:
    if kind == "command_execution":
        return opt_str(item, "aggregated_output")
    if kind == "mcp_tool_call":
        error, result = item.get("error"), item.get("result")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        return text_of(result.get("content")) if isinstance(result, dict) else None
    if kind == "file_change":
        changes = item.get("changes") or []
        return "\n".join(f"{change.get('kind')} {change.get('path')}" for change in changes)
    return None


def _failure(item: dict[str, Any]) -> tuple[bool, str | None]:
    status = item.get("status")
    exit_code = item.get("exit_code")
    if isinstance(exit_code, int) and exit_code != 0:
        return True, "declined" if status == "declined" else f"exit_code_{exit_code}"
    if status in _FAILED:
        return True, "declined" if status == "declined" else "tool_error"
    return False, None


class CodexReader(BaseReader):
    """Codex ``exec --json`` lines to neutral events; see the module docstring."""

    harness = "codex"
    shell_tools = frozenset({"command_execution"})

    def __init__(self, *, strict: bool = False, source: str = "-", workdirs: Workdirs | None = None) -> None:
        super().__init__(strict=strict, source=source)
        self._retries = 0
        self._workdirs = workdirs
        self._where: dict[str, str | None] = {}
        """The cwd of each open command, asked of ``workdirs`` when it started."""
        self._handlers = {
            "thread.started": self._on_thread_started,
            "turn.started": self._on_turn_started,
            "turn.completed": self._on_turn_completed,
            "turn.failed": self._on_turn_failed,
            "item.started": self._on_item_started,
            "item.completed": self._on_item_completed,
            "error": self._on_error,
        }

    def _on_thread_started(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        if self._turn_open:  # the run before was cut off (a killed attempt of ``run --retries``): end its turn
            self._end_turn(out, now_ns, line_no, is_error=True)
        self.session_id = req_str(obj, "thread_id")

    def _on_turn_started(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._retries = 0
        self._start_turn(out, now_ns, line_no)

    def _on_turn_completed(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        raw = obj.get("usage")
        usage = None
        if isinstance(raw, dict):
            usage = Usage(
                opt_int(raw, "input_tokens"), opt_int(raw, "output_tokens"), opt_int(raw, "cached_input_tokens"),
                opt_int(raw, "cache_write_input_tokens"), opt_int(raw, "reasoning_output_tokens"),
            )
        self._end_turn(out, now_ns, line_no, is_error=False, usage=usage)

    def _on_turn_failed(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        self._end_turn(out, now_ns, line_no, is_error=True)

    def _on_item_started(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        item = obj["item"]
        describe = _DESCRIBE.get(_kind(item))
        if describe is not None:
            tool, arguments = describe(item)
            call_id = req_str(item, "id")
            if tool == "command_execution" and call_id not in self._calls:
                self._where[call_id] = self._locate(arguments["command"])
            self._start_call(out, call_id, tool, arguments, time_ns=now_ns, line_no=line_no)

    def _on_item_completed(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        item = obj["item"]
        kind = _kind(item)
        describe = _DESCRIBE.get(kind)
        if describe is None:
            return
        tool, arguments = describe(item)
        failed, error_type = _failure(item)
        call_id = req_str(item, "id")
        cwd = opt_str(item, "cwd")
        if cwd is None and tool == "command_execution" and call_id not in self._calls:
            cwd = self._locate(arguments["command"])  # completed without a start line
        self._finish_call(
            out, call_id, _result(kind, item), failed=failed, error_type=error_type,
            end_ns=now_ns, line_no=line_no, tool=tool, arguments=arguments, cwd=cwd,
        )

    def _finish_call(self, out: list[Event], call_id: str, result: str | None, **kwargs: Any) -> None:
        where = self._where.pop(call_id, None)
        if kwargs.get("cwd") is None:
            kwargs["cwd"] = where
        super()._finish_call(out, call_id, result, **kwargs)

    def close(self, now_ns: int) -> list[Event]:
        if self._workdirs is not None:
            self._workdirs.close()
        return super().close(now_ns)

    def _locate(self, command: str) -> str | None:
        if self._workdirs is None or self.session_id is None:
            return None
        return self._workdirs(self.session_id, command)

    def _on_error(self, obj: dict[str, Any], line_no: int, now_ns: int, out: list[Event]) -> None:
        message = req_str(obj, "message")
        if not message.startswith(_RECONNECTING):
            return
        self._retries += 1
        count, _, details = message[len(_RECONNECTING):].strip().partition(" ")
        attempt = count.partition("/")[0]
        details = details.strip()
        if details.startswith("(") and details.endswith(")"):
            details = details[1:-1]
        self._retry(out, int(attempt) if attempt.isdigit() else self._retries, details or None, now_ns, line_no)
