"""Helpers for the end-to-end alert test: a webhook sink, free ports, bounded waits, and the real
Prometheus and Alertmanager servers (Debian's binaries) as child processes on 127.0.0.1.

Every process started here is stopped by :meth:`Server.stop` (SIGTERM, wait, SIGKILL, wait); every
listener binds 127.0.0.1. Config writers take the shipped files of ``collector-config/`` and change
only what a short, local test needs (addresses and waiting times), saying so where they do.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import yaml

LOOPBACK = "127.0.0.1"
PROMETHEUS_BIN = "prometheus"
ALERTMANAGER_BIN = "prometheus-alertmanager"  # Debian's name; upstream calls it "alertmanager"

T = TypeVar("T")


def find_binary(name: str, package: str) -> str:
    """The path of ``name`` on PATH (or in /usr/bin); raises with the apt-get line when absent."""
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").is_file() else None)
    if found is None:
        raise FileNotFoundError(f"{name} not found: apt-get install -y --no-install-recommends {package}")
    return found


# Ports are drawn below Linux's ephemeral range (32768-60999 by default): a port the kernel hands out
# for bind(0) can be handed out again at once as the source port of some outgoing connection (the
# Collector dialling Jaeger), which is how a sampler once lost its health-check port between our
# probe and its own bind. Outside that range only an explicit bind can take it, and every port given
# here is given once per test process.
_PORT_RANGE = range(20000, 32000)
_handed_out: set[int] = set()
_ports = random.Random()


def free_port() -> int:
    """A port free on 127.0.0.1 now, outside the ephemeral range, never handed out before here."""
    for _ in range(1000):
        port = _ports.choice(_PORT_RANGE)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise OSError(f"no free port on {LOOPBACK} in {_PORT_RANGE.start}-{_PORT_RANGE.stop - 1}")


class Deadline:
    """One time budget shared by every wait of a test."""

    def __init__(self, seconds: float) -> None:
        self.start = time.monotonic()
        self.end = self.start + seconds

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def wait_for(what: str, probe: Callable[[], T | None], deadline: Deadline, *, limit: float | None = None,
             interval: float = 0.25, explain: Callable[[], str] | None = None) -> T:
    """Call ``probe`` until it returns something other than None/False/empty; fail after the deadline.

    ``limit`` caps this wait below what is left of ``deadline``; ``explain`` adds diagnostics (log tails)
    to the failure message.
    """
    budget = deadline.left() if limit is None else min(limit, deadline.left())
    end = time.monotonic() + budget
    last_error: Exception | None = None
    while True:
        try:
            value = probe()
        except (OSError, ValueError) as exc:  # not up yet, connection refused, half-written JSON
            value, last_error = None, exc
        if value:
            return value
        if time.monotonic() >= end:
            detail = f" (last error: {last_error})" if last_error else ""
            extra = f"\n{explain()}" if explain else ""
            raise AssertionError(f"timed out after {budget:.1f}s waiting for {what}{detail}{extra}")
        time.sleep(interval)


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """GET ``url``; returns (status, body) for any HTTP status, raises OSError when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def api(base: str, path: str, **params: str) -> Any:
    """The ``data`` of a Prometheus HTTP API answer (``status`` must be ``success``)."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    status, body = http_get(f"{base}{path}{query}")
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise ValueError(f"{path}: HTTP {status}: {body[:500]!r}")
    return answer["data"]


# --------------------------------------------------------------------------- webhook sink


@dataclass(frozen=True)
class Delivery:
    """One POST the sink received: its path, JSON payload and arrival time (monotonic)."""

    path: str
    payload: dict[str, Any]
    at: float


class WebhookSink(ThreadingHTTPServer):
    """Records every JSON POST (Alertmanager's webhook payloads); answers 200. 127.0.0.1, port 0."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__((LOOPBACK, 0), _SinkHandler)
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="webhook-sink", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def record(self, delivery: Delivery) -> None:
        with self._lock:
            self._deliveries.append(delivery)

    def start(self) -> WebhookSink:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=5)
        self.server_close()


class _SinkHandler(BaseHTTPRequestHandler):
    server: WebhookSink

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = {"unparsable": body.decode("utf-8", "replace")}
        self.server.record(Delivery(self.path, payload, time.monotonic()))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


# --------------------------------------------------------------------------- child servers


@dataclass
class Server:
    """A child server process with its log file; :meth:`stop` always leaves nothing behind."""

    name: str
    argv: list[str]
    log_path: Path
    base_url: str
    proc: subprocess.Popen[bytes] | None = None
    env: dict[str, str] | None = None  # added to this process's environment
    _log: Any = field(default=None, repr=False)

    def start(self) -> Server:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop())
        env = {**os.environ, **self.env} if self.env else None
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True, env=env)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        """``/-/ready`` answers 200; raises if the process already exited (with its log tail)."""
        if not self.alive():
            raise AssertionError(f"{self.name} exited early (rc {self.proc and self.proc.returncode})\n"
                                 f"{self.log_tail()}")
        status, _ = http_get(f"{self.base_url}/-/ready", timeout=1.0)
        return status == 200

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return f"--- {self.name}: no log"
        return f"--- {self.name} log (last {lines} lines):\n" + "\n".join(text[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, wait ``grace`` s, then SIGKILL and wait; closes the log. Safe to call twice."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None


def alertmanager(workdir: Path, config: Path) -> Server:
    """Alertmanager on a free 127.0.0.1 port, storage in ``workdir``, cluster gossip off."""
    port = free_port()
    storage = workdir / "alertmanager-data"
    storage.mkdir(parents=True, exist_ok=True)
    argv = [find_binary(ALERTMANAGER_BIN, "prometheus-alertmanager"),
            f"--config.file={config}",
            f"--storage.path={storage}",
            f"--web.listen-address={LOOPBACK}:{port}",
            "--cluster.listen-address=",  # no gossip listener (it would bind 0.0.0.0:9094)
            "--log.level=debug"]
    return Server("alertmanager", argv, workdir / "alertmanager.log", f"http://{LOOPBACK}:{port}")


def prometheus(workdir: Path, config: Path, *, name: str = "prometheus", extra: tuple[str, ...] = ()) -> Server:
    """Prometheus on a free 127.0.0.1 port, TSDB in ``workdir``.

    ``--rules.alert.resend-delay=1s``: a firing alert is re-sent every second instead of every minute,
    so an alert that fires before the notifier has discovered Alertmanager still arrives promptly.
    ``extra`` adds flags (e.g. ``--web.enable-remote-write-receiver``); ``name`` names the log and TSDB.
    """
    port = free_port()
    storage = workdir / f"{name}-data"
    storage.mkdir(parents=True, exist_ok=True)
    argv = [find_binary(PROMETHEUS_BIN, "prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={storage}",
            f"--web.listen-address={LOOPBACK}:{port}",
            "--rules.alert.resend-delay=1s",
            "--log.level=debug", *extra]
    return Server(name, argv, workdir / f"{name}.log", f"http://{LOOPBACK}:{port}")


def write_prometheus_config(path: Path, *, rule_file: Path, scrape_target: str, alertmanager_target: str,
                            job: str) -> Path:
    """A minimal prometheus.yml: scrape and evaluate every second, one rule file, one Alertmanager."""
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rule_file)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager_target]}]}]},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [scrape_target]}]}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def write_alertmanager_config(path: Path, *, shipped: Path, webhook_base: str) -> Path:
    """The shipped alertmanager.yml, changed only where a short local test needs it.

    * every webhook receiver's URL keeps its path but points at ``webhook_base`` (the sink on
      127.0.0.1) instead of ``host.docker.internal:5001``;
    * ``group_wait`` and ``group_interval`` on the root route and every child route become 1s (the
      shipped 30s / 10s / 5m waits would exceed the test's time budget).

    Routes, matchers, receivers and inhibit rules stay as shipped, so the test also checks that a
    warning alert is routed to the right receiver.
    """
    config = yaml.safe_load(shipped.read_text())
    for receiver in config.get("receivers", []):
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = webhook_base + urllib.parse.urlsplit(hook["url"]).path
    for route in _routes(config["route"]):
        for key in ("group_wait", "group_interval"):
            if key in route:
                route[key] = "1s"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _routes(route: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield route
    for child in route.get("routes", []):
        yield from _routes(child)
