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
