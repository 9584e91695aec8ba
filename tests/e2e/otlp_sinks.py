"""OTLP endpoints a test runs in-process on 127.0.0.1: a tap in front of the Collector and stand-ins for the
back-ends that have no runnable binary here (Tempo, Loki).

* :class:`OtlpTap` receives the agent's OTLP/HTTP traces, keeps a copy and forwards the same bytes to the
  Collector: the test then knows every trace id the Collector was offered, including those the tail
  sampler drops, and that the planted secrets really left the agent.
* :class:`HttpSink` answers every OTLP/HTTP export with 200 (the Collector's ``otlp_http/loki``).
* :class:`GrpcSink` implements the OTLP/gRPC trace service (the Collector's ``otlp_grpc/tempo``).

Each keeps the raw request bytes (gzip already undone), so a test can search them for secrets, and offers
the spans decoded. Every listener binds 127.0.0.1 on a free port; :meth:`stop` closes it.
"""

from __future__ import annotations

import gzip
import threading
import urllib.error
import urllib.request
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

LOOPBACK = "127.0.0.1"
_Server = TypeVar("_Server", bound="_HttpServer")
STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


@dataclass(frozen=True)
class SpanView:
    """What the tests look at in a received span."""

    trace_id: str
    span_id: str
    name: str
    status_code: int
    attributes: dict[str, Any]
    events: tuple[str, ...]


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def spans_of(body: bytes) -> list[SpanView]:
    """The spans of one serialized ExportTraceServiceRequest."""
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    out = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(SpanView(span.trace_id.hex(), span.span_id.hex(), span.name, span.status.code,
                                    {a.key: _value(a.value) for a in span.attributes},
                                    tuple(e.name for e in span.events)))
    return out


class _Recorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bodies: list[tuple[str, bytes]] = []

    def record(self, path: str, body: bytes) -> None:
        with self._lock:
            self._bodies.append((path, body))

    def bodies(self, path_suffix: str = "") -> list[bytes]:
        with self._lock:
            return [body for path, body in self._bodies if path.endswith(path_suffix)]

    def spans(self) -> list[SpanView]:
        return [span for body in self.bodies("/v1/traces") for span in spans_of(body)]

    def traces(self) -> dict[str, list[SpanView]]:
        by_trace: dict[str, list[SpanView]] = {}
        for span in self.spans():
            by_trace.setdefault(span.trace_id, []).append(span)
        return by_trace


class _HttpServer(ThreadingHTTPServer, _Recorder):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        ThreadingHTTPServer.__init__(self, (LOOPBACK, 0), handler)
        _Recorder.__init__(self)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"

    def start(self: _Server) -> _Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=5)
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: _HttpServer

    def read_body(self) -> bytes:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body

    def answer(self, status: int, body: bytes, content_type: str = "application/x-protobuf") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class HttpSink(_HttpServer):
    """Accepts every OTLP/HTTP export (an empty protobuf answer means full success)."""

    def __init__(self) -> None:
        super().__init__(_SinkHandler)


class _SinkHandler(_Handler):
    def do_POST(self) -> None:
        self.server.record(self.path, self.read_body())
        self.answer(200, b"")


class OtlpTap(_HttpServer):
    """Records each OTLP/HTTP traces export and forwards it unchanged to ``upstream`` (a Collector's
    ``http://host:port``), answering with the Collector's own status and body."""

    def __init__(self, upstream: str) -> None:
        super().__init__(_TapHandler)
        self.upstream = upstream.rstrip("/")


class _TapHandler(_Handler):
    server: OtlpTap

    def do_POST(self) -> None:
        body = self.read_body()
        self.server.record(self.path, body)
        request = urllib.request.Request(self.server.upstream + self.path, data=body, method="POST",
                                         headers={"Content-Type": self.headers.get("Content-Type", "")})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                self.answer(response.status, response.read(), response.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as exc:
            with exc:
                self.answer(exc.code, exc.read(), exc.headers.get("Content-Type", ""))
        except OSError:
            self.answer(503, b"")  # the SDK retries a 503 like a Collector that is not up yet


class GrpcSink(_Recorder, trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC trace receiver on 127.0.0.1 that accepts everything."""

    def __init__(self) -> None:
        _Recorder.__init__(self)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self._server)  # type: ignore[no-untyped-call]
        self.port = self._server.add_insecure_port(f"{LOOPBACK}:0")

    @property
    def endpoint(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def Export(self, request: trace_service_pb2.ExportTraceServiceRequest,  # gRPC's method name
               context: grpc.ServicerContext) -> trace_service_pb2.ExportTraceServiceResponse:
        self.record("/v1/traces", request.SerializeToString())
        return trace_service_pb2.ExportTraceServiceResponse()

    def start(self) -> GrpcSink:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=1).wait(timeout=5)
