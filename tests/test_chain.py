"""Toolchain: turns found from spans, plugins run in order and isolated, state bounded and freed."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, ClassVar

import pytest
from opentelemetry import trace

from otel_toolchain import semconv
from otel_toolchain.calls import Retry, ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.plugin import ToolPlugin
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.plugins.tool_stats import ToolStats
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture
from otel_toolchain.turn import Turn

TOOL = {semconv.GEN_AI_OPERATION_NAME: "execute_tool"}
AGENT = {semconv.GEN_AI_OPERATION_NAME: "invoke_agent"}


class Recording(ToolPlugin):
    """Remembers what it saw, and tags calls."""

    name: ClassVar[str] = "recording"

    def __init__(self, label: str = "r") -> None:
        self.label = label
        self.seen: list[tuple[str, Any]] = []

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        self.seen.append(("tool", (call.tool, dict(turn.tags), turn.calls, turn.span_id)))
        turn.tag(self.label, "yes")

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        self.seen.append(("retry", retry.attempt))

    def on_turn_end(self, turn: Turn) -> None:
        self.seen.append(("end", (turn.span_id, turn.calls, turn.retries)))


class Raising(ToolPlugin):
    name: ClassVar[str] = "raising"

    def setup(self, telemetry: Any) -> None:
        raise RuntimeError("setup")

    def on_tool(self, call: ToolCall, turn: Turn) -> None:
        raise RuntimeError("on_tool")

    def on_retry(self, retry: Retry, turn: Turn) -> None:
        raise RuntimeError("on_retry")

    def on_turn_end(self, turn: Turn) -> None:
        raise RuntimeError("on_turn_end")


def tool_span(tracer: trace.Tracer, name: str = "Read", **attrs: Any) -> None:
    with tracer.start_as_current_span(f"execute_tool {name}", attributes={**TOOL, semconv.GEN_AI_TOOL_NAME: name,
                                                                           **attrs}):
        pass


class TestTurns:
    def test_tool_spans_belong_to_their_invoke_agent_span(self, capture: Capture) -> None:
        plugin = Recording()
        capture.install(Toolchain([plugin], strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        with tracer.start_as_current_span("invoke_agent a", attributes=AGENT):
            tool_span(tracer, "Read")
            with tracer.start_as_current_span("chat model"):
                tool_span(tracer, "Bash")
        assert plugin.seen == [("tool", ("Read", {}, 1, 1)), ("tool", ("Bash", {}, 2, 1)), ("end", (1, 2, 0))]

    def test_without_an_agent_span_the_trace_root_is_the_turn(self, capture: Capture) -> None:
        plugin = Recording()
        capture.install(Toolchain([plugin], strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        with tracer.start_as_current_span("request"):
            tool_span(tracer)
        assert plugin.seen == [("tool", ("Read", {}, 1, 1)), ("end", (1, 1, 0))]

    def test_outermost_agent_is_the_turn_and_a_sub_agent_belongs_to_it(self, capture: Capture) -> None:
        plugin = Recording()
        capture.install(Toolchain([plugin], strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        with (tracer.start_as_current_span("http"),  # span 1: root, not an agent
              tracer.start_as_current_span("invoke_agent outer", attributes=AGENT),  # span 2
              tracer.start_as_current_span("invoke_agent sub", attributes=AGENT)):  # span 3
            tool_span(tracer)
        assert plugin.seen == [("tool", ("Read", {}, 1, 2)), ("end", (2, 1, 0))]

    def test_a_root_span_with_no_tool_use_reports_nothing(self, capture: Capture) -> None:
        plugin = Recording()
        capture.install(Toolchain([plugin], strict=True))
        with capture.tracer_provider.get_tracer("t").start_as_current_span("healthcheck"):
            pass
        assert plugin.seen == []

    def test_retry_spans_reach_the_retry_hook(self, capture: Capture) -> None:
        plugin = Recording()
        chain = capture.install(Toolchain([plugin], strict=True))
        with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
            turn.retry(2, reason="overloaded")
        assert plugin.seen == [("retry", 2), ("end", (1, 0, 1))]


class TestOrderAndTags:
    def test_plugins_run_in_order_and_see_earlier_tags(self, capture: Capture) -> None:
        first, second = Recording("first"), Recording("second")
        capture.install(Toolchain([first, second], strict=True))
        with capture.tracer_provider.get_tracer("t").start_as_current_span("invoke_agent", attributes=AGENT):
            tool_span(capture.tracer_provider.get_tracer("t"))
        assert first.seen[0] == ("tool", ("Read", {}, 1, 1))
        assert second.seen[0] == ("tool", ("Read", {"first": "yes"}, 1, 1))

    def test_tags_reach_the_exported_span(self, capture: Capture) -> None:
        capture.install(Toolchain([Recording("first")], strict=True))
        tool_span(capture.tracer_provider.get_tracer("t"), "Grep")
        assert capture.finished_spans() == [{
            "name": "execute_tool Grep", "trace_id": 1, "span_id": 1, "parent_id": None, "status": "UNSET",
            "attributes": {**TOOL, "gen_ai.tool.name": "Grep", "otel_toolchain.tool.first": "yes"}, "events": [],
        }]

    def test_late_attributes_are_seen_before_the_span_ends(self, capture: Capture) -> None:
        """An instrumentation that sets the tool name and arguments just before end() is still read."""
        plugin = Recording()
        capture.install(Toolchain([plugin], strict=True))
        span = capture.tracer_provider.get_tracer("t").start_span("execute_tool", attributes=TOOL)
        span.set_attribute(semconv.GEN_AI_TOOL_NAME, "Late")
        span.end()
        assert plugin.seen[0] == ("tool", ("Late", {}, 1, 1))
        assert capture.finished_spans()[0]["attributes"]["otel_toolchain.tool.r"] == "yes"


class TestIsolation:
    def test_a_raising_plugin_never_reaches_the_agent_nor_stops_the_others(
        self, capture: Capture, caplog: pytest.LogCaptureFixture
    ) -> None:
        after = Recording()
        chain = capture.install(Toolchain([Raising(), after]))
        with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
            for _ in range(3):
                turn.tool_call("Read", {"p": 1}, result="x")
            turn.retry()
        assert [kind for kind, _ in after.seen] == ["tool", "tool", "tool", "retry", "end"]
        assert len(capture.finished_spans()) == 5  # 3 tools, the retry, the turn: all exported
        errors = {tuple(sorted(p["attributes"].items())): p["value"]
                  for p in capture.metrics()[semconv.METRIC_PLUGIN_ERRORS]}
        assert errors == {
            (("otel_toolchain.hook", "on_retry"), ("otel_toolchain.plugin", "raising")): 1,
            (("otel_toolchain.hook", "on_tool"), ("otel_toolchain.plugin", "raising")): 3,
            (("otel_toolchain.hook", "on_tool"), ("otel_toolchain.plugin", "recording")): 0,
            (("otel_toolchain.hook", "on_turn_end"), ("otel_toolchain.plugin", "raising")): 1,
            (("otel_toolchain.hook", "setup"), ("otel_toolchain.plugin", "raising")): 1,
        }
        logged = [r for r in caplog.records if r.name == "otel_toolchain"]
        assert len(logged) == 1 and "'raising'" in logged[0].getMessage()  # once per plugin

    def test_a_raising_listener_is_guarded_too(self, capture: Capture) -> None:
        chain = capture.install(Toolchain([RepeatGuard(limit=2)]))
        got: list[str] = []
        chain.on_stop(lambda s: (_ for _ in ()).throw(ValueError("listener")))
        chain.on_stop(lambda s: got.append(s.plugin))
        with AgentRecorder(capture.tracer_provider, toolchain=chain).turn("a") as turn:
            turn.tool_call("Read", "{}", result="x")
            turn.tool_call("Read", "{}", result="x")
        assert got == ["repeat_guard"] and chain.plugin_errors == 1
        # Counted as the listener's error, not the plugin's: the runbook must not blame repeat_guard.
        errors = {tuple(sorted(p["attributes"].items())): p["value"]
                  for p in capture.metrics()[semconv.METRIC_PLUGIN_ERRORS] if p["value"]}
        assert errors == {(("otel_toolchain.hook", "listener.on_stop"), ("otel_toolchain.plugin", "repeat_guard")): 1}

    def test_strict_reraises(self, capture: Capture) -> None:
        with pytest.raises(RuntimeError, match="setup"):
            capture.install(Toolchain([Raising()], strict=True))

    def test_keyboard_interrupt_is_not_swallowed(self, capture: Capture) -> None:
        class Interrupting(ToolPlugin):
            name: ClassVar[str] = "interrupting"

            def on_tool(self, call: ToolCall, turn: Turn) -> None:
                raise KeyboardInterrupt

        capture.install(Toolchain([Interrupting()]))
        with pytest.raises(KeyboardInterrupt):
            tool_span(capture.tracer_provider.get_tracer("t"))


class TestState:
    def test_open_turns_are_bounded_and_evictions_counted(self, capture: Capture) -> None:
        chain = capture.install(Toolchain([Recording()], max_open_turns=2, strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        spans = [tracer.start_span(f"invoke_agent {i}", attributes=AGENT) for i in range(5)]
        assert [t.span_id for t in chain.open_turns()] == [4, 5]
        assert chain.evicted == 3
        for span in spans:
            span.end()
        assert chain.open_turns() == [] and chain.live_spans() == 0
        assert capture.metrics()[semconv.METRIC_TURNS_EVICTED] == [{"attributes": {}, "value": 3}]

    def test_many_threads_and_interleaved_turns(self) -> None:
        """32 turns on 8 threads plus 16 asyncio turns on one thread: exact counts, no mix-up, nothing left."""
        capture = Capture(deterministic_ids=False)
        chain = capture.install(Toolchain([RepeatGuard(limit=1000), ToolStats()], strict=True))
        recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
        reports: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()

        def one_turn(name: str, calls: int) -> None:
            with recorder.turn(name) as turn:
                for i in range(calls):
                    turn.tool_call(f"tool-{name}", {"i": i}, result=str(i), failed=i % 3 == 0)
            with lock:
                reports[name] = turn.reports[0].value

        threads = [threading.Thread(target=lambda n=n: [one_turn(f"t{n}-{k}", 50 + n) for k in range(4)])
                   for n in range(8)]
        for thread in threads:
            thread.start()

        async def interleaved(name: str) -> None:
            with recorder.turn(name) as turn:
                for i in range(30):
                    turn.tool_call(f"tool-{name}", {"i": i}, result="r")
                    await asyncio.sleep(0)
            reports[name] = turn.reports[0].value

        async def many() -> None:
            await asyncio.gather(*(interleaved(f"a{k}") for k in range(16)))

        asyncio.run(many())
        for thread in threads:
            thread.join()
        assert len(reports) == 48
        for name, report in reports.items():
            calls = 30 if name.startswith("a") else 50 + int(name[1:].split("-")[0])
            failed = 0 if name.startswith("a") else len(range(0, calls, 3))
            assert report["tools"] == {f"tool-{name}": {"calls": calls, "failed": failed, "ms": report["tools"][
                f"tool-{name}"]["ms"]}}
            assert report["calls"] == calls
        assert chain.open_turns() == [] and chain.live_spans() == 0 and chain.plugin_errors == 0
        capture.shutdown()


def test_a_plugin_alone_runs_as_a_chain_of_one(capture: Capture) -> None:
    chain = Toolchain([RepeatGuard(limit=2)]).install(capture.tracer_provider)
    stops: list[int] = []
    chain.on_stop(lambda s: stops.append(s.at_call))
    tracer = capture.tracer_provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent", attributes=AGENT):
        for _ in range(3):
            tool_span(tracer, **{semconv.GEN_AI_TOOL_CALL_RESULT: "same"})
    assert stops == [2]


def test_plugin_errors_are_logged_with_the_logger_name(capture: Capture, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, "otel_toolchain")
    capture.install(Toolchain([Raising()]))
    tool_span(capture.tracer_provider.get_tracer("t"))
    assert any("raising" in r.getMessage() for r in caplog.records)


class TestReviewFindings:
    def test_abandoned_spans_of_evicted_turns_are_freed(self, capture: Capture) -> None:
        """Turns whose spans never end cannot pin memory: evicting a turn drops the spans it held."""
        chain = capture.install(Toolchain([Recording()], max_open_turns=2, strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        for i in range(500):
            turn = tracer.start_span(f"invoke_agent {i}", attributes=AGENT)
            ctx = trace.set_span_in_context(turn)
            tracer.start_span("execute_tool Read", context=ctx, attributes={**TOOL, semconv.GEN_AI_TOOL_NAME: "Read"})
        assert len(chain.open_turns()) == 2 and chain.evicted == 498
        assert chain.live_spans() == 4  # the two open turns and their tool spans, nothing more

    def test_a_tool_span_that_ends_after_its_turn_is_still_counted(self, capture: Capture) -> None:
        chain = capture.install(Toolchain([ToolStats()], strict=True))
        tracer = capture.tracer_provider.get_tracer("t")
        turn = tracer.start_span("invoke_agent a", attributes=AGENT)
        ctx = trace.set_span_in_context(turn)
        read = {**TOOL, semconv.GEN_AI_TOOL_NAME: "Read"}
        early = tracer.start_span("execute_tool Read", context=ctx, attributes=read)
        late = tracer.start_span("execute_tool Read", context=ctx, attributes=read)
        early.end()
        turn.end()
        late.end()
        assert sum(p["value"] for p in capture.metrics()[semconv.METRIC_TOOL_CALLS]) == 2
        assert chain.live_spans() == 0

    def test_many_threads_in_one_turn(self) -> None:
        """Parallel tool calls of one turn from 8 threads: every call counted once, nothing left."""
        capture = Capture(deterministic_ids=False)
        chain = capture.install(Toolchain([RepeatGuard(limit=10_000), ToolStats()], strict=True))
        recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
        with recorder.turn("parallel") as turn:
            def work(n: int) -> None:
                for i in range(250):
                    turn.tool_call(f"tool-{n}", {"i": i}, result=str(i), failed=i % 5 == 0)

            threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        report = turn.reports[0].value
        assert report["calls"] == 2000
        assert {tool: (v["calls"], v["failed"]) for tool, v in report["tools"].items()} == {
            f"tool-{n}": (250, 50) for n in range(8)}
        assert chain.live_spans() == 0 and chain.open_turns() == []
        capture.shutdown()

    def test_a_strict_chain_that_raises_still_ends_the_span(self, capture: Capture) -> None:
        chain = capture.install(Toolchain([Raising()], strict=False))
        chain.strict = True  # setup ran quietly; now every hook re-raises
        tracer = capture.tracer_provider.get_tracer("t")
        turn = tracer.start_span("invoke_agent a", attributes=AGENT)
        span = tracer.start_span("execute_tool Read", context=trace.set_span_in_context(turn),
                                 attributes={**TOOL, semconv.GEN_AI_TOOL_NAME: "Read"})
        with pytest.raises(RuntimeError, match="on_tool"):
            span.end()
        assert not span.is_recording() and chain.live_spans() == 1  # only the turn is still open
