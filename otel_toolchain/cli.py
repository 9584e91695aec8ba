"""The ``otel-toolchain`` command. The only module that reads the environment for export or prints.

Exit codes: 0 success, 2 a bad manifest or bad usage, 75 (EX_TEMPFAIL) a wrapped run stopped by
a plugin; otherwise the wrapped command's own code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from otel_toolchain.errors import ToolchainError
from otel_toolchain.manifest import Manifest
from otel_toolchain.registry import available_plugins

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2


def _check(args: argparse.Namespace) -> int:
    manifest = Manifest.load(args.manifest)
    chain = manifest.plugins
    if args.format == "json":
        print(json.dumps({"manifest": manifest.source,
                          "chain": [{"plugin": s.name, **s.build().describe()} for s in chain]}))
        return EXIT_OK
    print(f"{manifest.source}: ok, {len(chain)} plugin(s) in this order:")
    for position, spec in enumerate(chain, 1):
        settings = ", ".join(f"{k}={v!r}" for k, v in spec.build().describe().items())
        print(f"  {position}. {spec.name}" + (f" ({settings})" if settings else ""))
    if not chain:
        print("  (none: tool_plugins = [] runs no plugins)")
    return EXIT_OK


def _plugins(args: argparse.Namespace) -> int:
    for name, entry in available_plugins().items():
        dist = entry.dist.name if entry.dist is not None else "?"
        print(f"{name}\t{entry.value}\t({dist})")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="otel-toolchain", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="check a manifest and print the chain it would run")
    check.add_argument("manifest", help="the pack's TOML manifest")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(handler=_check)

    plugins = commands.add_parser("plugins", help="list the installed plugins")
    plugins.set_defaults(handler=_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except ToolchainError as exc:
        print(f"otel-toolchain: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
