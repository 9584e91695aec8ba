"""What normalising call identity costs repeat_guard, in CPU instructions per call counted by callgrind.

Two sides count the same calls with :class:`~otel_toolchain.plugins.repeat_guard.RepeatCounter` (the
guard's own rule, no chain, no spans): ``exact`` compares failed results byte for byte
(``mask_failures=False, unordered_failures=False``), ``normalised`` masks their volatile tokens and
compares their lines in any order (the default). Only failed results are normalised, once per text
(cached), so the cost should show only where failures are new texts. Each side runs under
``valgrind --tool=callgrind`` twice (with N calls and with none) and the difference is what N calls cost.

Workloads, 1 KB results, in turns of 100 calls:

- ``success``: the same successful call again and again (a poll that sees the same output);
- ``same_failure``: the same failing test run, its output identical each time (cache hits);
- ``volatile_failure``: the same failing test run, its run time and temp dir new each call (every text
  new: a mask per call; the case normalising exists for);
- ``distinct_failures``: a different failure each call (nothing repeats; the worst case).

Run: ``python benchmarks/bench_normalise.py`` (needs valgrind; a minute or two).
``--side exact|normalised --workload W`` runs one side in this process (what the parent runs under callgrind).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from callgrind import count_instructions

from otel_toolchain.calls import ToolCall
from otel_toolchain.identity import Identity
from otel_toolchain.plugins.repeat_guard import RepeatCounter

WORKLOADS = ("success", "same_failure", "volatile_failure", "distinct_failures")
SIDES = ("exact", "normalised")
_BODY = "".join(f"tests/test_mod.py::test_case_{n} PASSED\n" for n in range(18))


def result_text(workload: str, n: int) -> tuple[str, bool]:
    """The result of call ``n`` (about 1 KB) and whether it failed."""
    if workload == "success":
        return _BODY + "18 passed in 0.40s\n", False
    if workload == "same_failure":
        return _BODY + "E   assert 3 == 4\n1 failed, 18 passed in 0.40s\n", True
    if workload == "volatile_failure":
        return (_BODY + f"E   AssertionError: see /tmp/pytest-of-ci/pytest-{n}/report.txt\n"
                f"1 failed, 18 passed in {n % 97 / 100 + 0.2:.2f}s\n"), True
    return _BODY + f"E   assert {n} == {n + 1}\n1 failed, 18 passed in 0.40s\n", True


def calls_of(workload: str, count: int) -> list[ToolCall]:
    """The workload's calls, built before counting starts."""
    calls = []
    for n in range(count):
        result, failed = result_text(workload, n)
        calls.append(ToolCall("Bash", '{"command":"python -m pytest -q"}', result, failed, None, f"c{n}", None,
                              n * 1000, n * 1000 + 500, 1))
    return calls


def run_side(side: str, workload: str, calls: int, built: int) -> None:
    """Count ``calls`` of the ``built`` calls of ``workload``, in turns of 100 (a new counter per turn)."""
    made = calls_of(workload, built)
    identity = Identity() if side == "normalised" else Identity(mask_failures=False, unordered_failures=False)
    counter = RepeatCounter(3, identity)
    for index, call in enumerate(made[:calls]):
        if index % 100 == 0:
            counter = RepeatCounter(3, identity)
        counter.add(call)


def instructions(side: str, workload: str, calls: int, built: int) -> int:
    """Total instructions callgrind counts for one run of a side."""
    args = ["--side", side, "--workload", workload, "--calls", str(calls), "--built", str(built)]
    return count_instructions(__file__, args, f"{side}/{workload}")


def per_call(side: str, workload: str, calls: int) -> float:
    return (instructions(side, workload, calls, calls) - instructions(side, workload, 0, calls)) / calls


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--side", choices=SIDES, help="run one side in this process (used under callgrind)")
    parser.add_argument("--workload", choices=WORKLOADS, default="success")
    parser.add_argument("--workloads", nargs="*", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--built", type=int, default=2000)
    args = parser.parse_args(argv)
    if args.side is not None:
        run_side(args.side, args.workload, args.calls, args.built)
        return
    for workload in args.workloads:
        counts = {side: per_call(side, workload, args.calls) for side in SIDES}
        print(json.dumps({"workload": workload, "calls": args.calls,
                          "exact_instructions_per_call": round(counts["exact"]),
                          "normalised_instructions_per_call": round(counts["normalised"]),
                          "ratio": round(counts["normalised"] / counts["exact"], 3)}), flush=True)


if __name__ == "__main__":
    main()
