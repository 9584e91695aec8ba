"""The scripted model's moves, and what a script may read from a request.

Shared by the fake model server (tests/clis/fake_models.py), which turns a move into one answer in
each wire format, and the recording scenarios (tests/clis/scenarios.py), which decide the moves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCall:
    """The model asks to run one shell command.

    ``note`` is free text for the shell tool's annotation field, where its schema has one (Claude
    Code Bash ``description``, Codex ``exec_command`` ``justification``, a chat tool's
    ``description``); ``None`` keeps the fake's fixed text. ``workdir`` goes to a tool that takes
    a working directory (Codex ``exec_command``, OpenCode ``bash``); a script must not set it for
    a tool without one (see :attr:`Turn.shell_args`).
    """

    command: str
    note: str | None = None
    workdir: str | None = None


@dataclass(frozen=True)
class FinalText:
    """The model ends the turn with a text answer."""

    text: str


Move = ToolCall | FinalText


@dataclass(frozen=True)
class Turn:
    """What a scripted scenario may read from one request: nothing else, so the fake stays stateless.

    ``wire`` is ``anthropic``, ``responses`` or ``chat``; ``results`` counts the tool results the
    conversation carries; ``shell_args`` are the parameter names of the shell tool the client
    offered; ``last_result`` is the text of the newest tool result (empty before the first).
    """

    results: int
    wire: str = ""
    shell_args: frozenset[str] = frozenset()
    last_result: str = ""


Script = Callable[[Turn], Move]
