"""``serve``: real OTLP over HTTP and gRPC into the receiver, its limits, and the command itself.

Real parts: the OTel Python SDK's own OTLP exporters (HTTP/protobuf and gRPC) as senders, the real
agents' recorded bodies posted over HTTP (one of them chunked, one gzipped), the real command run as a
subprocess. Servers listen on 127.0.0.1 only and are stopped by each test.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from recorded import bodies

from otel_toolchain import semconv
from otel_toolchain.cli.serve import Guard, start_guard
from otel_toolchain.export.otlp_json import read_otlp_json_lines
from otel_toolchain.manifest import Manifest
from otel_toolchain.receiver.core import STOP_SPAN_NAME, Receiver
from otel_toolchain.receiver.http_server import OtlpHttpServer
from otel_toolchain.receiver.intake import Intake

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_alert_stack import free_port


@pytest.fixture
def guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Guard]:
    monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path / "out"))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    running = start_guard(Manifest.default(), ("127.0.0.1", 0), ("127.0.0.1", 0), quiet=True)
    yield running
    running.close()
    running.pipeline.shutdown()


def _sdk_agent(exporter: object, calls: int) -> None:
    """A turn of ``calls`` identical tool calls, exported by the real OTel SDK exporter given."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[arg-type]
    tracer = provider.get_tracer("some-go-or-java-agent")
    with tracer.start_as_current_span("invoke_agent fixer", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for n in range(calls):
            with tracer.start_as_current_span("execute_tool run_tests", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_tests",
                    "gen_ai.tool.call.id": f"call_{n}", "gen_ai.tool.call.arguments": '{"suite": "unit"}',
                    "gen_ai.tool.call.result": "1 failed: test_lock"}):
                pass
    provider.shutdown()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_real_otlp_exporter_is_guarded(guard: Guard, protocol: str) -> None:
    if protocol == "http":
        exporter: object = HttpSpanExporter(endpoint=guard.http.endpoint + "/v1/traces")
    else:
        exporter = GrpcSpanExporter(endpoint=f"http://127.0.0.1:{guard.grpc.port}", insecure=True)  # type: ignore[union-attr]
    _sdk_agent(exporter, 30)
    guard.intake.wait_idle()
    assert [(s.at_call, s.cycle[0].tool) for s in guard.receiver.stops] == [
        (25, "run_tests")]
    assert guard.receiver.stats.calls == 25
    assert guard.receiver.stats.late_calls == 5


def _post(endpoint: str, path: str, body: bytes, headers: dict[str, str], *, chunked: bool = False
          ) -> tuple[int, dict[str, str], bytes]:
    host, port = endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        if chunked:
            conn.putrequest("POST", path)
            for key, value in headers.items():
                conn.putheader(key, value)
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            for start in range(0, len(body), 1000):
                piece = body[start:start + 1000]
                conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            conn.send(b"0\r\n\r\n")
        else:
            conn.request("POST", path, body, headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_recorded_agent_bodies_over_http_chunked_and_gzipped(guard: Guard, tmp_path: Path) -> None:
    """The Vercel agent's wedge, posted as it sent it (chunked); Claude Code's OTLP/JSON gzipped."""
    for n, body in enumerate(bodies("vercel-ai/wedge")):
        status, _h, reply = _post(guard.http.endpoint, f"/v1/{body.signal}", body.data,
                                  {"Content-Type": body.content_type}, chunked=n % 2 == 0)
        assert (status, reply) == (200, b"")
    for body in bodies("claude-code/healthy-json-gzip"):
        status, headers, reply = _post(guard.http.endpoint, f"/v1/{body.signal}", body.data,
                                       {"Content-Type": body.content_type, "Content-Encoding": "gzip"})
        assert (status, headers["Content-Type"], reply) == (200, "application/json", b"{}")
    guard.intake.wait_idle()
    assert [s.at_call for s in guard.receiver.stops] == [25]
    guard.close()
    guard.pipeline.shutdown()
    out = tmp_path / "out"
    names = [span["name"] for line in read_otlp_json_lines(out / "traces.jsonl")
             for rs in line["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    assert names.count("ai.toolCall") == 40  # forwarded unchanged: every call, also those after the stop
    assert names.count("claude_code.tool") == 5
    assert names.count(STOP_SPAN_NAME) == 1  # the chain's own telemetry goes the same way
    logs = [rec for line in read_otlp_json_lines(out / "logs.jsonl") for rl in line.get("resourceLogs", [])
            for sl in rl["scopeLogs"] for rec in sl["logRecords"]]
    assert any(a["key"] == "event.name" and a["value"].get("stringValue") == "tool_result"
               for rec in logs for a in rec["attributes"])


def test_bad_requests_are_refused_with_a_reason_and_lose_nothing_else(guard: Guard) -> None:
    endpoint = guard.http.endpoint
    status, _h, reply = _post(endpoint, "/v1/traces", b"\xff\x00not protobuf",
                              {"Content-Type": "application/x-protobuf"})
    assert status == 400 and b"not an OTLP traces request" in reply
    status, _h, reply = _post(endpoint, "/v1/spans", b"", {})
    assert status == 404 and b"/v1/traces" in reply
    status, _h, reply = _post(endpoint, "/v1/traces", b"{}", {"Content-Type": "text/xml"})
    assert status == 415
    bomb = gzip.compress(b"\0" * (129 * 1024 * 1024))
    status, _h, reply = _post(endpoint, "/v1/traces", bomb, {"Content-Encoding": "gzip"})
    assert status == 413 and b"inflates to more than" in reply
    status, _h, reply = _post(endpoint, "/v1/traces", b"{", {"Content-Type": "application/json"})
    assert status == 400
    for body in bodies("vercel-ai/wedge"):
        assert _post(endpoint, f"/v1/{body.signal}", body.data, {"Content-Type": body.content_type})[0] == 200
    guard.intake.wait_idle()
    assert [s.at_call for s in guard.receiver.stops] == [25]


class _BlockedReceiver(Receiver):
    def __init__(self, release: threading.Event) -> None:
        super().__init__(Manifest.default().toolchain())
        self.release = release
        self.entered = threading.Event()

    def ingest(self, signal: str, message: object) -> None:  # type: ignore[override]
        self.entered.set()
        self.release.wait(30)


def test_a_full_queue_answers_429_with_retry_after() -> None:
    release = threading.Event()
    receiver = _BlockedReceiver(release)
    intake = Intake(receiver, None, max_queue=1)
    server = OtlpHttpServer(intake, "127.0.0.1", 0)
    body = next(bodies("vercel-ai/healthy"))

    def post() -> tuple[int, dict[str, str], bytes]:
        return _post(server.endpoint, "/v1/traces", body.data, {"Content-Type": body.content_type})

    try:
        answers = [post()]
        assert receiver.entered.wait(10)  # the worker holds the first: the queue is empty again
        answers += [post(), post()]
    finally:
        release.set()
        server.close()
        intake.stop()
    assert [a[0] for a in answers] == [200, 200, 429]  # one being handled, one queued, one refused
    assert answers[2][1]["Retry-After"] == "1"
    assert intake.refused == 1


def test_the_serve_command(tmp_path: Path) -> None:
    """The real command: a stop prints one line, runs --on-stop with the StopSignal JSON; SIGTERM ends it cleanly."""
    port = free_port()
    stop_file = tmp_path / "stop.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env["OTEL_TOOLCHAIN_OUTPUT_DIR"] = str(tmp_path / "out")
    process = subprocess.Popen(
        [sys.executable, "-m", "otel_toolchain", "serve", "--listen", f"127.0.0.1:{port}",
         "--on-stop", f"cat > {stop_file}"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith(f"otel-toolchain: receiving OTLP/HTTP on http://127.0.0.1:{port}; forwarding to")
        for body in bodies("codex/wedge"):
            assert _post(f"http://127.0.0.1:{port}", f"/v1/{body.signal}", body.data,
                         {"Content-Type": body.content_type})[0] == 200
        line = process.stderr.readline()
        assert line.startswith("otel-toolchain: stopped by repeat_guard at call 25: ")
        assert "exec_command [call_" in line
    finally:
        process.send_signal(signal.SIGTERM)
        _out, rest = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "telemetry exported to" in rest
    stop = json.loads(stop_file.read_text())
    assert (stop["plugin"], stop["code"], stop["at_call"]) == ("repeat_guard", "repeated_cycle", 25)
    traces = (tmp_path / "out" / "traces.jsonl").read_text()
    assert semconv.STOP_EVENT in traces


def test_a_full_queue_answers_resource_exhausted_with_retry_info_over_grpc() -> None:
    import grpc  # noqa: PLC0415
    from google.rpc import error_details_pb2, status_pb2  # noqa: PLC0415
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc  # noqa: PLC0415

    from otel_toolchain.receiver.grpc_server import OtlpGrpcServer  # noqa: PLC0415

    release = threading.Event()
    receiver = _BlockedReceiver(release)
    intake = Intake(receiver, None, max_queue=1)
    server = OtlpGrpcServer(intake, "127.0.0.1", 0)
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(next(bodies("vercel-ai/healthy")).data)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    try:
        stub.Export(request, timeout=10)
        assert receiver.entered.wait(10)  # the worker holds the first: the queue is empty again
        stub.Export(request, timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(request, timeout=10)
    finally:
        release.set()
        channel.close()
        server.close()
        intake.stop()
    error = refused.value
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]  # type: ignore[attr-defined]
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info) and info.retry_delay.seconds == 1
