"""Meters and loggers from the providers a caller passes in, and the chain's own instruments."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from opentelemetry._logs import Logger, LoggerProvider, NoOpLogger
from opentelemetry.metrics import Meter, MeterProvider, NoOpMeter

from otel_toolchain import semconv

__all__ = ["SCOPE", "ChainInstruments", "Telemetry", "make_telemetry", "package_version"]

SCOPE = "otel_toolchain"


def package_version() -> str:
    try:
        return version("otel-toolchain")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


@dataclass(frozen=True, slots=True)
class Telemetry:
    """Where plugins put their metrics and events: a meter and a logger, no-ops unless installed."""

    meter: Meter
    logger: Logger

    @classmethod
    def disabled(cls) -> Telemetry:
        """Telemetry that records nothing."""
        return cls(NoOpMeter(SCOPE), NoOpLogger(SCOPE))


def make_telemetry(meter_provider: MeterProvider | None, logger_provider: LoggerProvider | None) -> Telemetry:
    """Telemetry on the given providers; a missing provider records nothing (globals are never read)."""
    meter = meter_provider.get_meter(SCOPE, package_version()) if meter_provider else NoOpMeter(SCOPE)
    logger = logger_provider.get_logger(SCOPE, package_version()) if logger_provider else NoOpLogger(SCOPE)
    return Telemetry(meter, logger)


class ChainInstruments:
    """The chain's own counters: stops, plugin and listener errors, evicted turns and their calls.

    ``plugins`` gives each plugin's name and stop codes, so every series they can have starts at
    0: an alert on ``increase()`` cannot see the first stop of a series that did not exist before it.
    """

    def __init__(self, meter: Meter, plugins: Iterable[tuple[str, tuple[str, ...]]]) -> None:
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
        self.evicted_calls = meter.create_counter(
            semconv.METRIC_EVICTED_CALLS, unit="{call}",
            description="Tool calls of evicted turns, which no plugin saw.",
        )
        for name, stop_codes in plugins:
            self.plugin_errors.add(0, {semconv.PLUGIN: name, semconv.HOOK: "on_tool"})
            if stop_codes:
                listener = semconv.LISTENER_HOOK_PREFIX + "on_stop"
                self.plugin_errors.add(0, {semconv.PLUGIN: name, semconv.HOOK: listener})
            for code in stop_codes:
                for mode in ("enforce", "shadow"):
                    self.stops.add(0, {semconv.PLUGIN: name, semconv.STOP_REASON: code, semconv.STOP_MODE: mode})
        self.turns_evicted.add(0)
        self.evicted_calls.add(0)
