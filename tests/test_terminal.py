"""Nothing from a stream acts on the terminal: control sequences in tool names, call ids and session
ids are printed escaped by ``replay``, ``analyze`` and ``run``'s stop line. Real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.cli import main
from otel_toolchain.outcome import stop_line
from otel_toolchain.signals import CycleCall, StopSignal

GOOD = Path(__file__).parent / "data" / "recordings" / "claude" / "pytest_fail.jsonl"
OSC_TITLE = "\x1b]0;pwned\x07"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
CSI_C1 = "\x9b31m"


@pytest.mark.parametrize("text", [OSC_TITLE, OSC8, CLEAR, CSI_C1, "\ud800", "\u202egnp.exe", "a\x00b\x7f"])
def test_control_characters_are_shown_escaped(text: str) -> None:
    shown = terminal_safe(text)
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or 0xd800 <= ord(c) <= 0xdfff for c in shown)
    assert "\\x1b" in shown or "\\u" in shown or "\\x00" in shown
    shown.encode("utf-8")


def test_layout_survives_and_newlines_can_be_escaped() -> None:
    assert terminal_safe("a\tb\nc") == "a\tb\nc"
    assert terminal_safe("a\nb", lines=False) == "a\\x0ab"
    assert terminal_safe(OSC_TITLE) == "\\x1b]0;pwned\\x07"


def _hostile_stream(tmp_path: Path) -> Path:
    evil = json.dumps(OSC_TITLE + CLEAR)[1:-1]
    lines = []
    for good in GOOD.read_text(encoding="utf-8").splitlines():
        line = good.replace('"name":"Bash"', f'"name":"Bash{evil}"')
        lines.append(line.replace('"session_id":"', '"session_id":"\\ud800' + json.dumps(OSC8)[1:-1]))
    path = tmp_path / "evil.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["replay", "analyze"])
def test_replay_and_analyze_print_stream_text_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.setenv("OTEL_TOOLCHAIN_OUTPUT_DIR", str(tmp_path / "telemetry"))
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    path = _hostile_stream(tmp_path)
    assert main([command, str(path)]) == (75 if command == "replay" else 0)  # replay stops the wedge
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert "\x1b" not in printed and "\x07" not in printed
    if command == "replay":
        assert "\\x1b]8;;http://evil.example/" in printed  # the session id, shown escaped
        assert "Bash\\x1b]0;pwned\\x07" in printed  # the tool name in the turn tree


def test_the_stop_line_of_run_is_escaped() -> None:
    stop = StopSignal("repeat_guard", "cycle", "reason" + CLEAR, 1, 2, at_call=3,
                      cycle=(CycleCall("Bash" + OSC_TITLE, "id" + OSC8, "read"),))
    line = stop_line(stop, trace=True)
    assert "\x1b" not in line and "\x07" not in line
    assert "Bash\\x1b]0;pwned\\x07 [id\\x1b]8;;" in line
