"""The real back-ends of the end-to-end tests: the Collector built from collector-config/builder-manifest.yaml
and Jaeger v2, both built by ``.ci/install-backends`` into ``$OTEL_TOOLCHAIN_BACKENDS_DIR`` (default
/opt/otel-toolchain-backends), run as child processes on 127.0.0.1 and free ports.

A Collector runs a SHIPPED config from collector-config/ plus an overlay file (merged by the Collector:
maps merge, lists replace) that changes only addresses, back-end endpoints and waiting times; the overlay
is written beside the Collector's log, so a failure shows exactly what ran. Every process is stopped by
:meth:`Server.stop`; tests that need the binaries skip, with the install command, when they are absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from .e2e_alert_stack import LOOPBACK, Deadline, Server, free_port, http_get, wait_for

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "collector-config"
JAEGER_CONFIG = CONFIG_DIR / "jaeger" / "jaeger.yaml"
BACKENDS_DIR = Path(os.environ.get("OTEL_TOOLCHAIN_BACKENDS_DIR", "/opt/otel-toolchain-backends"))
COLLECTOR_BIN = BACKENDS_DIR / "bin" / "otelcol-otel-toolchain"
JAEGER_BIN = BACKENDS_DIR / "bin" / "jaeger"


def require_backends() -> None:
    """Skip the calling test when the Collector or Jaeger binary is missing (CI builds both)."""
    missing = [str(p) for p in (COLLECTOR_BIN, JAEGER_BIN) if not os.access(p, os.X_OK)]
    if missing:
        pytest.skip(f"not built: {', '.join(missing)}; run `bash .ci/install-backends` "
                    "(OTEL_TOOLCHAIN_BACKENDS_DIR chooses the folder)")


def addr(port: int) -> str:
    return f"{LOOPBACK}:{port}"


@dataclass
class HealthServer(Server):
    """A child server whose readiness is a 200 from ``health_url``."""

    health_url: str = ""

    def ready(self) -> bool:
        if not self.alive():
            raise AssertionError(f"{self.name} exited early (rc {self.proc and self.proc.returncode})\n"
                                 f"{self.log_tail(40)}")
        status, _ = http_get(self.health_url, timeout=1.0)
        return status == 200

    def log_lines(self, level: str) -> list[str]:
        """Log lines of one zap level ("warn", "error"): the Collector's second tab-separated field."""
        lines = self.log_path.read_text(errors="replace").splitlines() if self.log_path.exists() else []
        return [line for line in lines if line.split("\t")[1:2] == [level]]


# --------------------------------------------------------------------------- Jaeger


@dataclass
class Jaeger(HealthServer):
    """Jaeger v2 with collector-config/jaeger/jaeger.yaml; ``otlp`` is its OTLP/gRPC host:port."""

    otlp: str = ""

    def api(self, path: str, **params: str) -> Any:
        """``data`` of a query-API answer; None for a 404 (a trace Jaeger does not have)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = http_get(f"{self.base_url}{path}{query}", timeout=5.0)
        if status == 404:
            return None
        if status != 200:
            raise ValueError(f"Jaeger {path}: HTTP {status}: {body[:300]!r}")
        return json.loads(body)["data"]

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        data = self.api(f"/api/traces/{trace_id}")
        return data[0] if data else None

    def traces(self, service: str, limit: int = 5000) -> list[dict[str, Any]]:
        """Every stored trace of ``service`` (the search looks back one day, far enough for a test)."""
        return list(self.api("/api/traces", service=service, limit=str(limit), lookback="1d") or [])

    def raw_dump(self, service: str) -> str:
        """All stored traces of ``service`` as JSON text, to search for strings that must not be there."""
        return json.dumps(self.traces(service))


def jaeger(workdir: Path, name: str = "jaeger") -> Jaeger:
    otlp, http, grpc_port, health = (free_port() for _ in range(4))
    env = {"JAEGER_OTLP_GRPC_ENDPOINT": addr(otlp), "JAEGER_QUERY_HTTP_ENDPOINT": addr(http),
           "JAEGER_QUERY_GRPC_ENDPOINT": addr(grpc_port), "JAEGER_HEALTH_ENDPOINT": addr(health)}
    return Jaeger(name, [str(JAEGER_BIN), f"--config={JAEGER_CONFIG}"], workdir / f"{name}.log",
                  f"http://{addr(http)}", env=env, health_url=f"http://{addr(health)}/status", otlp=addr(otlp))


# --------------------------------------------------------------------------- Collector


@dataclass
class Collector(HealthServer):
    """The built Collector on a shipped config plus an overlay."""

    overlay_path: Path | None = None

    def describe(self) -> str:
        overlay = self.overlay_path.read_text() if self.overlay_path else ""
        return f"--- {self.name} overlay:\n{overlay}\n{self.log_tail(40)}"


def collector(workdir: Path, name: str, config: str, overlay: dict[str, Any]) -> Collector:
    """A Collector running ``collector-config/<config>`` with ``overlay`` merged over it.

    ``overlay`` must set ``extensions.health_check.endpoint`` (readiness is read there).
    """
    health = overlay["extensions"]["health_check"]["endpoint"]
    overlay_path = workdir / f"{name}.overlay.yaml"
    overlay_path.write_text(yaml.safe_dump(overlay, sort_keys=False))
    argv = [str(COLLECTOR_BIN), f"--config=file:{CONFIG_DIR / config}", f"--config=file:{overlay_path}"]
    return Collector(name, argv, workdir / f"{name}.log", f"http://{health}", health_url=f"http://{health}/",
                     overlay_path=overlay_path)


def listeners_overlay(*, grpc: int, http: int | None, health: int, telemetry: int) -> dict[str, Any]:
    """Free-port addresses for every listener a shipped config has (OTLP, health_check, own metrics)."""
    protocols: dict[str, Any] = {"grpc": {"endpoint": addr(grpc)}}
    if http is not None:
        protocols["http"] = {"endpoint": addr(http)}
    return {
        "extensions": {"health_check": {"endpoint": addr(health)}},
        "receivers": {"otlp": {"protocols": protocols}},
        "service": {"telemetry": {"metrics": {"readers": [
            {"pull": {"exporter": {"prometheus": {"host": LOOPBACK, "port": telemetry}}}}]}}},
    }


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A deep merge of two overlays (maps merge, everything else is replaced), like the Collector's."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def start_all(servers: list[Server], deadline: Deadline) -> None:
    """Start each server in order and wait until it is ready (a failure names the server, with its log)."""
    for server in servers:
        server.start()
        wait_for(f"{server.name} ready", server.ready, deadline, limit=30,
                 explain=server.describe if isinstance(server, Collector) else server.log_tail)


def stop_all(servers: list[Server]) -> None:
    for server in reversed(servers):
        server.stop(grace=10.0)


def run_cli(args: list[str], env: dict[str, str], *, timeout: float = 120,
            cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``otel-toolchain ARGS`` (as ``python -m otel_toolchain``, this interpreter), with ``env`` added."""
    return subprocess.run([sys.executable, "-m", "otel_toolchain", *args], env={**os.environ, **env}, cwd=cwd,
                          capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
