"""What a guarded run left behind: the hook's exports (decoded with the real protobufs) and its warm servers."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from otel_toolchain.export.otlp_json import parse_otlp_json
from otel_toolchain.receiver.records import any_value


def tool_stats_reports(logs: Path) -> list[Any]:
    """The bodies of the tool_stats end-of-turn events in an OTLP JSON lines logs file, in order."""
    bodies = []
    for line in logs.read_text().splitlines():
        request = parse_otlp_json(line, ExportLogsServiceRequest())
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                bodies += [any_value(r.body) for r in scope.log_records if r.event_name == "otel_toolchain.tool_stats"]
    return bodies


def end_servers(state: Path) -> list[int]:
    """End every warm hook server under ``state`` (SIGTERM, then waits); their pids, alive until then."""
    pids = []
    for pid_file in state.glob("otel-toolchain/hook-sessions/warm/*.pid"):
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_file.exists(), f"warm server {pid} did not end on SIGTERM"
        pids.append(pid)
    return pids
