"""Hostile files in the folders replay and analyze read: each is reported and passed over, the rest kept.

Real CLI entry point (``main``), real files: a real FIFO, a real dangling symbolic link, real
zstandard frames (a bomb of zeros, a corrupt one, a cut one). Telemetry goes to the embedded
default in a temporary folder, so nothing leaves the machine.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hostile_data import STREAMS

from otel_toolchain._input.lines import iter_lines
from otel_toolchain.cli import main
from otel_toolchain.errors import StreamError
from otel_toolchain.harnesses.runs import runs_in

zstandard = pytest.importorskip("zstandard", reason="the zstd extra is not installed")

GOOD = STREAMS["claude-code"]


@pytest.fixture(autouse=True)
def _local_telemetry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path / "telemetry"))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-home-me-work"
    folder.mkdir(parents=True)
    shutil.copy(GOOD, folder / "a-good.jsonl")
    return folder


def _replayed(out: str) -> list[str]:
    return [line for line in out.splitlines() if "(claude-code) session" in line]


def test_a_fifo_named_jsonl_does_not_hang_replay_or_analyze(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            caplog: pytest.LogCaptureFixture) -> None:
    folder = _folder(tmp_path)
    os.mkfifo(folder / "b-fifo.jsonl")  # nothing ever writes to it: reading it would block forever
    assert main(["replay", str(folder)]) == 75  # the good file's wedge is stopped; the FIFO only passed over
    replayed = capsys.readouterr()
    assert len(_replayed(replayed.out)) == 1
    assert "b-fifo.jsonl: not a regular file (FIFO)" in caplog.text + replayed.err
    assert main(["analyze", str(folder.parent)]) == 1  # a file that could not be read: listed, the rest analysed
    captured = capsys.readouterr()
    assert captured.out.startswith("1 runs, 1 turns, 40 calls")
    assert "b-fifo.jsonl: not a regular file (FIFO): skipped" in captured.out + captured.err


def test_a_dangling_symlink_in_a_projects_folder_does_not_crash_analyze(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    (folder / "c-gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    assert main(["analyze", str(folder.parent)]) == 1  # a file that could not be read: listed, the rest analysed
    captured = capsys.readouterr()
    assert "c-gone.jsonl: cannot read: dangling symbolic link" in captured.out + captured.err
    assert captured.out.startswith("1 runs, 1 turns, 40 calls")


def test_a_device_is_refused_before_it_is_opened() -> None:
    with pytest.raises(StreamError, match="not a regular file"):
        list(iter_lines(Path("/dev/zero")))


def _zst(path: Path, data: bytes) -> Path:
    path.write_bytes(zstandard.ZstdCompressor(level=19).compress(data))
    return path


def test_a_zst_bomb_stops_at_the_ratio_limit(tmp_path: Path) -> None:
    bomb = _zst(tmp_path / "bomb.jsonl.zst", b"\0" * (256 << 20))  # 256 MiB of zeros in a few KB
    assert bomb.stat().st_size < 64 << 10
    with pytest.raises(StreamError, match=r"\.zst expands past .* 1000x"):
        sum(len(line) for line in iter_lines(bomb))


def test_a_corrupt_zst_is_an_error_for_that_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"not a frame" * 20)
    with pytest.raises(StreamError, match=r"corrupt \.zst"):
        list(iter_lines(bad))


def test_a_truncated_zst_is_an_error_not_a_silent_short_read(tmp_path: Path) -> None:
    whole = zstandard.ZstdCompressor().compress(GOOD.read_bytes())
    (tmp_path / "cut.jsonl.zst").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StreamError, match=r"truncated \.zst"):
        list(iter_lines(tmp_path / "cut.jsonl.zst"))
    (tmp_path / "two.jsonl.zst").write_bytes(whole + whole)  # two whole frames: one file, read across
    assert list(iter_lines(tmp_path / "two.jsonl.zst")) == GOOD.read_text().splitlines() * 2


def test_one_bad_zst_in_a_folder_loses_nothing_of_the_other_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    whole = zstandard.ZstdCompressor().compress(GOOD.read_bytes())
    (folder / "b-cut.jsonl.zst").write_bytes(whole[: len(whole) // 2])
    shutil.copy(GOOD, folder / "c-good.jsonl")
    runs = list(runs_in([folder]))
    assert [Path(run.source).name for run in runs] == ["a-good.jsonl", "b-cut.jsonl.zst", "c-good.jsonl"]
    assert main(["replay", str(folder / "a-good.jsonl"), str(folder / "b-cut.jsonl.zst"),
                 str(folder / "c-good.jsonl")]) == 1
    captured = capsys.readouterr()
    assert [line.split(" (")[0] for line in _replayed(captured.out)] == [
        str(folder / "a-good.jsonl"), str(folder / "c-good.jsonl")]
    assert "b-cut.jsonl.zst" in captured.err and "truncated .zst" in captured.err
