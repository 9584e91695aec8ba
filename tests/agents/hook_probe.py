"""A Claude Code hook command for experiments: it records every invocation and answers as told.

Configured as ``python hook_probe.py`` for any hook event. Settings (environment, inherited from
the Claude Code process):

* ``HOOK_PROBE_DIR``: folder for the records; each invocation writes ``NNNN-<event>.json`` with
  ``started``/``finished`` (unix seconds), ``argv`` and ``payload`` (the JSON read from stdin);
* ``HOOK_PROBE_MODE``: what to answer on ``PostToolUse`` (other events are only recorded):

  - ``log``: nothing, exit 0;
  - ``stop-after:N``: on the N-th PostToolUse print ``{"continue": false, "stopReason": ...}``;
  - ``context-after:N``: on the N-th print ``hookSpecificOutput.additionalContext`` (:data:`NUDGE`);
  - ``block-after:N``: on the N-th print ``{"decision": "block", "reason": ...}``;
  - ``sleep:S``: sleep S seconds, then exit 0 (a slow or hung hook);
  - ``sleep-once:S``: sleep S seconds on the first PostToolUse only;
  - ``fail:CODE``: write :data:`FAIL_TEXT` to stderr and exit CODE;
  - ``garbage``: print text that is not JSON, exit 0.

The N-th call is counted from the records already in the folder; invocations are numbered with an
exclusive create, so parallel hooks do not overwrite each other.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

NUDGE = "OTEL_TOOLCHAIN_NUDGE: the last 3 calls returned the same output; try something else."
STOP_REASON = "otel-toolchain: the same call returned the same result 3 times"
BLOCK_REASON = "otel-toolchain: blocked, the call repeats itself"
FAIL_TEXT = "hook_probe: deliberate failure"


def _claim(folder: Path, event: str) -> tuple[int, Path]:
    """The next free sequence number in ``folder`` and its record path, created exclusively."""
    seq = len(list(folder.glob("*.json"))) + 1
    while True:
        path = folder / f"{seq:04d}-{event}.json"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            seq += 1
            continue
        os.close(fd)
        return seq, path


def _answer(mode: str, nth: int) -> tuple[str, int]:
    """Stdout text and exit code for the ``nth`` PostToolUse under ``mode`` (may sleep)."""
    kind, _, arg = mode.partition(":")
    due = arg.isdigit() and nth == int(arg)
    if kind == "stop-after" and due:
        return json.dumps({"continue": False, "stopReason": STOP_REASON}), 0
    if kind == "context-after" and due:
        return json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": NUDGE}}), 0
    if kind == "block-after" and due:
        return json.dumps({"decision": "block", "reason": BLOCK_REASON}), 0
    if kind == "sleep" or (kind == "sleep-once" and nth == 1):
        time.sleep(float(arg))
    elif kind == "fail":
        sys.stderr.write(FAIL_TEXT + "\n")
        return "", int(arg)
    elif kind == "garbage":
        return "this is {not json", 0
    return "", 0


def main() -> int:
    """Record this invocation, then answer per ``HOOK_PROBE_MODE``."""
    started = time.time()
    raw = sys.stdin.read()
    try:
        payload: Any = json.loads(raw)
    except ValueError:
        payload = {"unparsed": raw}
    folder = Path(os.environ["HOOK_PROBE_DIR"])
    event = str(payload.get("hook_event_name", "unknown")) if isinstance(payload, dict) else "unknown"
    _, path = _claim(folder, event)
    nth = len(list(folder.glob("*-PostToolUse.json")))
    record: dict[str, Any] = {"started": started, "finished": None, "argv": sys.argv, "payload": payload}
    path.write_text(json.dumps(record, indent=1) + "\n")  # kept even when the hook is killed while it waits
    out, code = _answer(os.environ.get("HOOK_PROBE_MODE", "log"), nth) if event == "PostToolUse" else ("", 0)
    record |= {"finished": time.time(), "answer": out, "exit": code}
    path.write_text(json.dumps(record, indent=1) + "\n")
    if out:
        print(out, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
