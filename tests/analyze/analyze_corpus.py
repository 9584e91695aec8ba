"""A corpus with known answers, composed as Claude Code stream-json runs (one file per run).

Each turn is a list of calls ``(tool, input, result, failed)``. The stock turns:

- ``healthy_poll``: 40 ``sleep 30 && tail`` polls whose output changes every time (no repeat),
  then a TaskOutput poll that sees ``not_ready`` 8 times before the task finishes (benign, peak 8);
- ``healthy_varied``: 20 different calls, 3 of them failing in a row;
- ``wedge(period, repeats)``: the same cycle of ``period`` calls, with the same results, ``repeats`` times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Call = tuple[str, dict[str, Any], str, bool]


def healthy_poll() -> list[Call]:
    polls = [("Bash", {"command": "sleep 30 && tail -n 1 build.log"}, f"step {i} of 40", False) for i in range(40)]
    waits = [("TaskOutput", {"task_id": "b1", "block": False}, "<retrieval_status>not_ready</retrieval_status>", False)
             for _ in range(8)]
    return [*polls, *waits, ("TaskOutput", {"task_id": "b1", "block": False}, "done: 0 failures", False)]


def healthy_varied() -> list[Call]:
    calls: list[Call] = [("Read", {"file_path": f"/w/src/m{i}.py"}, f"source {i}", False) for i in range(17)]
    calls += [("Bash", {"command": f"pytest -q tests/t{i}.py"}, f"Exit code 1\nfailure {i}", True) for i in range(3)]
    return calls


_CYCLE = [("Bash", {"command": "make build"}, "Exit code 2\nerror: missing header", True),
          ("Read", {"file_path": "/w/Makefile"}, "all: build", False),
          ("Edit", {"file_path": "/w/Makefile", "old_string": "a", "new_string": "a"}, "no change", False)]


def wedge(period: int, repeats: int) -> list[Call]:
    return [_CYCLE[i % period] for i in range(period * repeats)]


def claude_stream(turns: list[list[Call]], session: str = "s-1") -> str:
    """One run: each turn an init, its calls (a tool_use line and a tool_result line each), a result."""
    lines: list[dict[str, Any]] = []
    number = 0
    for calls in turns:
        lines.append({"type": "system", "subtype": "init", "session_id": session, "model": "m", "cwd": "/w"})
        for tool, arguments, result, failed in calls:
            number += 1
            call_id = f"toolu_{number}"
            lines.append({"type": "assistant", "session_id": session, "message": {
                "id": f"msg_{number}", "model": "m",
                "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": arguments}]}})
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": result}
            if failed:
                block["is_error"] = True
            lines.append({"type": "user", "session_id": session, "message": {"role": "user", "content": [block]}})
        lines.append({"type": "result", "subtype": "success", "is_error": False, "session_id": session})
    return "".join(json.dumps(line) + "\n" for line in lines)


def write_corpus(folder: Path) -> dict[str, Path]:
    """The stock corpus, one run per file: three healthy runs and one wedge of each period."""
    runs = {
        "healthy-poll": [healthy_poll()],
        "healthy-varied": [healthy_varied(), healthy_varied()],
        "healthy-mixed": [healthy_varied(), healthy_poll()],
        "wedge-p1": [healthy_varied(), wedge(1, 30)],
        "wedge-p2": [wedge(2, 30)],
        "wedge-p3": [wedge(3, 30)],
    }
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, turns in runs.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text(claude_stream(turns, session=f"s-{name}"), encoding="utf-8")
    return paths


LABELS_CSV = "run,label\nhealthy-poll,healthy\nhealthy-varied,healthy\nhealthy-mixed,healthy\n" \
             "wedge-p1,wedged\nwedge-p2,wedged\nwedge-p3,wedged\n"
