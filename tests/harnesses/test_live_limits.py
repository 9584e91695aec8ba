"""``run`` under hostile output and for what it writes: bounded memory per line, a private log.

The harness is a real child process (``tests/fixtures/fake_claude.py`` behind a small shell
pipeline that inserts 40 MB without a newline); ``run_harness`` runs in-process so its memory can
be measured with tracemalloc (allocations, not time). Standard output goes to a real file, not a
BytesIO, so the pass-through itself holds nothing in memory.
"""

from __future__ import annotations

import os
import stat
import sys
import tracemalloc
from pathlib import Path

from otel_toolchain.harnesses.live import run_harness
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.testing import Capture

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_claude.py"
JUNK_BYTES = 40 << 20
LIMIT = 1 << 20  # the default (64 MiB) works the same; a small one keeps the test light


def test_output_without_newlines_costs_bounded_memory_and_passes_through_whole(
    capture: Capture, tmp_path: Path
) -> None:
    chain = capture.install(Manifest.default().toolchain(strict=True))
    recorder = AgentRecorder(capture.tracer_provider, toolchain=chain)
    script = (f"{sys.executable} {FAKE} healthy 2 | sed -n 1p; head -c {JUNK_BYTES} /dev/zero | tr '\\0' x; "
              f"echo; {sys.executable} {FAKE} healthy 2 | sed -n '2,$p'")
    out_path, log_path = tmp_path / "out", tmp_path / "run.log"
    with out_path.open("wb") as out:
        tracemalloc.start()
        try:
            result = run_harness(["sh", "-c", script], recorder, out=out, log_path=log_path,
                                 max_line_bytes=LIMIT)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.exit_code == 0
    assert peak < 8 * LIMIT < JUNK_BYTES  # the line was never held whole
    written = out_path.read_bytes()
    assert b"}\n" + b"x" * JUNK_BYTES + b"\n{" in written and written == log_path.read_bytes()
    [outcome] = result.outcomes
    assert outcome.calls == 2 and outcome.tool_stats is not None and outcome.tool_stats["calls"] == 2
    assert [bad.line_no for bad in outcome.bad_lines] == [2]


def test_the_log_is_created_private(capture: Capture, tmp_path: Path) -> None:
    """``--log`` holds full tool arguments and results: 0600 whatever the umask."""
    recorder = AgentRecorder(capture.tracer_provider)
    old = os.umask(0o022)
    try:
        with open(os.devnull, "wb") as sink:
            run_harness([sys.executable, str(FAKE), "healthy", "1"], recorder, out=sink, log_path=tmp_path / "run.log")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "run.log").stat().st_mode) == 0o600
