"""otel_toolchain: every tool call an OpenTelemetry span, and a plugin chain that stops wedged agents.

The names below are imported on first use (PEP 562), so that ``import otel_toolchain.cli`` for
``otel-toolchain --help`` does not pay for the OpenTelemetry SDK, pydantic and the exporters.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_toolchain.calls import Retry, ToolCall
    from otel_toolchain.chain import Toolchain
    from otel_toolchain.errors import (
        BadRequest,
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

_HOMES = {
    "AgentRecorder": "recorder",
    "BadRequest": "errors",
    "CannotRun": "errors",
    "CycleCall": "signals",
    "LabelError": "errors",
    "Manifest": "manifest",
    "ManifestError": "errors",
    "MissingExtra": "errors",
    "NoConfig": "plugin",
    "NudgeSignal": "signals",
    "PluginLoadError": "errors",
    "Retry": "calls",
    "StopSignal": "signals",
    "StreamError": "errors",
    "Telemetry": "plugin",
    "ToolCall": "calls",
    "ToolPlugin": "plugin",
    "Toolchain": "chain",
    "ToolchainError": "errors",
    "Turn": "turn",
    "TurnReport": "signals",
    "TurnStopped": "errors",
}

__all__ = [
    "AgentRecorder",
    "BadRequest",
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


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's (``otel-toolchain --version`` prints it)
        globals()[name] = value = _installed_version()
        return value
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'otel_toolchain' has no attribute {name!r}")
    value = getattr(import_module(f"otel_toolchain.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415  # only when asked

    try:
        return version("otel-toolchain")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
