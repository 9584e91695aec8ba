"""CPU instructions per tool call, counted by callgrind: the default chain against no chain, same spans.

Wall time on these shared machines is noisy; instruction counts repeat to a few per cent whatever
else runs. Each side runs in its own process under ``valgrind --tool=callgrind``, twice: once
with ``--calls N`` and once with no calls at all (imports, provider set-up, shutdown), and the
difference is what N calls cost. The ratio compares those per-call costs.

Workloads (the same as ``bench_chain``): turns of 100 calls through :class:`AgentRecorder`, 1 KB
arguments and results, content capture on, an exporter that drops behind a SimpleSpanProcessor
(the batch processor's timer thread does a different amount of work each run; ``bench_chain``
times the batch processor).

Run: ``python benchmarks/bench_instructions.py`` (needs valgrind; a few minutes).
Pieces: ``--side none|default|<plugin>`` runs one side in this process (what the parent runs under
callgrind).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_chain import distinct_shell_calls, make_side, typical_calls  # noqa: E402
from callgrind import count_instructions  # noqa: E402

SIDES = ("none", "default")


def run_side(side: str, workload: str, calls: int, turns: int) -> None:
    """The measured process: ``calls`` tool calls of ``workload`` on one side, in turns of 100.

    The workload's ``turns`` turns are built first whatever ``calls`` is, so that building them is
    no part of the difference between a run with calls and one without.
    """
    recorder, close = make_side(side != "none", plugins=None if side in ("none", "default") else side,
                                synchronous=True)
    built = [typical_calls() if workload == "typical" else distinct_shell_calls(n) for n in range(turns)]
    made = 0
    for turn_calls in built:
        if made >= calls:
            break
        turn = recorder.start_turn("bench")
        for tool, arguments, result in turn_calls[: calls - made]:
            turn.tool_call(tool, arguments, result=result)
        turn.end()
        made += len(turn_calls[: calls - made])
    close()


def instructions(side: str, workload: str, calls: int, turns: int) -> int:
    """Total instructions callgrind counts for one run of a side."""
    args = ["--side", side, "--workload", workload, "--calls", str(calls), "--turns", str(turns)]
    return count_instructions(__file__, args, side)


def per_call(side: str, workload: str, calls: int) -> float:
    turns = -(-calls // 100)
    return (instructions(side, workload, calls, turns) - instructions(side, workload, 0, turns)) / calls


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", help="run one side in this process (used under callgrind)")
    parser.add_argument("--workload", choices=("typical", "distinct"), default="typical")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--workloads", nargs="*", choices=("typical", "distinct"), default=["typical", "distinct"])
    parser.add_argument("--plugins", nargs="*", default=[],
                        help="also measure a chain of just each of these plugins (where the cost goes)")
    args = parser.parse_args(argv)
    if args.side is not None:
        run_side(args.side, args.workload, args.calls, args.turns)
        return
    for workload in args.workloads:
        counts = {side: per_call(side, workload, args.calls) for side in (*SIDES, *args.plugins)}
        for plugin in args.plugins:
            print(json.dumps({"workload": workload, "chain": plugin,
                              "extra_instructions_per_call": round(counts[plugin] - counts["none"])}))
        print(json.dumps({"workload": workload, "calls": args.calls,
                          "no_chain_instructions_per_call": round(counts["none"]),
                          "default_chain_instructions_per_call": round(counts["default"]),
                          "ratio": round(counts["default"] / counts["none"], 3)}))


if __name__ == "__main__":
    main()
