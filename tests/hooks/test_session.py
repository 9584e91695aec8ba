"""One session's chain between hook invocations: what is counted, what is kept, what each turn is called.

Driven with OpenCode's and Pi's events as recorded from the real CLIs (tests/data/hooks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otel_toolchain.hooks import opencode, pi
from otel_toolchain.hooks.session import handle_event
from otel_toolchain.hooks.state import locked_session
from otel_toolchain.manifest import Manifest

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks"


def recorded(cli: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / cli / "payloads.jsonl").read_text().splitlines()]


def test_a_call_handed_over_twice_is_counted_once(tmp_path: Path) -> None:
    wedge = recorded("opencode")[2]  # cat wedge.txt, the same call id every time
    answers = [handle_event(wedge, opencode.READER, Manifest.default(), tmp_path).output for _ in range(30)]
    assert answers == [None] * 30
    with locked_session(tmp_path, wedge["input"]["sessionID"]) as (state, _path):
        assert [row[5] for row in state.calls] == ["call_fake000007"]


def test_an_end_that_comes_after_the_sessions_end_leaves_nothing_behind(tmp_path: Path) -> None:
    call, turn_end, session_end = recorded("pi")[2:5]
    manifest = Manifest.default()
    for event in (call, session_end, turn_end):  # Pi does not wait for agent_end before session_shutdown
        assert handle_event(event, pi.READER, manifest, tmp_path).output is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_each_turn_has_its_own_span_id_and_a_turn_without_calls_is_none(tmp_path: Path) -> None:
    call, turn_end = recorded("pi")[2:4]
    manifest, spans = Manifest.default(), []
    for _ in range(2):
        handle_event(call, pi.READER, manifest, tmp_path)
        with locked_session(tmp_path, call["session_id"]) as (state, _path):
            spans.append(state.span_id)
        handle_event(turn_end, pi.READER, manifest, tmp_path)
        handle_event(turn_end, pi.READER, manifest, tmp_path)  # an end with no call since: no turn
    with locked_session(tmp_path, call["session_id"]) as (state, _path):
        assert (state.turns, state.calls, state.span_id) == (2, [], 0)
    assert len(set(spans)) == 2 and 0 not in spans
