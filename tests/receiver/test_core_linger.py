"""When a turn closes after its turn span: requests that overtake each other still make one turn.

A Collector exports with several consumers at once (ten by default), so the request holding the
Vercel agent's root span (its last, body 6) can arrive before requests holding earlier calls. The
turn stays open ``linger_s`` after its turn span; calls in that time are judged, later ones are late.
Real recorded bodies (tests/data/otlp/vercel-ai/wedge: bodies 0-6 hold 1, 6, 7, 7, 7, 7 and 5 calls,
the root span in body 6); only the order and the clock are the test's.
"""

from __future__ import annotations

from recorded import bodies

from otel_toolchain.manifest import Manifest
from otel_toolchain.receiver.core import LINGER_S, Receiver
from otel_toolchain.receiver.decode import decode_body

BODIES = list(bodies("vercel-ai/wedge"))


def _feed(order: list[int], *, at: list[float] | None = None,
          linger_s: float = LINGER_S) -> tuple[Receiver, list[float]]:
    """Ingest the wedge's bodies in ``order`` at the times ``at`` (0.2 s apart unless given)."""
    now = [0.0]
    receiver = Receiver(Manifest.default().toolchain(), idle_s=300.0, linger_s=linger_s, clock=lambda: now[0])
    for n, index in enumerate(order):
        now[0] = at[n] if at is not None else 0.2 * (n + 1)
        body = BODIES[index]
        receiver.ingest(body.signal, decode_body(body.signal, body.data, body.content_type, body.content_encoding))
    return receiver, now


def test_calls_that_arrive_after_their_turn_span_are_still_judged() -> None:
    receiver, _ = _feed([0, 1, 2, 6, 3, 4, 5])
    assert [(s.at_call, s.repeats) for s in receiver.stops] == [(25, 25)]
    assert receiver.stats.turns_opened == 1
    assert receiver.open_groups() == []  # stopped: closed at once, the linger is not waited for


def test_without_a_linger_the_turn_closes_with_its_turn_span_and_the_rest_is_late() -> None:
    """The behaviour the linger replaces: 19 calls judged, 21 late, the wedge not stopped."""
    receiver, _ = _feed([0, 1, 2, 6, 3, 4, 5], linger_s=0.0)
    assert receiver.stops == []
    assert (receiver.stats.calls, receiver.stats.late_calls) == (19, 21)


def test_a_turn_span_that_comes_before_every_call_opens_the_linger() -> None:
    receiver, _ = _feed([6, 0, 1, 2, 3, 4, 5])
    assert [s.at_call for s in receiver.stops] == [25]
    assert receiver.stats.turns_opened == 1


def test_calls_after_the_linger_are_late_and_open_no_new_turn() -> None:
    # Body 6 at t=1, bodies 0-2 inside its linger, bodies 3-5 after it.
    late = 1.0 + LINGER_S + 0.1
    receiver, _ = _feed([6, 0, 1, 2, 3, 4, 5], at=[1.0, 1.2, 1.4, 1.6, late, late + 0.2, late + 0.4])
    assert receiver.stops == []
    assert (receiver.stats.calls, receiver.stats.late_calls) == (19, 21)  # body 6 holds 5 calls, bodies 0-2 hold 14
    assert (receiver.stats.turns_opened, receiver.stats.turns_closed) == (1, 1)
    assert receiver.open_groups() == []


def test_a_turn_that_was_not_stopped_closes_when_its_linger_is_over() -> None:
    receiver, now = _feed([0, 1, 2, 6])  # 19 calls: not stopped
    assert len(receiver.open_groups()) == 1
    receiver.tick(now[0] + LINGER_S - 0.1)
    assert len(receiver.open_groups()) == 1
    receiver.tick(now[0] + LINGER_S)
    assert receiver.open_groups() == []
    assert receiver.stats.turns_closed == 1
