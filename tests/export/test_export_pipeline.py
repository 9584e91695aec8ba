"""Export: the embedded default as OTLP JSON lines, OTLP over HTTP and gRPC to a receiver, a dead Collector."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_toolchain.errors import ToolchainError
from otel_toolchain.export.otlp_json import parse_otlp_json
from otel_toolchain.export.pipeline import ExportSettings, Pipeline, build_pipeline, default_output_dir
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder


def wedged_turn(pipeline: Pipeline) -> None:
    chain = Manifest.from_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 3\n'
                               '[[agent.tool_plugins]]\nplugin = "tool_stats"\n').toolchain(strict=True)
    chain.install(pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider)
    with AgentRecorder(pipeline.tracer_provider, toolchain=chain).turn("agent") as turn:
        for _ in range(3):
            turn.tool_call("Bash", {"command": "make"}, result="error", failed=True)


def span_names(requests: list[ExportTraceServiceRequest]) -> list[str]:
    return [s.name for r in requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


class TestEmbeddedDefault:
    def test_writes_otlp_json_lines_that_real_protobufs_decode(self, tmp_path: Path) -> None:
        pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path), "OTEL_SERVICE_NAME": "svc"})
        wedged_turn(pipeline)
        pipeline.shutdown()
        traces = [parse_otlp_json(line, ExportTraceServiceRequest())
                  for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
        assert span_names(traces) == ["execute_tool Bash"] * 3 + ["invoke_agent agent"]
        turn = traces[-1].resource_spans[-1].scope_spans[-1].spans[-1]
        attributes = {a.key: a.value.string_value for a in turn.attributes}
        assert attributes["error.type"] == "tool_plugin.repeat_guard"
        assert {a.key: a.value.string_value for a in traces[0].resource_spans[0].resource.attributes}[
            "service.name"] == "svc"
        raw_line = (tmp_path / "traces.jsonl").read_text().splitlines()[0]
        assert f'"traceId":"{turn.trace_id.hex()}"' in raw_line  # hex ids, as OTLP/JSON wants
        metrics = [parse_otlp_json(line, ExportMetricsServiceRequest())
                   for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
        names = {m.name for r in metrics for rm in r.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        assert {"otel_toolchain.turn.stops", "otel_toolchain.tool.calls", "otel_toolchain.export.dropped"} <= names
        logs = [parse_otlp_json(line, ExportLogsServiceRequest())
                for line in (tmp_path / "logs.jsonl").read_text().splitlines()]
        events = [record.event_name for request in logs for rl in request.resource_logs for sl in rl.scope_logs
                  for record in sl.log_records]
        assert events == ["otel_toolchain.tool_stats"]
        assert pipeline.dropped == {"traces": 0, "metrics": 0, "logs": 0}

    def test_default_place(self) -> None:
        assert default_output_dir({"HOME": "/home/u"}) == Path("/home/u/.local/state/otel-toolchain")
        assert default_output_dir({"XDG_STATE_HOME": "/s"}) == Path("/s/otel-toolchain")
        assert default_output_dir({"OTEL_TOOLCHAIN_OUTPUT_DIR": "/o", "XDG_STATE_HOME": "/s"}) == Path("/o")


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(ExportTraceServiceResponse().SerializeToString())

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def http_receiver() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    received: list[tuple[str, bytes]] = []
    handler = type("Handler", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


class TestOtlp:
    def test_http_protobuf_from_the_standard_variables(
        self, http_receiver: tuple[str, list[tuple[str, bytes]]]
    ) -> None:
        url, received = http_receiver
        pipeline = build_pipeline(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": url,
                                           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
        assert pipeline.destination == "OTLP (http/protobuf)"
        wedged_turn(pipeline)
        pipeline.shutdown()
        paths = sorted({path for path, _ in received})
        assert paths == ["/v1/logs", "/v1/metrics", "/v1/traces"]
        traces = [ExportTraceServiceRequest.FromString(body) for path, body in received if path == "/v1/traces"]
        assert span_names(traces) == ["execute_tool Bash"] * 3 + ["invoke_agent agent"]

    def test_the_manifest_endpoint_wins_over_the_environment(
        self, http_receiver: tuple[str, list[tuple[str, bytes]]]
    ) -> None:
        url, received = http_receiver
        pipeline = build_pipeline(ExportSettings(endpoint=url, protocol="http/protobuf", headers={"x-team": "a"}),
                                  environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
        wedged_turn(pipeline)
        pipeline.shutdown()
        assert "/v1/traces" in {path for path, _ in received}

    def test_grpc(self) -> None:
        got: list[ExportTraceServiceRequest] = []

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
                got.append(request)
                return ExportTraceServiceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            pipeline = build_pipeline(ExportSettings(endpoint=f"http://127.0.0.1:{port}", protocol="grpc"),
                                      environ={})
            wedged_turn(pipeline)
            pipeline.tracer_provider.shutdown()
            pipeline.logger_provider.shutdown()  # no logs service here: failures are counted, not raised
            pipeline.meter_provider.shutdown()
        finally:
            server.stop(grace=None)
        assert span_names(got) == ["execute_tool Bash"] * 3 + ["invoke_agent agent"]

    def test_a_dead_collector_costs_the_agent_nothing_and_drops_are_counted(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
        pipeline = build_pipeline(ExportSettings(endpoint="http://127.0.0.1:9", protocol="http/protobuf"),
                                  environ={})
        wedged_turn(pipeline)  # raises nothing: export happens on the processors' threads
        pipeline.shutdown()
        assert pipeline.dropped["traces"] == 4 and pipeline.dropped["logs"] == 1


def test_a_busy_prometheus_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ToolchainError, match=rf"cannot serve Prometheus metrics on 127.0.0.1:{port} "
                                                 r"\(\[export\] prometheus_port\): Address already in use"):
            build_pipeline(ExportSettings(prometheus_port=port), environ={})


def test_shutdown_with_a_dead_collector_gives_up_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exporters would retry for their whole timeout; shutdown returns False at its own deadline."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3")  # longer than the deadline, short enough to end soon
    pipeline = build_pipeline(ExportSettings(endpoint="http://127.0.0.1:9", protocol="http/protobuf"), environ={})
    wedged_turn(pipeline)
    assert pipeline.shutdown(timeout_s=0.2) is False
