"""The plugin contract: a small object with settings in ``__init__`` and work in one or two hooks.

A plugin is an OTel SDK ``SpanProcessor``: added to a ``TracerProvider`` on its own it runs as a
chain of one, so it can be used and tested alone. In a :class:`~otel_toolchain.Toolchain` it runs
in manifest order, guarded, after the plugins before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from opentelemetry._logs import Logger, NoOpLogger
from opentelemetry.metrics import Meter, NoOpMeter
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from otel_toolchain.calls import Retry, ToolCall
    from otel_toolchain.chain import Toolchain
    from otel_toolchain.turn import Turn

__all__ = ["NoConfig", "Telemetry", "ToolPlugin"]



class NoConfig(BaseModel):
    """The settings of a plugin that takes none: any parameter is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class Telemetry:
    """Where plugins put their metrics and events: a meter and a logger, no-ops unless installed."""

    meter: Meter
    logger: Logger

    @classmethod
    def disabled(cls) -> Telemetry:
        """Telemetry that records nothing."""
        return cls(NoOpMeter("otel_toolchain"), NoOpLogger("otel_toolchain"))


class ToolPlugin(SpanProcessor):
    """Base class of every plugin. Override the hooks you need; the others do nothing.

    Subclasses set ``name`` (the manifest and entry-point name) and, if they take settings, a
    pydantic ``Config`` model whose fields match the keyword arguments of ``__init__``.

    Threads: the hooks of one turn never run at the same time (the chain holds the turn's lock),
    but different turns run concurrently on whatever thread ends their spans. Hooks must not block.
    A hook that raises is logged and counted by the chain and never reaches the agent.
    """

    name: ClassVar[str] = "plugin"
    Config: ClassVar[type[BaseModel]] = NoConfig
    stop_codes: ClassVar[tuple[str, ...]] = ()
    """The ``code`` of every StopSignal this plugin can send (metrics start each at 0)."""

    _solo: Toolchain | None = None

    def setup(self, telemetry: Telemetry) -> None:
        """Create instruments on ``telemetry``.

        Called when the chain is built (with telemetry that records nothing) and again by
        ``Toolchain.install`` with the real providers, before any span: the last call wins.
        """

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        """A tool call finished. Its span is still live when ``call.span`` is set."""

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        """The provider call was retried."""

    def on_turn_end(self, turn: Turn) -> None:
        """The turn ended: report with ``turn.report``; per-turn state is freed after this."""

    def describe(self) -> dict[str, Any]:
        """The plugin's settings, as ``otel-toolchain check`` prints them."""
        return {}

    # -- standalone use as a span processor ----------------------------------------------------------
    @property
    def toolchain(self) -> Toolchain:
        """The chain of one this plugin runs in when added to a provider by itself."""
        if self._solo is None:
            from otel_toolchain.chain import Toolchain  # noqa: PLC0415 (chain imports plugin)

            self._solo = Toolchain([self])
        return self._solo

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.toolchain.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self.toolchain.on_end(span)
