"""A minimal OTLP/HTTP receiver on 127.0.0.1 that keeps every request it gets, raw, in a folder.

For recording fixtures from real agents. It accepts ``POST /v1/traces``, ``/v1/logs`` and
``/v1/metrics`` with protobuf or JSON bodies, sent with a Content-Length or chunked, optionally
gzip/deflate encoded. Each request is verified by decoding it with the real protobufs
(:mod:`otlp_decode`); a body that does not decode is answered 400 and kept all the same.

Files written to the output folder, numbered in arrival order (``NNNN`` from 0001):

* ``NNNN-<signal>.pb`` (protobuf) or ``NNNN-<signal>.otlp.json`` (JSON), plus ``.gz`` when the body
  came gzip-encoded: the body exactly as received on the wire;
* ``NNNN-<signal>.summary.json``: the decoded request (:func:`otlp_decode.summarize`);
* ``requests.jsonl``: one line per request: ``seq``, ``signal``, ``file``, ``content_type``,
  ``content_encoding``, ``chunked``, ``bytes``, ``arrived`` (unix seconds, when the body was read),
  ``ok`` and ``error``.

Run it by hand with ``python tests/agents/otlp_capture.py --out DIR [--port 4318]``; it prints the
endpoint and serves until SIGINT or SIGTERM. Tests use :func:`otlp_capture`.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from otlp_decode import RESPONSES, decode, dump_summary, signal_of, summarize

MAX_BODY = 64 * 1024 * 1024  # a bound, so a broken client cannot fill the disk


@dataclass(frozen=True)
class Captured:
    """One request as the index records it."""

    seq: int
    signal: str
    file: str
    content_type: str
    content_encoding: str
    chunked: bool
    bytes: int
    arrived: float
    ok: bool
    error: str


def body_filename(seq: int, signal: str, content_type: str, content_encoding: str) -> str:
    """The raw body's file name (see the module docstring)."""
    ext = "otlp.json" if "json" in content_type.lower() else "pb"
    gz = ".gz" if content_encoding.strip().lower() == "gzip" else ""
    return f"{seq:04d}-{signal}.{ext}{gz}"


class OtlpCapture(ThreadingHTTPServer):
    """The capturing receiver; :attr:`captured` lists the requests in arrival order."""

    daemon_threads = True

    def __init__(self, out_dir: Path, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.captured: list[Captured] = []
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``, the value for ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def snapshot(self) -> list[Captured]:
        """A copy of the index so far."""
        with self._lock:
            return list(self.captured)

    def keep(self, signal: str, body: bytes, content_type: str, content_encoding: str, chunked: bool) -> Captured:
        """Write one request's files, append it to the index and return its record."""
        arrived = time.time()
        summary: dict[str, Any] | None = None
        error = ""
        try:
            summary = summarize(signal, decode(signal, body, content_type, content_encoding))
        except ValueError as exc:
            error = str(exc)
        with self._lock:
            seq = len(self.captured) + 1
            name = body_filename(seq, signal, content_type, content_encoding)
            (self.out_dir / name).write_bytes(body)
            if summary is not None:
                (self.out_dir / f"{seq:04d}-{signal}.summary.json").write_text(dump_summary(summary))
            record = Captured(seq, signal, name, content_type, content_encoding, chunked, len(body), arrived,
                              summary is not None, error)
            self.captured.append(record)
            with open(self.out_dir / "requests.jsonl", "a") as index:
                index.write(json.dumps(asdict(record)) + "\n")
        return record


class _Handler(BaseHTTPRequestHandler):
    """Reads one OTLP/HTTP request, hands it to the server, answers like a Collector."""

    server: OtlpCapture
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr log."""

    def handle(self) -> None:
        """Serve the connection; an exporter that goes away mid-request (killed) is not an error."""
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError, TimeoutError):
            self.close_connection = True

    def _read_body(self) -> tuple[bytes, bool]:
        """The request body (Content-Length or chunked) and whether it came chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            total = 0
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                total += size
                if total > MAX_BODY:
                    raise ValueError("body too large")
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts), True
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length), False

    def do_POST(self) -> None:
        signal = signal_of(self.path)
        if signal is None:
            self._answer(404, "text/plain", b"unknown OTLP path")
            return
        try:
            body, chunked = self._read_body()
        except ValueError:
            self._answer(413, "text/plain", b"too large")
            return
        ctype = self.headers.get("Content-Type", "application/x-protobuf")
        record = self.server.keep(signal, body, ctype, self.headers.get("Content-Encoding", ""), chunked)
        if not record.ok:
            self._answer(400, "text/plain", record.error.encode())
        elif "json" in ctype.lower():
            self._answer(200, "application/json", b"{}")
        else:
            self._answer(200, "application/x-protobuf", RESPONSES[signal]().SerializeToString())

    def _answer(self, status: int, ctype: str, payload: bytes) -> None:
        """Write a whole answer; the connection stays open (exporters keep it alive)."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the exporter went away


@contextmanager
def otlp_capture(out_dir: Path, port: int = 0) -> Iterator[OtlpCapture]:
    """Run an :class:`OtlpCapture` in a thread; always shut it down and close its socket."""
    server = OtlpCapture(out_dir, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM, printing one line per request received."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the captured requests")
    parser.add_argument("--port", type=int, default=4318, help="TCP port on 127.0.0.1 (0: any free port)")
    args = parser.parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with otlp_capture(args.out, args.port) as server:
        print(f"OTEL_EXPORTER_OTLP_ENDPOINT={server.endpoint}", flush=True)
        seen = 0
        try:
            while not done.wait(0.2):
                for record in server.snapshot()[seen:]:
                    line = f"{record.seq:04d} {record.signal} {record.bytes} B ok={record.ok} {record.error}"
                    print(line, flush=True)
                    seen += 1
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
