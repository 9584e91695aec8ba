"""The ``otel-toolchain`` command: one module per sub-command; ``main`` is the entry point."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    ``hook`` runs once per tool call of an agent session, so it skips importing the other commands.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from otel_toolchain.cli.hook import hook_main  # noqa: PLC0415

        return hook_main(args[1:])
    from otel_toolchain.cli.app import main as full  # noqa: PLC0415

    return full(args)
