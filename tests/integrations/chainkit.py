"""What the integration tests share: a chain that records what it saw, and readers of its output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins.classify import Classify
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.plugins.tool_stats import ToolStats
from otel_toolchain.signals import NudgeSignal, StopSignal, TurnReport
from otel_toolchain.testing import Capture
from otel_toolchain.turn import Turn

CLASS_RULES = [{"tool": "get_*", "class": "network"}, {"tool": "Read", "class": "read"}]


class Seen(ToolPlugin):
    """Records every call as plain data: what the chain made of the span."""

    name: ClassVar[str] = "seen"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        self.calls.append({
            "tool": call.tool, "arguments": call.arguments, "result": call.result, "failed": call.failed,
            "error_type": call.error_type, "call_id": call.call_id, "turn": turn.span_id,
            "class": turn.tags.get("class"), "index": turn.calls,
        })


@dataclass
class Kit:
    """A chain of repeat_guard, classify, tool_stats and a recorder, with what it said."""

    chain: Toolchain
    seen: Seen
    stops: list[StopSignal] = field(default_factory=list)
    nudges: list[NudgeSignal] = field(default_factory=list)
    reports: list[TurnReport] = field(default_factory=list)

    @property
    def stats(self) -> list[dict[str, Any]]:
        return [r.value for r in self.reports if r.plugin == "tool_stats"]


def make_kit(capture: Capture | None = None, *, limit: int = 3, nudge_at: int | None = None) -> Kit:
    seen = Seen()
    chain = Toolchain([RepeatGuard(limit=limit, nudge_at=nudge_at), Classify(CLASS_RULES), ToolStats(), seen],
                      strict=True)
    kit = Kit(chain, seen)
    chain.on_stop(kit.stops.append)
    chain.on_nudge(kit.nudges.append)
    chain.on_report(kit.reports.append)
    if capture is not None:
        capture.install(chain)
    return kit


def tool_spans(capture: Capture) -> list[dict[str, Any]]:
    """The exported spans the chain classified, as plain data."""
    return [s for s in capture.finished_spans() if "otel_toolchain.tool.class" in s["attributes"]]


def stop_events(capture: Capture) -> list[tuple[str, dict[str, Any]]]:
    """(span name, stop event attributes without digests) for every exported stop event."""
    found = []
    for span in capture.finished_spans():
        for event in span["events"]:
            if event["name"] == "otel_toolchain.turn.stop":
                attrs = {k: v for k, v in event["attributes"].items() if "digests" not in k}
                found.append((span["name"], attrs))
    return found


class Relay(SpanProcessor):
    """Forwards spans to the current test's provider, for instrumentations that keep the first provider.

    Traceloop's instrumentors keep the tracer provider of their first ``instrument()`` for good (and
    keep emitting after ``uninstrument()``), so they are instrumented once, onto a provider holding a
    relay whose target each test sets to its own provider's processors.
    """

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def point_at(self, capture: Capture | None) -> None:
        self.target = capture.tracer_provider._active_span_processor if capture is not None else None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.target is not None:
            self.target.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.target is not None:
            self.target.on_end(span)
