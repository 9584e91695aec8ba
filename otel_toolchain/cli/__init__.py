"""The ``otel-toolchain`` command: one module per sub-command; ``main`` is the entry point."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    ``hook`` runs once per tool call of an agent session, so it skips importing the other commands
    and, through :mod:`.hook_client`, hands the call to a warm server when there is one.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from otel_toolchain.cli.hook_client import main as hook  # noqa: PLC0415

        return hook(args[1:])
    from otel_toolchain.cli.app import main as full  # noqa: PLC0415

    return full(args)
