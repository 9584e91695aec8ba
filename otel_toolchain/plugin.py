"""The plugin contract: a small object with settings in ``__init__`` and work in one or two hooks.

A plugin needs no provider: drive its hooks with a :class:`~otel_toolchain.testing.FakeTurn`, or
run it in a :class:`~otel_toolchain.Toolchain` (``Toolchain([plugin])`` is a chain of one), which
calls it in manifest order, guarded, after the plugins before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from otel_toolchain._telemetry import Telemetry

if TYPE_CHECKING:
    from otel_toolchain.calls import Retry, ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["NoConfig", "Telemetry", "ToolPlugin"]


class NoConfig(BaseModel):
    """The settings of a plugin that takes none: any parameter is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ToolPlugin:
    """Base class of every plugin. Override the hooks you need; the others do nothing.

    Subclasses set ``name`` (the manifest and entry-point name) and, if they take settings, a
    pydantic ``Config`` model whose fields match the keyword arguments of ``__init__``.

    Threads: the hooks of one turn never run at the same time (the chain holds the turn's lock),
    but different turns run concurrently on whatever thread handed in their calls. Hooks run on
    the agent's path: they must not block (a hook that sleeps delays the agent by as much). A
    hook that raises anything but ``KeyboardInterrupt`` (``SystemExit``, ``GeneratorExit`` and
    custom ``BaseException`` subclasses included) is logged and counted by the chain, the later
    plugins still run and the turn still closes; ``KeyboardInterrupt`` goes through to the user.
    """

    name: ClassVar[str] = "plugin"
    Config: ClassVar[type[BaseModel]] = NoConfig
    stop_codes: ClassVar[tuple[str, ...]] = ()
    """The ``code`` of every StopSignal this plugin can send (metrics start each at 0)."""

    def setup(self, telemetry: Telemetry) -> None:
        """Create instruments on ``telemetry``.

        Called when the chain is built (with telemetry that records nothing) and again by
        ``Toolchain.install`` with the real providers, before any call: the last call wins.
        """

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        """A tool call finished: ``call`` is its value, ``turn.calls`` its 1-based index in the turn."""

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        """The provider call was retried."""

    def on_turn_end(self, turn: Turn) -> None:
        """The turn ended: report with ``turn.report``; per-turn state is freed after this."""

    def describe(self) -> dict[str, Any]:
        """The plugin's settings, as ``otel-toolchain check`` prints them."""
        return {}

    def shutdown(self) -> None:
        """The chain is shutting down: release what ``setup`` acquired."""
