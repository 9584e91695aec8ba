"""The command line's parser is light: ``--help`` imports neither the SDK, pydantic, gRPC nor rich."""

from __future__ import annotations

import subprocess
import sys

from otel_toolchain.cli import codes
from otel_toolchain.harnesses.live import EXIT_STOPPED

HEAVY = ("opentelemetry", "pydantic", "grpc", "rich", "google.protobuf")


def test_help_imports_nothing_heavy() -> None:
    code = ("import sys, contextlib, io\n"
            "from otel_toolchain.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['--help'])\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules if m.startswith({HEAVY!r})}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_help_lists_every_command() -> None:
    out = subprocess.run([sys.executable, "-m", "otel_toolchain", "--help"], capture_output=True, text=True,
                         check=True).stdout
    block = out.split("  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    listed = [line.split()[0] for line in block.splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed == ["check", "plugins", "replay", "run", "show", "analyze", "serve", "hook", "hooks"]


def test_the_stopped_code_is_runs() -> None:
    assert codes.STOPPED == EXIT_STOPPED == 75


def test_the_hook_imports_no_exporter_until_a_stop(tmp_path: object) -> None:
    """Every Claude Code tool call starts the hook: answering a healthy call loads no exporter or metrics SDK."""
    event = ('{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1",'
             ' "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a"}, "cwd": "/tmp"}')
    code = ("import sys, io, contextlib\n"
            "from otel_toolchain.cli.hook import hook_main\n"
            f"sys.stdin = io.StringIO({event!r})\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert hook_main(['claude-code']) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith(('otel_toolchain.export.pipeline',\n"
            "      'otel_toolchain.export.otlp_json', 'opentelemetry.sdk.metrics', 'opentelemetry.exporter'))))")
    env = {"OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "[]"


def test_the_hook_client_imports_only_the_standard_library() -> None:
    """A call answered by the warm hook server costs the interpreter's start and this module, nothing more."""
    code = ("import sys\n"
            "import otel_toolchain.cli.hook_client\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('otel_toolchain',) + "
            f"{tuple(h.split('.')[0] for h in HEAVY)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(["otel_toolchain", "otel_toolchain.cli", "otel_toolchain.cli.hook_client",
                               "otel_toolchain.export", "otel_toolchain.export.paths"])
