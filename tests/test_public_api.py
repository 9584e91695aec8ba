"""The public surface is small, sorted and pinned."""

from __future__ import annotations

import subprocess
import sys

import pytest

import otel_toolchain
from otel_toolchain import errors


def test_all_is_sorted_and_pinned() -> None:
    assert otel_toolchain.__all__ == sorted(otel_toolchain.__all__)
    assert otel_toolchain.__all__ == [
        "AgentRecorder", "BadRequest", "CannotRun", "CycleCall", "LabelError", "Manifest", "ManifestError",
        "MissingExtra", "NoConfig", "NudgeSignal", "PluginLoadError", "Retry", "StopSignal",
        "StreamError", "Telemetry", "ToolCall", "ToolPlugin", "Toolchain", "ToolchainError", "Turn", "TurnReport",
        "TurnStopped",
    ]


def test_every_public_name_is_exported() -> None:
    modules = {name for name, value in vars(otel_toolchain).items() if type(value).__name__ == "module"}
    public = {name for name in dir(otel_toolchain) if not name.startswith("_")}
    assert public - modules - {"annotations", "import_module", "TYPE_CHECKING", "Any"} == set(otel_toolchain.__all__)


def test_every_name_resolves_to_its_home_module() -> None:
    for name in otel_toolchain.__all__:
        value = getattr(otel_toolchain, name)
        assert value.__name__ == name
        assert value.__module__.startswith("otel_toolchain.")


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        otel_toolchain.Nope  # noqa: B018  # the lookup is the test


def test_importing_the_package_loads_no_sdk() -> None:
    code = ("import sys, otel_toolchain\n"
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'pydantic'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_errors_form_one_hierarchy() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ToolchainError)


def test_every_error_is_public() -> None:
    assert set(errors.__all__) <= set(otel_toolchain.__all__)
