"""Where telemetry goes: OTLP by the standard settings, or the embedded default (OTLP JSON lines files).

The names below are imported on first use (PEP 562): ``export.settings`` alone, which every manifest
needs, must not bring in the SDK's exporters.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["ExportSettings", "Pipeline", "build_pipeline", "default_output_dir", "read_otlp_json_lines"]

_HOMES = {"ExportSettings": "settings", "default_output_dir": "paths", "Pipeline": "pipeline",
          "build_pipeline": "pipeline", "read_otlp_json_lines": "otlp_json"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
