"""The OpenCode bridge's own code, run in Node with a stand-in client, when its command misbehaves.

Whatever the command does (hangs while something it started holds its output open, prints what is
not an answer, prints ``null``), the call returns to the agent, nothing is thrown into it, and the
failure is said on standard error. Pi's bridge handles its command with the same code; the real
CLIs with a command that cannot start are in tests/hooks/test_bridges_live.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from otel_toolchain.hooks import bridges

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks"
_DRIVER = """
const { OtelToolchain } = await import(process.argv[2])
let aborted = 0
const hooks = await OtelToolchain({ client: { session: { abort: async () => { aborted += 1; return {} } } } })
const recorded = JSON.parse(process.argv[3])
const output = { ...recorded.output }
await hooks["tool.execute.after"](recorded.input, output)
await new Promise((resolve) => setTimeout(resolve, 100))  // the abort is deferred out of the hook
process.stdout.write(JSON.stringify({ output: output.output, aborted }))
process.exit(0)
"""

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node is installed by .ci/install-clis")


def _after(tmp_path: Path, script: str, timeout_ms: int = 30000) -> tuple[dict[str, object], str, float]:
    plugin = tmp_path / "bridge.mjs"
    bridges.install("opencode", plugin, ["sh", "-c", script])
    (tmp_path / "driver.mjs").write_text(_DRIVER)
    payload = (DATA / "opencode" / "payloads.jsonl").read_text().splitlines()[2]
    start = time.monotonic()
    node = subprocess.Popen(["node", str(tmp_path / "driver.mjs"), str(plugin), payload], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={"PATH": os.environ["PATH"], "OTEL_TOOLCHAIN_HOOK_TIMEOUT_MS": str(timeout_ms)})
    try:
        out, err = node.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # what the command left running goes with the test
            os.killpg(node.pid, signal.SIGKILL)
        node.wait()
    assert node.returncode == 0, err
    return json.loads(out), err, time.monotonic() - start


def test_a_command_that_hangs_holding_its_output_is_given_up_at_the_timeout(tmp_path: Path) -> None:
    # The sleep in the background keeps the output pipe open after the command itself is killed, as a warm
    # hook server's fork would: the call must not wait for it.
    result, stderr, took = _after(tmp_path, "sleep 60 & sleep 90", timeout_ms=500)
    assert result == {"output": "lock held by pid 4242; waiting\n", "aborted": 0}
    assert "otel-toolchain: no answer in 500 ms; the call was not checked" in stderr
    assert took < 45  # well before either sleep would have let go


@pytest.mark.parametrize(("answer", "said"), [
    ("not json", 'otel-toolchain: unreadable answer "not json\\n"; the call was not checked'),
    ("null", ""), ("[1]", ""), ('{"hookSpecificOutput": null}', ""),
])
def test_an_answer_that_is_not_one_is_no_answer(tmp_path: Path, answer: str, said: str) -> None:
    result, stderr, _took = _after(tmp_path, f"cat >/dev/null; echo '{answer}'")
    assert result == {"output": "lock held by pid 4242; waiting\n", "aborted": 0}
    assert said in stderr and "bridge failed" not in stderr


def test_a_stop_aborts_the_session_once_and_a_nudge_reaches_the_output(tmp_path: Path) -> None:
    stop = json.dumps({"continue": False, "stopReason": "otel-toolchain: stopped by test"})
    result, stderr, _took = _after(tmp_path, f"cat >/dev/null; echo '{stop}'")
    assert result["aborted"] == 1 and stderr.startswith("otel-toolchain: stopped by test\n")
    nudge = json.dumps({"hookSpecificOutput": {"additionalContext": "try another way"}})
    result, _stderr, _took = _after(tmp_path, f"cat >/dev/null; echo '{nudge}'")
    assert result == {"output": "lock held by pid 4242; waiting\n\n\ntry another way", "aborted": 0}
