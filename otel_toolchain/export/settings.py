"""The manifest's ``[export]`` table and where the embedded default writes: pydantic and the standard library.

Apart from the pipeline so that reading a manifest (every Claude Code hook call does) does not import the
OpenTelemetry SDK's exporters; the pipeline builds from these settings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OUTPUT_DIR_ENV", "ExportSettings", "default_output_dir", "expand_path"]

OUTPUT_DIR_ENV: Final = "OTEL_TOOLCHAIN_OUTPUT_DIR"
_VARIABLE: Final = re.compile(r"\$(?:(\w+)|\{(\w+)\})")


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


def expand_path(text: str, environ: Mapping[str, str]) -> Path:
    """``~`` and ``$VAR``/``${VAR}`` expanded from ``environ`` (unknown variables are left as written)."""
    home = environ.get("HOME")
    if text.startswith("~") and home and (len(text) == 1 or text[1] == "/"):
        text = home + text[1:]
    text = os.path.expanduser(text)
    return Path(_VARIABLE.sub(lambda m: environ.get(m.group(1) or m.group(2), m.group(0)), text))


def default_output_dir(environ: Mapping[str, str]) -> Path:
    """Where the embedded default writes, given the environment."""
    if environ.get(OUTPUT_DIR_ENV):
        return expand_path(environ[OUTPUT_DIR_ENV], environ)
    state = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(state) / "otel-toolchain"
