"""collector-config/run-stack, the compose stack without Docker, started as a user would start it.

Its ports are moved by OTEL_TOOLCHAIN_STACK_PORT_OFFSET to a range found free; a wedged replay goes in
over OTLP/HTTP and comes out stopped in Jaeger; Prometheus has loaded the shipped rules and Alertmanager
its config; SIGTERM stops every process the script started (their ports close).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from .backends_stack import CONFIG_DIR, require_backends, run_cli
from .e2e_alert_stack import LOOPBACK, Deadline, api, find_binary, http_get, wait_for
from .runs import WEDGE, outcomes

pytestmark = pytest.mark.integration

SCRIPT = CONFIG_DIR / "run-stack"
PORTS = (4317, 4318, 13133, 8888, 8889, 14317, 16685, 16686, 13134, 9090, 9093)


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def free_offset() -> int:
    for _ in range(50):
        offset = random.randrange(20000, 45000)
        if all(_free(port + offset) for port in PORTS):
            return offset
    raise AssertionError("no free port range for run-stack")


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((LOOPBACK, port)) == 0


def test_run_stack_runs_the_stack_and_stops_it(tmp_path: Path) -> None:
    require_backends()
    find_binary("prometheus", "prometheus")
    find_binary("prometheus-alertmanager", "prometheus-alertmanager")
    off = free_offset()
    log = open(tmp_path / "run-stack.out", "w+b")  # noqa: SIM115 (closed in finally)
    env = {**os.environ, "OTEL_TOOLCHAIN_STACK_PORT_OFFSET": str(off), "OTEL_TOOLCHAIN_STACK_DIR": str(tmp_path / "s")}
    proc = subprocess.Popen(["bash", str(SCRIPT)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)

    def output() -> str:
        return (tmp_path / "run-stack.out").read_text(errors="replace")

    try:
        deadline = Deadline(60)
        wait_for("run-stack ready", lambda: "run-stack: ready" in output() or proc.poll() is not None, deadline)
        assert proc.poll() is None, output()
        done = run_cli(["replay", "--format", "json", str(WEDGE)],
                       {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{LOOPBACK}:{4318 + off}"})
        [turn] = outcomes(done.stdout)
        jaeger = f"http://{LOOPBACK}:{16686 + off}"

        def stopped_turn() -> list[object] | None:
            query = urllib.parse.urlencode({"service": "otel-toolchain", "lookback": "1d",
                                            "tags": json.dumps({"gen_ai.conversation.id": turn["session_id"]})})
            status, body = http_get(f"{jaeger}/api/traces?{query}")
            data = json.loads(body)["data"] if status == 200 else []
            return [s for t in data for s in t["spans"]
                    if {"key": "error.type", "type": "string", "value": "tool_plugin.repeat_guard"} in s["tags"]]
        wait_for("the stopped turn in Jaeger", stopped_turn, deadline, explain=output)
        rules = api(f"http://{LOOPBACK}:{9090 + off}", "/api/v1/rules")["groups"]
        assert sum(len(g["rules"]) for g in rules) == 9, rules
        status, body = http_get(f"http://{LOOPBACK}:{9093 + off}/api/v2/status")
        assert status == 200 and f"{LOOPBACK}:{5001 + off}/alerts" in json.loads(body)["config"]["original"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()
    assert proc.returncode == 0, output()
    end = time.monotonic() + 10
    while any(listening(port + off) for port in PORTS) and time.monotonic() < end:
        time.sleep(0.2)
    assert [port for port in PORTS if listening(port + off)] == [], "run-stack left a listener behind"
    assert "run-stack: stopped" in output()
