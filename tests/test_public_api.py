"""The public surface is small, sorted and pinned."""

from __future__ import annotations

import otel_toolchain
from otel_toolchain import errors


def test_all_is_sorted_and_pinned() -> None:
    assert otel_toolchain.__all__ == sorted(otel_toolchain.__all__)
    assert otel_toolchain.__all__ == [
        "AgentRecorder", "CannotRun", "CycleCall", "LabelError", "Manifest", "ManifestError", "MissingExtra",
        "NoConfig", "NudgeSignal", "PluginLoadError", "Retry", "StopSignal",
        "StreamError", "Telemetry", "ToolCall", "ToolPlugin", "Toolchain", "ToolchainError", "Turn", "TurnReport",
        "TurnStopped",
    ]


def test_every_public_name_is_exported() -> None:
    public = {name for name in vars(otel_toolchain) if not name.startswith("_")}
    modules = {name for name, value in vars(otel_toolchain).items() if type(value).__name__ == "module"}
    assert public - modules - {"annotations"} == set(otel_toolchain.__all__)


def test_errors_form_one_hierarchy() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ToolchainError)


def test_every_error_is_public() -> None:
    assert set(errors.__all__) <= set(otel_toolchain.__all__)
