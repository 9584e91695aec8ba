"""Count the expected verdicts of the recordings beside this file, independently of otel_toolchain.

    python tests/data/recordings/count_verdicts.py            # print verdicts.toml
    python tests/data/recordings/count_verdicts.py --write    # rewrite verdicts.toml
    python tests/data/recordings/count_verdicts.py --check    # exit 1 if verdicts.toml is stale

Each stream is read with plain ``json`` into calls (tool, arguments, result, failed). A call's
identity is its tool, its arguments without the free-text annotation fields of FREE_TEXT, whether
it failed and its result, masked of volatile tokens (MASKS) when it failed; a successful result is
compared exactly. A chain stops at the first call that completes ``limit`` repetitions of a cycle
of 1, 2 or 3 calls (``limit`` per period; ``poll_limit`` when every call of the cycle is a poll).
The peers' rules are in PEERS. The script must not import otel_toolchain: it is the oracle.

A Codex stream names no folder, so where its rollout was kept (``session``) the stream is read
with it, as ``run`` and ``replay`` read it: each stream command gets the folder of the next rollout
shell call running the same command (its ``workdir``, else the session's cwd) as a ``cwd``
argument. ``without_rollout_*`` are the figures of the stream alone.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT = {1: 25, 2: 25, 3: 25}
EARLY = {1: 4, 2: 3, 3: 3}
POLL_LIMIT = 25

#: Free-text annotation fields of each CLI's shell tool (see TOOL_SCHEMAS.md), left out of identity.
FREE_TEXT = {("claude", "Bash"): {"description"}, ("codex", "exec_command"): {"justification"}}

#: Volatile tokens of failed results: (pattern, replacement), applied in order.
MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.M | re.I), r) for p, r in (
    # Codex's frame; the token count is the output's size, which changes with its volatile tokens.
    (r"^(Chunk ID|Wall time|Original token count):.*\n?", ""),
    # Cargo's build progress ("   Compiling calc v0.1.0 (/path)"): only the first `cargo test` rebuilds.
    (r"^ *(Compiling|Checking|Fresh|Downloaded|Adding|Locking) [\w.-]+ v\d+\.\d+\.\d+.*\n", ""),
    (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?", "<TIME>"),
    (r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b", "<TIME>"),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<ID>"),
    (r"(/tmp|/var/tmp|/private/var/folders)/[^\s'\"):]*", "<TMP>"),
    (r"\bpid[ =:]*\d+", "pid <PID>"),
    (r"^(thread '[^']*') \(\d+\)", r"\1 (<TID>)"),  # Rust >= 1.89 panics name the OS thread id
    (r"\b0x[0-9a-f]{4,}\b", "<ADDR>"),
    (r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b", "<HEX>"),
    (r"(duration_ms|elapsed|took)[\"']?[ :=]+[\d.]+", r"\1 <DUR>"),
    (r"\b\d+(\.\d+)?\s?(ns|us|µs|ms|s|sec|secs|seconds|m|min)\b", "<DUR>"),
))
BLIND_SPOTS = {
    "codex/justification_refused": "Codex refused every call before running it and its exec --json stream "
                                   "shows none; its rollout has all 40 (session_* numbers)",
}


@dataclass(frozen=True)
class Call:
    """One tool call as a stream shows it; ``ms`` from the CLI's own line times, if it has them."""

    tool: str
    args: dict[str, Any]
    result: str
    failed: bool
    ms: int | None = None


def text(content: Any) -> str:
    """A result content as text: a string, or the text of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def ms_between(start: str | None, end: str | None) -> int | None:
    """Milliseconds between two ISO-8601 UTC times (``...Z``), or None."""
    if not start or not end:
        return None
    begin, finish = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (start, end))
    return round((finish - begin).total_seconds() * 1000)


def claude_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """Claude Code stream-json (or transcript): tool_use blocks, then tool_result blocks by id."""
    uses: dict[str, tuple[str, dict[str, Any], str | None]] = {}
    order: list[str] = []
    done: dict[str, Call] = {}
    for obj in lines:
        if obj.get("type") not in ("assistant", "user"):
            continue
        for block in (obj.get("message") or {}).get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block["id"] not in uses:
                uses[block["id"]] = (block["name"], block.get("input") or {}, obj.get("timestamp"))
                order.append(block["id"])
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in uses:
                name, args, start = uses[block["tool_use_id"]]
                done[block["tool_use_id"]] = Call(name, args, text(block.get("content")), bool(block.get("is_error")),
                                                  ms_between(start, obj.get("timestamp")))
    return [done.get(i) or Call(uses[i][0], uses[i][1], "", False) for i in order]


def codex_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """Codex exec --json: command_execution items (started, then completed with the same id)."""
    calls: dict[str, Call] = {}
    for obj in lines:
        item = obj.get("item") or {}
        if item.get("type") == "command_execution" and obj.get("type") in ("item.started", "item.completed"):
            calls[item["id"]] = Call("command_execution", {"command": item.get("command", "")},
                                     item.get("aggregated_output", ""), item.get("status") == "failed")
    return list(calls.values())


def codex_rollout_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """Codex rollout: function_call items and their function_call_output, as the model saw them."""
    calls: dict[str, Call] = {}
    for obj in lines:
        item = obj.get("payload") or {}
        if obj.get("type") != "response_item":
            continue
        if item.get("type") == "function_call":
            calls[item["call_id"]] = Call(item["name"], json.loads(item.get("arguments") or "{}"), "", False)
        elif item.get("type") == "function_call_output" and item.get("call_id") in calls:
            out = text(item.get("output"))
            ok = re.search(r"^Process exited with code 0$", out, re.M) or "Process running" in out
            old = calls[item["call_id"]]
            calls[item["call_id"]] = Call(old.tool, old.args, out, not ok)
    return list(calls.values())


def unwrapped(command: str) -> str:
    """A Codex command without its ``bash -lc`` wrapper."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].split("/")[-1] in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
        return words[2]
    return command


def codex_located(calls: list[Call], rollout: list[dict[str, Any]]) -> list[Call]:
    """The stream's calls, each with the folder the rollout says it ran in (see the module docstring)."""
    folders: list[tuple[str, str | None]] = []
    cwd = None
    for obj in rollout:
        item = obj.get("payload") or {}
        if obj.get("type") in ("session_meta", "turn_context"):
            cwd = item.get("cwd") or cwd
        elif obj.get("type") == "response_item" and item.get("type") == "function_call" and \
                item.get("name") in ("exec_command", "shell"):
            args = json.loads(item.get("arguments") or "{}")
            command = args.get("cmd", args.get("command"))
            text = shlex.join(command) if isinstance(command, list) else str(command)
            folders.append((unwrapped(text), args.get("workdir") or cwd))
    located = []
    for call in calls:
        command = unwrapped(call.args["command"])
        at = next((n for n, (text, _) in enumerate(folders) if text == command), None)
        folder = None
        if at is not None:
            folder = folders[at][1]
            del folders[:at + 1]
        located.append(Call(call.tool, {**call.args, "cwd": folder}, call.result, call.failed, call.ms))
    return located


def opencode_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """OpenCode run --format json: one tool_use line per finished call."""
    calls = []
    for obj in lines:
        part = obj.get("part") or {}
        if obj.get("type") == "tool_use" and part.get("type") == "tool":
            state = part.get("state") or {}
            exit_code = (state.get("metadata") or {}).get("exit")
            failed = state.get("status") == "error" or exit_code not in (0, None)
            times = state.get("time") or {}
            ms = times["end"] - times["start"] if "end" in times and "start" in times else None
            calls.append(Call(part["tool"], state.get("input") or {}, str(state.get("output", "")), failed, ms))
    return calls


def pi_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """Pi --mode json: tool_execution_start, then tool_execution_end with the same toolCallId."""
    calls: dict[str, Call] = {}
    for obj in lines:
        if obj.get("type") == "tool_execution_start":
            calls[obj["toolCallId"]] = Call(obj["toolName"], obj.get("args") or {}, "", False)
        elif obj.get("type") == "tool_execution_end" and obj.get("toolCallId") in calls:
            old = calls[obj["toolCallId"]]
            result = text((obj.get("result") or {}).get("content"))
            calls[obj["toolCallId"]] = Call(old.tool, old.args, result, bool(obj.get("isError")))
    return list(calls.values())


def pi_session_calls(lines: list[dict[str, Any]]) -> list[Call]:
    """Pi's session file: toolCall blocks of assistant messages, then toolResult messages with their id."""
    calls: dict[str, Call] = {}
    for obj in lines:
        message = obj.get("message") or {}
        if obj.get("type") != "message":
            continue
        if message.get("role") == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall" and block["id"] not in calls:
                    calls[block["id"]] = Call(block["name"], block.get("arguments") or {}, "", False)
        elif message.get("role") == "toolResult" and message.get("toolCallId") in calls:
            old = calls[message["toolCallId"]]
            calls[message["toolCallId"]] = Call(old.tool, old.args, text(message.get("content")),
                                                bool(message.get("isError")))
    return list(calls.values())


READERS: dict[str, Callable[[list[dict[str, Any]]], list[Call]]] = {
    "claude": claude_calls, "codex": codex_calls, "opencode": opencode_calls, "pi": pi_calls,
}
SESSION_READERS = {"claude": claude_calls, "codex": codex_rollout_calls, "pi": pi_session_calls}


def mask(result: str) -> str:
    """``result`` with its volatile tokens replaced (used for failed results only)."""
    for pattern, replacement in MASKS:
        result = pattern.sub(replacement, result)
    return result


def identity(cli: str, call: Call, unordered: bool = False) -> str:
    """The normalised identity of ``call`` (see the module docstring).

    ``unordered`` also compares a failed result's lines as a sorted list: a program whose stdout and
    stderr interleave differently from run to run (cargo test) prints the same lines in another order.
    """
    dropped = FREE_TEXT.get((cli, call.tool), set())
    args = {k: v for k, v in call.args.items() if k not in dropped}
    result = mask(call.result) if call.failed else call.result
    if unordered and call.failed:
        result = "\n".join(sorted(result.splitlines()))
    return json.dumps([call.tool, args, call.failed, result], sort_keys=True)


def exact(call: Call) -> str:
    """Byte-exact identity: every argument, the raw result."""
    return json.dumps([call.tool, call.args, call.failed, call.result], sort_keys=True)


def programs(command: str) -> list[str]:
    """The programs a shell command runs (first word of each simple command; ``bash -c`` unwrapped)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        words = list(lexer)
    except ValueError:
        return []
    found, start = [], True
    for index, word in enumerate(words):
        if word in ("&&", "||", ";", "|", "&", "(", ")"):
            start = True
        elif start and "=" not in word:
            start = False
            if word in ("bash", "sh", "/bin/bash", "/bin/sh") and index + 2 < len(words) and words[index + 1] in (
                    "-c", "-lc"):
                found += programs(words[index + 2])
            else:
                found.append(word)
    return found


def is_poll(call: Call) -> bool:
    """A poll waits on something: sleep or tail in a shell command, a background-output read, empty stdin."""
    if call.tool in ("TaskOutput", "BashOutput", "AgentOutputTool"):
        return True
    if call.tool == "write_stdin":
        return not call.args.get("chars")
    command = call.args.get("command", call.args.get("cmd"))
    return isinstance(command, str) and bool({"sleep", "tail"} & set(programs(command)))


def streaks(ids: list[str]) -> Iterator[tuple[int, int, int, int]]:
    """For every call n (1-based) and period p: (n, p, repetitions, first call of the repeating stretch).

    The repeating stretch ending at n is the longest run of calls each equal to the call p before it,
    plus the p calls it started from; the repetitions are its complete p-call blocks.
    """
    for n in range(1, len(ids) + 1):
        for p in (1, 2, 3):
            if n < p:
                continue
            run = 0
            while n - 1 - run - p >= 0 and ids[n - 1 - run] == ids[n - 1 - run - p]:
                run += 1
            yield n, p, (run + p) // p, n - run - p + 1


def stop(ids: list[str], polls: list[bool], limits: dict[int, int], poll_limit: int | None) -> tuple[int, int, int]:
    """(stopping call, period, loop start) under ``limits``; (0, 0, 0) when nothing stops."""
    for n, p, reps, first in streaks(ids):
        limit = poll_limit if poll_limit is not None and all(polls[n - p:n]) else limits[p]
        if reps >= limit:
            return n, p, first
    return 0, 0, 0


def longest(ids: list[str]) -> tuple[int, int, int]:
    """(repetitions, period, first call) of the most repeated cycle (the earliest, shortest on a tie)."""
    best = (1 if ids else 0, 1, 1 if ids else 0)
    for _, p, reps, first in streaks(ids):
        if reps > best[0]:
            best = (reps, p, first)
    return best


# --------------------------------------------------------------------------- peers (peer-detectors.md)


def args_key(call: Call) -> str:
    """Tool name and every argument as sent: what the argument-only peers compare."""
    return json.dumps([call.tool, call.args], sort_keys=True)


def consecutive(keys: list[str], threshold: int) -> int:
    """The first call at which ``threshold`` equal keys in a row are reached (0: never)."""
    count = 0
    for n, key in enumerate(keys, 1):
        count = count + 1 if n > 1 and key == keys[n - 2] else 1
        if count >= threshold:
            return n
    return 0


def openhands(calls: list[Call]) -> int:
    """OpenHands StuckDetector after each call: 4 equal action+observation pairs, or A,B alternating 6 times."""
    acts = [args_key(c) for c in calls]
    obs = [json.dumps([c.tool, c.failed, c.result]) for c in calls]
    for n in range(1, len(calls) + 1):
        a, o = acts[:n], obs[:n]
        if n >= 4 and len(set(a[-4:])) == 1 and len(set(o[-4:])) == 1:
            return n
        if n >= 6 and all(a[-6 + i] == a[-4 + i] and o[-6 + i] == o[-4 + i] for i in range(4)):
            return n
    return 0


def failures(calls: list[Call], threshold: int, same_text: bool) -> int:
    """The call completing ``threshold`` failures in a row (with the same raw text when ``same_text``)."""
    count = 0
    for n, call in enumerate(calls, 1):
        previous = calls[n - 2] if n > 1 else None
        if not call.failed:
            count = 0
        elif same_text and previous is not None and previous.failed and previous.result != call.result:
            count = 1
        else:
            count += 1
        if count >= threshold:
            return n
    return 0


PEERS: dict[str, tuple[str, Callable[[list[Call]], int]]] = {
    "openhands": ("StuckDetector: 4 identical action+observation pairs, or 6 calls alternating A,B with the "
                  "same observations (after the call)", openhands),
    "gemini": ("loopDetectionService: 5 consecutive calls with the same name and arguments (as call 5 is "
               "requested)", lambda cs: consecutive([args_key(c) for c in cs], 5)),
    "cline_nudge": ("LoopDetectionTracker soft warning: 3 identical consecutive calls",
                    lambda cs: consecutive([args_key(c) for c in cs], 3)),
    "cline_stop": ("LoopDetectionTracker hard stop: 5 identical consecutive calls",
                   lambda cs: consecutive([args_key(c) for c in cs], 5)),
    "roo": ("ToolRepetitionDetector: the 4th identical consecutive call is blocked",
            lambda cs: consecutive([args_key(c) for c in cs], 4)),
    "cline_mistakes": ("MistakeTracker: 3 failed calls in a row, whatever they are", lambda cs: failures(cs, 3, False)),
    "goose_port": ("repeated-error port: the same error text 3 times in a row", lambda cs: failures(cs, 3, True)),
}
#: The peers that stop (or block) a repeating call: the issue's comparison (OpenHands, Gemini CLI,
#: Roo Code, Cline). The others warn only (cline_nudge) or count errors, not repetitions.
STOPPING_PEERS = ("openhands", "gemini", "cline_stop", "roo")


# --------------------------------------------------------------------------- verdicts


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def chains(cli: str, calls: list[Call]) -> dict[str, Any]:
    """Stop calls of the default and early chains (and of byte-exact identity) for ``calls``."""
    ids = [identity(cli, c) for c in calls]
    polls = [is_poll(c) for c in calls]
    default, early = stop(ids, polls, DEFAULT, None), stop(ids, polls, EARLY, POLL_LIMIT)
    unordered = [identity(cli, c, True) for c in calls]
    unordered_default = stop(unordered, polls, DEFAULT, None)
    unordered_early = stop(unordered, polls, EARLY, POLL_LIMIT)
    reps, period, first = longest(ids)
    return {"calls": len(calls), "default_stop": default[0], "early_stop": early[0],
            "early_period": early[1], "early_loop_start": early[2], "default_loop_start": default[2],
            "exact_default_stop": stop([exact(c) for c in calls], polls, DEFAULT, None)[0],
            "unordered_early_stop": unordered_early[0], "unordered_early_loop_start": unordered_early[2],
            "unordered_default_stop": unordered_default[0], "unordered_default_loop_start": unordered_default[2],
            "early_stop_no_poll_limit": stop(ids, polls, EARLY, None)[0],
            "most_repeated": reps, "most_repeated_period": period, "most_repeated_start": first,
            "unordered_most_repeated": longest(unordered)[0], "unordered_most_repeated_period": longest(unordered)[1],
            "polls": sum(polls), "failed": sum(c.failed for c in calls)}


def verdict(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The verdict table of one recording (manifest ``entry``)."""
    cli, scenario = entry["cli"], entry["scenario"]
    calls = alone = READERS[cli](read_jsonl(HERE / f"{key}.jsonl"))
    with_rollout = cli == "codex" and bool(entry.get("session"))
    if with_rollout:
        calls = codex_located(calls, read_jsonl(HERE / cli / entry["session"]))
    out: dict[str, Any] = {"file": f"{key}.jsonl", "cli": cli, "version": entry["version"], "scenario": scenario,
                           "verdict": entry["label"], **chains(cli, calls)}
    if with_rollout:
        figures = chains(cli, alone)
        out["read_with_rollout"] = True
        out.update({f"without_rollout_{k}": figures[k] for k in ("default_stop", "unordered_early_stop")})
    starts = (out["early_loop_start"], out["default_loop_start"], out["most_repeated_start"])
    out["loop_start"] = next((s for s in starts if s), 0) if entry["label"] == "wedged" else 0
    out["designed_loop_start"], out["designed_period"] = entry["designed_loop_start"], entry["designed_period"]
    reactions = {name: rule(calls) for name, (_, rule) in PEERS.items()}
    out["peers"] = reactions
    if entry["label"] == "wedged":
        for field, names in (("fastest_peer", STOPPING_PEERS), ("fastest_any_peer", tuple(PEERS))):
            fired = sorted((reactions[p], p) for p in names if reactions[p])
            out[field] = fired[0][1] if fired else ""
            out[f"{field}_call"] = fired[0][0] if fired else 0
            out[f"{field}_rule"] = PEERS[fired[0][1]][0] if fired else ""
    if cli == "claude":
        out["ms"] = [c.ms if c.ms is not None else -1 for c in calls]
    if entry.get("session"):
        session = SESSION_READERS[cli](read_jsonl(HERE / cli / entry["session"]))
        figures = chains(cli, session)
        out["session"] = f"{cli}/{entry['session']}"
        kept = ("calls", "default_stop", "early_stop", "unordered_default_stop", "unordered_early_stop")
        out.update({f"session_{k}": figures[k] for k in kept})
    if key in BLIND_SPOTS:
        out["blind_spot"] = BLIND_SPOTS[key]
    return out


def toml_value(value: Any) -> str:
    """A TOML literal for a string, bool, int or list of ints."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def render(verdicts: dict[str, dict[str, Any]]) -> str:
    """verdicts.toml: one table per recording, ``[\"<cli>/<scenario>\"]``, its peers in a sub-table."""
    head = ('# Expected verdicts of the recordings, written by count_verdicts.py (do not edit by hand).\n'
            '# Call numbers are 1-based tool calls in the stream; 0 means "not stopped within the recording".\n'
            f'# default: limit {DEFAULT[1]} for every period; early: limits {EARLY}, poll_limit {POLL_LIMIT}.\n')
    parts = [head]
    for key, table in verdicts.items():
        peers = table.pop("peers")
        body = "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items())
        peer_body = "".join(f"{k} = {v}\n" for k, v in peers.items())
        parts.append(f'\n["{key}"]\n{body}\n["{key}".peers]\n{peer_body}')
    return "".join(parts)


def main(argv: list[str]) -> int:
    """Print, write (``--write``) or check (``--check``) verdicts.toml."""
    manifest = json.loads((HERE / "manifest.json").read_text())
    text_out = render({key: verdict(key, manifest[key]) for key in sorted(manifest)})
    target = HERE / "verdicts.toml"
    if "--write" in argv:
        target.write_text(text_out)
    elif "--check" in argv:
        if not target.exists() or target.read_text() != text_out:
            print("verdicts.toml is stale: run count_verdicts.py --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
