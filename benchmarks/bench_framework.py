"""The chain's added cost on a real framework's run: pydantic-ai with a fake model, chain against no chain.

Every side runs the same pydantic-ai agent, natively instrumented (spans to a BatchSpanProcessor
whose exporter drops them), driven by a FunctionModel that asks for ``--calls`` tool calls whose
results change (a healthy run: nothing is stopped) and then answers. The sides:

- ``none``: instrumented, no chain;
- ``chain``: the default chain (repeat_guard, classify, tool_stats) on the same provider;
- ``chain+capability``: that chain plus ``ToolchainCapability``, the in-process stop and nudges.

Rounds alternate the order of the sides; each figure is the median over rounds. Two ratios per
side: the ratio of the medians, and the median of the per-round ratios (which machine noise
hits less, since the sides of a round run back to back). Run:
``python benchmarks/bench_framework.py [--rounds 15 --runs 20 --calls 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from collections.abc import Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from otel_toolchain.integrations.pydantic_ai import ToolchainCapability
from otel_toolchain.manifest import Manifest

SIDES = ("none", "chain", "chain+capability")


class DropExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def make_agent(side: str, calls: int) -> tuple[Agent[None, str], TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropExporter(), max_queue_size=100_000, schedule_delay_millis=50))
    capabilities = []
    if side != "none":
        chain = Manifest.default().toolchain().install(provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
        if side == "chain+capability":
            capabilities.append(ToolchainCapability(chain))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if m.kind == "response")
        if step < calls:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"src/{step % 5}.py"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), name="bench", capabilities=capabilities)
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    counter = iter(range(10**9))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return f"{path}: version {next(counter)}"

    return agent, provider


async def runs(agent: Agent[None, str], count: int) -> float:
    """Seconds per run over ``count`` runs."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(count):
        await agent.run("read the sources")
    return (time.perf_counter() - start) / count


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=20, help="agent runs per side per round")
    parser.add_argument("--calls", type=int, default=20, help="tool calls per run")
    args = parser.parse_args(argv)
    built = {side: make_agent(side, args.calls) for side in SIDES}
    loop = asyncio.new_event_loop()
    for agent, _ in built.values():
        loop.run_until_complete(runs(agent, 3))  # warm up
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_no in range(args.rounds):
        order = SIDES if round_no % 2 == 0 else tuple(reversed(SIDES))
        for side in order:
            seconds[side].append(loop.run_until_complete(runs(built[side][0], args.runs)))
    loop.close()
    for _, provider in built.values():
        provider.shutdown()
    per_call = {side: statistics.median(s) / args.calls * 1e6 for side, s in seconds.items()}
    row = {"framework": "pydantic-ai", "calls_per_run": args.calls, "rounds": args.rounds, "runs": args.runs,
           **{f"{side}_us_per_call": round(us, 1) for side, us in per_call.items()}}
    for side in SIDES[1:]:
        row[f"{side}_ratio_of_medians"] = round(per_call[side] / per_call["none"], 3)
        row[f"{side}_median_ratio"] = round(statistics.median(
            c / n for c, n in zip(seconds[side], seconds["none"], strict=True)), 3)
        row[f"{side}_added_us_per_call"] = round(per_call[side] - per_call["none"], 1)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
