"""The BaseException contract at the chain's boundary, hook by hook.

Everything but KeyboardInterrupt a plugin hook or a listener raises (SystemExit, GeneratorExit,
a custom BaseException subclass, an ordinary Exception) is contained: counted, the later
plugins still run, the turn still closes and reports. KeyboardInterrupt reaches the caller,
and a turn being closed is closed and freed all the same.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.signals import StopSignal
from otel_toolchain.testing import make_tool_call
from otel_toolchain.turn import Turn


class Custom(BaseException):
    """A plugin's own BaseException subclass."""


RAISED = [SystemExit(3), GeneratorExit(), Custom("mine"), RuntimeError("ordinary")]


class Raising(ToolPlugin):
    name: ClassVar[str] = "raising"

    def __init__(self, exc: BaseException, hooks: tuple[str, ...] = ("on_tool", "on_retry", "on_turn_end")) -> None:
        self.exc, self.hooks = exc, hooks

    def _maybe(self, hook: str) -> None:
        if hook in self.hooks:
            raise self.exc

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        self._maybe("on_tool")

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        self._maybe("on_retry")

    def on_turn_end(self, turn: Turn) -> None:
        self._maybe("on_turn_end")


class Later(ToolPlugin):
    name: ClassVar[str] = "later"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        self.seen.append("on_tool")

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        self.seen.append("on_retry")

    def on_turn_end(self, turn: Turn) -> None:
        self.seen.append("on_turn_end")


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_anything_but_keyboard_interrupt_in_a_hook_is_contained(exc: BaseException) -> None:
    later = Later()
    chain = Toolchain([Raising(exc), later])
    turn = chain.open_turn(1, 2)
    chain.tool_call(turn, make_tool_call("Bash", {"command": "ls"}))
    chain.retry(turn, Retry(1, "overloaded", None, 0))
    chain.close_turn(turn)
    assert later.seen == ["on_tool", "on_retry", "on_turn_end"]
    assert (chain.plugin_errors, chain.open_turns(), turn.closed, turn.states) == (3, [], True, {})


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_anything_but_keyboard_interrupt_in_a_listener_is_contained(exc: BaseException) -> None:
    chain = Toolchain([RepeatGuard(limit=2)])
    heard: list[StopSignal] = []

    def raising(signal: StopSignal) -> None:
        raise exc

    chain.on_stop(raising)
    chain.on_stop(heard.append)
    turn = chain.open_turn(1, 2)
    for _ in range(2):
        chain.tool_call(turn, make_tool_call("Bash", {"command": "ls"}, result="same", has_content=True))
    chain.close_turn(turn)
    assert [signal.at_call for signal in heard] == [2]
    assert (chain.plugin_errors, chain.open_turns()) == (1, [])


def test_keyboard_interrupt_in_a_tool_hook_reaches_the_caller_and_the_turn_stays_consistent() -> None:
    later = Later()
    chain = Toolchain([Raising(KeyboardInterrupt(), ("on_tool",)), later])
    turn = chain.open_turn(1, 2)
    with pytest.raises(KeyboardInterrupt):
        chain.tool_call(turn, make_tool_call("Bash"))
    assert (turn.calls, later.seen, chain.plugin_errors) == (1, [], 0)
    chain.close_turn(turn)  # the caller closes it, as on any exception of its own
    assert later.seen == ["on_turn_end"] and chain.open_turns() == []


def test_keyboard_interrupt_at_turn_end_reaches_the_caller_and_the_turn_is_closed_and_freed() -> None:
    chain = Toolchain([Raising(KeyboardInterrupt(), ("on_turn_end",)), Later()])
    turn = chain.open_turn(1, 2)
    chain.tool_call(turn, make_tool_call("Bash"))
    turn.states[object()] = "state"
    with pytest.raises(KeyboardInterrupt):
        chain.close_turn(turn)
    assert (turn.closed, turn.states, chain.open_turns()) == (True, {}, [])


def test_keyboard_interrupt_in_a_listener_reaches_the_caller() -> None:
    chain = Toolchain([RepeatGuard(limit=1)])

    def interrupted(signal: StopSignal) -> None:
        raise KeyboardInterrupt

    chain.on_stop(interrupted)
    turn = chain.open_turn(1, 2)
    with pytest.raises(KeyboardInterrupt):
        chain.tool_call(turn, make_tool_call("Bash", {"command": "ls"}, result="same", has_content=True))
