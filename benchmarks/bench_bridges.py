"""What the OpenCode bridge adds to each tool call, measured through the bridge's own code in Node.

The installed bridge file (``otel_toolchain/hooks/bridges/opencode.js`` with its command written in)
is imported by a Node script with a stand-in ``client``, and its ``tool.execute.after`` handler is
awaited on the recorded ``cat wedge.txt`` payload (tests/data/hooks/opencode), a new output each
call so nothing stops: the time the agent waits per call. The baseline is the same bridge whose
command is ``python -c pass`` (the interpreter's start and the spawn from Node, nothing of ours), in
the same run. With the warm hook server (started by a first call, ended here) and with
``--no-server``. Pi's bridge spawns the same command the same way. Run: ``python
benchmarks/bench_bridges.py [--calls 20]`` after .ci/install-clis (Node is needed, not the CLIs).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(Path(__file__).resolve().parent)]

from bench_receiver import wait_for_server  # noqa: E402

from otel_toolchain.hooks import bridges  # noqa: E402

PAYLOAD = REPO / "tests" / "data" / "hooks" / "opencode" / "payloads.jsonl"
_DRIVER = """
const [plugin, payloadText, calls, session] = process.argv.slice(2)
const { OtelToolchain } = await import(plugin)
const hooks = await OtelToolchain({ client: { session: { abort: async () => ({}) } } })
const recorded = JSON.parse(payloadText)
const times = []
for (let n = 0; n < Number(calls); n++) {
  const input = { ...recorded.input, sessionID: session, callID: `bench${n}` }
  const output = { ...recorded.output, output: `line ${n}\\n` }
  const start = process.hrtime.bigint()
  await hooks["tool.execute.after"](input, output)
  times.push(Number(process.hrtime.bigint() - start) / 1e6)
}
process.stdout.write(JSON.stringify(times))
process.exit(0)  // the bridge's exit report of each session is part of no call
"""


def _bridge(folder: Path, name: str, command: list[str]) -> Path:
    path = folder / f"{name}.mjs"  # .mjs: Node reads the plugin as the ES module OpenCode loads
    bridges.install("opencode", path, command)
    return path


def _per_call(plugin: Path, payload: str, calls: int, env: dict[str, str], driver: Path) -> list[float]:
    done = subprocess.run(["node", str(driver), str(plugin), payload, str(calls), plugin.stem], env=env, check=True,
                          capture_output=True, text=True, timeout=600)
    times: list[float] = json.loads(done.stdout)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    payload = PAYLOAD.read_text().splitlines()[2]  # the cat wedge.txt call
    hook = [sys.executable, "-m", "otel_toolchain", "hook", "opencode"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        state = folder / "state"
        env = os.environ | {"OTEL_TOOLCHAIN_HOOK_STATE_DIR": str(state), "OTEL_TOOLCHAIN_HOOK_SERVER": "on",
                            "OTEL_TOOLCHAIN_OUTPUT_DIR": str(folder / "out"), "PYTHONPATH": str(REPO)}
        driver = folder / "driver.mjs"
        driver.write_text(_DRIVER)
        baseline = _bridge(folder, "baseline", [sys.executable, "-c", "pass"])
        warm, cold = _bridge(folder, "warm", hook), _bridge(folder, "cold", [*hook, "--no-server"])
        _per_call(warm, payload, 1, env, driver)  # starts the warm server
        server = wait_for_server(state)
        try:
            figures = {name: statistics.median(_per_call(plugin, payload, args.calls, env, driver))
                       for name, plugin in (("baseline", baseline), ("warm", warm), ("cold", cold))}
        finally:
            os.kill(server, signal.SIGTERM)
    base = figures["baseline"]
    print(f"OpenCode bridge, tool.execute.after awaited per call (median of {args.calls}):")
    print(f"  command python -c pass  {base:8.1f} ms  (baseline)")
    print(f"  warm hook server        {figures['warm']:8.1f} ms  (ratio {figures['warm'] / base:.1f}x)")
    print(f"  --no-server             {figures['cold']:8.1f} ms  (ratio {figures['cold'] / base:.1f}x)")


if __name__ == "__main__":
    main()
