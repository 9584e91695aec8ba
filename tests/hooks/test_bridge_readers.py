"""OpenCode's and Pi's events, as our bridge files hand them to the hook, read into calls and turns.

The payloads are recorded from the real CLIs by tests/hooks/record_bridges.py (one turn: a command
that exits 1, a shell call whose working folder does not exist, ``cat wedge.txt``, a final answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.calls import ToolCall
from otel_toolchain.errors import BadRequest, ManifestError
from otel_toolchain.hooks import bridges, opencode, pi
from otel_toolchain.hooks.session import HookEvent, HookReader, handle_event
from otel_toolchain.manifest import Manifest

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks"
NOW = 1_800_000_000_000_000_000
OC_SESSION = "ses_dbd828ae4ffe0greST6ECy1aRb"
PI_SESSION = "01a2427d-89bd-746d-aa2c-2e4377200bee"
MISSING = "cat: missing-file.txt: No such file or directory\n"
WEDGE = "lock held by pid 4242; waiting\n"


def recorded(cli: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / cli / "payloads.jsonl").read_text().splitlines()]


def test_opencode_events_are_read_as_calls_and_ends() -> None:
    assert [opencode.read_event(p, NOW) for p in recorded("opencode")] == [
        HookEvent(OC_SESSION, "call", "tool.execute.after",
                  ToolCall("bash", {"command": "cat missing-file.txt"}, MISSING, True, "exit_code_1", "call_fake000003",
                           "/work", NOW, NOW)),
        # the tool threw (no such folder): only the event hook sees it, with its times
        HookEvent(OC_SESSION, "call", "tool.execute.after",
                  ToolCall("bash", {"command": "ls", "workdir": "/nonexistent-dir-xyz"},
                           "NotFound: FileSystem.access (/nonexistent-dir-xyz)", True, "tool_error", "call_fake000005",
                           "/work", 1796411850855 * 1_000_000, 1796411850869 * 1_000_000)),
        HookEvent(OC_SESSION, "call", "tool.execute.after",
                  ToolCall("bash", {"command": "cat wedge.txt"}, WEDGE, False, None, "call_fake000007", "/work", NOW,
                           NOW)),
        HookEvent(OC_SESSION, "turn_end", "session.idle"),
        HookEvent(OC_SESSION, "session_end", "exit"),
    ]


def test_pi_events_are_read_as_calls_and_ends() -> None:
    assert [pi.read_event(p, NOW) for p in recorded("pi")] == [
        HookEvent(PI_SESSION, "call", "tool_result",
                  ToolCall("bash", {"command": "cat missing-file.txt"}, MISSING + "\n\nCommand exited with code 1",
                           True, "exit_code_1", "call_fake000010", "/work", NOW, NOW)),
        # Pi's bash takes no working folder: the call ran where Pi runs
        HookEvent(PI_SESSION, "call", "tool_result",
                  ToolCall("bash", {"command": "ls", "workdir": "/nonexistent-dir-xyz"},
                           "cycle-a.txt\ncycle-b.txt\nwedge.txt\n", False, None, "call_fake000012", "/work", NOW, NOW)),
        HookEvent(PI_SESSION, "call", "tool_result",
                  ToolCall("bash", {"command": "cat wedge.txt"}, WEDGE, False, None, "call_fake000014", "/work", NOW,
                           NOW)),
        HookEvent(PI_SESSION, "turn_end", "agent_end"),
        HookEvent(PI_SESSION, "session_end", "session_shutdown"),
    ]


def test_a_call_pi_refused_before_running_it_is_a_failed_call() -> None:
    # Built from Pi's ToolExecutionEndEvent type, as the bridge sends it with the input tool_call saw.
    event = {"type": "tool_execution_end", "toolName": "bash", "toolCallId": "c1", "input": {"cmd": "ls"},
             "result": {"content": [{"type": "text", "text": "Validation failed: command is required"}]},
             "isError": True}
    call = ToolCall("bash", {"cmd": "ls"}, "Validation failed: command is required", True, "tool_error", "c1", None,
                    NOW, NOW)
    assert pi.read_event({"event": event, "session_id": "s"}, NOW) == HookEvent("s", "call", "tool_execution_end", call)


def test_a_reload_of_pis_extensions_closes_the_turn_and_keeps_the_session() -> None:
    shutdown = {"event": {"type": "session_shutdown", "reason": "reload"}, "session_id": "s"}
    assert pi.read_event(shutdown, NOW) == HookEvent("s", "turn_end", "session_shutdown")


def test_events_the_chain_does_not_act_on_are_none() -> None:
    part = recorded("opencode")[1]["event"]["properties"]["part"]
    aborted = part | {"state": part["state"] | {"error": "Tool execution aborted"}}  # our own stop's abort
    done = part | {"state": part["state"] | {"status": "completed"}}  # tool.execute.after has it already
    for event in ({"type": "message.part.updated", "properties": {"part": aborted}},
                  {"type": "message.part.updated", "properties": {"part": done}},
                  {"type": "session.status", "properties": {"sessionID": "s"}}):
        assert opencode.read_event({"hook": "event", "event": event}, NOW) is None
    assert pi.read_event({"event": {"type": "turn_start"}, "session_id": "s"}, NOW) is None


@pytest.mark.parametrize(("reader", "payload", "message"), [
    (opencode.READER, {"hook": "tool.execute.after", "input": {"tool": "bash"}}, "opencode hook payload has no "
     "input.sessionID"),
    (opencode.READER, {"hook": "tool.execute.after", "input": "bash"}, "opencode hook payload: input is not an object"),
    (opencode.READER, {"hook": "chat.message"}, "opencode hook payload: unknown hook 'chat.message'"),
    (pi.READER, {"event": {"type": "tool_result"}}, "pi hook payload has no session_id"),
    (pi.READER, {"event": "tool_result", "session_id": "s"}, "pi hook payload: event is not an object"),
])
def test_a_payload_that_is_not_the_agents_is_refused_by_name(reader: HookReader, payload: dict[str, Any],
                                                             message: str, tmp_path: Path) -> None:
    with pytest.raises(BadRequest) as caught:
        handle_event(payload, reader, Manifest.default(), tmp_path)
    assert str(caught.value) == message
    assert not any(tmp_path.iterdir())  # nothing was kept


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_the_recorded_wedge_call_repeated_is_stopped_at_the_25th(cli: str, tmp_path: Path) -> None:
    reader = {"opencode": opencode.READER, "pi": pi.READER}[cli]
    wedge = recorded(cli)[2]
    answers = [handle_event(_with_call_id(cli, wedge, f"w{n}"), reader, Manifest.default(), tmp_path).output
               for n in range(26)]
    assert answers[:24] == [None] * 24
    assert answers[24] == answers[25] == {"continue": False, "stopReason": "otel-toolchain: stopped by repeat_guard "
                                          "at call 25: the same call (bash) repeated 25 times in a row with the same "
                                          "results"}


def _with_call_id(cli: str, payload: dict[str, Any], call_id: str) -> dict[str, Any]:
    if cli == "opencode":
        return payload | {"input": payload["input"] | {"callID": call_id}}
    return payload | {"event": payload["event"] | {"toolCallId": call_id}}


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_install_writes_the_command_and_uninstall_removes_only_ours(cli: str, tmp_path: Path) -> None:
    path = bridges.bridge_path(cli, "project", tmp_path, tmp_path / "home", {})
    places = {"opencode": ".opencode/plugin/otel-toolchain.js", "pi": ".pi/extensions/otel-toolchain.ts"}
    assert path == tmp_path / places[cli]
    bridges.install(cli, path, ["/opt/bin/otel-toolchain", "hook", cli, "--manifest", "/p/it's.toml"])
    text = path.read_text()
    assert f'= ["/opt/bin/otel-toolchain", "hook", "{cli}", "--manifest", "/p/it\'s.toml"]' in text
    assert "__OTEL_TOOLCHAIN_COMMAND__" not in text
    bridges.install(cli, path, ["otel-toolchain", "hook", cli])  # again: rewritten, not refused
    assert '= ["otel-toolchain", "hook", "' in path.read_text()
    assert bridges.uninstall(cli, path) and not path.exists()
    assert not bridges.uninstall(cli, path)
    path.write_text("// someone else's plugin\n")
    with pytest.raises(ManifestError, match="did not write"):
        bridges.install(cli, path, ["otel-toolchain", "hook", cli])
    assert not bridges.uninstall(cli, path) and path.read_text() == "// someone else's plugin\n"


def test_the_user_scope_follows_each_clis_own_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert bridges.bridge_path("opencode", "user", tmp_path, home, {}) == (
        home / ".config/opencode/plugin/otel-toolchain.js")
    assert bridges.bridge_path("opencode", "user", tmp_path, home, {"XDG_CONFIG_HOME": "/x"}) == Path(
        "/x/opencode/plugin/otel-toolchain.js")
    assert bridges.bridge_path("pi", "user", tmp_path, home, {}) == home / ".pi/agent/extensions/otel-toolchain.ts"
    assert bridges.bridge_path("pi", "user", tmp_path, home, {"PI_CODING_AGENT_DIR": "/a"}) == Path(
        "/a/extensions/otel-toolchain.ts")


def test_install_where_the_folder_is_a_file_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "extensions").write_text("not a folder")
    done = subprocess.run([sys.executable, "-m", "otel_toolchain", "hooks", "install", "pi"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"otel-toolchain: {tmp_path / '.pi' / 'extensions'}: File exists; nothing was changed\n"
    assert (tmp_path / ".pi" / "extensions").read_text() == "not a folder"
