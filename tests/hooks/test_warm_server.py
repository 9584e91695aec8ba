"""The warm hook server: later calls answered by a fork of a server that imported the chain once.

Real processes throughout: the hook command as Claude Code runs it (one process per event, the
recorded payloads of tests/data/hooks), the server it starts in the background, and raw clients on
its socket. Every server a test starts is ended by the test (``Warm.stop``), found by its pid file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from otel_toolchain.cli.hook_client import HEADER, IDLE_ENV, MAGIC, PROTOCOL, SERVER_ENV, STATE_DIR_ENV, server_place
from otel_toolchain.hooks.state import locked_session

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks" / "claude-code"
WEDGE = json.loads((DATA / "PostToolUseFailure.failing.json").read_text())
STOP = {"continue": False, "stopReason": "otel-toolchain: stopped by repeat_guard at call 25: "
        "the same call (Bash) repeated 25 times in a row with the same results"}
OWN = "answered in its own process"


def served_by(pid: int) -> str:
    return f"answered in a fork of the warm hook server (pid {pid})"


class Warm:
    """A private state folder on a short path (a socket's path holds ~100 bytes) and the hook run in it."""

    def __init__(self, root: Path, **env: str) -> None:
        self.root = root
        self.state = root / "state"
        self.env = os.environ | {STATE_DIR_ENV: str(self.state), "OTEL_TOOLCHAIN_OUTPUT_DIR": str(root / "out"),
                                 SERVER_ENV: "on", IDLE_ENV: "300"} | env

    def hook(self, event: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "otel_toolchain", "hook", "claude-code", "-v", *extra],
                              input=json.dumps(event), capture_output=True, text=True, env=self.env, timeout=60,
                              check=False)

    def pids(self) -> list[int]:
        return [int(p.read_text()) for p in sorted((self.state / "warm").glob("*.pid"))]

    def server(self, other_than: int | None = None) -> int:
        """The pid of the running server (waits for it to have started, up to 60 s)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = [pid for pid in self.pids() if pid != other_than and _alive(pid)]
            if pids and all(p.with_suffix(".sock").exists() for p in (self.state / "warm").glob("*.pid")):
                return pids[0]
            time.sleep(0.05)
        raise AssertionError(f"no warm server came up in {self.state}")

    def stop(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            _wait_gone(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pid: int, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"server {pid} did not end on SIGTERM")


@pytest.fixture
def warm() -> Iterator[Warm]:
    root = Path(tempfile.mkdtemp(prefix="oth-", dir="/tmp"))
    made = Warm(root)
    try:
        yield made
    finally:
        made.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.integration  # 27 processes of the real command
def test_later_calls_are_answered_by_the_warm_server_and_the_wedge_stops_at_the_25th(warm: Warm) -> None:
    first = warm.hook(WEDGE | {"tool_use_id": "toolu_0"})
    assert (first.returncode, first.stdout) == (0, "") and OWN in first.stderr
    pid = warm.server()
    answers = [warm.hook(WEDGE | {"tool_use_id": f"toolu_{n}"}) for n in range(1, 26)]
    assert all(a.returncode == 0 and served_by(pid) in a.stderr for a in answers), answers[-1].stderr
    assert [a.stdout for a in answers[:23]] == [""] * 23
    assert json.loads(answers[23].stdout) == STOP  # the 25th call
    assert json.loads(answers[24].stdout) == STOP  # and every later one
    traces = (warm.root / "out" / "traces.jsonl").read_text()
    assert '"traceId":"6423284a76e44823bdc8b024a6e70c82"' in traces and "tool_plugin.repeat_guard" in traces
    end = warm.hook(json.loads((DATA / "SessionEnd.failing.json").read_text()))
    assert (end.returncode, end.stdout) == (0, "") and served_by(pid) in end.stderr
    assert not list(warm.state.glob("*.json"))  # the session's state is gone


@pytest.mark.integration
def test_parallel_calls_through_the_server_are_each_counted_once(warm: Warm) -> None:
    warm.hook(WEDGE | {"tool_use_id": "p0"})
    pid = warm.server()
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: warm.hook(WEDGE | {"tool_use_id": f"p{n}"}), range(1, 25)))
    assert all(served_by(pid) in a.stderr for a in answers)
    assert [json.loads(a.stdout) for a in answers if a.stdout] == [STOP]  # exactly one of them was the 25th
    with locked_session(warm.state, WEDGE["session_id"]) as (state, _path):
        assert len(state.calls) == 25


@pytest.mark.integration
def test_a_killed_servers_socket_costs_one_slow_call_and_a_new_server(warm: Warm) -> None:
    warm.hook(WEDGE | {"tool_use_id": "k0"})
    old = warm.server()
    os.kill(old, signal.SIGKILL)
    _wait_gone(old)
    assert list((warm.state / "warm").glob("*.sock"))  # left behind: connecting to it is refused
    slow = warm.hook(WEDGE | {"tool_use_id": "k1"})
    assert (slow.returncode, slow.stdout) == (0, "") and OWN in slow.stderr
    new = warm.server(other_than=old)
    fast = warm.hook(WEDGE | {"tool_use_id": "k2"})
    assert served_by(new) in fast.stderr
    with locked_session(warm.state, WEDGE["session_id"]) as (state, _path):
        assert [row[5] for row in state.calls] == ["k0", "k1", "k2"]  # each call counted once, in order


def test_no_server_when_asked_not_to(warm: Warm) -> None:
    flagged = warm.hook(WEDGE, "--no-server")
    assert OWN in flagged.stderr and not (warm.state / "warm").exists()
    warm.env[SERVER_ENV] = "off"
    switched_off = warm.hook(WEDGE)
    assert OWN in switched_off.stderr and not (warm.state / "warm").exists()


@pytest.mark.integration
def test_an_idle_server_exits_and_removes_its_socket(warm: Warm) -> None:
    warm.env[IDLE_ENV] = "1"
    warm.hook(WEDGE)
    pid = warm.server()
    _wait_gone(pid)
    assert sorted(p.suffix for p in (warm.state / "warm").iterdir()) == [".lock", ".log"]
    assert next((warm.state / "warm").glob("*.log")).read_text() == ""


def test_the_socket_and_its_folder_are_the_users_alone(warm: Warm) -> None:
    warm.hook(WEDGE)
    warm.server()
    sock = next((warm.state / "warm").glob("*.sock"))
    assert (oct(sock.stat().st_mode & 0o777), oct(sock.parent.stat().st_mode & 0o777)) == ("0o600", "0o700")


def _request(warm: Warm, **changes: Any) -> bytes:
    body = json.dumps({"argv": ["claude-code"], "env": warm.env, "cwd": str(warm.root)} | changes).encode()
    return HEADER.pack(MAGIC, PROTOCOL, len(body)) + body


def _raw_client(warm: Warm) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(str(next((warm.state / "warm").glob("*.sock"))))
    return conn


def test_a_client_that_leaves_before_go_gets_nothing_run(warm: Warm, tmp_path: Path) -> None:
    warm.hook(WEDGE | {"tool_use_id": "g0"})
    pid = warm.server()
    event = tmp_path / "event.json"
    event.write_text(json.dumps(WEDGE | {"tool_use_id": "never"}))
    with event.open("rb") as stdin, _raw_client(warm) as conn:
        socket.send_fds(conn, [_request(warm)], [stdin.fileno(), 1, 2])
        assert conn.recv(16) == b"ready\n"
    with _raw_client(warm) as conn:  # not this protocol: closed without an answer
        conn.sendall(b"GET / HTTP/1.1\r\n\r\n")
        try:
            answer = conn.recv(16)
        except ConnectionResetError:  # closed with the request unread
            answer = b""
        assert answer == b""
    after = warm.hook(WEDGE | {"tool_use_id": "g1"})
    assert served_by(pid) in after.stderr  # the server lives on
    with locked_session(warm.state, WEDGE["session_id"]) as (state, _path):
        assert [row[5] for row in state.calls] == ["g0", "g1"]


def test_the_server_is_per_installation_and_environment(tmp_path: Path) -> None:
    env = {STATE_DIR_ENV: str(tmp_path / "s")}
    place = server_place(env)
    assert place is not None and place.socket.parent == tmp_path / "s" / "warm"
    assert server_place(env | {"PYTHONPATH": "/elsewhere"}) != place  # other code may load there
    assert server_place(env | {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) == place  # each call brings its own
    assert server_place(env | {SERVER_ENV: "off"}) is None
    assert server_place({STATE_DIR_ENV: "/tmp/" + "x" * 100}) is None  # no room for a socket's name
