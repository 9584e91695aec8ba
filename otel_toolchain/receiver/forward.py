"""Sending on what the receiver got, unchanged, to where the run's own telemetry goes.

With an OTLP endpoint (the manifest's ``[export]`` or the ``OTEL_EXPORTER_OTLP_*`` settings) each
request is re-sent as the same export request message over the same protocol the pipeline uses
(HTTP/protobuf or gRPC); with the embedded default it is appended as one OTLP/JSON line to the same
``traces.jsonl`` / ``logs.jsonl`` / ``metrics.jsonl`` the chain's telemetry goes to. Sending runs on
a thread of its own behind a bounded queue: a slow Collector never slows the guard; what cannot be
queued or sent is counted in ``dropped`` by signal.
"""

from __future__ import annotations

import logging
import queue
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from google.protobuf.message import Message

from otel_toolchain.export.otlp_json import to_otlp_json
from otel_toolchain.export.pipeline import ExportSettings, signal_endpoint

__all__ = ["Forwarder", "forwarder_for"]

_log = logging.getLogger("otel_toolchain.receiver")
_TIMEOUT_S: Final = 10.0


class Forwarder:
    """Sends requests with ``send(signal, message)`` on its own thread; ``close`` drains it. Thread-safe."""

    def __init__(self, send: Callable[[str, Message], None], destination: str, max_queue: int = 1024) -> None:
        self.destination = destination
        self.dropped: dict[str, int] = {"traces": 0, "logs": 0, "metrics": 0}
        self._send = send
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, Message] | None] = queue.Queue(max_queue)
        self._thread = threading.Thread(target=self._run, name="otel_toolchain-forward", daemon=True)
        self._thread.start()

    def forward(self, signal: str, message: Message) -> None:
        """Queue one request to send on; never blocks (a full queue drops it, counted)."""
        try:
            self._queue.put_nowait((signal, message))
        except queue.Full:
            self._drop(signal)

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is queued (waiting at most ``timeout_s``), then stop."""
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _drop(self, signal: str) -> None:
        with self._lock:
            self.dropped[signal] = self.dropped.get(signal, 0) + 1

    def _run(self) -> None:
        logged = False
        while (item := self._queue.get()) is not None:
            try:
                self._send(*item)
            except Exception as exc:  # noqa: BLE001 (a dead Collector: count, say so once, keep going)
                self._drop(item[0])
                if not logged:
                    _log.warning("otel_toolchain receiver: cannot forward to %s: %s", self.destination, exc)
                    logged = True


def _http_sender(urls: Mapping[str, str | None], headers: Mapping[str, str]) -> Callable[[str, Message], None]:
    def send(signal: str, message: Message) -> None:
        url = urls.get(signal)
        if url is None:
            return
        request = urllib.request.Request(url, message.SerializeToString(), method="POST",
                                         headers={"Content-Type": "application/x-protobuf", **headers})
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            response.read()
    return send


def _grpc_sender(endpoint: str, headers: Mapping[str, str]) -> Callable[[str, Message], None]:
    import grpc  # noqa: PLC0415 (only with a gRPC export)
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc as logs  # noqa: PLC0415
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as metrics  # noqa: PLC0415
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as traces  # noqa: PLC0415

    target = endpoint.split("://", 1)[-1].rstrip("/")
    channel = grpc.insecure_channel(target) if endpoint.startswith("http://") or "://" not in endpoint \
        else grpc.secure_channel(target, grpc.ssl_channel_credentials())
    stubs: dict[str, Any] = {"traces": traces.TraceServiceStub(channel),  # type: ignore[no-untyped-call]
                             "logs": logs.LogsServiceStub(channel),  # type: ignore[no-untyped-call]
                             "metrics": metrics.MetricsServiceStub(channel)}  # type: ignore[no-untyped-call]
    metadata = tuple(headers.items())

    def send(signal: str, message: Message) -> None:
        stubs[signal].Export(message, timeout=_TIMEOUT_S, metadata=metadata)
    return send


def _file_sender(folder: Path) -> Callable[[str, Message], None]:
    lock = threading.Lock()

    def send(signal: str, message: Message) -> None:
        line = to_otlp_json(message)
        with lock:
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / f"{signal}.jsonl").open("a", encoding="utf-8") as out:
                out.write(line + "\n")
    return send


def forwarder_for(settings: ExportSettings, environ: Mapping[str, str], output_dir: Path | None) -> Forwarder:
    """A forwarder to where a pipeline built from the same ``settings`` and ``environ`` exports."""
    if output_dir is not None:
        return Forwarder(_file_sender(output_dir), f"OTLP JSON lines in {output_dir}")
    protocol = settings.protocol or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    headers = dict(settings.headers) or _env_headers(environ)
    if protocol == "grpc":
        endpoint = signal_endpoint("traces", settings, environ, http=False) or ""
        return Forwarder(_grpc_sender(endpoint, headers), f"OTLP (grpc) {endpoint}")
    urls = {s: signal_endpoint(s, settings, environ, http=True) for s in ("traces", "logs", "metrics")}
    return Forwarder(_http_sender(urls, headers), f"OTLP ({protocol}) {urls['traces']}")


def _env_headers(environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in environ.get("OTEL_EXPORTER_OTLP_HEADERS", "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            out[key.strip()] = urllib.parse.unquote(value.strip())
    return out
