"""One poisoned item is repaired or refused alone: it no longer drops another turn's stopped spans.

Real pipeline (the embedded default), real OTLP protobuf encoders (``encode_spans``,
``encode_logs``), real protobufs decoding the result. Before, one lone surrogate or one negative
time made the encoder refuse the whole batch ("101 traces dropped").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_toolchain.export._sanitize import clean_span
from otel_toolchain.export.otlp_json import parse_otlp_json
from otel_toolchain.export.pipeline import Pipeline, build_pipeline
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder


def _stopped_turn(pipeline: Pipeline) -> None:
    chain = Manifest.from_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 3\n').toolchain(strict=True)
    chain.install(pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider)
    with AgentRecorder(pipeline.tracer_provider, toolchain=chain).turn("other") as turn:
        for _ in range(3):
            turn.tool_call("Bash", {"command": "make"}, result="error", failed=True)


def _poisoned_turn(pipeline: Pipeline) -> None:
    recorder = AgentRecorder(pipeline.tracer_provider)
    with recorder.turn("poisoned", conversation_id="s\ud800id") as turn:
        turn.tool_call("Ba\udc80sh", {"command": "x"}, result="r", start_ns=-1, end_ns=5_000_000_000)
        turn.tool_call("read", {"path": "\udc80"}, result="ok", start_ns=-5, end_ns=-1)


def _spans(path: Path) -> dict[str, list[str]]:
    requests: list[Any] = [parse_otlp_json(line, ExportTraceServiceRequest()) for line in path.read_text().splitlines()]
    out: dict[str, list[str]] = {}
    for request in requests:
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attributes = {a.key: a.value.string_value for a in span.attributes}
                    out.setdefault(span.name, []).append(attributes.get("error.type", ""))
    return out


def test_one_poisoned_turn_no_longer_drops_another_turn_s_stopped_turn(tmp_path: Path) -> None:
    pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)})
    _poisoned_turn(pipeline)
    _stopped_turn(pipeline)  # same batch: the batch processor exports both turns together
    pipeline.shutdown()
    spans = _spans(tmp_path / "traces.jsonl")
    assert spans["invoke_agent other"] == ["tool_plugin.repeat_guard"]
    assert len(spans["execute_tool Bash"]) == 3
    assert "execute_tool Ba\ufffdsh" in spans and "invoke_agent poisoned" in spans
    assert "execute_tool read" not in spans  # both its times invalid: refused alone, and counted
    assert pipeline.dropped == {"traces": 1, "metrics": 0, "logs": 0}


def test_a_repaired_span_encodes_with_the_real_encoder(tmp_path: Path) -> None:
    pipeline = build_pipeline(environ={"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)})
    collected: list[ReadableSpan] = []

    class Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            collected.append(span)

    pipeline.tracer_provider.add_span_processor(Keep())
    _poisoned_turn(pipeline)
    pipeline.shutdown()
    for span in collected:
        cleaned, _changed = clean_span(span)
        if cleaned is not None:
            encode_spans([cleaned]).SerializeToString()
    poisoned = [s for s in collected if s.name == "execute_tool Ba\udc80sh"]
    assert poisoned and clean_span(poisoned[0])[1] is True
