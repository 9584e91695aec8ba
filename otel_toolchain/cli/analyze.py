"""The ``otel-toolchain analyze`` subcommand: calibrate repeat_guard's limit from recorded runs.

::

    otel-toolchain analyze [--harness NAME|auto] [--manifest PACK.toml] [--labels FILE]
                           [--format text|json] [--plot FILE.png] [PATH ...]

PATHs are files or folders of streams, session stores and OTLP traces files; with none, the
session stores of every CLI found on this machine. Exit codes as every command
(:mod:`otel_toolchain.cli.codes`): 0 done; 1 a PATH that does not exist (nothing is analysed), or a
file that could not be read or a PATH that held no run (reported on stderr, the rest analysed);
2 bad usage (an unreadable manifest or labels file, a ``--plot`` that is no writable ``.png``,
or ``--plot`` without matplotlib), checked before the analysis.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.cli import codes
from otel_toolchain.harnesses.detect import HARNESSES

__all__ = ["register", "run_analyze"]

EXIT_OK = codes.OK


def register(subparsers: Any, *, formatter: type[argparse.HelpFormatter] = argparse.HelpFormatter,
             parents: Sequence[argparse.ArgumentParser] = (), epilog: str | None = None,
             path_type: Callable[[str], str] = str) -> argparse.ArgumentParser:
    """Add ``analyze`` to an ``add_subparsers()`` object; its handler is ``args.handler``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "analyze", help="measure recorded runs and suggest a repeat_guard limit (no spans are built)",
        description=textwrap.fill("Measure every turn of recorded runs (streams, session stores, OTLP traces) by "
                                  "repeat_guard's rule, show the distributions, and place the limit between healthy "
                                  "and wedged turns.", 78),
        formatter_class=formatter, parents=list(parents), epilog=epilog)
    parser.add_argument("paths", nargs="*", metavar="PATH", type=path_type,
                        help="files or folders of recorded runs (default: this machine's session stores)")
    parser.add_argument("--harness", choices=("auto", *HARNESSES), default="auto",
                        help="the CLI that wrote the files (auto: recognised from each file)")
    parser.add_argument("--manifest", type=path_type,
                        help="the pack's TOML manifest whose repeat_guard applies (default: the default chain)")
    parser.add_argument("--labels", metavar="FILE", type=path_type,
                        help="CSV of run,label with label wedged or healthy (default: stops recorded in OTLP traces)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the report as text or JSON")
    parser.add_argument("--plot", metavar="FILE.png", type=path_type,
                        help="also draw the distribution as a PNG (needs matplotlib)")
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 75, as run and replay do, when the manifest's repeat_guard (in enforce mode) "
                        "would stop a turn; without it a report exits 0")
    parser.set_defaults(handler=run_analyze)
    return parser


def _usage(message: str) -> int:
    print(f"otel-toolchain: {message}", file=sys.stderr)
    return codes.USAGE


def _plot_problem(plot: str) -> str | None:
    """Why ``--plot`` cannot be written, found before the analysis runs, or None."""
    path = Path(plot)
    if path.suffix.lower() != ".png":
        return f"--plot {plot}: the plot is a PNG: name the file *.png"
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return f"--plot {plot}: no such folder: {folder}"
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"--plot {plot}: not writable"
    return None


def run_analyze(args: argparse.Namespace, ctx: Any = None) -> int:
    """The handler: analyse, print the report on standard output, draw the plot if asked."""
    # Imported here, not at the top: the command line's parser (and --help) imports this module.
    from otel_toolchain.analyze import Labels, analyze, render_text, to_dict  # noqa: PLC0415
    from otel_toolchain.analyze.plot import write_plot  # noqa: PLC0415
    from otel_toolchain.cli.progress import Progress  # noqa: PLC0415
    from otel_toolchain.harnesses.runs import expand  # noqa: PLC0415
    from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome  # noqa: PLC0415
    from otel_toolchain.manifest import Manifest  # noqa: PLC0415

    missing = [path for path in args.paths if not Path(path).exists()]
    if missing:
        for path in missing:
            print(f"otel-toolchain: {path}: no such file or directory", file=sys.stderr)
        return codes.INPUT
    if args.plot and (problem := _plot_problem(args.plot)) is not None:
        return _usage(problem)
    manifest = Manifest.load(args.manifest) if args.manifest else Manifest.default()
    labels = Labels.load(args.labels) if args.labels else None
    bars: list[Progress] = []

    def progress(paths: list[Path]) -> Callable[[int], None] | None:
        bar = Progress.maybe(paths, sys.stderr, "analyze")
        bars.extend([bar] if bar is not None else [])
        return bar.advance if bar is not None else None

    try:
        codex_home = CodexHome.from_environ(ctx.environ if ctx is not None else os.environ)
        analysis = analyze(args.paths, harness=args.harness, manifest=manifest, labels=labels, progress=progress,
                           codex_home=codex_home)
    finally:
        for bar in bars:
            bar.finish()
    if args.plot:
        write_plot(analysis, args.plot)
        analysis.notes.append(f"plot written to {args.plot}")
    # JSON escapes control characters itself; the text report shows names from the streams
    text = json.dumps(to_dict(analysis), indent=2) if args.format == "json" else terminal_safe(render_text(analysis))
    if ctx is not None:
        ctx.out.line(text)
    else:
        print(text)
    for error in analysis.errors:
        print(terminal_safe(f"otel-toolchain: {error}"), file=sys.stderr)
    empty = [path for path in args.paths if Path(path).is_dir() and not expand([path])]
    for path in empty:
        print(f"otel-toolchain: {path}: no runs in this folder", file=sys.stderr)
    if analysis.errors or empty:
        return codes.INPUT
    stops = args.exit_code and analysis.guard.mode == "enforce" and analysis.stopped_turns > 0
    return codes.STOPPED if stops else codes.OK
