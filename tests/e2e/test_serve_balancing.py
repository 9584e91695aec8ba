"""collector-config/otelcol-serve-balancer.yaml for real: the built Collector's load_balancing routes each
turn by trace id to one of two ``otel-toolchain serve`` instances, and the instance that got the turn stops it.

    recorded agent bodies ─OTLP/HTTP─> Collector (load_balancing, traceID, static resolver) ─gRPC─┬─> serve A
                                                                                                   └─> serve B

Real parts: the Collector built by .ci/install-backends, the real ``serve`` command (two processes),
the Vercel AI SDK agent's recorded wedges (tests/data/otlp), re-sent with fresh trace ids so there are
several turns to route. The overlay changes only addresses and the resolver (static instead of dns: a
DNS name with one A record per instance cannot be made up inside a test).
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .backends_stack import addr, collector, listeners_overlay, merge, require_backends, start_all, stop_all
from .e2e_alert_stack import Deadline, free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "receiver"))
from recorded import bodies

pytestmark = pytest.mark.integration
TURNS = 6


def _turns() -> list[list[bytes]]:
    """The Vercel wedge's trace bodies, TURNS times, each copy with a trace id of its own."""
    originals = [b.data for b in bodies("vercel-ai/wedge") if b.signal == "traces"]
    out = []
    rng = random.Random(7)
    for _ in range(TURNS):
        trace_id = rng.randbytes(16)
        copy = []
        for data in originals:
            message = ExportTraceServiceRequest.FromString(data)
            for rs in message.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        span.trace_id = trace_id
            copy.append(message.SerializeToString())
        out.append(copy)
    return out


def test_each_turn_is_guarded_by_the_instance_it_is_routed_to(tmp_path: Path) -> None:
    require_backends()
    grpc_ports = [free_port(), free_port()]
    serves = []
    for n, port in enumerate(grpc_ports):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
        env["OTEL_TOOLCHAIN_OUTPUT_DIR"] = str(tmp_path / f"serve-{n}")
        serves.append(subprocess.Popen(
            [sys.executable, "-m", "otel_toolchain", "serve", "--listen", f"127.0.0.1:{free_port()}",
             "--grpc", addr(port)], env=env, stderr=subprocess.PIPE, text=True))
    http = free_port()
    overlay = merge(listeners_overlay(grpc=free_port(), http=http, health=free_port(), telemetry=free_port()),
                    {"exporters": {"load_balancing/guards": {"resolver": {
                        "dns": None, "static": {"hostnames": [addr(p) for p in grpc_ports]}}}}})
    balancer = collector(tmp_path, "serve-balancer", "otelcol-serve-balancer.yaml", overlay)
    stops: list[list[str]] = [[], []]
    readers: list[threading.Thread] = []
    try:
        for serve in serves:
            assert serve.stderr is not None and "receiving OTLP/HTTP" in serve.stderr.readline()
        start_all([balancer], Deadline(60))
        for turn in _turns():
            for data in turn:
                request = urllib.request.Request(f"http://{addr(http)}/v1/traces", data, method="POST",
                                                 headers={"Content-Type": "application/x-protobuf"})
                with urllib.request.urlopen(request, timeout=10) as response:
                    assert response.status == 200
        # Each instance prints one line per stop; a reader thread per instance (a selector would miss
        # lines already buffered by an earlier readline).
        found: queue.Queue[tuple[int, str]] = queue.Queue()

        def read(n: int, stream: Any) -> None:
            for line in stream:
                if line.startswith("otel-toolchain: stopped by"):
                    found.put((n, line))

        for n, serve in enumerate(serves):
            readers.append(threading.Thread(target=read, args=(n, serve.stderr), daemon=True))
            readers[-1].start()
        deadline = Deadline(60)
        for _ in range(TURNS):
            try:
                n, line = found.get(timeout=max(deadline.left(), 0.01))
            except queue.Empty:
                break
            stops[n].append(line)
    finally:
        stop_all([balancer])
        for serve in serves:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=10)
        for serve in serves:
            assert serve.stderr is not None
            serve.stderr.close()
    assert sum(len(s) for s in stops) == TURNS, (stops, balancer.describe())
    assert all(" at call 25: " in line for s in stops for line in s)
    traces = [line.rsplit("trace ", 1)[1].strip() for s in stops for line in s]
    assert len(set(traces)) == TURNS  # every turn stopped once, by exactly one instance
    assert all(s for s in stops), stops  # both instances got turns (P(all on one) = 2 * 0.5**6)
