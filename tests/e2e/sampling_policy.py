"""What the shipped tail-sampling policies should keep, computed independently of the Collector.

The tests compare the traces Jaeger holds with :func:`expected_keep` over every trace the Collector was
offered (seen by the tap), so a policy that keeps too much or too little fails. The policies are read from
the shipped config where they carry numbers (the probabilistic percentage and hash salt); their meaning is
coded here from the tail_sampling processor's documentation and source (v0.161.0):

* ``keep-stopped-turns``: a span (or resource) attribute ``error.type`` matching ``^tool_plugin\\.``;
* ``keep-shadow-stops``: a span event named ``otel_toolchain.turn.stop.shadow``;
* ``keep-failed-turns``: an ``invoke_agent`` span with status ERROR;
* ``sample-healthy``: FNV-1a 64 of (salt, 16 trace-id bytes) <= MaxUint64 * percentage / 100, the legacy
  trace-id hash that the probabilistic policy uses when spans carry no OpenTelemetry tracestate
  (otel_toolchain's spans carry none; the ``usetracestate`` feature gate is alpha and off).

:func:`old_keep` is the policy set before this change (any span with status ERROR kept the trace), for the
measured comparison in collector-config/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .otlp_sinks import STATUS_ERROR, SpanView

DEFAULT_HASH_SALT = "default-hash-seed"  # tailsamplingprocessor/internal/sampling/probabilistic.go
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MAX_UINT64 = 2**64 - 1


def fnv1a64(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MAX_UINT64
    return h


@dataclass(frozen=True)
class Probabilistic:
    percentage: float
    salt: str = DEFAULT_HASH_SALT

    @property
    def threshold(self) -> int:
        # Go computes MaxUint64 * ratio in a 64-bit big.Float; the exact product differs from it by less
        # than one unit, which no 64-bit hash can tell apart in practice.
        return int(Fraction(_MAX_UINT64) * Fraction(self.percentage / 100))

    def samples(self, trace_id: str) -> bool:
        return fnv1a64(self.salt.encode() + bytes.fromhex(trace_id)) <= self.threshold


def probabilistic_from(tail_sampling: dict[str, Any]) -> Probabilistic:
    """The probabilistic policy of a shipped ``tail_sampling`` processor config."""
    [policy] = [p for p in tail_sampling["policies"] if p["type"] == "probabilistic"]
    conf = policy["probabilistic"]
    return Probabilistic(float(conf["sampling_percentage"]), conf.get("hash_salt") or DEFAULT_HASH_SALT)


_STOPPED = re.compile(r"^tool_plugin\.")


def expected_keep(spans: Iterable[SpanView], sampler: Probabilistic) -> str | None:
    """The first policy that keeps this trace, or None when the shipped config drops it."""
    spans = list(spans)
    if any(_STOPPED.search(str(s.attributes.get("error.type", ""))) for s in spans):
        return "keep-stopped-turns"
    if any("otel_toolchain.turn.stop.shadow" in s.events for s in spans):
        return "keep-shadow-stops"
    if any(s.status_code == STATUS_ERROR and s.attributes.get("gen_ai.operation.name") == "invoke_agent"
           for s in spans):
        return "keep-failed-turns"
    return "sample-healthy" if sampler.samples(spans[0].trace_id) else None


def old_keep(spans: Iterable[SpanView], sampler: Probabilistic) -> str | None:
    """The previous policies: stops, shadow stops, ANY span with status ERROR, then the hash."""
    spans = list(spans)
    kept = expected_keep(spans, sampler)
    if kept in ("keep-stopped-turns", "keep-shadow-stops"):
        return kept
    if any(s.status_code == STATUS_ERROR for s in spans):
        return "keep-failed"
    return "sample-healthy" if sampler.samples(spans[0].trace_id) else None
