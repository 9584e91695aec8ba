"""The capture receiver against the real OTel Python exporter and hand-made requests: every body is kept
exactly as received, decoded with the real protobufs, and answered like a Collector would."""

from __future__ import annotations

import gzip
import http.client
import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otlp_capture import OtlpCapture, otlp_capture
from otlp_decode import decode, signal_of

TRACE_HEX = "5b8efff798038103d269b633813fc60c"
SPAN_HEX = "eee19b7ec3c1b174"
JSON_BODY = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "j"}}]},
                                "scopeSpans": [{"scope": {"name": "s"}, "spans": [{
                                    "traceId": TRACE_HEX, "spanId": SPAN_HEX, "name": "ai.toolCall", "kind": 1,
                                    "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                                    "attributes": [{"key": "ai.toolCall.id", "value": {"stringValue": "c1"}}]}]}]}]}


def _post(server: OtlpCapture, path: str, body: bytes, headers: dict[str, str],
          chunked: bool = False) -> tuple[int, bytes, str]:
    conn = http.client.HTTPConnection("127.0.0.1", int(server.server_address[1]), timeout=5)
    try:
        if chunked:
            conn.putrequest("POST", path)
            for key, value in {**headers, "Transfer-Encoding": "chunked"}.items():
                conn.putheader(key, value)
            conn.endheaders()
            half = len(body) // 2
            for part in (body[:half], body[half:]):
                conn.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            conn.send(b"0\r\n\r\n")
        else:
            conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(), resp.getheader("Content-Type", "")
    finally:
        conn.close()


def test_real_python_exporter_gzip_protobuf(tmp_path: Path) -> None:
    with otlp_capture(tmp_path) as server:
        exporter = OTLPSpanExporter(endpoint=f"{server.endpoint}/v1/traces", compression=Compression.Gzip)
        provider = TracerProvider(resource=Resource.create({"service.name": "capture-test"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span("execute_tool read_file") as span:
            span.set_attribute("gen_ai.tool.call.id", "call-1")
        provider.shutdown()
        [record] = server.snapshot()
    assert (record.signal, record.content_type, record.content_encoding, record.ok) == (
        "traces", "application/x-protobuf", "gzip", True)
    raw = (tmp_path / record.file).read_bytes()
    assert record.file == "0001-traces.pb.gz" and len(raw) == record.bytes
    message = decode("traces", raw, record.content_type, record.content_encoding)
    assert isinstance(message, ExportTraceServiceRequest)
    span_pb = message.resource_spans[0].scope_spans[0].spans[0]
    assert span_pb.name == "execute_tool read_file"
    summary = json.loads((tmp_path / "0001-traces.summary.json").read_text())
    assert summary["resources"][0]["service.name"] == "capture-test"
    assert summary["items"][0]["attributes"] == {"gen_ai.tool.call.id": "call-1"}
    index = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [row["file"] for row in index] == ["0001-traces.pb.gz"]


def test_json_gzip_and_chunked_protobuf_and_garbage(tmp_path: Path) -> None:
    packed = gzip.compress(json.dumps(JSON_BODY).encode())
    with otlp_capture(tmp_path) as server:
        status, body, ctype = _post(server, "/v1/traces", packed,
                                    {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert (status, body, ctype) == (200, b"{}", "application/json")
        proto = decode("traces", packed, "application/json", "gzip").SerializeToString()
        status, body, ctype = _post(server, "/v1/traces", proto, {"Content-Type": "application/x-protobuf"},
                                    chunked=True)
        assert status == 200 and ctype == "application/x-protobuf"
        assert ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse()
        assert _post(server, "/v1/logs", b"\xff\x00garbage", {"Content-Type": "application/x-protobuf"})[0] == 400
        assert _post(server, "/v2/other", b"", {})[0] == 404
        records = server.snapshot()
    assert [(r.file, r.chunked, r.ok) for r in records] == [
        ("0001-traces.otlp.json.gz", False, True), ("0002-traces.pb", True, True), ("0003-logs.pb", False, False)]
    assert (tmp_path / "0002-traces.pb").read_bytes() == proto
    assert (tmp_path / "0003-logs.pb").read_bytes() == b"\xff\x00garbage"
    assert not (tmp_path / "0003-logs.summary.json").exists()
    span = json.loads((tmp_path / "0001-traces.summary.json").read_text())["items"][0]
    assert (span["trace_id"], span["span_id"], span["kind"]) == (TRACE_HEX, SPAN_HEX, "INTERNAL")


@pytest.mark.parametrize(("path", "signal"), [("/v1/traces", "traces"), ("/v1/logs/", "logs"),
                                              ("/x/v1/metrics?a=1", "metrics"), ("/v1/profiles", None)])
def test_signal_of(path: str, signal: str | None) -> None:
    assert signal_of(path) == signal
