"""The exit codes of every ``otel-toolchain`` command, and the table ``--help`` and the README show."""

from __future__ import annotations

from typing import Final

__all__ = ["INPUT", "NOT_FOUND", "OK", "STOPPED", "TABLE", "USAGE"]

OK: Final = 0
INPUT: Final = 1
"""An input could not be read, does not exist, or held nothing to read (the other inputs were still read)."""
USAGE: Final = 2
STOPPED: Final = 75  # harnesses.live.EXIT_STOPPED (a test holds them equal; --help must not import it)
NOT_FOUND: Final = 127

TABLE: Final = f"""exit codes (every command):
  {OK:<4} done, and no turn was stopped
  {INPUT:<4} an input is missing, unreadable, empty or no run of a known harness (the others were read)
  {USAGE:<4} bad usage: an unknown flag or value, an invalid manifest or labels file, a --plot that
       cannot be written, a bad line under --strict
  {STOPPED:<4} a plugin stopped a turn (run, replay, show; analyze with --exit-code; EX_TEMPFAIL:
       retryable); 1 or 2 win over it
  {NOT_FOUND:<4} run: the command could not be started
  other run: the wrapped command's own exit code
  standard output closed early (| head): the rest of the output is dropped, the work finished, same code"""
