"""repeat_guard: the seed's rule, checked on examples and against a brute-force oracle."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_toolchain.calls import ToolCall
from otel_toolchain.identity import UNKNOWN_TOOL
from otel_toolchain.plugins.repeat_guard import RepeatGuard, RepeatGuardConfig
from otel_toolchain.signals import StopSignal
from otel_toolchain.testing import FakeTurn, make_tool_call


def bash(command: str, result: str = "same output", *, failed: bool = False, cwd: str | None = None) -> ToolCall:
    return make_tool_call("Bash", {"command": command}, result=result, failed=failed, cwd=cwd)


def run(guard: RepeatGuard, calls: list[ToolCall]) -> FakeTurn:
    return FakeTurn().run([guard], calls)


class TestRule:
    def test_stops_at_the_limit_th_identical_call(self) -> None:
        """Period 1: the limit-th identical call in a row stops the turn, once."""
        turn = run(RepeatGuard(limit=5), [bash("make") for _ in range(9)])
        assert [(s.period, s.repeats, s.at_call) for s in turn.stops] == [(1, 5, 5)]

    def test_poll_whose_output_changes_is_progress(self) -> None:
        """Same command, different result each time: never stopped."""
        turn = run(RepeatGuard(limit=3), [bash("status", f"{i}% done") for i in range(50)])
        assert turn.stops == []

    def test_call_that_fails_the_same_way_is_caught(self) -> None:
        turn = run(RepeatGuard(limit=4), [bash("pytest", "E   ImportError", failed=True) for _ in range(4)])
        assert [(s.period, s.repeats, s.at_call) for s in turn.stops] == [(1, 4, 4)]

    def test_failure_is_part_of_identity(self) -> None:
        """A call that alternates between failing and not, with the same text, is not one call."""
        calls = [bash("x", "out", failed=i % 2 == 0) for i in range(6)]
        turn = run(RepeatGuard(limit=3, max_period=1), calls)
        assert turn.stops == []

    def test_same_command_in_another_directory_is_another_call(self) -> None:
        calls = [bash("ls", "a", cwd=f"/work/{i % 2}") for i in range(10)]
        assert run(RepeatGuard(limit=6, max_period=1), calls).stops == []

    def test_build_read_error_build_is_a_two_call_cycle(self) -> None:
        """Build, read the same error, build again: caught as period 2 at limit repetitions."""
        build = bash("cargo build", "error[E0308]", failed=True)
        read = make_tool_call("Read", {"file_path": "src/main.rs"}, result="fn main() {}")
        calls = [build, read] * 4
        turn = run(RepeatGuard(limit=3), calls)
        assert [(s.period, s.repeats, s.at_call) for s in turn.stops] == [(2, 3, 6)]
        assert [c.tool for c in turn.stops[0].cycle] == ["Bash", "Read"]

    def test_three_call_cycle(self) -> None:
        a, b, c = bash("a"), bash("b"), bash("c")
        turn = run(RepeatGuard(limit=2), [a, b, c, a, b, c, a])
        assert [(s.period, s.repeats, s.at_call) for s in turn.stops] == [(3, 2, 6)]

    def test_three_call_cycle_needs_max_period_three(self) -> None:
        a, b, c = bash("a"), bash("b"), bash("c")
        assert run(RepeatGuard(limit=2, max_period=2), [a, b, c] * 5).stops == []

    def test_argument_key_order_does_not_matter(self) -> None:
        calls = [make_tool_call("Edit", '{"a": 1, "b": 2}', result="ok"),
                 make_tool_call("Edit", '{"b": 2, "a": 1}', result="ok")]
        assert [s.at_call for s in run(RepeatGuard(limit=2), calls).stops] == [2]

    def test_limit_one_stops_the_first_call(self) -> None:
        assert [s.at_call for s in run(RepeatGuard(limit=1), [bash("x")]).stops] == [1]

    def test_stop_signal_names_the_cycle_without_content(self) -> None:
        calls = [make_tool_call("Bash", {"command": "secret-token"}, result="r", call_id=f"id{i}") for i in range(3)]
        signal = run(RepeatGuard(limit=3), calls).stops[0]
        assert signal == StopSignal(
            plugin="repeat_guard", code="repeated_cycle",
            reason="the same call (Bash) repeated 3 times in a row with the same results",
            trace_id=1, span_id=1, period=1, repeats=3, at_call=3, cycle=signal.cycle, loop_start=1, loop_calls=3,
        )
        assert [(c.tool, c.call_id) for c in signal.cycle] == [("Bash", "id2")]
        assert "secret-token" not in repr(signal.to_dict())


class TestModesAndNudges:
    def test_shadow_records_but_does_not_stop(self) -> None:
        turn = run(RepeatGuard(limit=3, mode="shadow"), [bash("x") for _ in range(5)])
        assert turn.stopped is None
        assert turn.shadow_stopped is not None and turn.shadow_stopped.shadow

    def test_nudge_once_per_streak(self) -> None:
        """A nudge at nudge_at repeats, not again in the same streak, again in a new streak."""
        calls = [bash("x") for _ in range(4)] + [bash("y")] + [bash("x") for _ in range(3)]
        turn = run(RepeatGuard(limit=10, nudge_at=3), calls)
        assert [(n.repeats, n.period, n.tools) for n in turn.nudges] == [(3, 1, ("Bash",)), (3, 1, ("Bash",))]

    def test_nudge_never_echoes_arguments(self) -> None:
        turn = run(RepeatGuard(limit=10, nudge_at=2), [bash("rm -rf /tmp/very-specific") for _ in range(2)])
        assert "very-specific" not in turn.nudges[0].message


class TestIdentityRules:
    def test_calls_rebuilt_from_lone_results_never_match(self) -> None:
        """A result whose start was never seen is rebuilt as tool ``unknown`` with no arguments: nothing to compare."""
        lone = [make_tool_call(UNKNOWN_TOOL, None, result="same output") for _ in range(10)]
        assert run(RepeatGuard(limit=3), lone).stops == []

    def test_ignore_args_drops_an_annotation_field_from_identity(self) -> None:
        """The same command, described differently each time: stopped only when the description is ignored."""
        calls = [make_tool_call("Bash", {"command": "make", "note": f"try {i}"}, result="same") for i in range(5)]
        assert run(RepeatGuard(limit=5), calls).stops == []
        stopped = run(RepeatGuard(limit=5, ignore_args={"Bash": ["note"]}), calls).stops
        assert [(s.at_call, s.ignored_fields) for s in stopped] == [(5, ("note",))]

    @pytest.mark.parametrize("ignore_args", [{"Bash": "note"}, {"Bash": [1]}, ["note"]])
    def test_ignore_args_must_map_tools_to_field_names(self, ignore_args: object) -> None:
        with pytest.raises(ValueError):
            RepeatGuardConfig.model_validate({"limit": 5, "ignore_args": ignore_args})


class TestConfig:
    @pytest.mark.parametrize("settings", [{}, {"limit": 0}, {"limit": "x"}, {"limit": 5, "nudge_at": 5},
                                          {"limit": 5, "mode": "loud"}, {"limit": 5, "max_period": 0},
                                          {"limit": 5, "unknown": 1}])
    def test_rejects(self, settings: dict[str, object]) -> None:
        with pytest.raises(ValueError):
            RepeatGuardConfig.model_validate(settings)

    def test_constructor_validates_like_the_manifest(self) -> None:
        with pytest.raises(ValueError):
            RepeatGuard(limit=0)


# -- the oracle -------------------------------------------------------------------------------------
def oracle(identities: Sequence[Hashable], limit: int, max_period: int) -> tuple[int, int, int] | None:
    """Brute force: the first call at which the last k*p calls are k copies of one p-call block, k >= limit.

    Returns (at_call, period, repeats) with the shortest period that gets there first.
    """
    for n in range(1, len(identities) + 1):
        done = identities[:n]
        for period in range(1, max_period + 1):
            block = done[n - period:] if n >= period else None
            if block is None:
                continue
            repeats = 1
            while (repeats + 1) * period <= n and done[n - (repeats + 1) * period: n - repeats * period] == block:
                repeats += 1
            if repeats >= limit:
                return (n, period, repeats)
    return None


identity_st = st.tuples(st.sampled_from(["Bash", "Read"]), st.sampled_from(["a", "b", "c"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # shared CI cores
@given(st.lists(identity_st, max_size=40), st.integers(1, 6), st.integers(1, 4))
def test_agrees_with_brute_force_oracle(identities: list[tuple[str, str]], limit: int, max_period: int) -> None:
    """On random call sequences, the incremental guard stops exactly where the oracle does."""
    calls = [make_tool_call(tool, {"x": arg}, result="r") for tool, arg in identities]
    turn = run(RepeatGuard(limit=limit, max_period=max_period), calls)
    got = (turn.stops[0].at_call, turn.stops[0].period, turn.stops[0].repeats) if turn.stops else None
    assert got == oracle(identities, limit, max_period)


# Failed results that the guard's identity makes the same (a masked duration; lines in another order),
# as the oracle must see them; every other result is compared as it is.
FAILED_ALIKE = {"took 1s": "took <dur>", "took 2s": "took <dur>", "x\ny": "x y", "y\nx": "x y"}
whole_call_st = st.tuples(st.sampled_from(["Bash", "Read"]), st.sampled_from(["a", "b"]),
                          st.sampled_from(["r", None, *FAILED_ALIKE]), st.booleans())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(whole_call_st, max_size=40), st.integers(1, 6), st.integers(1, 4))
def test_agrees_with_the_oracle_when_results_and_failures_vary(
        calls: list[tuple[str, str, str | None, bool]], limit: int, max_period: int) -> None:
    """Results and failures count as much as tools and arguments: the guard's shortcut for a result it
    has not kept (no comparison at all) stops exactly where comparing every call would."""
    made = [make_tool_call(tool, {"x": arg}, result=result, failed=failed) for tool, arg, result, failed in calls]
    turn = run(RepeatGuard(limit=limit, max_period=max_period), made)
    got = (turn.stops[0].at_call, turn.stops[0].period, turn.stops[0].repeats) if turn.stops else None
    seen = [(tool, arg, FAILED_ALIKE.get(result or "", result) if failed else result, failed)
            for tool, arg, result, failed in calls]
    assert got == oracle(seen, limit, max_period)
