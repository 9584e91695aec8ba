"""Where a Codex stream's commands ran, read from the thread's rollout (otel_toolchain.harnesses.stores.codex_workdirs).

The real recording tests/data/recordings/codex/cd_dirs (``make check`` with ``workdir`` pkg-a ... pkg-f)
is read as ``replay`` reads it, with and without its rollout in a ``CODEX_HOME``; the follower's rules
(order, refused calls, half-written lines, waiting live, hostile ids) are shown on small rollouts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_toolchain.harnesses.events import ToolFinished
from otel_toolchain.harnesses.opener import open_lines, read_stream
from otel_toolchain.harnesses.stores import codex_workdirs
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome, RolloutWorkdirs
from otel_toolchain.harnesses.streams.codex import CodexReader

RECORDINGS = Path(__file__).resolve().parents[2] / "data" / "recordings" / "codex"
THREAD = "01a23627-5df2-77a1-aa50-6298fe13b1da"  # cd_dirs' thread, in its stream and its rollout


def rollout_path(home: Path, thread: str) -> Path:
    folder = home / "sessions" / "2026" / "12" / "02"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"rollout-2026-12-02T09-47-59-{thread}.jsonl"


def line(kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": "2026-12-02T09:47:59.000Z", "type": kind, "payload": payload}) + "\n"


def shell_call(cmd: str, workdir: str | None = None, call_id: str = "c") -> str:
    arguments = {"cmd": cmd} | ({"workdir": workdir} if workdir else {})
    return line("response_item", {"type": "function_call", "name": "exec_command", "arguments": json.dumps(arguments),
                                  "call_id": call_id})


META = line("session_meta", {"id": THREAD, "cwd": "/work"})


def cwds(events: object) -> list[str | None]:
    return [event.cwd for event in events if isinstance(event, ToolFinished)]  # type: ignore[attr-defined]


def replayed(home: Path | None) -> list[str | None]:
    lines = (RECORDINGS / "cd_dirs.jsonl").read_text().splitlines(keepends=True)
    codex_home = CodexHome.from_environ({"CODEX_HOME": str(home)}, Path("/nonexistent")) if home else None
    opened = open_lines(lines, codex_home=codex_home)
    assert opened is not None
    return cwds(opened.events)


def test_the_recorded_stream_reads_each_command_in_its_own_folder_with_its_rollout(tmp_path: Path) -> None:
    rollout_path(tmp_path, THREAD).write_bytes((RECORDINGS / "cd_dirs.session.jsonl").read_bytes())
    assert replayed(tmp_path) == ["pkg-a", "pkg-b", "pkg-c", "pkg-d", "pkg-e", "pkg-f"]


def test_without_its_rollout_the_stream_knows_no_folder(tmp_path: Path) -> None:
    assert replayed(tmp_path) == [None] * 6  # a CODEX_HOME without this thread
    assert replayed(None) == [None] * 6
    assert cwds(read_stream((RECORDINGS / "cd_dirs.jsonl").read_text().splitlines())) == [None] * 6


def test_the_stream_with_its_rollout_has_the_rollouts_own_call_folders(tmp_path: Path) -> None:
    """Read alone, the rollout gives the same folders: the two readings of one run agree."""
    rollout = rollout_path(tmp_path, THREAD)
    rollout.write_bytes((RECORDINGS / "cd_dirs.session.jsonl").read_bytes())
    assert cwds(read_stream(rollout.read_text().splitlines())) == replayed(tmp_path)


_OPEN: list[RolloutWorkdirs] = []


@pytest.fixture(autouse=True)
def _close_followers() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def follower(home: Path, *, wait_s: float = 0.0, on_sleep: object = None) -> RolloutWorkdirs:
    """A follower of ``home``'s rollouts on a fake clock (a sleep advances it and calls ``on_sleep``)."""
    def sleep(seconds: float) -> None:
        if callable(on_sleep):
            on_sleep()
        clock[0] += seconds

    clock = [0.0]
    where = RolloutWorkdirs(CodexHome((home / "sessions",), wait_s), clock=lambda: clock[0], sleep=sleep)
    _OPEN.append(where)
    return where


def test_calls_match_in_order_and_a_call_without_workdir_runs_in_the_session_folder(tmp_path: Path) -> None:
    rollout_path(tmp_path, THREAD).write_text(
        META + shell_call("make check", "pkg-a") + shell_call("make check", "pkg-b") + shell_call("ls"))
    where = follower(tmp_path)
    answers = [where(THREAD, "make check"), where(THREAD, "make check"), where(THREAD, "ls")]
    assert answers == ["pkg-a", "pkg-b", "/work"]
    assert where(THREAD, "make check") is None  # no fourth call in the rollout


def test_a_resumed_thread_matches_the_calls_of_its_latest_turn_only(tmp_path: Path) -> None:
    """``codex exec resume`` appends a turn to the rollout: the earlier turn's `make` in `old` is no candidate."""
    started = line("event_msg", {"type": "task_started", "turn_id": "t2"})
    rollout_path(tmp_path, THREAD).write_text(
        META + shell_call("make", "old") + started + shell_call("make", "new"))
    assert follower(tmp_path)(THREAD, "make") == "new"


def test_calls_codex_refused_are_in_the_rollout_only_and_passed_over(tmp_path: Path) -> None:
    rollout_path(tmp_path, THREAD).write_text(
        META + shell_call("rm -rf build", "a") + shell_call("rm -rf build", "b") + shell_call("make", "c"))
    where = follower(tmp_path)
    assert where(THREAD, "make") == "c"
    assert where(THREAD, "rm -rf build") is None  # passed over when `make` matched: not asked again


def test_a_half_written_line_is_read_once_codex_ends_it(tmp_path: Path) -> None:
    rollout = rollout_path(tmp_path, THREAD)
    whole = shell_call("make check", "pkg-a")
    rollout.write_text(META + whole[:40])
    where = follower(tmp_path)
    assert where(THREAD, "make check") is None
    with rollout.open("a") as out:
        out.write(whole[40:])
    assert where(THREAD, "make check") == "pkg-a"


def test_live_it_waits_for_a_call_codex_has_not_written_yet(tmp_path: Path) -> None:
    rollout = rollout_path(tmp_path, THREAD)
    rollout.write_text(META)
    written: list[int] = []

    def codex_writes() -> None:  # the call lands while the follower waits
        if not written:
            written.append(1)
            with rollout.open("a") as out:
                out.write(shell_call("make check", "pkg-a"))

    assert follower(tmp_path, wait_s=0.2, on_sleep=codex_writes)(THREAD, "make check") == "pkg-a"


def test_live_it_stops_waiting_after_the_first_call_that_never_comes(tmp_path: Path) -> None:
    rollout_path(tmp_path, THREAD).write_text(META + shell_call("make", "x"))
    slept: list[int] = []
    where = follower(tmp_path, wait_s=0.2, on_sleep=lambda: slept.append(1))
    assert where(THREAD, "cargo test") is None
    waited = len(slept)
    assert waited == 40  # 0.2 s in 5 ms polls
    assert where(THREAD, "npm test") is None and len(slept) == waited  # no second wait
    assert where(THREAD, "make") == "x"


@pytest.mark.parametrize("thread", ["*", "../../etc", "a" * 65, "01a2?627-5df2", ""])
def test_an_id_that_is_no_codex_thread_id_is_never_a_path(tmp_path: Path, thread: str) -> None:
    rollout_path(tmp_path, THREAD).write_text(META + shell_call("make", "x"))
    assert follower(tmp_path)(thread, "make") is None


def test_a_rollout_that_is_no_regular_file_is_not_opened(tmp_path: Path) -> None:
    fifo = rollout_path(tmp_path, THREAD)
    os.mkfifo(fifo)
    assert follower(tmp_path)(THREAD, "make") is None  # returns: a FIFO is never read


def test_an_over_long_rollout_line_is_skipped_and_the_next_read(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex_workdirs, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(codex_workdirs, "_CHUNK", 256)
    long_call = shell_call("make " + "x" * 5000, "far")
    rollout_path(tmp_path, THREAD).write_text(META + long_call + shell_call("make", "near"))
    where = follower(tmp_path)
    assert where(THREAD, "make") == "near"


def test_the_reader_asks_when_a_command_starts_and_lets_go_at_the_end(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    class Recorder:
        closed = False

        def __call__(self, thread_id: str, command: str) -> str | None:
            asked.append((thread_id, command))
            return f"dir{len(asked)}"

        def close(self) -> None:
            Recorder.closed = True

    reader = CodexReader(workdirs=Recorder())
    lines = (RECORDINGS / "cd_dirs.jsonl").read_text().splitlines()
    events = [event for number, text in enumerate(lines, 1) for event in reader.feed(text, number, 0)]
    events += reader.close(0)
    assert cwds(events) == [f"dir{n}" for n in range(1, 7)]
    assert asked == [(THREAD, "make check")] * 6  # once per command, at its start line
    assert Recorder.closed


def test_analyze_reads_the_stream_with_its_rollout_as_replay_does(tmp_path: Path) -> None:
    """``analyze`` opens runs the way ``replay`` does: with the rollout, cd_dirs' longest repeat is 1, not 6."""
    from otel_toolchain.analyze import analyze  # noqa: PLC0415 (the heavier analyze stack, for this test only)

    rollout_path(tmp_path, THREAD).write_bytes((RECORDINGS / "cd_dirs.session.jsonl").read_bytes())
    stream = [RECORDINGS / "cd_dirs.jsonl"]
    with_rollout = analyze(stream, codex_home=CodexHome((tmp_path / "sessions",)))
    alone = analyze(stream, codex_home=CodexHome((tmp_path / "elsewhere",)))
    assert with_rollout.aggregate.figures["repeats"].at_least(2) == 0
    assert alone.aggregate.figures["repeats"].at_least(6) == 1


def test_codex_home_is_codex_home_else_the_environments_home(tmp_path: Path) -> None:
    assert CodexHome.from_environ({"HOME": str(tmp_path)}).folders == (
        tmp_path / ".codex" / "sessions", tmp_path / ".codex" / "archived_sessions")
    assert CodexHome.from_environ({"HOME": "/elsewhere", "CODEX_HOME": str(tmp_path)}).folders == (
        tmp_path / "sessions", tmp_path / "archived_sessions")
