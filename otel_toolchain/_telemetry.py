"""Meters and loggers from the providers a caller passes in, and the chain's own instruments."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from opentelemetry._logs import LoggerProvider, NoOpLogger
from opentelemetry.metrics import Meter, MeterProvider, NoOpMeter

from otel_toolchain import semconv
from otel_toolchain.plugin import Telemetry

if TYPE_CHECKING:
    from otel_toolchain.plugin import ToolPlugin

SCOPE = "otel_toolchain"


def package_version() -> str:
    try:
        return version("otel-toolchain")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


def make_telemetry(meter_provider: MeterProvider | None, logger_provider: LoggerProvider | None) -> Telemetry:
    """Telemetry on the given providers; a missing provider records nothing (globals are never read)."""
    meter = meter_provider.get_meter(SCOPE, package_version()) if meter_provider else NoOpMeter(SCOPE)
    logger = logger_provider.get_logger(SCOPE, package_version()) if logger_provider else NoOpLogger(SCOPE)
    return Telemetry(meter, logger)


class ChainInstruments:
    """The chain's own counters: stops, plugin errors, evicted turns."""

    def __init__(self, meter: Meter, plugins: Sequence[ToolPlugin]) -> None:
        self.stops = meter.create_counter(
            semconv.METRIC_TURN_STOPS, unit="{stop}", description="Turns stopped by a plugin, by plugin and reason."
        )
        self.plugin_errors = meter.create_counter(
            semconv.METRIC_PLUGIN_ERRORS, unit="{error}", description="Exceptions raised by plugins and listeners."
        )
        self.turns_evicted = meter.create_counter(
            semconv.METRIC_TURNS_EVICTED, unit="{turn}",
            description="Open turns dropped because max_open_turns was reached.",
        )
        # Start every known series at 0: an alert on increase() cannot see the first stop of a
        # series that did not exist before it.
        for plugin in plugins:
            self.plugin_errors.add(0, {semconv.PLUGIN: plugin.name, semconv.HOOK: "on_tool"})
            if plugin.stop_codes:
                self.plugin_errors.add(0, {semconv.PLUGIN: plugin.name,
                                           semconv.HOOK: semconv.LISTENER_HOOK_PREFIX + "on_stop"})
            for code in plugin.stop_codes:
                for mode in ("enforce", "shadow"):
                    self.stops.add(0, {semconv.PLUGIN: plugin.name, semconv.STOP_REASON: code,
                                       semconv.STOP_MODE: mode})
        self.turns_evicted.add(0)
