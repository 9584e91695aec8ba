"""tool_stats: the seed's report, its event, and the metrics, compared whole."""

from __future__ import annotations

from typing import ClassVar

import pytest

from otel_toolchain import semconv
from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins import tool_stats
from otel_toolchain.plugins.tool_stats import ToolStats
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture, FakeTurn, make_tool_call
from otel_toolchain.turn import Turn

MS = 1_000_000


class TagByTool(ToolPlugin):
    """Stands in for classify: a class per tool name."""

    name: ClassVar[str] = "tagger"
    classes: ClassVar[dict[str, str]] = {"Bash": "exec", "Read": "read", "Write": "write"}

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        turn.tag("class", self.classes[call.tool])


def test_report_has_the_seed_shape() -> None:
    calls = [
        make_tool_call("Bash", {"c": 1}, start_ns=0, end_ns=1500 * MS, failed=True),
        make_tool_call("Bash", {"c": 2}, start_ns=0, end_ns=500 * MS, failed=True),
        make_tool_call("Read", {"p": 1}, start_ns=0, end_ns=7 * MS),
        make_tool_call("Bash", {"c": 3}, start_ns=0, end_ns=20 * MS, failed=True),
        make_tool_call("Write", {"p": 1}, start_ns=0, end_ns=0),
    ]
    plugins = [TagByTool(), ToolStats()]
    turn = FakeTurn()
    turn.retries = 4
    turn.run(plugins, calls).end(plugins)
    assert turn.reports[0].value == {
        "calls": 5,
        "retries": 4,
        "longest_fail_streak": 2,
        "tools": {"Bash": {"calls": 3, "failed": 3, "ms": 2020}, "Read": {"calls": 1, "failed": 0, "ms": 7},
                  "Write": {"calls": 1, "failed": 0, "ms": 0}},
        "classes": {"exec": 3, "read": 1, "write": 1},
    }


def test_untagged_calls_count_as_other() -> None:
    stats = ToolStats()
    turn = FakeTurn().run([stats], [make_tool_call("Mystery")]).end([stats])
    assert turn.reports[0].value["classes"] == {"other": 1}


def test_event_and_metrics_through_a_provider(capture: Capture) -> None:
    chain = capture.install(Toolchain([TagByTool(), ToolStats(duration_histogram=True)], strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    with recorder.turn("agent") as turn:
        turn.tool_call("Bash", {"c": "make"}, result="ok", start_ns=10 * MS, end_ns=260 * MS)
        turn.tool_call("Bash", {"c": "make"}, failed=True, start_ns=300 * MS, end_ns=400 * MS)
        turn.tool_call("Read", {"p": "x"}, result="text", start_ns=500 * MS, end_ns=510 * MS)
        turn.retry()
    report = {"calls": 3, "retries": 1, "longest_fail_streak": 1,
              "tools": {"Bash": {"calls": 2, "failed": 1, "ms": 350}, "Read": {"calls": 1, "failed": 0, "ms": 10}},
              "classes": {"exec": 2, "read": 1}}
    assert [r.value for r in turn.reports] == [report]
    assert capture.events() == [{"event_name": "otel_toolchain.tool_stats", "body": report, "trace_id": 1,
                                 "span_id": 1, "attributes": {"otel_toolchain.plugin": "tool_stats"}}]
    metrics = capture.metrics()
    assert metrics[semconv.METRIC_TOOL_CALLS] == [
        {"attributes": {"gen_ai.tool.name": "Bash", "otel_toolchain.tool.class": "exec",
                        "otel_toolchain.tool.failed": "false"}, "value": 1},
        {"attributes": {"gen_ai.tool.name": "Bash", "otel_toolchain.tool.class": "exec",
                        "otel_toolchain.tool.failed": "true"}, "value": 1},
        {"attributes": {"gen_ai.tool.name": "Read", "otel_toolchain.tool.class": "read",
                        "otel_toolchain.tool.failed": "false"}, "value": 1},
    ]
    assert metrics[semconv.METRIC_TOOL_DURATION] == [
        {"attributes": {"gen_ai.tool.name": "Bash", "otel_toolchain.tool.class": "exec"},
         "count": 2, "sum": 0.35, "min": 0.1, "max": 0.25},
        {"attributes": {"gen_ai.tool.name": "Read", "otel_toolchain.tool.class": "read"},
         "count": 1, "sum": 0.01, "min": 0.01, "max": 0.01},
    ]
    assert metrics[semconv.METRIC_RETRIES] == [{"attributes": {}, "value": 1}]
    assert metrics[semconv.METRIC_TURN_FAIL_STREAK] == [{"attributes": {}, "count": 1, "sum": 1, "min": 1, "max": 1}]


def test_duration_points_carry_exemplars_of_their_tool_span(capture: Capture) -> None:
    """A call with a live span links to it; a call recorded whole (run before its span exists) to its turn."""
    chain = capture.install(Toolchain([ToolStats(duration_histogram=True)], strict=True))
    with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
        turn.start_tool("Read", start_ns=0).finish("x", end_ns=5 * MS)
        turn.tool_call("Grep", start_ns=0, end_ns=5 * MS)
    data = capture.metric_reader.get_metrics_data()
    assert data is not None
    points = {p.attributes["gen_ai.tool.name"]: p for rm in data.resource_metrics for sm in rm.scope_metrics
              for m in sm.metrics if m.name == semconv.METRIC_TOOL_DURATION for p in m.data.data_points}
    assert {tool: [(e.trace_id, e.span_id) for e in p.exemplars] for tool, p in points.items()} == {
        "Read": [(1, 2)], "Grep": [(1, 1)]}


def test_no_duration_histogram_by_default(capture: Capture) -> None:
    """Durations come from the spans (the Collector's span-metrics connector) unless asked for."""
    chain = capture.install(Toolchain([ToolStats()], strict=True))
    with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
        turn.tool_call("Read", start_ns=0, end_ns=5 * MS)
    assert semconv.METRIC_TOOL_DURATION not in capture.metrics()
    assert semconv.METRIC_TOOL_CALLS in capture.metrics()


def test_long_turns_flush_metrics_while_running(capture: Capture) -> None:
    chain = capture.install(Toolchain([ToolStats(flush_every=10)], strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    turn = recorder.start_turn("long")
    for i in range(25):
        turn.tool_call("Read", {"i": i})
    assert capture.metrics()[semconv.METRIC_TOOL_CALLS][0]["value"] == 20  # two flushes, turn still open
    turn.end()
    assert capture.metrics()[semconv.METRIC_TOOL_CALLS][0]["value"] == 25


def test_the_duration_histogram_can_be_turned_off(capture: Capture) -> None:
    chain = capture.install(Toolchain([ToolStats(duration_histogram=False)], strict=True))
    with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
        turn.tool_call("Read", start_ns=0, end_ns=5 * MS)
    metrics = capture.metrics()
    assert semconv.METRIC_TOOL_DURATION not in metrics
    assert metrics[semconv.METRIC_TOOL_CALLS][0]["value"] == 1


def test_calls_are_totals_read_at_collection_and_keep_counting(capture: Capture) -> None:
    """The counter reports the totals of every turn so far, monotonic, each time the reader collects."""
    chain = capture.install(Toolchain([ToolStats()], strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    for calls in (2, 3):
        with recorder.turn("a") as turn:
            for _ in range(calls):
                turn.tool_call("Read")
        assert [p["value"] for p in capture.metrics()[semconv.METRIC_TOOL_CALLS]] == [2 if calls == 2 else 5]


def test_keys_past_the_series_limit_count_under_overflow(capture: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_stats, "MAX_SERIES", 2)
    chain = capture.install(Toolchain([ToolStats()], strict=True))
    with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
        for tool in ("A", "B", "C", "D", "A"):
            turn.tool_call(tool)
    points = capture.metrics()[semconv.METRIC_TOOL_CALLS]
    assert sorted((p["attributes"].get("gen_ai.tool.name", "overflow"), p["value"]) for p in points) == [
        ("A", 2), ("B", 1), ("overflow", 2)]
    assert [p["attributes"] for p in points if "gen_ai.tool.name" not in p["attributes"]] == [
        {"otel.metric.overflow": True}]
