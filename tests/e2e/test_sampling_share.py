"""The tail sampler's share on a realistic mix: every real recording in ../shared, replayed through the
agent config's real Collector into Jaeger.

The recordings (real Claude Code, Codex and Pi streams and session stores) are all healthy runs in the
repeat_guard sense; some turns failed (the harness reported an error, or the session ended mid-turn) and
many have failed tool calls. Jaeger must hold exactly the traces the policies name
(sampling_policy.expected_keep); the measured shares, and the share the old "any ERROR span" policy would
have kept, are printed for collector-config/README.md. Skipped, like every test that needs ../shared,
when that folder is absent.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import yaml

from .agent_stack import AgentStack
from .backends_stack import CONFIG_DIR
from .e2e_alert_stack import Deadline, wait_for
from .runs import replay_through_tap
from .sampling_policy import expected_keep, old_keep, probabilistic_from

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[3] / "shared"


def recordings() -> list[Path]:
    streams = SHARED / "streams"
    return [*sorted((streams / "real").rglob("*.jsonl")), *sorted((streams / "samples").glob("*.jsonl")),
            *sorted((SHARED / "sessions").rglob("*.jsonl"))]


def test_sampling_share_on_the_real_recordings(agent_stack: AgentStack) -> None:
    if not (SHARED / "streams").is_dir() or not (SHARED / "sessions").is_dir():
        pytest.skip(f"{SHARED} is absent: the real recordings live there")
    files = recordings()
    replayed = replay_through_tap(agent_stack, [[str(f) for f in files]], Deadline(90))
    offered = replayed.offered
    tail = yaml.safe_load((CONFIG_DIR / "otelcol-agent.yaml").read_text())["processors"]["tail_sampling"]
    sampler = probabilistic_from(tail)
    expected = {t: expected_keep(spans, sampler) for t, spans in offered.items()}
    kept = {t for t, why in expected.items() if why}
    deadline = Deadline(60)
    for trace_id in sorted(kept):
        wait_for(f"kept trace {trace_id}", partial(agent_stack.jaeger.trace, trace_id), deadline,
                 explain=agent_stack.diagnostics)
    stray = [t for t in offered if t not in kept and agent_stack.jaeger.trace(t) is not None]
    assert stray == []
    assert replayed.decisions == {"true": len(kept), "false": len(offered) - len(kept)}
    n = len(offered)
    by = {why: sum(1 for w in expected.values() if w == why) for why in set(expected.values())}
    old = [old_keep(spans, sampler) for spans in offered.values()]
    failed_calls = sum(1 for spans in offered.values() if any(s.status_code == 2 and
                       s.attributes.get("gen_ai.operation.name") == "execute_tool" for s in spans))
    print(f"\nrealistic mix: {len(files)} files, {n} traces; kept {len(kept)} ({len(kept) / n:.1%}): {by}; "
          f"traces with a failed tool call: {failed_calls} ({failed_calls / n:.1%}); the old policy would keep "
          f"{sum(1 for o in old if o)} ({sum(1 for o in old if o) / n:.1%}), "
          f"{old.count('keep-failed')} of them by any ERROR span")
    # The point of keep-failed-turns: failed tool calls alone no longer keep most traces.
    assert len(kept) < sum(1 for o in old if o)
