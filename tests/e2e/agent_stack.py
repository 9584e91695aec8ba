"""The agent/gateway stack of collector-config/otelcol-agent.yaml, for real, on 127.0.0.1.

    otel-toolchain ──traces──> OtlpTap ──> Collector (otelcol-agent.yaml + overlay) ──> Jaeger (traces)
                  └─metrics, logs──────────>   │  ├─ otlp_grpc/tempo ──> GrpcSink (Tempo stand-in)
                                               │  ├─ prometheus :N <── Prometheus "scrape" (shipped rules)
                                               │  ├─ prometheus_remote_write/mimir ──> Prometheus "mimir"
                                               │  └─ otlp_http/loki ──> HttpSink (Loki stand-in)

What the overlay changes, and why: every listener gets a free port; each back-end endpoint points at its
local stand-in; ``tail_sampling.decision_wait_after_root_received`` 10s -> 1s and
``span_metrics.metrics_flush_interval`` 15s -> 1s, so that a test waits seconds, not minutes. Policies,
processors, pipelines and every other setting run as shipped.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .backends_stack import (
    CONFIG_DIR,
    Collector,
    Jaeger,
    addr,
    collector,
    jaeger,
    listeners_overlay,
    merge,
    run_cli,
    start_all,
    stop_all,
)
from .e2e_alert_stack import Deadline, Server, api, free_port, http_get, prometheus, wait_for
from .otlp_sinks import GrpcSink, HttpSink, OtlpTap

RULES = CONFIG_DIR / "prometheus" / "otel_toolchain-rules.yaml"
SERVICE = "otel-toolchain"  # the CLI's default service.name, hence the Prometheus job through the Collector
TEST_WAITS = {
    "processors": {"tail_sampling": {"decision_wait_after_root_received": "1s"}},
    "connectors": {"span_metrics": {"metrics_flush_interval": "1s"}},
}


@dataclass
class AgentStack:
    """Handles on every part of the running stack."""

    workdir: Path
    collector: Collector
    jaeger: Jaeger
    tempo: GrpcSink
    loki: HttpSink
    tap: OtlpTap
    scrape: Server  # Prometheus scraping the Collector's prometheus exporter
    mimir: Server  # Prometheus receiving the Collector's remote write
    exporter_url: str  # the Collector's prometheus exporter, http://host:port/metrics
    telemetry_url: str  # the Collector's own metrics
    grpc_endpoint: str
    http_endpoint: str
    servers: list[Server] = field(default_factory=list)

    def cli_env(self, *, tap: bool = True, grpc: bool = False) -> dict[str, str]:
        """Environment for ``otel-toolchain``: OTLP to the Collector (traces through the tap if ``tap``)."""
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": self.grpc_endpoint if grpc else self.http_endpoint,
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc" if grpc else "http/protobuf",
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
               "OTEL_BSP_SCHEDULE_DELAY": "200"}
        if tap:
            env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{self.tap.url}/v1/traces"
        return env

    def diagnostics(self) -> str:
        return "\n".join([self.collector.describe(), self.jaeger.log_tail()])

    def sampling_decisions(self) -> dict[str, float]:
        """The tail sampler's decision counts so far, from the Collector's own metrics: {"true": n, ...}."""
        _, body = http_get(self.telemetry_url)
        out: dict[str, float] = {}
        for line in body.decode().splitlines():
            if line.startswith("otelcol_processor_tail_sampling_global_count_traces_sampled"):
                sampled = re.search(r'sampled="(\w+)"', line)
                if sampled:
                    out[sampled.group(1)] = out.get(sampled.group(1), 0.0) + float(line.rsplit(" ", 1)[1])
        return out

    def wait_decided(self, traces: int, deadline: Deadline) -> dict[str, float]:
        """Wait until the tail sampler has decided at least ``traces`` traces in all."""
        return wait_for(f"{traces} tail-sampling decisions", lambda: (
            d if sum((d := self.sampling_decisions()).values()) >= traces else None), deadline,
            explain=self.diagnostics)

    def cli(self, args: list[str], env: dict[str, str], *, turns: int, timeout: float = 120,
            ) -> subprocess.CompletedProcess[str]:
        """``otel-toolchain ARGS``, then wait until the sampler decided its ``turns`` traces, so that no
        decision of this run is counted in a later one's (tests and fixtures may run in any order)."""
        before = sum(self.sampling_decisions().values())
        done = run_cli(args, env, timeout=timeout)
        try:
            self.wait_decided(int(before) + turns, Deadline(30))
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- otel-toolchain {args[0]} (rc {done.returncode}):\n"
                                 f"{done.stderr[-2000:]}") from None
        return done

    def prom_query(self, server: Server, query: str) -> list[dict[str, Any]]:
        return list(api(server.base_url, "/api/v1/query", query=query)["result"])

    def stop(self) -> None:
        stop_all(self.servers)
        for sink in (self.tap, self.loki):
            sink.stop()
        self.tempo.stop()


def _prometheus_yml(path: Path, *, scrape_target: str | None) -> Path:
    config: dict[str, Any] = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                                         "evaluation_interval": "1s"}}
    if scrape_target:
        config["rule_files"] = [str(RULES)]
        # honor_labels: job and instance come from the Collector (service.name, service.instance.id),
        # as collector-config/prometheus/prometheus.yml does.
        config["scrape_configs"] = [{"job_name": "otelcol", "honor_labels": True,
                                     "static_configs": [{"targets": [scrape_target]}]}]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def start_agent_stack(workdir: Path, deadline: Deadline) -> AgentStack:
    """Start everything, in dependency order; on any failure everything started so far is stopped."""
    grpc_port, http_port, exporter_port, telemetry_port = (free_port() for _ in range(4))
    tempo, loki = GrpcSink().start(), HttpSink().start()
    tap = OtlpTap(f"http://{addr(http_port)}").start()
    store = jaeger(workdir)
    mimir = prometheus(workdir, _prometheus_yml(workdir / "mimir.yml", scrape_target=None), name="mimir",
                       extra=("--web.enable-remote-write-receiver",))
    scrape = prometheus(workdir, _prometheus_yml(workdir / "scrape.yml", scrape_target=addr(exporter_port)),
                        name="scrape", extra=("--enable-feature=exemplar-storage",))
    overlay = merge(listeners_overlay(grpc=grpc_port, http=http_port, health=free_port(), telemetry=telemetry_port),
                    merge(TEST_WAITS, {"exporters": {
                        "otlp_grpc/jaeger": {"endpoint": store.otlp},
                        "otlp_grpc/tempo": {"endpoint": tempo.endpoint},
                        "prometheus": {"endpoint": addr(exporter_port)},
                        "prometheus_remote_write/mimir": {"endpoint": f"{mimir.base_url}/api/v1/write"},
                        "otlp_http/loki": {"endpoint": f"{loki.url}/otlp"}}}))
    col = collector(workdir, "otelcol-agent", "otelcol-agent.yaml", overlay)
    stack = AgentStack(workdir, col, store, tempo, loki, tap, scrape, mimir,
                       f"http://{addr(exporter_port)}/metrics", f"http://{addr(telemetry_port)}/metrics",
                       f"http://{addr(grpc_port)}", f"http://{addr(http_port)}", [store, mimir, col, scrape])
    try:
        start_all(stack.servers, deadline)
        # Prometheus scrapes its first target about 5 s after start (discovery throttle). A CLI run before
        # that would leave only already-final samples, whose rate() is 0: wait for the first scrape.
        wait_for("Prometheus scraping the Collector", lambda: [
            t for t in api(scrape.base_url, "/api/v1/targets")["activeTargets"] if t["health"] == "up"],
            deadline, explain=stack.diagnostics)
    except BaseException:
        stack.stop()
        raise
    return stack

