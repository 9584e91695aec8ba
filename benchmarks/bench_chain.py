"""Cost of the default chain on a tool-call span, as a ratio to the same span with no chain.

Both sides create the same spans through the same recorder (1 KB arguments and results, content
capture on, a BatchSpanProcessor with an exporter that drops), inside turns of 100 calls, turn
ends included; the chain gets each call from the recorder, as under the CLI. Runs alternate
between the two sides, and the reported ratio is the median of the per-round ratios, so machine
noise hits both sides alike. Run: ``python benchmarks/bench_chain.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder

CALLS_PER_TURN = 100
PAD = "x" * 1000


class DropExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def typical_calls() -> list[tuple[str, str, str]]:
    """A working agent: a few tools, commands that recur, 1 KB arguments and results."""
    commands = ["git status", "pytest -q tests/", "cat src/app.py", "ls -la", "make build", "rg TODO src"]
    calls = []
    for i in range(CALLS_PER_TURN):
        tool = ("Bash", "Read", "Edit")[i % 3]
        args = json.dumps({"command": commands[i % len(commands)], "pad": PAD})
        calls.append((tool, args, f"result {i} {PAD}"))
    return calls


def distinct_shell_calls(round_no: int) -> list[tuple[str, str, str]]:
    """Worst case for classify: every shell command new, so nothing is cached."""
    return [("Bash", json.dumps({"command": f"cd /w{round_no} && grep -r n{i} . | head -{i} && make t{i}",
                                 "pad": PAD}), f"out {i} {PAD}") for i in range(CALLS_PER_TURN)]


def make_side(with_chain: bool, plugins: str | None = None, *,
              synchronous: bool = False) -> tuple[AgentRecorder, Callable[[], None]]:
    """A recorder on its own providers; with the default chain, or a chain of the named plugins
    (``"empty"`` for none at all, ``"classify,tool_stats"`` for two). ``synchronous``: a
    SimpleSpanProcessor instead of the batch one, whose worker thread wakes on a timer and so does
    a different amount of work each run (instruction counts want the same work every time)."""
    provider = TracerProvider()
    processor: SpanProcessor = (SimpleSpanProcessor(DropExporter()) if synchronous else
                                BatchSpanProcessor(DropExporter(), max_queue_size=100_000, schedule_delay_millis=50))
    provider.add_span_processor(processor)
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    chain = None
    if with_chain:
        manifest = Manifest.default()
        if plugins is not None:
            names = [] if plugins == "empty" else plugins.split(",")
            manifest = Manifest.from_dict({"agent": {"tool_plugins": [
                {"plugin": name, **({"limit": 25} if name == "repeat_guard" else {})} for name in names]}})
        chain = manifest.toolchain()
        chain.install(None, meter_provider)  # as the CLI does: the recorder hands the chain its calls
    recorder = AgentRecorder(provider, toolchain=chain, capture_content=True)

    def close() -> None:
        provider.shutdown()
        meter_provider.shutdown()

    return recorder, close


def run_turns(recorder: AgentRecorder, calls: list[tuple[str, str, str]], turns: int) -> float:
    """Seconds per call over ``turns`` turns."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(turns):
        turn = recorder.start_turn("bench")
        for tool, args, result in calls:
            turn.tool_call(tool, args, result=result)
        turn.end()
    return (time.perf_counter() - start) / (turns * len(calls))


def measure(name: str, calls_for: Callable[[int], list[tuple[str, str, str]]], rounds: int, turns: int) -> dict[
        str, float | str]:
    bare, bare_close = make_side(False)
    chained, chained_close = make_side(True)
    run_turns(bare, calls_for(-1), 3)
    run_turns(chained, calls_for(-2), 3)  # warm both sides
    ratios, bare_us, chain_us = [], [], []
    for round_no in range(rounds):
        calls = calls_for(round_no)
        if round_no % 2:
            b = run_turns(bare, calls, turns)
            c = run_turns(chained, calls_for(round_no + 10_000), turns)
        else:
            c = run_turns(chained, calls, turns)
            b = run_turns(bare, calls_for(round_no + 10_000), turns)
        ratios.append(c / b)
        bare_us.append(b * 1e6)
        chain_us.append(c * 1e6)
    bare_close()
    chained_close()
    return {"scenario": name, "no_chain_us_per_call": round(statistics.median(bare_us), 1),
            "default_chain_us_per_call": round(statistics.median(chain_us), 1),
            "ratio": round(statistics.median(ratios), 3)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args(argv)
    typical = typical_calls()
    rows = [measure("typical (recurring commands, 1 KB args/results)", lambda _r: typical, args.rounds, args.turns),
            measure("worst case (every shell command distinct)", distinct_shell_calls, args.rounds, args.turns)]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
