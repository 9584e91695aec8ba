"""``analyze`` throughput as a ratio to merely parsing the same JSON lines, and its memory as turns grow.

Speed: both sides read the same files from disk. The parse side opens each file and runs
``json.loads`` on every line, nothing else; the analyze side runs the whole of ``analyze`` (store
reader, per-turn measures by repeat_guard's rule, distributions, labels, the suggestion; the
manifest is loaded once beforehand, as the CLI does). Rounds alternate, and the ratio is the median
of per-round ``parse time / analyze time`` (1.0: as fast as parsing; the goal is at least 0.5).
Two corpora: a composed Claude Code session store (realistic lines: the store's envelope, thinking,
1-2 KB tool results written twice, file-history snapshots; polls and an occasional wedge), and
the real files in ../shared/sessions and ../shared/streams/real.

Memory: tracemalloc's peak while analysing N turns and 10 N turns, both as many session files
and as one long session; flat means the 10 N peak is about the N peak.
Run: ``python benchmarks/bench_analyze.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otel_toolchain.analyze import analyze
from otel_toolchain.manifest import Manifest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
_OUT = ("src/app.py:12: def handler(event):\n" + "    x = compute(event)  # a line of output\n" * 30)[:1500]


class SessionWriter:
    """Claude Code session-store lines, shaped like real ones."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.lines: list[str] = []
        self.n = 0
        self.clock = 1_760_000_000

    def _envelope(self, kind: str, **fields: Any) -> None:
        self.n += 1
        self.clock += 1
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock)) + f".{self.n % 1000:03d}Z"
        line = {"parentUuid": f"uuid-{self.n - 1}", "isSidechain": False, "userType": "external",
                "cwd": "/home/me/project", "sessionId": self.session, "version": "2.1.15", "gitBranch": "main",
                "type": kind, **fields, "uuid": f"uuid-{self.n}", "timestamp": stamp}
        self.lines.append(json.dumps(line, separators=(",", ":")))  # compact, as the CLI writes

    def prompt(self, text: str) -> None:
        self._envelope("user", message={"role": "user", "content": text})

    def call(self, tool: str, arguments: dict[str, Any], output: str, failed: bool = False) -> None:
        call_id = f"toolu_{self.session}_{self.n}"
        message_id = f"msg_{self.session}_{self.n}"  # the blocks of one response share their message's id
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 812, "cache_read_input_tokens": 24180,
                 "output_tokens": 96, "service_tier": "standard"}
        self._envelope("assistant", requestId=f"req_{self.n}", message={
            "model": "claude-opus-4-5-20251101", "id": message_id, "type": "message", "role": "assistant",
            "content": [{"type": "thinking", "thinking": "Let me look at this next. " * 12, "signature": "Eo" * 90}],
            "stop_reason": None, "stop_sequence": None, "usage": usage})
        self._envelope("assistant", requestId=f"req_{self.n}", message={
            "model": "claude-opus-4-5-20251101", "id": message_id, "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": arguments}],
            "stop_reason": None, "stop_sequence": None, "usage": usage})
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": output}
        if failed:
            block["is_error"] = True
        self._envelope("user", message={"role": "user", "content": [block]}, sourceToolAssistantUUID=f"uuid-{self.n}",
                       toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False})

    def turn(self, number: int) -> None:
        self.prompt(f"please fix issue {number} and run the tests")
        for i in range(18):
            tool = ("Read", "Grep", "Bash", "Edit")[i % 4]
            arguments = {"file_path": f"src/m{number}_{i}.py"} if tool != "Bash" else {
                "command": f"pytest -q tests/test_{number}_{i}.py", "description": "Run the tests"}
            self.call(tool, arguments, f"{_OUT} [{number}.{i}]", failed=i % 9 == 8)
        if number % 10 == 0:
            for _ in range(6):
                self.call("TaskOutput", {"task_id": f"b{number}", "block": False}, "<status>not_ready</status>")
        if number % 100 == 50:
            for _ in range(30):
                self.call("Bash", {"command": "make build"}, "Exit code 2\nerror: missing header", failed=True)
        self._envelope("system", subtype="turn_duration", durationMs=81234, isMeta=False)


def write_store(folder: Path, turns: int, per_file: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for start in range(0, turns, per_file):
        writer = SessionWriter(f"s{start}")
        for number in range(start, min(turns, start + per_file)):
            writer.turn(number)
        path = folder / f"s{start:06d}.jsonl"
        path.write_text("\n".join(writer.lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def parse_only(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                json.loads(line)
    return time.perf_counter() - start


def analyze_all(paths: list[Path], manifest: Manifest) -> tuple[float, int]:
    start = time.perf_counter()
    analysis = analyze(paths, manifest=manifest)
    return time.perf_counter() - start, analysis.aggregate.turns


def speed(paths: list[Path], rounds: int, manifest: Manifest) -> dict[str, Any]:
    parse_only(paths)
    _, turns = analyze_all(paths, manifest)
    ratios, parse_rates, analyze_rates = [], [], []
    lines = sum(1 for path in paths for _ in path.open(encoding="utf-8"))
    for round_no in range(rounds):
        if round_no % 2:
            parsed, (analysed, _) = parse_only(paths), analyze_all(paths, manifest)
        else:
            (analysed, _), parsed = analyze_all(paths, manifest), parse_only(paths)
        ratios.append(parsed / analysed)
        parse_rates.append(lines / parsed)
        analyze_rates.append(lines / analysed)
    size = sum(path.stat().st_size for path in paths)
    return {"files": len(paths), "lines": lines, "turns": turns, "mb": round(size / 1e6, 1),
            "parse_lines_per_s": round(statistics.median(parse_rates)),
            "analyze_lines_per_s": round(statistics.median(analyze_rates)),
            "ratio": round(statistics.median(ratios), 3), "goal": ">= 0.5"}


def peak(paths: list[Path], manifest: Manifest) -> int:
    tracemalloc.start()
    try:
        analyze(paths, manifest=manifest)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory(folder: Path, turns: int, manifest: Manifest) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for shape, per_file in (("files_of_50_turns", 50), ("one_session", None)):
        small = write_store(folder / f"{shape}-n", turns, per_file or turns)
        large = write_store(folder / f"{shape}-10n", 10 * turns, per_file or 10 * turns)
        low, high = peak(small, manifest), peak(large, manifest)
        result[shape] = {"turns": [turns, 10 * turns], "peak_kb": [low // 1024, high // 1024],
                         "growth": round(high / low, 2)}
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=400, help="turns in the composed store (N for memory: a tenth)")
    args = parser.parse_args(argv)
    manifest = Manifest.default()
    with tempfile.TemporaryDirectory() as tmp:
        store = write_store(Path(tmp) / "store", args.turns, 50)
        real = sorted((SHARED / "sessions").rglob("*.jsonl")) + sorted((SHARED / "streams" / "real").rglob("*.jsonl"))
        print(json.dumps({"speed_composed_store": speed(store, args.rounds, manifest)}))
        print(json.dumps({"speed_real_files": speed(real, args.rounds, manifest)}))
        print(json.dumps({"memory": memory(Path(tmp), max(10, args.turns // 10), manifest)}))


if __name__ == "__main__":
    main()
