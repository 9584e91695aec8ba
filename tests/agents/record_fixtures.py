"""Record OTLP fixtures from real agent runs into tests/data/otlp/<agent>/<scenario>/.

Usage: ``python tests/agents/record_fixtures.py [AGENT[:SCENARIO] ...]`` (default: every agent and
scenario of :data:`recording.SCENARIOS`). Each scenario folder is replaced whole and holds what
:mod:`otlp_capture` wrote (raw bodies, decoded summaries, ``requests.jsonl``), plus:

* ``stream.jsonl``: the agent's stdout (its own JSON event stream), line by line;
* ``run.json``: the agent, its version, the telemetry settings used (environment and extra argv),
  how the run ended (exit code, the signal that stopped it), and the tool results the model saw.

The CLIs must be installed (``.ci/install-clis``) and the Vercel agent's dependencies linked
(``.ci/install-agents``).
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import recording

DATA = Path(__file__).resolve().parents[1] / "data" / "otlp"
#: Keys of the launch environment that are telemetry settings (the rest is the offline harness's).
TELEMETRY_PREFIXES = ("OTEL_", "CLAUDE_CODE_ENABLE_TELEMETRY", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA")
VERSIONS = {"vercel-ai": "ai 6.0.326 / @opentelemetry/sdk-trace-node 2.12.1 / exporter-trace-otlp-proto 0.223.1",
            "claude-code": "2.1.332", "codex": "0.171.0", "opencode": "1.18.33"}


def _telemetry_argv(argv: list[str]) -> list[str]:
    """The ``-c otel.*`` pairs of a Codex command line (empty for the others)."""
    pairs = itertools.pairwise(argv)
    return [_PORT.sub("127.0.0.1:PORT", f"-c {v}") for k, v in pairs if k == "-c" and v.startswith("otel.")]


AT_REST_GZIP_OVER = 64 * 1024
_PORT = re.compile(r"127\.0\.0\.1:\d+")


def compress_large(folder: Path) -> None:
    """Gzip, at rest, every body over :data:`AT_REST_GZIP_OVER` bytes that came unencoded.

    The index then says ``"stored": "gzip"`` and names the ``.gz`` file; gunzip gives the exact wire
    bytes back. Other bodies are ``"stored": "as-received"``.
    """
    index = folder / "requests.jsonl"
    rows = [json.loads(line) for line in index.read_text().splitlines()]
    for row in rows:
        row["stored"] = "as-received"
        body = folder / row["file"]
        if row["content_encoding"] == "" and body.stat().st_size > AT_REST_GZIP_OVER:
            packed = folder / f"{row['file']}.gz"
            packed.write_bytes(gzip.compress(body.read_bytes(), mtime=0))
            body.unlink()
            row["file"], row["stored"] = packed.name, "gzip"
    index.write_text("".join(json.dumps(row) + "\n" for row in rows))


def write(rec: recording.Recording, folder: Path) -> None:
    """Write ``stream.jsonl`` and ``run.json`` of one recording."""
    (folder / "stream.jsonl").write_text("".join(line + "\n" for line in rec.run.lines))
    settings = {k: _PORT.sub("127.0.0.1:PORT", v) for k, v in sorted(rec.launch.env.items())
                if k.startswith(TELEMETRY_PREFIXES)}
    if rec.agent == "opencode":
        settings["opencode.json"] = '"experimental": {"openTelemetry": true}'
    meta = {
        "agent": rec.agent, "version": VERSIONS[rec.agent], "scenario": rec.scenario,
        "telemetry_env": settings, "telemetry_argv": _telemetry_argv(rec.launch.argv),
        "returncode": rec.run.returncode, "stopped_by": rec.run.stopped_by, "ended": rec.run.reason,
        "elapsed_s": round(rec.run.elapsed, 3), "tool_results_seen_by_model": rec.tool_results_seen,
        "requests_captured": len(rec.captured), "leftover_pids": rec.run.leftover,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / "run.json").write_text(json.dumps(meta, indent=1) + "\n")


def main(args: list[str]) -> int:
    """Record the requested fixtures; print one line per scenario."""
    wanted = args or [f"{a}:{s}" for a in recording.AGENTS for s in recording.SCENARIOS[a]]
    for item in wanted:
        agent, _, scenario = item.partition(":")
        for name in [scenario] if scenario else list(recording.SCENARIOS[agent]):
            folder = DATA / agent / name
            shutil.rmtree(folder, ignore_errors=True)
            with tempfile.TemporaryDirectory(prefix=f"rec-{agent}-") as tmp:
                rec = recording.record(agent, name, folder, Path(tmp))
            write(rec, folder)
            compress_large(folder)
            print(f"{agent}:{name}: rc={rec.run.returncode} stopped_by={rec.run.stopped_by} "
                  f"calls={rec.tool_results_seen} requests={len(rec.captured)} "
                  f"bytes={sum(c.bytes for c in rec.captured)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
