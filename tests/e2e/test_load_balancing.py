"""The two-tier path for real: otelcol-loadbalancer.yaml routes each turn by trace id to one of two
Collectors running otelcol-sampler.yaml, each with its own Jaeger.

    otel-toolchain ─traces─> OtlpTap ─> load balancer ─load_balancing (traceID)─┬─> sampler A ─> Jaeger A
                  └metrics, logs──────>       │ (metrics, logs -> sinks)         └─> sampler B ─> Jaeger B

The overlays change what agent_stack.py changes (free ports, local back-ends, 1s waits) and one more
thing: the load balancer's resolver is ``static`` with the two samplers' addresses instead of ``dns``
(a DNS name with one A record per sampler cannot be made up inside a test). Also checked: an agent
pointed straight at a sampler, by mistake, leaks none of the planted secrets (the sampler repeats both
redaction processors).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .agent_stack import SERVICE, TEST_WAITS
from .backends_stack import (
    Collector,
    Jaeger,
    addr,
    collector,
    jaeger,
    listeners_overlay,
    merge,
    require_backends,
    run_cli,
    start_all,
    stop_all,
)
from .e2e_alert_stack import Deadline, Server, free_port, http_get, wait_for
from .otlp_sinks import GrpcSink, HttpSink, OtlpTap
from .runs import agent_turns, outcomes
from .secret_agent import SECRETS

pytestmark = pytest.mark.integration

TURNS = 24  # stopped turns: every one is kept, so each must be found whole in exactly one Jaeger


@dataclass
class Sampler:
    collector: Collector
    jaeger: Jaeger
    grpc: str
    telemetry_url: str

    def decided(self) -> float:
        _, body = http_get(self.telemetry_url)
        return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
                   if line.startswith("otelcol_processor_tail_sampling_global_count_traces_sampled"))


@dataclass
class TwoTier:
    balancer: Collector
    samplers: list[Sampler]
    tap: OtlpTap
    lb_grpc: str
    lb_http: str
    servers: list[Server]

    def diagnostics(self) -> str:
        return "\n".join(c.describe() for c in (self.balancer, *(s.collector for s in self.samplers)))


def _sampler(workdir: Path, name: str, tempo: GrpcSink, mimir: HttpSink) -> Sampler:
    store = jaeger(workdir, f"jaeger-{name}")
    grpc, telemetry = free_port(), free_port()
    overlay = merge(listeners_overlay(grpc=grpc, http=None, health=free_port(), telemetry=telemetry),
                    merge(TEST_WAITS, {"exporters": {
                        "otlp_grpc/jaeger": {"endpoint": store.otlp},
                        "otlp_grpc/tempo": {"endpoint": tempo.endpoint},
                        "prometheus_remote_write/mimir": {"endpoint": f"{mimir.url}/api/v1/write"}}}))
    col = collector(workdir, f"sampler-{name}", "otelcol-sampler.yaml", overlay)
    return Sampler(col, store, addr(grpc), f"http://{addr(telemetry)}/metrics")


@pytest.fixture
def two_tier(tmp_path: Path) -> Iterator[TwoTier]:
    require_backends()
    tempo, sink = GrpcSink().start(), HttpSink().start()
    samplers = [_sampler(tmp_path, name, tempo, sink) for name in ("a", "b")]
    grpc, http = free_port(), free_port()
    overlay = merge(listeners_overlay(grpc=grpc, http=http, health=free_port(), telemetry=free_port()),
                    {"exporters": {
                        "load_balancing/samplers": {"resolver": {
                            "dns": None, "static": {"hostnames": [s.grpc for s in samplers]}}},
                        "prometheus_remote_write/mimir": {"endpoint": f"{sink.url}/api/v1/write"},
                        "otlp_http/loki": {"endpoint": f"{sink.url}/otlp"}}})
    balancer = collector(tmp_path, "loadbalancer", "otelcol-loadbalancer.yaml", overlay)
    tap = OtlpTap(f"http://{addr(http)}").start()
    servers: list[Server] = [*(x for s in samplers for x in (s.jaeger, s.collector)), balancer]
    stack = TwoTier(balancer, samplers, tap, f"http://{addr(grpc)}", f"http://{addr(http)}", servers)
    try:
        start_all(servers, Deadline(60))
        yield stack
        collectors = (balancer, *(s.collector for s in samplers))
        assert [c.log_lines("warn") + c.log_lines("error") for c in collectors] == [[], [], []]
    finally:
        stop_all(servers)
        tap.stop()
        sink.stop()
        tempo.stop()


def _env(stack: TwoTier) -> dict[str, str]:
    """OTLP/HTTP to the load balancer, traces through the tap."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": stack.lb_http, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{stack.tap.url}/v1/traces",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}


def test_each_turn_goes_whole_to_one_sampler(two_tier: TwoTier, tmp_path: Path) -> None:
    stream = agent_turns(tmp_path / "wedges.jsonl", ["wedge"] * TURNS)
    done = run_cli(["replay", "--format", "json", str(stream)], _env(two_tier))
    assert done.returncode == 75 and len(outcomes(done.stdout)) == TURNS, done.stdout[-1500:] + done.stderr[-1500:]
    offered = two_tier.tap.traces()
    assert len(offered) == TURNS and all(len(spans) == 31 for spans in offered.values())
    deadline = Deadline(40)
    wait_for(f"{TURNS} decisions over both samplers", lambda: sum(s.decided() for s in two_tier.samplers) >= TURNS,
             deadline, explain=two_tier.diagnostics)
    where: dict[str, list[str]] = {}
    for trace_id in offered:
        def found(t: str = trace_id) -> list[str] | None:
            homes = [name for name, s in zip("ab", two_tier.samplers, strict=True)
                     if (trace := s.jaeger.trace(t)) is not None and len(trace["spans"]) == 31]
            return homes or None
        where[trace_id] = wait_for(f"trace {trace_id} whole in a Jaeger", found, deadline,
                                   explain=two_tier.diagnostics)
    assert all(len(homes) == 1 for homes in where.values()), where
    per_sampler = {name: sum(homes == [name] for homes in where.values()) for name in "ab"}
    assert per_sampler["a"] > 0 and per_sampler["b"] > 0, per_sampler  # P(all on one side) ~ 2 * 0.5**24
    assert [s.decided() for s in two_tier.samplers] == [per_sampler["a"], per_sampler["b"]]


def test_an_agent_pointed_at_a_sampler_leaks_no_secret(two_tier: TwoTier, tmp_path: Path) -> None:
    sampler = two_tier.samplers[0]
    stream = agent_turns(tmp_path / "secrets.jsonl", ["wedge", "turnfail"])  # both kept by the sampler
    # OTLP/gRPC (a sampler has no HTTP receiver): traces to sampler A, metrics and logs to the load balancer
    env = {**_env(two_tier), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": two_tier.lb_grpc,
           "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://{sampler.grpc}"}
    done = run_cli(["replay", str(stream)], env)
    assert done.returncode == 75, done.stderr[-1500:]  # the wedge is stopped
    traces: list[dict[str, Any]] = wait_for("both turns in the sampler's Jaeger", lambda: (
        t if len(t := sampler.jaeger.traces(SERVICE)) == 2 else None), Deadline(30), explain=two_tier.diagnostics)
    dump = repr(traces)
    assert [s for s in SECRETS if s in dump] == []
    cwds = {tag["value"] for t in traces for span in t["spans"] for tag in span["tags"]
            if tag["key"] == "otel_toolchain.tool.cwd"}
    assert cwds == {"/home/dev/****/repo"}, cwds
    assert not re.search(r"gen_ai\.tool\.call\.(arguments|result)", dump)
