"""Stop evidence, whole: ``replay --format json``'s stop, the turn span's stop event and its words.

A real recording (Claude Code 2.1.332 running the same failing ``cargo test``, tests/data/recordings) is
replayed through the real command with the early chain and a fixed digest key; the expected figures
are read from the recording's own lines here (call order, ISO stamps, per-message usage), not from
otel_toolchain. Nothing is faked.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.cli import main
from otel_toolchain.outcome import evidence
from otel_toolchain.signals import StopSignal

DATA = Path(__file__).resolve().parents[1] / "data" / "recordings"
CARGO = DATA / "claude" / "cargo_test_fail.jsonl"
EARLY = '[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 25\nlimits = { 1 = 4, 2 = 3, 3 = 3 }\n'


def stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def calls_of(path: Path) -> list[dict[str, Any]]:
    """Per tool call, in order: id, use and result stamps, and the usage of the message that asked for it."""
    calls: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        for block in obj.get("message", {}).get("content", []) if obj.get("type") in ("assistant", "user") else []:
            if block.get("type") == "tool_use":
                usage = obj["message"]["usage"]
                calls[block["id"]] = {"id": block["id"], "use": stamp(obj["timestamp"]),
                                      "tokens": usage["input_tokens"] + usage["output_tokens"]}
            elif block.get("type") == "tool_result":
                calls[block["tool_use_id"]]["done"] = stamp(obj["timestamp"])
                calls[block["tool_use_id"]]["text"] = block["content"] if isinstance(block["content"], str) else \
                    "".join(b.get("text", "") for b in block["content"])
    return list(calls.values())


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the turn's JSON line, the attributes of the stop event in the exported spans)."""
    out = tmp_path_factory.mktemp("evidence")
    (out / "early.toml").write_text(EARLY)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(out))
        patch.setenv("OTEL_TOOLCHAIN_DIGEST_KEY", "evidence-test")
        for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            patch.delenv(var, raising=False)
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            assert main(["replay", "--format", "json", "--manifest", str(out / "early.toml"), str(CARGO)]) == 75
    events = []
    for line in (out / "traces.jsonl").read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    events += [e for e in span.get("events", []) if e["name"] == "otel_toolchain.turn.stop"]
    return json.loads(printed.getvalue()), events


def test_replay_json_carries_the_whole_evidence(replayed: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """The first `cargo test` compiles; its `Compiling` line is build progress, so the loop begins at call 1."""
    turn, _ = replayed
    calls = calls_of(CARGO)
    loop = calls[0:4]
    seconds = (loop[-1]["done"] - loop[0]["use"]).total_seconds()
    stop = turn["stopped"]
    digest = stop["cycle"][0]["digest"]
    assert len(digest) == 32 and int(digest, 16) >= 0
    assert stop == {
        "plugin": "repeat_guard", "reason": "the same call (Bash) repeated 4 times in a row with the same results",
        "at_call": 4, "period": 1, "repeats": 4, "loop_start": 1, "loop_calls": 4, "loop_seconds": round(seconds, 3),
        "loop_tokens": sum(call["tokens"] for call in loop), "ignored_fields": ["description"], "masked": True,
        # cargo prints a build hash (calc-<16 hex>), the panic's thread id, the run time; stdout and stderr interleave
        "masks": ["hex id", "thread id", "duration", "line order"], "note": None,
        "cycle": [{"tool": "Bash", "call_id": calls[3]["id"], "digest": digest}],
    }
    assert "panicked" in calls[3]["text"] and "finished in" in calls[3]["text"]
    assert "   Compiling calc v0.1.0" in calls[0]["text"] and "Compiling" not in calls[1]["text"]


def test_the_stop_event_carries_the_same_evidence(replayed: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    turn, events = replayed
    stop = turn["stopped"]
    assert len(events) == 1
    attributes = {a["key"]: a["value"] for a in events[0]["attributes"]}
    strings = ["hex id", "thread id", "duration", "line order"]
    assert attributes == {
        "otel_toolchain.plugin": {"stringValue": "repeat_guard"},
        "otel_toolchain.stop.reason": {"stringValue": "repeated_cycle"},
        "otel_toolchain.stop.message": {"stringValue": stop["reason"]},
        "otel_toolchain.stop.period": {"intValue": "1"},
        "otel_toolchain.stop.repeats": {"intValue": "4"},
        "otel_toolchain.stop.at_call": {"intValue": "4"},
        "otel_toolchain.stop.loop.start": {"intValue": "1"},
        "otel_toolchain.stop.loop.calls": {"intValue": "4"},
        "otel_toolchain.stop.loop.seconds": {"doubleValue": pytest.approx(stop["loop_seconds"], abs=5e-4)},
        "otel_toolchain.stop.loop.tokens": {"intValue": str(stop["loop_tokens"])},
        "otel_toolchain.stop.ignored_fields": {"arrayValue": {"values": [{"stringValue": "description"}]}},
        "otel_toolchain.stop.masked": {"boolValue": True},
        "otel_toolchain.stop.masks": {"arrayValue": {"values": [{"stringValue": s} for s in strings]}},
        "otel_toolchain.stop.cycle.tools": {"arrayValue": {"values": [{"stringValue": "Bash"}]}},
        "otel_toolchain.stop.cycle.call_ids": {"arrayValue": {"values": [
            {"stringValue": stop["cycle"][0]["call_id"]}]}},
        "otel_toolchain.stop.cycle.digests": {"arrayValue": {"values": [{"stringValue": stop["cycle"][0]["digest"]}]}},
    }


def test_evidence_in_words() -> None:
    """What ``run``'s stop line ends with (and what a text summary can show)."""
    signal = StopSignal("repeat_guard", "repeated_cycle", "r", 1, 1, 1, 4, 5, (), loop_start=2, loop_calls=4,
                        loop_seconds=0.68, loop_tokens=52, ignored_fields=("description",), masked=True,
                        masks=("thread id", "duration"))
    assert evidence(signal) == ("loop from call 2: 4 calls, 0.7 s, 52 tokens; ignored description; "
                                "masked thread id, duration")
    bare = StopSignal("repeat_guard", "repeated_cycle", "r", 1, 1, 1, 25, 25, (), loop_start=1, loop_calls=25)
    assert evidence(bare) == "loop from call 1: 25 calls, 0.0 s"
