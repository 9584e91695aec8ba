"""The ``otel-toolchain`` command line: the parser, and the only module that reads the environment.

Every user error ends as one line on stderr and an exit code of :mod:`otel_toolchain.cli.codes`;
a reader that goes away early (``| head``) never causes a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any

from otel_toolchain import __version__
from otel_toolchain.cli import codes
from otel_toolchain.cli.agent_commands import register as register_agent_commands
from otel_toolchain.cli.analyze import register as register_analyze
from otel_toolchain.cli.options import common_options, non_negative
from otel_toolchain.cli.output import setup_logging
from otel_toolchain.errors import ToolchainError
from otel_toolchain.harnesses.detect import HARNESSES

__all__ = ["build_parser", "main"]

_DESCRIPTION = ("OpenTelemetry for AI agents' tool use: every tool call a span, and a plugin chain that "
                "classifies, counts and stops an agent going round the same cycle of calls.")
_HARNESS_HELP = ("the CLI that wrote the stream: auto recognises it from the first lines; a named harness "
                 "that does not match them is a warning (under run: auto-detection takes over)")
_Handler = Callable[[argparse.Namespace, Any], int]


def _lazy(name: str) -> _Handler:
    """The handler ``name`` of :mod:`otel_toolchain.cli.commands`, imported when a command runs:
    the parser (and so ``--help``) is built without the chain, the SDK or the exporters."""

    def handler(args: argparse.Namespace, ctx: Any) -> int:
        result: int = getattr(import_module("otel_toolchain.cli.commands"), name)(args, ctx)
        return result

    handler.__name__ = name
    return handler


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown (where there is one to show), and the epilog's table kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _path(text: str) -> str:
    """A path as typed, with ``~`` and ``$VARS`` expanded (as a shell would have, had it been unquoted)."""
    return text if text == "-" else os.path.expandvars(os.path.expanduser(text))


def _sub(commands_: argparse._SubParsersAction[argparse.ArgumentParser], name: str, handler: _Handler, help_: str,
         description: str) -> argparse.ArgumentParser:
    parser = commands_.add_parser(name, help=help_, description=textwrap.fill(description, 78), epilog=codes.TABLE,
                                  formatter_class=_Formatter, parents=[common_options()])
    parser.set_defaults(handler=handler)
    return parser


def _add_harness_and_manifest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--harness", choices=("auto", *HARNESSES), default="auto", help=_HARNESS_HELP)
    parser.add_argument("--manifest", type=_path, help="the pack's TOML manifest (default: the default chain: "
                        "classify, tool_stats, repeat_guard limit 25)")


def _format(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help=what)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="otel-toolchain", description=textwrap.fill(_DESCRIPTION, 78),
                                     epilog=codes.TABLE,
                                     formatter_class=_Formatter, parents=[common_options()])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subs = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")

    check = _sub(subs, "check", _lazy("check"), "check a manifest and print the chain it would run",
                 "Load a pack's manifest, build every plugin, and print the chain in order with its settings.")
    check.add_argument("manifest", type=_path, help="the pack's TOML manifest")
    _format(check, "text, or one JSON object")

    plugins = _sub(subs, "plugins", _lazy("plugins"), "list the installed plugins",
                   "List the plugins installed as otel_toolchain.plugins entry points: name, object, distribution.")
    _format(plugins, "text (tab-separated), or a JSON array")

    replay = _sub(subs, "replay", _lazy("replay"), "turn recorded runs into spans and run the chain over them",
                  "Read recorded runs (headless streams, session-store files, folders of them) into spans, run the "
                  "chain over every turn, print each turn's summary and, as text, its tree.")
    replay.add_argument("files", nargs="+", metavar="FILE", type=_path,
                        help="recorded runs: files or folders (- reads standard input)")
    _add_harness_and_manifest(replay)
    _format(replay, "text (summary and tree), or one JSON object per turn")
    replay.add_argument("--strict", action="store_true",
                        help="a bad line, or a --harness that does not match the stream, is an error (exit 2)")

    run = _sub(subs, "run", _lazy("run"), "run a harness, trace its tool calls live, stop it when it wedges",
               "Run a coding-agent CLI in its own process group, pass its standard output through, turn its tool "
               "calls into spans as they arrive, and end the group when a plugin stops the turn (exit 75).")
    _add_harness_and_manifest(run)
    run.add_argument("--retries", type=non_negative(int), default=0, metavar="N",
                     help="rerun a stopped command up to N times, each attempt a turn of its own")
    run.add_argument("--log", type=_path, metavar="FILE", help="append the harness's standard output to this file "
                     "too (a log that cannot be written is reported; the run goes on)")
    run.add_argument("--grace", type=non_negative(float), default=3.0, metavar="SECONDS",
                     help="seconds between SIGTERM and SIGKILL")
    run.add_argument("--telemetry", action="store_true", help="guard the command through its own OTLP export "
                     "(a receiver on a loopback port; the command keeps the terminal) instead of its output stream")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")

    show = _sub(subs, "show", _lazy("show"), "draw the turns of an OTLP JSON lines traces file as a tree",
                "Draw every turn of a traces file: repeated calls folded with a count, the loop and the stop "
                "marked. With no FILE, the embedded default's folder.")
    show.add_argument("file", nargs="?", type=_path, metavar="FILE",
                      help="traces.jsonl, or the folder the embedded default writes to (default: that folder)")
    show.add_argument("--max-calls", type=_positive_int, default=40, metavar="N",
                      help="lines drawn per turn before the middle is elided (marked lines are always drawn)")
    _format(show, "text (the tree), or one JSON object per turn with its calls")

    register_analyze(subs, formatter=_Formatter, parents=[common_options()], epilog=codes.TABLE, path_type=_path)
    register_agent_commands(subs, formatter=_Formatter, parents=[common_options()], epilog=codes.TABLE)
    return parser


def _tolerant_streams() -> None:
    """An output encoding that cannot show a character (PYTHONIOENCODING=latin-1) replaces it, never raises."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a stream already written to in another mode: leave it be
                continue


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see :data:`otel_toolchain.cli.codes.TABLE`)."""
    _tolerant_streams()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse has already printed
        return exc.code if isinstance(exc.code, int) else codes.USAGE
    setup_logging(getattr(args, "verbosity", 0))
    ctx = import_module("otel_toolchain.cli.commands").context_of(os.environ)
    try:
        code: int = args.handler(args, ctx)
    except ToolchainError as exc:
        print(f"otel-toolchain: {exc}", file=sys.stderr)
        code = codes.USAGE
    except BrokenPipeError:
        ctx.out.gone = True
        code = codes.OK
    except KeyboardInterrupt:
        code = 130
    finally:
        logging.getLogger("otel_toolchain").handlers[:] = [
            h for h in logging.getLogger("otel_toolchain").handlers if not getattr(h, "_otel_toolchain_cli", False)]
    if not ctx.out.gone:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            ctx.out.gone = True
    if ctx.out.gone:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
