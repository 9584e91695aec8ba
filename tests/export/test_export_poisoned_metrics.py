"""A lone surrogate in a tool name does not cost the metrics export: its series is repaired, the rest arrive.

Real pipeline (the embedded default, whose metric exporter encodes with the real OTLP protobuf
encoder before writing JSON), the real default chain with the duration histogram on, a tool name
handed in through the Python API (the readers repair theirs already).
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from otel_toolchain import semconv
from otel_toolchain.export.otlp_json import parse_otlp_json
from otel_toolchain.export.pipeline import build_pipeline
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder

PACK = """
[[agent.tool_plugins]]
plugin = "classify"
[[agent.tool_plugins]]
plugin = "tool_stats"
duration_histogram = true
"""


def _series(path: Path, metric: str) -> dict[str, int]:
    """The last export's points of ``metric``: tool name -> count (sum or histogram count)."""
    last: dict[str, int] = {}
    for line in path.read_text().splitlines():
        request = parse_otlp_json(line, ExportMetricsServiceRequest())
        for rm in request.resource_metrics:
            for sm in rm.scope_metrics:
                for m in (m for m in sm.metrics if m.name == metric):
                    points = m.sum.data_points if m.HasField("sum") else m.histogram.data_points
                    for point in points:
                        attributes = {a.key: a.value.string_value for a in point.attributes}
                        count = point.as_int if m.HasField("sum") else point.count
                        last[attributes[semconv.GEN_AI_TOOL_NAME]] = count
    return last


def test_a_surrogate_in_a_tool_name_is_repaired_in_every_metric(tmp_path: Path) -> None:
    pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)})
    chain = Manifest.from_text(PACK).toolchain(strict=True)
    chain.install(pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider)
    with AgentRecorder(pipeline.tracer_provider, toolchain=chain).turn("poisoned") as turn:
        turn.tool_call("Ba\udc80sh", {"command": "x"}, result="r")
        turn.tool_call("Bash", {"command": "y"}, result="r")
        turn.tool_call("Ba\udc80sh", {"command": "z"}, result="r")
    pipeline.shutdown()
    expected = {"Ba\ufffdsh": 2, "Bash": 1}
    assert _series(tmp_path / "metrics.jsonl", semconv.METRIC_TOOL_CALLS) == expected
    assert _series(tmp_path / "metrics.jsonl", semconv.METRIC_TOOL_DURATION) == expected
    assert pipeline.dropped == {"traces": 0, "metrics": 0, "logs": 0}
