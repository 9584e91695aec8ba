"""Replay throughput with the default chain, as a ratio to parsing the same lines into the same spans without it.

Both sides read the project's own recordings of the four real CLIs (tests/data/recordings, wedged
and healthy runs) and the example streams (``--shared`` adds the public Claude Code runs in
../shared/streams/real when that folder is there) with the same stream readers, and build the
same spans through the same recorder and a BatchSpanProcessor with an exporter that drops; only
the chain differs. Rounds alternate and the ratio is the median of per-round ratios. Also: stop
latency of ``otel-toolchain run``, from the arrival of the line that completes a cycle to the
harness's process group being gone. ``--instructions`` counts the same replay's CPU instructions with
callgrind instead (steadier than wall time on a shared machine): each side replays the corpus once
and three times in a process of its own, and the difference, halved, is one warm replay. Run:
``python benchmarks/bench_replay.py [--instructions]``.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from callgrind import count_instructions
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_toolchain.cli.replay import replay_lines
from otel_toolchain.harnesses.live import run_harness
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "streams"
FAKE = REPO / "tests" / "fixtures" / "fake_claude.py"


class DropExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def corpus(shared: bool = False) -> list[tuple[str, list[str]]]:
    recordings = REPO / "tests" / "data" / "recordings"
    files = sorted(p for p in recordings.glob("*/*.jsonl") if not p.name.endswith(".session.jsonl"))
    files += sorted((REPO / "examples" / "streams").glob("*.jsonl"))
    if shared:
        files += sorted((SHARED / "real" / "claude-code").glob("*.jsonl"))
    return [(str(path), path.read_text(encoding="utf-8").splitlines(keepends=True)) for path in files]


def make_recorder(with_chain: bool) -> AgentRecorder:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropExporter(), max_queue_size=100_000))
    chain = None
    if with_chain:
        chain = Manifest.default().toolchain()
        # as the CLI does: the recorder hands the chain its calls, the chain is no span processor
        chain.install(None, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return AgentRecorder(provider, toolchain=chain)


def replay_all(recorder: AgentRecorder, files: list[tuple[str, list[str]]]) -> tuple[float, int]:
    start = time.perf_counter()
    calls = 0
    for source, lines in files:
        calls += sum(o.calls for o in replay_lines(lines, recorder, source=source))
    return time.perf_counter() - start, calls


def throughput(rounds: int, shared: bool = False) -> dict[str, float]:
    files = corpus(shared)
    bare, chained = make_recorder(False), make_recorder(True)
    replay_all(bare, files)
    replay_all(chained, files)
    ratios, bare_rates, chain_rates = [], [], []
    for round_no in range(rounds):
        order = (bare, chained) if round_no % 2 else (chained, bare)
        timings = {id(r): replay_all(r, files) for r in order}
        (b, calls), (c, _) = timings[id(bare)], timings[id(chained)]
        ratios.append(c / b)
        bare_rates.append(calls / b)
        chain_rates.append(calls / c)
    return {"files": len(files), "calls_per_replay": calls,
            "no_chain_calls_per_s": round(statistics.median(bare_rates)),
            "default_chain_calls_per_s": round(statistics.median(chain_rates)),
            "ratio": round(statistics.median(ratios), 3)}


def stop_latency(runs: int) -> dict[str, float]:
    latencies = []
    for _ in range(runs):
        recorder = make_recorder(True)
        result = run_harness([sys.executable, str(FAKE), "wedge"], recorder, out=io.BytesIO(), grace_s=2.0)
        latencies.extend(result.stop_latencies_s)
    latencies.sort()
    return {"runs": runs, "median_ms": round(statistics.median(latencies) * 1000, 1),
            "p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))] * 1000, 1),
            "max_ms": round(latencies[-1] * 1000, 1)}


def instructions(shared: bool = False) -> dict[str, float]:
    """Instructions per warm replay of the corpus, each side counted by callgrind in a process of its own."""
    extra = ["--shared"] if shared else []
    per_replay = {}
    for side in ("none", "default"):
        once, thrice = (count_instructions(__file__, ["--side", side, "--replays", str(n), *extra], f"{side} x{n}")
                        for n in (1, 3))
        per_replay[side] = (thrice - once) / 2
    return {"no_chain_instructions": round(per_replay["none"]),
            "default_chain_instructions": round(per_replay["default"]),
            "ratio": round(per_replay["default"] / per_replay["none"], 3)}


def _side(side: str, replays: int, shared: bool) -> None:
    files = corpus(shared)
    recorder = make_recorder(side == "default")
    for _ in range(replays):
        replay_all(recorder, files)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--stop-runs", type=int, default=10)
    parser.add_argument("--shared", action="store_true", help="add the public runs in ../shared/streams/real")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind instead")
    parser.add_argument("--side", choices=("none", "default"), help="replay one side here (used under callgrind)")
    parser.add_argument("--replays", type=int, default=1)
    args = parser.parse_args(argv)
    if args.side:
        _side(args.side, args.replays, args.shared)
        return
    if args.instructions:
        print(json.dumps({"replay_instructions": instructions(args.shared)}))
        return
    print(json.dumps({"replay": throughput(args.rounds, args.shared)}))
    if args.stop_runs > 0:  # --stop-runs 0: throughput only
        print(json.dumps({"stop_latency": stop_latency(args.stop_runs)}))


if __name__ == "__main__":
    main()
