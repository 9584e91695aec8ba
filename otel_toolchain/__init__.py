"""otel_toolchain: every tool call an OpenTelemetry span, and a plugin chain that stops wedged agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import ManifestError, PluginLoadError, StreamError, ToolchainError, TurnStopped
from otel_toolchain.plugin import NoConfig, Telemetry, ToolPlugin
from otel_toolchain.signals import CycleCall, NudgeSignal, StopSignal, TurnReport
from otel_toolchain.turn import Turn

try:
    __version__ = _version("otel-toolchain")
except _PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
"""The installed distribution's version (``otel-toolchain --version`` prints it)."""

__all__ = [
    "CycleCall",
    "ManifestError",
    "NoConfig",
    "NudgeSignal",
    "PluginLoadError",
    "Retry",
    "StopSignal",
    "StreamError",
    "Telemetry",
    "ToolCall",
    "ToolPlugin",
    "Toolchain",
    "ToolchainError",
    "Turn",
    "TurnReport",
    "TurnStopped",
]
