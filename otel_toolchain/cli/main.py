"""The ``otel-toolchain`` command. The only module that reads the environment for export or prints.

Exit codes: 0 success, 2 a bad manifest or bad usage, 75 (EX_TEMPFAIL) a wrapped run stopped by
a plugin; otherwise the wrapped command's own code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.chain import Toolchain
from otel_toolchain.cli.analyze import register as register_analyze
from otel_toolchain.cli.replay import Progress, format_outcome, replay_path
from otel_toolchain.cli.show import render_turns, turns_from_otlp_file
from otel_toolchain.errors import CannotRun, StreamError, ToolchainError
from otel_toolchain.export.pipeline import Pipeline, build_pipeline
from otel_toolchain.harnesses.detect import HARNESSES
from otel_toolchain.harnesses.live import run_harness
from otel_toolchain.harnesses.writer import TurnOutcome
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.registry import available_plugins

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 127
DIGEST_KEY_ENV = "OTEL_TOOLCHAIN_DIGEST_KEY"


def _load_manifest(path: str | None) -> Manifest:
    return Manifest.load(path) if path else Manifest.default()


def _digest_key() -> bytes | None:
    key = os.environ.get(DIGEST_KEY_ENV)
    return key.encode()[:64] if key else None


def start_telemetry(manifest: Manifest) -> tuple[Pipeline, Toolchain, AgentRecorder]:
    """The export pipeline (from the manifest and the OTEL_* environment), the chain on it, a recorder."""
    pipeline = build_pipeline(manifest.export)
    chain = manifest.toolchain(digest_key=_digest_key())
    # The recorder hands the chain its calls; the chain need not read the spans as a processor too.
    chain.install(None, pipeline.meter_provider, pipeline.logger_provider)
    recorder = AgentRecorder(pipeline.tracer_provider, toolchain=chain, capture_content=manifest.agent.capture_content)
    return pipeline, chain, recorder


def print_turn_trees(pipeline: Pipeline, outcomes: Sequence[TurnOutcome], stream: TextIO) -> None:
    """With the embedded default, the tree of each turn this command recorded (as ``show`` draws it)."""
    if pipeline.output_dir is None or not outcomes:
        return
    wanted = {f"{outcome.trace_id:032x}" for outcome in outcomes}
    try:
        turns = turns_from_otlp_file(pipeline.output_dir / "traces.jsonl", offset=pipeline.traces_start)
    except (OSError, ValueError):  # the summary above already said what happened; the tree is a bonus
        return
    shown = [turn for turn in turns if turn.trace_id in wanted]
    if shown:
        print(terminal_safe(render_turns(shown)), file=stream, flush=True)


def finish_telemetry(pipeline: Pipeline) -> None:
    finished = pipeline.shutdown()
    dropped = {signal: count for signal, count in pipeline.dropped.items() if count}
    if not finished:
        print(f"otel-toolchain: telemetry NOT fully delivered to {pipeline.destination}: export was still "
              "retrying when the wait ended (is the Collector up?)", file=sys.stderr)
    elif dropped:
        lost = ", ".join(f"{count} {signal}" for signal, count in dropped.items())
        print(f"otel-toolchain: telemetry NOT fully delivered to {pipeline.destination}: {lost} dropped",
              file=sys.stderr)
    else:
        print(f"otel-toolchain: telemetry exported to {pipeline.destination}", file=sys.stderr)


def _replay(args: argparse.Namespace) -> int:
    manifest = _load_manifest(args.manifest)
    pipeline, _chain, recorder = start_telemetry(manifest)
    progress = Progress.maybe(args.files, sys.stderr)
    code = EXIT_OK
    replayed: list[TurnOutcome] = []
    try:
        for path in args.files:
            if progress is not None:
                progress.next_file()
            try:
                outcomes = replay_path(path, recorder, harness=args.harness, strict=args.strict, progress=progress)
            except StreamError as exc:
                if progress is not None:
                    progress.finish()
                print(terminal_safe(f"otel-toolchain: {exc}"), file=sys.stderr)
                if args.strict:
                    return EXIT_USAGE
                code = EXIT_FAILED  # one unreadable file loses nothing of the others
                continue
            if progress is not None:
                progress.finish()
            replayed.extend(outcomes)
            for outcome in outcomes:
                text = json.dumps(outcome.to_dict()) if args.format == "json" else format_outcome(outcome)
                print(terminal_safe(text), flush=True)
    finally:
        finish_telemetry(pipeline)
    if args.format == "text":
        print_turn_trees(pipeline, replayed, sys.stdout)
    return code


def _run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("otel-toolchain: run needs a command after --", file=sys.stderr)
        return EXIT_USAGE
    manifest = _load_manifest(args.manifest)
    pipeline, _chain, recorder = start_telemetry(manifest)
    try:
        result = run_harness(command, recorder, harness=args.harness, retries=args.retries,
                             log_path=Path(args.log) if args.log else None, grace_s=args.grace)
    except CannotRun as exc:
        print(f"otel-toolchain: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    finally:
        finish_telemetry(pipeline)
    print_turn_trees(pipeline, result.outcomes, sys.stderr)  # stdout is the harness's own
    _quiet_broken_stdout()
    return result.exit_code


def _quiet_broken_stdout() -> None:
    """After ``run … | head``, flushing at exit would raise BrokenPipeError: point stdout at /dev/null."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _show(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if path.is_dir():
        path = path / "traces.jsonl"
    try:
        turns = turns_from_otlp_file(path)
    except (OSError, ValueError, TypeError, AttributeError, KeyError, StreamError) as exc:
        print(terminal_safe(f"otel-toolchain: {path}: cannot read OTLP JSON lines: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    print(terminal_safe(render_turns(turns, max_calls=args.max_calls)))
    return EXIT_OK


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

    replay = commands.add_parser("replay", help="turn recorded runs into spans and run the chain over them")
    replay.add_argument("files", nargs="+", metavar="FILE", help="recorded event streams (- reads standard input)")
    _add_harness_and_manifest(replay)
    replay.add_argument("--format", choices=("text", "json"), default="text")
    replay.add_argument("--strict", action="store_true", help="a bad line is an error (exit 2)")
    replay.set_defaults(handler=_replay)

    run = commands.add_parser("run", help="run a harness, trace its tool calls live, stop it when it wedges",
                              description="Exit codes: 75 when a plugin stopped the run, else the command's own.")
    _add_harness_and_manifest(run)
    run.add_argument("--retries", type=_non_negative(int), default=0, help="rerun a stopped command up to N times")
    run.add_argument("--log", help="append the harness's standard output to this file too")
    run.add_argument("--grace", type=_non_negative(float), default=3.0, help="seconds between SIGTERM and SIGKILL")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    run.set_defaults(handler=_run)

    show = commands.add_parser("show", help="render the turns of an OTLP JSON lines traces file as a tree")
    show.add_argument("file", help="traces.jsonl, or the folder the embedded default writes to")
    show.add_argument("--max-calls", type=int, default=40, help="calls shown per turn before eliding")
    show.set_defaults(handler=_show)

    register_analyze(commands)
    return parser


def _non_negative(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must not be negative: {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse


def _add_harness_and_manifest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--harness", choices=("auto", *HARNESSES), default="auto")
    parser.add_argument("--manifest", help="the pack's TOML manifest (default: the default chain)")


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
