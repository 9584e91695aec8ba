"""Properties of call identity (hypothesis): masking is idempotent, merges exactly what differs in volatile tokens,
and the incremental guard with per-period limits and a poll limit agrees with a brute-force oracle.

Texts are generated from two vocabularies: non-volatile tokens (words, counts, punctuation a test runner or
compiler prints) and volatile tokens of every kind the mask knows (durations, clock times, ISO times, dates,
epochs, PIDs, Rust thread ids, addresses, hex ids, UUIDs, temp paths, Codex frame lines), each drawn with a
random value. A line's *skeleton* is its non-volatile tokens with each volatile token replaced by the
placeholder of its kind; two texts mask the same exactly when their skeletons are the same. Words that
announce a volatile value by design (``took``, ``elapsed``, ``pid``, unit words such as ``ms``) are kept
out of the non-volatile vocabulary: after them a number is masked on purpose.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_toolchain.identity import LINE_ORDER, Identity, mask_volatile, masked_kinds
from otel_toolchain.plugins._polls import is_poll
from otel_toolchain.plugins.repeat_guard import RepeatGuard
from otel_toolchain.testing import FakeTurn, make_tool_call

_SHARED_CORES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = st.sampled_from(["failed", "passed", "error:", "FAILED", "test_add", "assert", "==", "expected", "got",
                         "line", "main.c:3:", "E", "[100%]", "warning:", "x", "build", "total:", "-", "(", ")"])
COUNTS = st.integers(0, 99_999).map(str)
NON_VOLATILE = st.one_of(WORDS, COUNTS)

_D2 = st.integers(0, 99).map(lambda n: f"{n:02d}")
VOLATILE: dict[str, tuple[st.SearchStrategy[str], str]] = {
    # kind: (the token with a random value, what the mask leaves of it)
    "duration": (st.one_of(
        st.builds(lambda a, b, unit: f"{a}.{b}{unit}", st.integers(0, 999), st.integers(0, 99),
                  st.sampled_from(["s", "ms", "us", " seconds", " sec"])),
        st.builds(lambda n: f"{n} ms", st.integers(0, 99_999))), "<dur>"),
    "time": (st.one_of(
        st.builds(lambda h, m, s: f"{h % 24}:{m}:{s}", st.integers(0, 23), _D2, _D2),
        st.builds(lambda y, mo, d, h, mi: f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:07.123Z", st.integers(2000, 2099),
                  st.integers(1, 12), st.integers(1, 28), st.integers(0, 23), st.integers(0, 59))), "<time>"),
    "date": (st.builds(lambda y, mo, d: f"{y}-{mo:02d}-{d:02d}", st.integers(2000, 2099), st.integers(1, 12),
                       st.integers(1, 28)), "<date>"),
    "epoch": (st.integers(1_500_000_000, 1_999_999_999).map(str), "<epoch>"),
    "pid": (st.integers(1, 4_000_000).map(lambda n: f"pid {n}"), "pid <pid>"),
    "thread id": (st.integers(1, 99_999).map(lambda n: f"thread 'tests::adds' ({n})"), "thread 'tests::adds' (<tid>)"),
    "address": (st.integers(0x100000, 0x7FFF_FFFF_FFFF).map(lambda n: f"0x{n:x}"), "<addr>"),
    "hex id": (st.integers(2**64, 2**80).map(lambda n: f"{n:x}a1"), "<hex>"),
    "uuid": (st.uuids().map(str), "<uuid>"),
    "temp path": (st.text("abcdefXYZ0123456789_", min_size=1, max_size=12).map(lambda s: f"/tmp/pytest-{s}/out.txt"),
                  "<tmp>"),
}
FRAME = (st.builds(lambda s: f"Wall time: {s / 1000:.4f} seconds", st.integers(0, 99_999)), "Wall time: <volatile>")
# Cargo's build progress, printed before the run by the first call only: the whole line goes.
BUILD_PROGRESS = st.builds(lambda verb, name, v: f"{verb:>12} {name} v{v}.1.0 (/src/{name})",
                           st.sampled_from(["Compiling", "Checking", "Downloaded", "Adding", "Locking"]),
                           st.sampled_from(["calc", "serde_json", "my-crate"]), st.integers(0, 99))


@st.composite
def lines(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    """(a line, its skeleton, the kinds of volatile token in it): non-volatile tokens, some with a volatile before."""
    text, skeleton, kinds = [], [], []
    for word in draw(st.lists(NON_VOLATILE, min_size=1, max_size=6)):
        kind = draw(st.none() | st.sampled_from(sorted(VOLATILE)))
        if kind is not None:  # a volatile token is always followed by a non-volatile one: never two in a row
            value, placeholder = VOLATILE[kind]
            text.append(draw(value))
            skeleton.append(placeholder)
            kinds.append(kind)
        text.append(word)
        skeleton.append(word)
    return " ".join(text), " ".join(skeleton), kinds


@st.composite
def texts(draw: st.DrawFn) -> tuple[str, list[str], list[str]]:
    """(a text, its lines' skeletons, its kinds of volatile token), now and then with a Codex frame line
    and cargo's build-progress lines before it."""
    drawn = draw(st.lists(lines(), min_size=1, max_size=5))
    text = [line for line, _, _ in drawn]
    skeletons = [skeleton for _, skeleton, _ in drawn]
    kinds = [kind for _, _, found in drawn for kind in found]
    if draw(st.booleans()):
        text.insert(0, draw(FRAME[0]))
        skeletons.insert(0, FRAME[1])
        kinds.append("codex frame")
    for _ in range(draw(st.integers(0, 2))):  # no skeleton: the line is removed, not replaced
        text.insert(0, draw(BUILD_PROGRESS))
        kinds.append("build progress")
    return "\n".join(text), skeletons, kinds


@_SHARED_CORES
@given(st.one_of(st.text(), texts().map(lambda t: t[0])))
def test_masking_is_idempotent(text: str) -> None:
    once = mask_volatile(text)
    assert mask_volatile(once) == once


@_SHARED_CORES
@given(texts(), texts())
def test_two_texts_mask_the_same_exactly_when_their_non_volatile_content_is_the_same(
        a: tuple[str, list[str], list[str]], b: tuple[str, list[str], list[str]]) -> None:
    """Different non-volatile content: different masks (no merge); the same: the same mask (the masks work)."""
    assert (mask_volatile(a[0]) == mask_volatile(b[0])) == (a[1] == b[1]), (a, b)
    assert mask_volatile(a[0]) == "\n".join(a[1])


@_SHARED_CORES
@given(texts())
def test_the_evidence_names_exactly_the_kinds_masked(text: tuple[str, list[str], list[str]]) -> None:
    assert set(masked_kinds(text[0])) == set(text[2])


@_SHARED_CORES
@given(texts(), texts(), st.randoms(use_true_random=False))
def test_failed_calls_are_the_same_exactly_when_their_skeleton_lines_are_a_permutation(
        a: tuple[str, list[str], list[str]], b: tuple[str, list[str], list[str]], rnd: object) -> None:
    """Identity of failed calls: masked, lines in any order; a successful result stays exact."""
    identity = Identity()
    shuffled = a[0].split("\n")
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]

    def key(result: str, failed: bool = True) -> object:
        return identity.key(make_tool_call("Bash", {"command": "make"}, result=result, failed=failed))
    assert key(a[0]) == key("\n".join(shuffled))
    assert (key(a[0]) == key(b[0])) == (sorted(a[1]) == sorted(b[1]))
    assert (key(a[0], False) == key(b[0], False)) == (a[0] == b[0])
    order_masked = LINE_ORDER in identity.normalised(make_tool_call("Bash", {}, result=a[0], failed=True))[1]
    assert order_masked == (sorted(mask_volatile(a[0]).split("\n")) != mask_volatile(a[0]).split("\n"))


# -- the incremental guard against a brute-force oracle ---------------------------------------------------------
COMMANDS = ("make", "sleep 1 && tail -n 3 build.log", "cat a", "tail log")
"""Two shell commands that are polls (sleep, tail) and two that are not."""

call_st = st.tuples(st.sampled_from(COMMANDS), st.booleans(), st.integers(0, 2), st.integers(0, 3))
"""(command, failed, which output, a volatile value in the output)."""


def result_of(failed: bool, output: int, value: int) -> str:
    return f"output {output}\nfinished in {value}.5s" if failed else f"output {output} at step {value}"


def oracle_identity(call: tuple[str, bool, int, int]) -> tuple[object, ...]:
    """What makes two generated calls the same: a failure's time does not count, a success's step does."""
    command, failed, output, value = call
    return (command, failed, output) if failed else (command, failed, output, value)


def brute_force(calls: list[tuple[str, bool, int, int]], limits: dict[int, int], poll_limit: int | None,
                max_period: int) -> tuple[int, int, int] | None:
    """The first call at which the last k*p calls are k copies of one p-call block and k reaches p's limit
    (``poll_limit`` when every call of the block is a poll), with the shortest such period."""
    ids = [oracle_identity(c) for c in calls]
    for n in range(1, len(ids) + 1):
        for period in range(1, min(max_period, n) + 1):
            block = ids[n - period:n]
            repeats = 1
            while (repeats + 1) * period <= n and ids[n - (repeats + 1) * period: n - repeats * period] == block:
                repeats += 1
            polls = all(is_poll("Bash", {"command": c[0]}) for c in calls[n - period:n])
            limit = poll_limit if poll_limit is not None and polls else limits[period]
            if repeats >= limit:
                return n, period, repeats
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(call_st, max_size=40), st.lists(st.integers(1, 6), min_size=3, max_size=3),
       st.none() | st.integers(1, 8), st.integers(1, 3))
def test_per_period_limits_agree_with_the_oracle(calls: list[tuple[str, bool, int, int]], limits: list[int],
                                                 poll_limit: int | None, max_period: int) -> None:
    per_period = {period: limits[period - 1] for period in range(1, max_period + 1)}
    guard = RepeatGuard(limit=99, max_period=max_period, limits=per_period, poll_limit=poll_limit)
    tool_calls = [make_tool_call("Bash", {"command": command}, result=result_of(failed, output, value), failed=failed)
                  for command, failed, output, value in calls]
    turn = FakeTurn().run([guard], tool_calls)
    got = (turn.stops[0].at_call, turn.stops[0].period, turn.stops[0].repeats) if turn.stops else None
    assert got == brute_force(calls, per_period, poll_limit, max_period)
