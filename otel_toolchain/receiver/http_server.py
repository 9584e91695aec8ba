"""OTLP/HTTP: ``POST /v1/traces``, ``/v1/logs``, ``/v1/metrics`` (protobuf or JSON, gzip, chunked).

Each request is read whole (Content-Length or chunked transfer encoding, at most
:data:`~.decode.MAX_BODY_BYTES`), decoded with the real protobufs, and offered to the
:class:`~.intake.Intake`. Answers: 200 with an empty export response in the request's own
encoding; 429 with ``Retry-After`` when the intake is full; 400/404/405/413/415 with the reason
as text for a request that cannot be read (nothing else is lost). One thread per connection,
from the standard library's threading server; :meth:`OtlpHttpServer.close` stops it.
"""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from otel_toolchain.errors import BadRequest
from otel_toolchain.receiver.decode import MAX_BODY_BYTES, SIGNALS, decode_body
from otel_toolchain.receiver.intake import RETRY_AFTER_S, Intake

__all__ = ["OtlpHttpServer"]

_PATHS: Final = {f"/v1/{signal}": signal for signal in SIGNALS}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: OTel exporters reuse their connection

    def log_message(self, format: str, *args: object) -> None:
        return  # an agent exporting every 200 ms would fill the terminal

    def do_POST(self) -> None:
        signal = _PATHS.get(self.path.split("?", 1)[0].rstrip("/"))
        try:
            body = self._body()
            if signal is None:
                raise BadRequest(f"no OTLP endpoint at {self.path!r}; use /v1/traces, /v1/logs or /v1/metrics",
                                 status=404)
            content_type = self.headers.get("Content-Type", "application/x-protobuf")
            message = decode_body(signal, body, content_type, self.headers.get("Content-Encoding", ""))
        except BadRequest as exc:
            self._answer(exc.status, str(exc).encode(), "text/plain; charset=utf-8")
            return
        if not self.server.intake.offer(signal, message):
            self._answer(HTTPStatus.TOO_MANY_REQUESTS, b"receiver queue full; retry later", "text/plain",
                         {"Retry-After": str(RETRY_AFTER_S)})
            return
        json_reply = "json" in content_type.lower()
        self._answer(HTTPStatus.OK, b"{}" if json_reply else b"",
                     "application/json" if json_reply else "application/x-protobuf")

    def do_GET(self) -> None:
        self._answer(HTTPStatus.METHOD_NOT_ALLOWED, b"OTLP/HTTP takes POST", "text/plain", {"Allow": "POST"})

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._chunked()
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError as exc:
            raise BadRequest("bad Content-Length") from exc
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            raise BadRequest(f"body of {length} bytes is over the limit of {MAX_BODY_BYTES}", status=413)
        return self.rfile.read(length)

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                self.close_connection = True
                raise BadRequest(f"bad chunk size line {line[:40]!r}") from exc
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                raise BadRequest(f"chunked body over the limit of {MAX_BODY_BYTES} bytes", status=413)
            parts.append(self.rfile.read(size))
            self.rfile.readline(16)  # the CRLF after each chunk

    def _answer(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    intake: Intake


class OtlpHttpServer:
    """An OTLP/HTTP receiver on ``host:port`` (port 0: a free one) serving on a thread of its own."""

    def __init__(self, intake: Intake, host: str = "127.0.0.1", port: int = 4318) -> None:
        self._server = _Server((host, port), _Handler)
        self._server.intake = intake
        self._thread = threading.Thread(target=self._server.serve_forever, name="otel_toolchain-otlp-http",
                                        kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def endpoint(self) -> str:
        """The base URL to give exporters (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        host, port = self.address
        return f"http://{host}:{port}"

    def close(self) -> None:
        """Stop accepting and end the serving thread (requests in progress finish on their threads)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
