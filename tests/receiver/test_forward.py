"""What ``serve`` forwards reaches a Collector over the network whole: HTTP/protobuf and gRPC, headers too.

The downstream here is a plain HTTP server and a real gRPC TraceService on 127.0.0.1 that keep what they
receive; the requests forwarded are real agents' recorded bodies, compared after decoding with the real
protobufs. A dead endpoint is counted as dropped and logged once, never raised.
"""

from __future__ import annotations

import http.server
import logging
import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from recorded import bodies

from otel_toolchain.export.pipeline import ExportSettings
from otel_toolchain.receiver.forward import forwarder_for

TRACES = trace_service_pb2.ExportTraceServiceRequest.FromString(next(bodies("vercel-ai/wedge", only="traces")).data)


class _Keeper(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def http_collector() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    received: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Keeper", (_Keeper,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_http_forwarding_sends_each_request_whole_to_its_signal_path(http_collector: Any) -> None:
    endpoint, received = http_collector
    logs = ExportLogsServiceRequest.FromString(next(bodies("claude-code/healthy", only="logs")).data)
    settings = ExportSettings(endpoint=endpoint, protocol="http/protobuf", headers={"x-team": "agents"})
    forwarder = forwarder_for(settings, {}, None)
    forwarder.forward("traces", TRACES)
    forwarder.forward("logs", logs)
    forwarder.close()
    assert [(path, headers["content-type"], headers["x-team"]) for path, headers, _ in received] == [
        ("/v1/traces", "application/x-protobuf", "agents"), ("/v1/logs", "application/x-protobuf", "agents")]
    assert trace_service_pb2.ExportTraceServiceRequest.FromString(received[0][2]) == TRACES
    assert ExportLogsServiceRequest.FromString(received[1][2]) == logs
    assert forwarder.dropped == {"traces": 0, "logs": 0, "metrics": 0}


class _TraceKeeper(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.received: list[tuple[trace_service_pb2.ExportTraceServiceRequest, dict[str, str]]] = []

    def Export(self, request: Any, context: Any) -> Any:
        self.received.append((request, dict(context.invocation_metadata())))
        return trace_service_pb2.ExportTraceServiceResponse()


def test_grpc_forwarding_sends_each_request_whole_with_its_metadata() -> None:
    import grpc  # noqa: PLC0415

    keeper = _TraceKeeper()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(keeper, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        settings = ExportSettings(endpoint=f"http://127.0.0.1:{port}", protocol="grpc", headers={"x-team": "agents"})
        forwarder = forwarder_for(settings, {}, None)
        forwarder.forward("traces", TRACES)
        forwarder.close()
    finally:
        server.stop(grace=None)
    assert [(request == TRACES, metadata["x-team"]) for request, metadata in keeper.received] == [(True, "agents")]
    assert forwarder.dropped["traces"] == 0


def test_a_dead_collector_is_counted_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    forwarder = forwarder_for(ExportSettings(endpoint=f"http://127.0.0.1:{port}", protocol="http/protobuf"), {}, None)
    with caplog.at_level(logging.WARNING, logger="otel_toolchain.receiver"):
        for _ in range(3):
            forwarder.forward("traces", TRACES)
        forwarder.close()
    assert forwarder.dropped["traces"] == 3
    warnings = [r.getMessage() for r in caplog.records if r.name == "otel_toolchain.receiver"]
    assert len(warnings) == 1 and warnings[0].startswith(f"otel_toolchain receiver: cannot forward to OTLP "
                                                         f"(http/protobuf) http://127.0.0.1:{port}/v1/traces: ")
