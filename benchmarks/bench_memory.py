"""Memory per open turn: what the default chain keeps for a turn that has not ended, beyond its span.

Both sides open the same turns through the same recorder (a BatchSpanProcessor and an exporter that
drops, content capture on) and make the same calls in each (``--calls``, typical mix, 1 KB arguments
and results), then leave every turn open. The open turn spans are on both sides; what the chain adds
is its per-turn state (the turn, the plugins' counters, the calls repeat_guard must remember). Each
side runs in a fresh process; the figure is tracemalloc's current size after a full collection,
divided by the turns, chain side minus chain-less side.

Run: ``python benchmarks/bench_memory.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_chain import make_side, typical_calls  # noqa: E402


def measure(with_chain: bool, turns: int, calls: int) -> int:
    """Bytes held after opening ``turns`` turns of ``calls`` calls each and ending none of them."""
    recorder, close = make_side(with_chain)
    work = typical_calls()[:calls]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = []
    for _ in range(turns):
        turn = recorder.start_turn("bench")
        for tool, arguments, result in work:
            turn.tool_call(tool, arguments, result=result)
        kept.append(turn)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    close()
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--calls", type=int, nargs="*", default=[1, 10, 100])
    parser.add_argument("--side", choices=("none", "default"), help="run one side here (used by the parent)")
    args = parser.parse_args()
    if args.side:
        print(measure(args.side == "default", args.turns, args.calls[0]))
        return
    rows = []
    for calls in args.calls:
        held = {side: int(subprocess.run([sys.executable, __file__, "--side", side, "--turns", str(args.turns),
                                          "--calls", str(calls)], check=True, capture_output=True,
                                         text=True).stdout) for side in ("none", "default")}
        per_turn = (held["default"] - held["none"]) / args.turns
        rows.append({"calls_per_turn": calls, "none_bytes_per_turn": held["none"] / args.turns,
                     "default_bytes_per_turn": held["default"] / args.turns, "chain_bytes_per_turn": per_turn})
        print(f"{calls:>4} calls per open turn: span side {held['none'] / args.turns:>8.0f} B/turn, "
              f"with the chain {held['default'] / args.turns:>8.0f} B/turn, the chain's share {per_turn:>6.0f} B/turn")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
