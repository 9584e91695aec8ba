"""The ``otel-toolchain analyze`` subcommand: calibrate repeat_guard's limit from recorded runs.

::

    otel-toolchain analyze [--harness NAME|auto] [--manifest PACK.toml] [--labels FILE]
                           [--format text|json] [--plot FILE.png] [PATH ...]

PATHs are files or folders of streams, session stores and OTLP traces files; with none, the
session stores of every CLI found on this machine. Exit codes: 0 done (a file that could not be
read is reported and passed over), 2 bad usage (an unreadable manifest or labels file, or
``--plot`` without matplotlib).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.analyze import Labels, analyze, render_text, to_dict
from otel_toolchain.analyze.plot import write_plot
from otel_toolchain.cli.progress import Progress
from otel_toolchain.harnesses.detect import HARNESSES
from otel_toolchain.manifest import Manifest

__all__ = ["register", "run_analyze"]

EXIT_OK = 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``analyze`` to an ``add_subparsers()`` object; its handler is ``args.handler``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "analyze", help="measure recorded runs and suggest a repeat_guard limit (no spans are built)",
        description="Measure every turn of recorded runs (streams, session stores, OTLP traces) by repeat_guard's "
                    "rule, show the distributions, and place the limit between healthy and wedged turns.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders of recorded runs (default: this machine's session stores)")
    parser.add_argument("--harness", choices=("auto", *HARNESSES), default="auto",
                        help="the CLI that wrote the files (default: recognised from each file)")
    parser.add_argument("--manifest", help="the pack's TOML manifest whose repeat_guard applies (default chain)")
    parser.add_argument("--labels", metavar="FILE", help="CSV of run,label with label wedged or healthy")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--plot", metavar="FILE.png", help="also draw the distribution as a PNG (needs matplotlib)")
    parser.set_defaults(handler=run_analyze)
    return parser


def run_analyze(args: argparse.Namespace) -> int:
    """The handler: analyse, print the report on standard output, draw the plot if asked."""
    manifest = Manifest.load(args.manifest) if args.manifest else Manifest.default()
    labels = Labels.load(args.labels) if args.labels else None
    bars: list[Progress] = []

    def progress(paths: list[Path]) -> Progress | None:
        bar = Progress.maybe(paths, sys.stderr)
        bars.extend([bar] if bar is not None else [])
        return bar

    try:
        analysis = analyze(args.paths, harness=args.harness, manifest=manifest, labels=labels, progress=progress)
    finally:
        for bar in bars:
            bar.finish()
    if args.plot:
        write_plot(analysis, args.plot)
        analysis.notes.append(f"plot written to {args.plot}")
    if args.format == "json":
        print(json.dumps(to_dict(analysis), indent=2))
    else:
        print(terminal_safe(render_text(analysis)))
    return EXIT_OK
