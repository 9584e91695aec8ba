"""What the seam scripts share: the stop to raise, the run's record, and the result file.

A seam script runs a wedged agent (the model asks for ``get_weather`` ``CALLS`` times, the tool
always says the same) and ends it from a callback once the tool ran ``AT`` times, through one
of the framework's own APIs. Each seam runs in its own process (as the captures do) and adds one
entry to ``tests/data/frameworks/seams.json``: how many tool calls ran, how many model requests
were made, what reached the caller (the value returned, or the exception and its cause chain), and
the turn span as exported (name, status, and whether it ended at all).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from spancap import DATA, HERE, Recorder, install

AT = 25
"""The stop comes after this many tool calls (the issue's: the 25th call's span ends, then stop)."""


class Stop(Exception):
    """What a guard raises: stands for ``otel_toolchain.TurnStopped`` in these scripts."""


def chain(exc: BaseException) -> list[str]:
    """The exception and its causes/contexts, outermost first, as ``module.Type: message``."""
    out: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(f"{type(current).__module__}.{type(current).__qualname__}: {str(current)[:200]}")
        current = current.__cause__ or current.__context__
    return out


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    """Run the agent; what the caller got back, or the exception chain it saw."""
    try:
        value = call()
    except BaseException as exc:
        return {"raised": chain(exc), "stop_reached_caller": any(".Stop:" in c for c in chain(exc))}
    return {"returned": str(value)[:300]}


def turn_spans(recorder: Recorder, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The exported spans whose name starts with one of ``names``: name, status, events' names."""
    return [{"name": s.name, "status": s.status.status_code.name, "description": s.status.description,
             "events": [e.name for e in s.events]}
            for s in recorder.spans() if s.name.startswith(names)]


Seam = Callable[[Recorder], dict[str, Any]]


def main(framework: str, seams: dict[str, Seam], *, setup: Callable[[], None] | None = None) -> None:
    """``seam_X.py`` (every seam, each in a child process) or ``seam_X.py SEAM``."""
    parser = argparse.ArgumentParser(description=f"end a wedged {framework} run through its own seams")
    parser.add_argument("seam", nargs="?", choices=tuple(seams))
    args = parser.parse_args()
    if args.seam is None:
        failed = 0
        for name in seams:
            done = subprocess.run([sys.executable, sys.argv[0], name], check=False,
                                  env={**os.environ, "PYTHONPATH": str(HERE)})
            failed += done.returncode != 0
        sys.exit(1 if failed else 0)
    if setup is not None:
        setup()
    recorder = install()
    result = seams[args.seam](recorder)
    path = DATA / "seams.json"
    found = json.loads(path.read_text()) if path.exists() else {}
    found[f"{framework}: {args.seam}"] = result
    DATA.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(found.items())), indent=1) + "\n")
    print(f"{framework}: {args.seam}: {json.dumps(result)[:600]}")
