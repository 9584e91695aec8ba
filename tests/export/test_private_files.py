"""Files that hold tool content are private: the embedded default's folder 0700 and files 0600.

A real ``otel-toolchain run`` of the fake Claude Code stream, with content capture on (tool
arguments and results on spans), under a permissive umask (0022) so that the modes come from
the code and not from the environment.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_claude.py"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_embedded_default_and_the_log_are_private_when_capture_is_on(tmp_path: Path) -> None:
    state = tmp_path / "state"  # absent: run creates it, and otel-toolchain inside it
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"XDG_STATE_HOME": str(state), "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"})
    log = tmp_path / "run.log"
    done = subprocess.run(
        ["sh", "-c", 'umask 022 && exec "$@"', "sh", sys.executable, "-m", "otel_toolchain", "run", "--log", str(log),
         "--", sys.executable, str(FAKE), "healthy", "2"],
        capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    folder = state / "otel-toolchain"
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["logs.jsonl", "metrics.jsonl", "traces.jsonl"]
    traces = (folder / "traces.jsonl").read_bytes()
    assert b"gen_ai.tool.call.arguments" in traces and b"tick 1" in traces  # the content is really there
    assert mode_of(folder) == 0o700
    assert {name: mode_of(folder / name) for name in files} == dict.fromkeys(files, 0o600)
    assert mode_of(log) == 0o600
