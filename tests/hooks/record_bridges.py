"""Record what our bridge files hand to ``otel-toolchain hook opencode|pi``, with the real CLIs offline.

For each CLI the bridge is installed (as ``hooks install`` writes it) with this file as its command,
in ``--log`` mode: each payload is appended to a JSON lines file and nothing is answered. The fake
model (tests/clis) runs one scripted turn: a command that exits 1, a shell call with a working
folder that does not exist, ``cat wedge.txt``, then a final answer. Writes
``tests/data/hooks/<cli>/payloads.jsonl``; run ``python tests/hooks/record_bridges.py [opencode] [pi]``
after .ci/install-clis. The payloads are the test data of tests/hooks/test_bridge_readers.py.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "clis"), str(REPO)]

import fake_models  # noqa: E402
import harness  # noqa: E402
from moves import FinalText, Move, ToolCall, Turn  # noqa: E402

from otel_toolchain.hooks import bridges  # noqa: E402

DATA = REPO / "tests" / "data" / "hooks"
_MOVES = (ToolCall("cat missing-file.txt"), ToolCall("ls", workdir="/nonexistent-dir-xyz"), ToolCall("cat wedge.txt"))


def _script(turn: Turn) -> Move:
    return _MOVES[turn.results] if turn.results < len(_MOVES) else FinalText("All done.")


def record(cli: str) -> list[dict[str, object]]:
    """Run ``cli`` once with the logging bridge; its payloads, in the order they came."""
    with tempfile.TemporaryDirectory(prefix=f"record-{cli}-") as tmp, \
            fake_models.fake_model_server("wedge", delay=0.1, scripts={"wedge": _script}) as server:
        launch = harness.launch(cli, harness.cli_dir(), server, Path(tmp), "wedge")
        log = Path(tmp) / "payloads.jsonl"
        path = bridges.bridge_path(cli, "project", launch.cwd, Path(tmp) / "home", launch.env)
        bridges.install(cli, path, [sys.executable, str(Path(__file__).resolve()), "--log", str(log)])
        run = harness.run_group(launch, timeout=120)
        if run.returncode != 0:
            raise SystemExit(f"{cli} exited {run.returncode}: {run.stderr[-2000:]}")
        payloads = [json.loads(line) for line in log.read_text().splitlines()]
        return [_portable(payload, str(launch.cwd)) for payload in payloads]


def _portable(value: object, cwd: str) -> object:
    """The run's temporary folder written as ``/work``, so the file does not change with each recording."""
    if isinstance(value, str):
        return value.replace(cwd, "/work")
    if isinstance(value, list):
        return [_portable(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: _portable(v, cwd) for k, v in value.items()}
    return value


def main(argv: list[str]) -> int:
    if argv[:1] == ["--log"]:  # the bridge's command: keep the payload, answer nothing
        with open(argv[1], "a", encoding="utf-8") as log:
            log.write(json.dumps(json.loads(sys.stdin.read())) + "\n")
        return 0
    for cli in argv or ["opencode", "pi"]:
        payloads = record(cli)
        (DATA / cli).mkdir(parents=True, exist_ok=True)
        (DATA / cli / "payloads.jsonl").write_text("".join(json.dumps(p) + "\n" for p in payloads))
        print(f"{cli}: {len(payloads)} payloads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
