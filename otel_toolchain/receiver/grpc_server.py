"""OTLP/gRPC: the trace, logs and metrics services, with grpcio (pulled in by the OTLP gRPC exporter).

A full intake answers ``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` in the trailers (the
OTLP spec's retry hint, which the OTel exporters honour). Concurrent calls are bounded too
(``maximum_concurrent_rpcs``: grpcio refuses the excess with RESOURCE_EXHAUSTED itself).
"""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from otel_toolchain.errors import ToolchainError
from otel_toolchain.receiver.intake import RETRY_AFTER_S, Intake

__all__ = ["OtlpGrpcServer"]


def _refuse(context: grpc.ServicerContext) -> None:
    info = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=RETRY_AFTER_S))
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message="receiver queue full; retry later")
    status.details.add().Pack(info)
    # What grpc-status's to_status does: the rich status rides in this trailer.
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, status.message)


class _Service:
    def __init__(self, intake: Intake, signal: str, reply: type[Message]) -> None:
        self._intake, self._signal, self._reply = intake, signal, reply

    def Export(self, request: Message, context: grpc.ServicerContext) -> Message:
        if not self._intake.offer(self._signal, request):
            _refuse(context)
        return self._reply()


class OtlpGrpcServer:
    """An OTLP/gRPC receiver on ``host:port`` (port 0: a free one)."""

    def __init__(self, intake: Intake, host: str = "127.0.0.1", port: int = 4317, max_workers: int = 4) -> None:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers, thread_name_prefix="otel_toolchain-grpc"),
                                   maximum_concurrent_rpcs=64, options=[("grpc.max_receive_message_length",
                                                                         32 * 1024 * 1024)])
        services: list[tuple[Any, Any]] = [
            (trace_service_pb2_grpc.add_TraceServiceServicer_to_server,
             _Service(intake, "traces", trace_service_pb2.ExportTraceServiceResponse)),
            (logs_service_pb2_grpc.add_LogsServiceServicer_to_server,
             _Service(intake, "logs", logs_service_pb2.ExportLogsServiceResponse)),
            (metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server,
             _Service(intake, "metrics", metrics_service_pb2.ExportMetricsServiceResponse)),
        ]
        for add, servicer in services:
            add(servicer, self._server)
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise ToolchainError(f"cannot listen for OTLP/gRPC on {host}:{port}")
        self.host = host
        self._server.start()

    def close(self) -> None:
        """Stop at once; calls in progress are cancelled."""
        self._server.stop(grace=1.0).wait()
