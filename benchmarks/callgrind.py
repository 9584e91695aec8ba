"""Count the CPU instructions one Python process executes, under ``valgrind --tool=callgrind``.

Shared by the instruction benchmarks: each runs its measured side as a child of itself under callgrind,
with the hash seed fixed so that dict and set layouts (and so the counts) repeat from run to run.
Blocks until the child ends; raises SystemExit, naming ``label``, when valgrind fails or writes no summary.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path


def count_instructions(script: str, args: Sequence[str], label: str) -> int:
    """Total instructions callgrind counts for ``python script *args``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no",
                   sys.executable, script, *args]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
                              check=False)
        if done.returncode != 0:
            raise SystemExit(f"callgrind failed for {label}: {done.stderr[-2000:]}")
        summary = re.search(r"^summary: (\d+)", out.read_text(encoding="utf-8"), re.MULTILINE)
        if summary is None:
            raise SystemExit(f"no summary line in callgrind's output for {label}")
        return int(summary.group(1))
