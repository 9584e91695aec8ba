"""Reading store files: lines split on \\n bytes only, broken lines, .zst, and what a missing extra says."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import zstandard

from otel_toolchain._input import lines as lines_module
from otel_toolchain._input.lines import iso_ns, iter_lines, split_lines
from otel_toolchain.harnesses.events import BadLine, ToolFinished
from otel_toolchain.harnesses.runs import runs_in
from otel_toolchain.harnesses.stores import MissingExtra

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
CLAUDE = SHARED / "sessions" / "claude-code" / "agentcmd-full-session-four.jsonl"


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 18])
def test_only_newline_bytes_end_lines_whatever_the_chunk(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(lines_module, "_CHUNK", chunk)
    text = 'a\u2028b\u0085c\u2029d\r\n{"é":"ü"}\n\nlast'
    assert list(split_lines(io.BytesIO(text.encode()))) == ["a\u2028b\u0085c\u2029d\r", '{"é":"ü"}', "", "last"]


def test_bytes_that_are_not_utf8_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "f.jsonl").write_bytes(b'{"a":"\xff"}\n')
    assert list(iter_lines(tmp_path / "f.jsonl")) == ['{"a":"\ufffd"}']


@pytest.mark.shared  # reads ../shared
def test_a_line_broken_by_a_users_redaction_is_passed_over(tmp_path: Path) -> None:
    lines = CLAUDE.read_bytes().split(b"\n")
    target = next(i for i, line in enumerate(lines) if b'"tool_result"' in line)
    lines[target] = lines[target][:200] + b"\xe2\x80 [REDACTED"
    (tmp_path / "s.jsonl").write_bytes(b"\n".join(lines))
    (run,) = list(runs_in([tmp_path / "s.jsonl"]))
    events = list(run.open().events)
    bad = [e for e in events if isinstance(e, BadLine)]
    assert [e.line_no for e in bad] == [target + 1]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert len(finished) == 27  # the call whose result was broken ends as interrupted; no call is lost
    assert sum(e.error_type == "interrupted" for e in finished) == 1


def test_a_zst_file_reads_line_by_line(tmp_path: Path) -> None:
    rows = [json.dumps({"n": n, "pad": "x" * 5000}) for n in range(200)]
    (tmp_path / "r.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress("\n".join(rows).encode()))
    assert list(iter_lines(tmp_path / "r.jsonl.zst")) == rows


def test_without_zstandard_a_zst_file_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "r.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"{}\n"))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(MissingExtra, match=r"otel-toolchain\[zstd\]"):
        list(iter_lines(tmp_path / "r.jsonl.zst"))


@pytest.mark.parametrize(("value", "expected"), [
    ("2025-09-25T01:22:20.083Z", 1758763340083000000),
    ("2025-09-25T01:22:20.083+00:00", 1758763340083000000),
    ("2025-09-25T01:22:20", 1758763340000000000),
    ("yesterday", None), ("", None), (1758763340, None),
])
def test_store_times(value: object, expected: int | None) -> None:
    assert iso_ns(value) == expected
