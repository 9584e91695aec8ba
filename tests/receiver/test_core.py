"""The receiver core on the real agents' recorded OTLP (tests/data/otlp): calls, turns, stops, stop marks.

Real protobuf bodies, the real default chain (repeat_guard limit 25); only the clock is driven by the
replay instead of waiting (see recorded.py).
"""

from __future__ import annotations

import pytest
from recorded import replay

from otel_toolchain import semconv
from otel_toolchain.receiver.core import STOP_SPAN_NAME

WEDGED = ("claude-code/wedge", "codex/wedge", "opencode/wedge", "vercel-ai/wedge")
HEALTHY = {"claude-code/healthy": 5, "claude-code/healthy-json-gzip": 5, "codex/healthy": 5, "opencode/healthy": 5,
           "vercel-ai/healthy": 5, "vercel-ai/healthy-stream": 5, "claude-code/failing": 6, "codex/failing": 6,
           "opencode/failing": 6, "vercel-ai/failing": 4, "vercel-ai/wedge-sigterm": 11}


@pytest.mark.parametrize("scenario", WEDGED)
def test_wedged_recordings_stop_at_the_25th_identical_call(scenario: str) -> None:
    run = replay(scenario)
    assert [(s.plugin, s.code, s.at_call, s.period, s.repeats) for s in run.receiver.stops] == [
        ("repeat_guard", "repeated_cycle", 25, 1, 25)]
    assert len(run.calls) == 25  # the calls after the stop are the dying agent's: counted, not run
    assert run.receiver.stats.late_calls > 0
    assert len({c.call_id for c in run.calls}) == 25
    stop = run.receiver.stops[0]
    assert [c.call_id for c in stop.cycle] == [run.calls[24].call_id]
    assert run.receiver.open_groups() == []


@pytest.mark.parametrize("scenario", WEDGED)
def test_the_stop_is_marked_on_a_span_in_the_agents_own_trace(scenario: str) -> None:
    run = replay(scenario)
    stop = run.receiver.stops[0]
    (mark,) = run.spans
    assert mark.name == STOP_SPAN_NAME
    assert mark.context.trace_id == stop.trace_id == run.calls[24].trace_id
    assert mark.parent is not None and mark.parent.span_id != 0
    assert mark.attributes[semconv.ERROR_TYPE] == "tool_plugin.repeat_guard"
    assert mark.status.status_code.name == "ERROR"
    (event,) = mark.events
    assert event.name == semconv.STOP_EVENT
    assert event.attributes[semconv.STOP_AT_CALL] == 25
    assert event.attributes[semconv.STOP_REASON] == "repeated_cycle"


def test_claude_codes_stop_mark_hangs_under_its_interaction_span() -> None:
    run = replay("claude-code/wedge")
    (mark,) = run.spans
    assert mark.parent is not None
    assert mark.parent.span_id == run.receiver.stops[0].span_id  # the tool spans' parent: claude_code.interaction


@pytest.mark.parametrize(("scenario", "calls"), sorted(HEALTHY.items()))
def test_healthy_and_short_failing_runs_are_not_stopped(scenario: str, calls: int) -> None:
    run = replay(scenario)
    assert run.receiver.stops == []
    assert run.spans == []
    assert len(run.calls) == calls
    assert run.receiver.stats.turns_opened == run.receiver.stats.turns_closed == 1


def test_what_each_agent_says_about_a_call() -> None:
    """Tool, arguments, result and failure as each agent's own records give them."""
    first = {name: replay(name).calls[0] for name in
             ("claude-code/failing", "codex/failing", "opencode/failing", "vercel-ai/failing", "codex/wedge")}
    cc = first["claude-code/failing"]
    assert (cc.tool, cc.arguments, cc.result, cc.failed, cc.error_type) == (
        "Bash", {"full_command": "cat missing-file.txt"}, None, True, "ShellError")  # no error text is sent
    cx = first["codex/failing"]
    assert (cx.tool, cx.arguments, cx.failed, cx.error_type) == (
        "exec_command", '{"cmd": "cat missing-file.txt"}', True, "exit_code_1")  # "success" said true
    assert cx.result == "cat: missing-file.txt: No such file or directory\n"
    assert first["codex/wedge"].result == "lock held by pid 4242; waiting\n"  # Chunk ID and Wall time dropped
    oc = first["opencode/failing"]
    assert (oc.tool, oc.arguments, oc.failed, oc.error_type) == (
        "bash", '{"command":"cat missing-file.txt"}', True, "exit_code_1")
    vc = first["vercel-ai/failing"]
    assert (vc.tool, vc.arguments, vc.result, vc.failed, vc.error_type) == (
        "read_file", '{"path":"missing-file.txt"}', None, True, "Error")


def test_claude_code_without_spans_is_guarded_from_its_log_events() -> None:
    """Without the enhanced-telemetry beta only log events come: they are held, then used."""
    run = replay("claude-code/wedge", only="logs")
    assert [s.at_call for s in run.receiver.stops] == [25]
    assert run.calls[0].arguments == '{"command":"cat wedge.txt","description":"Run a scripted command"}'
    assert run.calls[0].result is None


def test_claude_codes_log_events_are_dropped_when_its_spans_come() -> None:
    run = replay("claude-code/healthy")
    assert [c.arguments for c in run.calls] == [{"full_command": "date +%s%N"}] * 5
    assert all(c.result for c in run.calls)  # from the span's tool.output event
    assert run.receiver.stats.duplicates == 0


def test_an_agent_killed_before_its_turn_span_is_closed_when_idle() -> None:
    run = replay("vercel-ai/wedge-sigterm", close=False)
    assert len(run.receiver.open_groups()) == 1
    run.receiver.tick(10_000.0)
    assert run.receiver.open_groups() == []
    assert run.receiver.stats.turns_closed == 1


def test_a_body_sent_twice_is_one_set_of_calls() -> None:
    """An exporter retrying a request it thinks failed: the call ids make the second copy a duplicate."""
    from recorded import bodies  # noqa: PLC0415

    from otel_toolchain.manifest import Manifest  # noqa: PLC0415
    from otel_toolchain.receiver.core import Receiver  # noqa: PLC0415
    from otel_toolchain.receiver.decode import decode_body  # noqa: PLC0415

    receiver = Receiver(Manifest.default().toolchain())
    for body in bodies("vercel-ai/healthy"):
        for _ in range(2):
            receiver.ingest(body.signal, decode_body(body.signal, body.data, body.content_type, body.content_encoding))
    receiver.close()
    assert receiver.stats.calls == 5
    assert receiver.stats.duplicates + receiver.stats.late_calls > 0


def test_a_turn_split_over_two_receivers_is_judged_on_each_part() -> None:
    """What the scale docs promise: without routing by trace id, each receiver sees part of a turn.

    The Vercel agent's 40-call wedge, its requests dealt alternately to two receivers: each sees a
    run of identical calls shorter than 25, so neither stops (routed by trace id, one receiver
    stops it at 25: test_wedged_recordings_stop_at_the_25th_identical_call). The part with the root
    span closes ``LINGER_S`` after it, the other when idle.
    """
    from recorded import bodies  # noqa: PLC0415

    from otel_toolchain.manifest import Manifest  # noqa: PLC0415
    from otel_toolchain.receiver.core import LINGER_S, Receiver  # noqa: PLC0415
    from otel_toolchain.receiver.decode import decode_body  # noqa: PLC0415

    now = [0.0]
    receivers = [Receiver(Manifest.default().toolchain(), idle_s=30.0, clock=lambda: now[0]) for _ in range(2)]
    for n, body in enumerate(bodies("vercel-ai/wedge")):
        now[0] += 0.2
        receivers[n % 2].ingest(body.signal, decode_body(body.signal, body.data, body.content_type,
                                                         body.content_encoding))
    calls = [r.stats.calls for r in receivers]
    assert sum(calls) == 40 and max(calls) < 25
    assert [r.stops for r in receivers] == [[], []]
    assert [len(r.open_groups()) for r in receivers] == [1, 1]
    for receiver in receivers:
        receiver.tick(now[0] + LINGER_S)
    assert sorted(len(r.open_groups()) for r in receivers) == [0, 1]  # one part got the root span
    for receiver in receivers:
        receiver.tick(now[0] + 31.0)
        assert receiver.open_groups() == []
