"""What the hook exported to the embedded default's files, decoded with the real protobufs."""

from __future__ import annotations

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
