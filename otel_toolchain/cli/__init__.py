"""The ``otel-toolchain`` command: one module per sub-command; ``main`` is the entry point."""

from __future__ import annotations

from otel_toolchain.cli.main import main

__all__ = ["main"]
