"""otel_toolchain: every tool call an OpenTelemetry span, and a plugin chain that stops wedged agents."""

from __future__ import annotations

from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import (
    CannotRun,
    LabelError,
    ManifestError,
    MissingExtra,
    PluginLoadError,
    StreamError,
    ToolchainError,
    TurnStopped,
)
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugin import NoConfig, Telemetry, ToolPlugin
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.signals import CycleCall, NudgeSignal, StopSignal, TurnReport
from otel_toolchain.turn import Turn

__all__ = [
    "AgentRecorder",
    "CannotRun",
    "CycleCall",
    "LabelError",
    "Manifest",
    "ManifestError",
    "MissingExtra",
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
