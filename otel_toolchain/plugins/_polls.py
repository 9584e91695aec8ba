"""Benign repetition: polls, which repeat by design while what they wait for has not changed yet.

A poll that sees the same output repeats, and a guard cannot tell waiting from looping; so
``repeat_guard`` gives cycles made only of polls their own ``poll_limit``, and ``analyze`` shows
them apart, so a user sees what a limit would cost. A call is a poll when it

- reads a background task's output: Claude Code ``TaskOutput``, ``BashOutput``
  (``AgentOutputTool`` in old versions);
- sends nothing to a running process to read what it printed since: Codex ``write_stdin``
  with empty ``chars``;
- is a shell command that runs ``sleep`` or ``tail`` (read with classify's shell lexer, so
  ``echo sleep 5`` is no poll): ``sleep 30 && tail log``, ``gh run view 1; sleep 10``,
  ``tail -n 20 build.log`` (a log that has not changed yet repeats its tail).

Groups are named by tool and class, the class from :func:`otel_toolchain.plugins.classify.classify`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from otel_toolchain.plugins._shell import parse
from otel_toolchain.plugins.classify import classify, shell_command

__all__ = ["cycle_key", "is_poll"]

POLL_TOOLS: Final = frozenset({"TaskOutput", "BashOutput", "AgentOutputTool"})
POLL_PROGRAMS: Final = frozenset({"sleep", "tail"})


def is_poll(tool: str, arguments: Any) -> bool:
    """Whether a call of ``tool`` with ``arguments`` (parsed JSON, or text) waits on something."""
    if tool in POLL_TOOLS:
        return True
    if tool == "write_stdin":
        return isinstance(arguments, Mapping) and not arguments.get("chars")
    command = shell_command(arguments) if isinstance(arguments, Mapping) else None
    return command is not None and not POLL_PROGRAMS.isdisjoint(parse(command).programs)


def cycle_key(calls: Sequence[tuple[str, Any]]) -> str:
    """A cycle of calls as ``tool (class) -> tool (class)``: how polls are grouped."""
    return " -> ".join(f"{tool} ({classify(tool, arguments)})" for tool, arguments in calls)
