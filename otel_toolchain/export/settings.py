"""The manifest's ``[export]`` table (pydantic); where the embedded default writes comes from :mod:`.paths`.

Apart from the pipeline so that reading a manifest (every Claude Code hook call does) does not import the
OpenTelemetry SDK's exporters; the pipeline builds from these settings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from otel_toolchain.export.paths import OUTPUT_DIR_ENV, default_output_dir, expand_path

__all__ = ["OUTPUT_DIR_ENV", "ExportSettings", "default_output_dir", "expand_path"]


class ExportSettings(BaseModel):
    """The manifest's ``[export]`` table; every field left out falls back to the environment.

    Strictly typed (``prometheus_port = true`` is an error) and bounded, so a value the SDK
    cannot use is refused at load time rather than failing later in an exporter's thread.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    endpoint: str | None = None
    protocol: Literal["grpc", "http/protobuf"] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    service_name: str | None = None
    resource_attributes: dict[str, str] = Field(default_factory=dict)
    output_dir: str | None = None
    prometheus_port: int | None = Field(default=None, ge=0, le=65535)
    metric_interval_ms: int = Field(default=10_000, ge=100, le=86_400_000)  # at most a day
    max_queue_size: int = Field(default=2048, ge=1, le=1_000_000)
