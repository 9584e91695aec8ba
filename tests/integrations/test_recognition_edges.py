"""Recognition beyond the common shape: Claude Code, retries, late turn marks, content capture off."""

from __future__ import annotations

import json
import logging

import pytest
from chainkit import make_kit
from opentelemetry.trace import Status, StatusCode
from test_span_shapes import OP, span, util_genai_langchain

from otel_toolchain._recognise.shapes import normalise_arguments, normalise_result
from otel_toolchain.testing import Capture


def claude_code(capture: Capture, *, fail_second: bool) -> None:
    t = capture.tracer_provider.get_tracer("com.anthropic.claude_code.tracing")
    with span(t, "claude_code.interaction", {OP: "invoke_agent", "gen_ai.conversation.id": "s-1"}):
        with span(t, "claude_code.llm_request", {OP: "chat", "attempt": 2}) as llm:
            llm.add_event("gen_ai.request.attempt", {"attempt": 1})
            llm.add_event("gen_ai.request.attempt", {"attempt": 2})
        for i in range(3):
            with span(t, "claude_code.tool", {OP: "execute_tool", "gen_ai.tool.name": "Read", "tool_name": "Read",
                                              "gen_ai.tool.call.id": f"toolu_{i}", "file_path": "/w/a.txt"}):
                with span(t, "claude_code.tool.blocked_on_user"):
                    pass
                failed = fail_second and i == 1
                with span(t, "claude_code.tool.execution", late={"success": not failed,
                          **({"error.type": "tool_error"} if failed else {})}) as execution:
                    if failed:
                        execution.set_status(Status(StatusCode.ERROR, "no such file"))


class TestClaudeCode:
    def test_failure_on_the_child_and_retries_on_events(self, capture: Capture) -> None:
        kit = make_kit(capture, limit=5)
        claude_code(capture, fail_second=True)
        assert [(c["tool"], c["arguments"], c["call_id"], c["failed"], c["error_type"], c["class"])
                for c in kit.seen.calls] == [
            ("Read", {"file_path": "/w/a.txt"}, "toolu_0", False, None, "read"),
            ("Read", {"file_path": "/w/a.txt"}, "toolu_1", True, "tool_error", "read"),
            ("Read", {"file_path": "/w/a.txt"}, "toolu_2", False, None, "read"),
        ]
        assert kit.stats[0]["retries"] == 1 and kit.stats[0]["longest_fail_streak"] == 1

    def test_no_content_is_said_once_on_the_turn_and_in_the_log(self, capture: Capture,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
        make_kit(capture, limit=5)
        with caplog.at_level(logging.WARNING, "otel_toolchain"):
            claude_code(capture, fail_second=False)
            claude_code(capture, fail_second=False)
        turns = [s for s in capture.finished_spans() if s["name"] == "claude_code.interaction"]
        assert [t["attributes"].get("otel_toolchain.turn.content_capture") for t in turns] == ["off", "off"]
        warnings = [r.getMessage() for r in caplog.records if "content capture is off" in r.getMessage()]
        assert len(warnings) == 1 and "OTEL_LOG_TOOL_DETAILS=1" in warnings[0]


class TestRetries:
    def test_pydantic_ai_attempt_spans_and_http_resends(self, capture: Capture) -> None:
        kit = make_kit(capture)
        t = capture.tracer_provider.get_tracer("pydantic-ai")
        with span(t, "invoke_agent a", {OP: "invoke_agent"}), span(t, "chat backup", {OP: "chat"}):
            with span(t, "model request attempt primary", {"pydantic_ai.model_request.attempt": 0},
                      error="pydantic_ai.exceptions.ModelHTTPError"):
                pass
            for resend in (0, 1, 2):
                with span(t, "POST", {"http.request.method": "POST", "http.request.resend_count": resend}):
                    pass
        assert kit.stats[0]["retries"] == 3


class TestLateTurnMarks:
    def test_an_agent_marked_after_start_is_the_turn_not_the_outer_root(self, capture: Capture) -> None:
        """Traceloop sets the agent's attributes right after start; the first tool below finds them."""
        kit = make_kit(capture)
        t = capture.tracer_provider.get_tracer("opentelemetry.instrumentation.langchain")
        with span(t, "handle request"):
            for run in range(2):
                with span(t, f"invoke_agent agent_{run}", after={OP: "invoke_agent", "gen_ai.agent.name": f"a{run}"}):
                    for i in range(2):
                        with span(t, "execute_tool get_weather", after={OP: "execute_tool", "gen_ai.tool.name":
                                  "get_weather", "gen_ai.tool.call.arguments": "{}"}, late={
                                  "gen_ai.tool.call.result": str(i)}):
                            pass
        names = {s["span_id"]: s["name"] for s in capture.finished_spans()}
        assert [names[c["turn"]] for c in kit.seen.calls] == ["invoke_agent agent_0"] * 2 + ["invoke_agent agent_1"] * 2
        assert [(r.span_id, r.value["calls"]) for r in kit.reports] == [(c["turn"], 2) for c in kit.seen.calls[::2]]


class TestContentCaptureOff:
    def test_no_stop_without_evidence_only_a_shadow_verdict_and_the_turn_says_so(
            self, capture: Capture, caplog: pytest.LogCaptureFixture) -> None:
        kit = make_kit(capture)
        t = capture.tracer_provider.get_tracer("opentelemetry.instrumentation.genai.langchain")
        with caplog.at_level(logging.WARNING, "otel_toolchain"), \
                span(t, "invoke_agent a", {OP: "invoke_agent"}):
            for _ in range(3):
                with span(t, "execute_tool get_weather", {OP: "execute_tool", "gen_ai.tool.name": "get_weather"}):
                    pass
        assert kit.stops == []  # a changing poll cannot be told from a loop without results
        turn = next(s for s in capture.finished_spans() if s["name"] == "invoke_agent a")
        assert turn["status"] == "UNSET"
        (shadow,) = [e for e in turn["events"] if e["name"] == "otel_toolchain.turn.stop.shadow"]
        assert shadow["attributes"]["otel_toolchain.stop.at_call"] == 3
        assert turn["attributes"]["otel_toolchain.turn.content_capture"] == "off"
        assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in r.getMessage()
                   for r in caplog.records)

    def test_with_content_nothing_is_said(self, capture: Capture, caplog: pytest.LogCaptureFixture) -> None:
        make_kit(capture)
        with caplog.at_level(logging.WARNING, "otel_toolchain"):
            util_genai_langchain(capture.tracer_provider.get_tracer("x"), [({"a": 1}, "r", False)])
        assert "otel_toolchain.turn.content_capture" not in capture.finished_spans()[-1]["attributes"]
        assert not [r for r in caplog.records if "content capture" in r.getMessage()]


class TestNormalise:
    @pytest.mark.parametrize(("raw", "expected"), [
        ('{"input_str": "{\'city\': \'Paris\', \'n\': (1, 2)}", "tags": [], "metadata": {"langgraph_step": 7}}',
         '{"city":"Paris","n":[1,2]}'),
        ('{"input_str": "Paris", "metadata": {}}', "Paris"),
        ('{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"b": 1, "a": 2}}', '{"a":2,"b":1}'),
        ('{"args": [3], "sanitize_inputs_outputs": true, "kwargs": {}}', '{"args":[3],"kwargs":{}}'),
        ('{ "b": 1,  "a": [2] }', '{ "b": 1,  "a": [2] }'),  # canonicalised later, by ToolCall
        ("not json", "not json"),
        ("{broken", "{broken"),
    ])
    def test_arguments(self, raw: str, expected: str) -> None:
        assert normalise_arguments(raw) == expected

    def test_results(self) -> None:
        error = json.dumps({"type": "tool", "data": {"content": ["a", 1], "tool_call_id": "c", "status": "error"}})
        read = [normalise_result(raw) for raw in (error, '{"tool_call_id": 1}', "plain", '{"x": "tool_call_id"}')]
        assert [(r.text, r.call_id, r.failed) for r in read] == [
            ('["a",1]', "c", True), ('{"tool_call_id": 1}', None, False), ("plain", None, False),
            ('{"x": "tool_call_id"}', None, False),
        ]
