"""A stand-in coding agent printing Claude Code ``stream-json`` lines, with secrets planted in its tool calls.

Usage:
  python secret_agent.py turns KIND [KIND ...]   one turn per KIND, each with its own session id, then exit 0
  python secret_agent.py wedge                   one turn: two varied calls, then the same call forever,
                                                 one every 0.2 s (session id: $SECRET_AGENT_SESSION)

KIND is ``healthy`` (three calls whose results differ), ``toolfail`` (a failing call in a turn that ends
well), ``turnfail`` (the turn itself ends with ``is_error``) or ``wedge`` (the same call and result 30
times; repeat_guard stops it at 25). Every tool input and result carries the strings in :data:`SECRETS`
(API keys, tokens, a password, a private-key header) and the working directory carries one too, so a test
can check that none of them leaves the Collector. Lines are flushed one by one, as the real CLI does.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from typing import Any

# Planted secrets: each matches a redaction/secrets blocked_values pattern or sits in a deleted attribute.
SECRETS = (
    "sk-ant-api03-PLANTEDsecretKEY000000000000001",
    "ghp_PLANTEDgithubTOKEN0000000000000000000000001",
    "AKIAPLANTED000000001",
    "xoxb-PLANTED-slack-000000001",
    "hunter2-PLANTED-password",
    "-----BEGIN RSA PRIVATE KEY-----",
)
CWD = f"/home/dev/{SECRETS[2]}/repo"  # a secret in the cwd: masked by redaction/secrets, not deleted


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def call(session: str, n: int, command: str, result: str, *, failed: bool = False) -> None:
    """One tool call: the assistant's tool_use and the user's tool_result."""
    tool_id = f"toolu_{session[:8]}_{n:03d}"
    emit({"type": "assistant", "session_id": session, "message": {
        "id": f"msg_{session[:8]}_{n:03d}", "model": "fake-model", "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}]}})
    emit({"type": "user", "session_id": session, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_id, "content": result, "is_error": failed}]}})


def start(session: str) -> None:
    emit({"type": "system", "subtype": "init", "session_id": session, "cwd": CWD, "model": "fake-model",
          "tools": ["Bash"]})


def finish(session: str, *, is_error: bool = False) -> None:
    emit({"type": "result", "subtype": "error_during_execution" if is_error else "success",
          "session_id": session, "is_error": is_error, "num_turns": 1,
          "usage": {"input_tokens": 100, "output_tokens": 20}})


def turn(kind: str) -> None:
    session = str(uuid.uuid4())
    start(session)
    if kind == "wedge":
        for n in range(30):
            call(session, n, f"curl -H 'Authorization: Bearer {SECRETS[0]}' https://api.example/status",
                 f"pending; retry with token {SECRETS[1]}")
        finish(session)
        return
    call(session, 0, f"export OPENAI_API_KEY={SECRETS[0]}; ./check", f"ok {SECRETS[1]}")
    call(session, 1, f"aws s3 ls --access-key {SECRETS[2]}", f"listing with {SECRETS[3]}",
         failed=kind == "toolfail")
    call(session, 2, f"mysql -p{SECRETS[4]} -e 'select 1'", f"{SECRETS[5]}\nMIIE...\n")
    finish(session, is_error=kind == "turnfail")


def wedge_forever() -> None:
    session = os.environ.get("SECRET_AGENT_SESSION") or str(uuid.uuid4())
    start(session)
    call(session, 0, f"git push https://x:{SECRETS[1]}@example.invalid/r.git", "rejected")
    call(session, 1, f"echo {SECRETS[4]} | sudo -S make deploy", f"key {SECRETS[0]} expired")
    n = 2
    while True:  # until otel-toolchain run stops us
        call(session, n, f"curl -H 'Authorization: Bearer {SECRETS[0]}' https://api.example/status",
             f"pending; retry with token {SECRETS[1]}")
        n += 1
        time.sleep(0.2)  # about 5 s to the stop: several metric exports and span-metric flushes happen


def main(argv: list[str]) -> int:
    if argv[:1] == ["wedge"]:
        wedge_forever()
    if argv[:1] != ["turns"] or not argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    for kind in argv[1:]:
        if kind not in ("healthy", "toolfail", "turnfail", "wedge"):
            print(f"unknown turn kind {kind!r}", file=sys.stderr)
            return 2
        turn(kind)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
