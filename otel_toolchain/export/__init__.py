"""Where telemetry goes: OTLP by the standard settings, or the embedded default (OTLP JSON lines files)."""

from otel_toolchain.export.otlp_json import read_otlp_json_lines
from otel_toolchain.export.pipeline import ExportSettings, Pipeline, build_pipeline, default_output_dir

__all__ = ["ExportSettings", "Pipeline", "build_pipeline", "default_output_dir", "read_otlp_json_lines"]
