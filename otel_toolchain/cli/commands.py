"""The handlers of ``check``, ``plugins``, ``show``, ``replay`` and ``run``: each takes the parsed
arguments and a :class:`Context` (what :mod:`otel_toolchain.cli.app` read from the environment)
and returns the exit code; the codes are :mod:`otel_toolchain.cli.codes`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.chain import Toolchain
from otel_toolchain.cli import codes
from otel_toolchain.cli.output import Out, note, screen_for, warn
from otel_toolchain.cli.progress import Progress
from otel_toolchain.cli.replay import format_outcome, replay_path
from otel_toolchain.cli.show import turns_from_otlp_file
from otel_toolchain.cli.tree import Screen, print_trees
from otel_toolchain.errors import CannotRun, StreamError
from otel_toolchain.export.pipeline import Pipeline, build_pipeline, default_output_dir
from otel_toolchain.harnesses.live import run_harness
from otel_toolchain.harnesses.stores.codex_workdirs import CodexHome
from otel_toolchain.manifest import Manifest
from otel_toolchain.outcome import TurnOutcome
from otel_toolchain.recorder import AgentRecorder
from otel_toolchain.registry import available_plugins

__all__ = ["Context", "check", "plugins", "replay", "run", "show"]

_NO_CALLS_HINT = {
    "claude-code": "Claude Code writes its tool calls only with `--output-format stream-json --verbose` "
                   "(`--output-format json` keeps just the final result)",
    "codex": "Codex writes them with `codex exec --json`",
    "opencode": "OpenCode writes them with `opencode run --format json`",
    "pi": "Pi writes them with `pi --mode json`",
}


@dataclass(frozen=True)
class Context:
    """What the command line read from the environment, once, for the handlers."""

    environ: Mapping[str, str]
    out: Out
    screen: Screen
    """How to draw on standard output."""
    err_screen: Screen
    """How to draw on standard error (``run``'s trees go there: its standard output is the harness's)."""
    digest_key: bytes | None = None


DIGEST_KEY_ENV = "OTEL_TOOLCHAIN_DIGEST_KEY"


def context_of(environ: Mapping[str, str]) -> Context:
    """The handlers' view of the environment and the terminal (read once, by the command line)."""
    key = environ.get(DIGEST_KEY_ENV)
    return Context(environ, Out(sys.stdout), screen_for(sys.stdout, environ), screen_for(sys.stderr, environ),
                   key.encode()[:64] if key else None)


LIVE_ROLLOUT_WAIT_S = 0.2
"""How long ``run`` waits for Codex to write a call to its rollout (it is there first, as measured)."""


def codex_home(ctx: Context, *, wait_s: float = 0.0) -> CodexHome:
    """Where Codex's rollouts are (``$CODEX_HOME``, else ``~/.codex``), to read where a stream's commands ran."""
    return CodexHome.from_environ(ctx.environ, wait_s=wait_s)


def load_manifest(path: str | None) -> Manifest:
    return Manifest.load(path) if path else Manifest.default()


def start_telemetry(manifest: Manifest, ctx: Context) -> tuple[Pipeline, Toolchain, AgentRecorder]:
    """The export pipeline (from the manifest and the OTEL_* environment), the chain on it, a recorder."""
    pipeline = build_pipeline(manifest.export, ctx.environ)
    chain = manifest.toolchain(digest_key=ctx.digest_key)
    # The recorder hands the chain its calls; the chain need not read the spans as a processor too.
    chain.install(None, pipeline.meter_provider, pipeline.logger_provider)
    recorder = AgentRecorder(pipeline.tracer_provider, toolchain=chain, capture_content=manifest.agent.capture_content)
    return pipeline, chain, recorder


def finish_telemetry(pipeline: Pipeline) -> None:
    """Flush the export; say on stderr where it went, or loudly what was not delivered."""
    finished = pipeline.shutdown()
    dropped = {signal: count for signal, count in pipeline.dropped.items() if count}
    if not finished:
        warn(f"telemetry NOT fully delivered to {pipeline.destination}: export was still retrying when the "
             "wait ended (is the Collector up?)")
    elif dropped:
        lost = ", ".join(f"{count} {signal}" for signal, count in dropped.items())
        warn(f"telemetry NOT fully delivered to {pipeline.destination}: {lost} dropped")
    else:
        note(f"telemetry exported to {pipeline.destination}")


def hint_if_no_calls(source: str, outcomes: Sequence[TurnOutcome]) -> None:
    """A run that looked like a harness's stream but gave no tool call: name the likely cause."""
    if outcomes and not any(outcome.calls for outcome in outcomes):
        harness = outcomes[0].harness
        hint = _NO_CALLS_HINT.get(harness)
        if hint:
            warn(f"{source}: no tool calls in this {harness} run; if the agent used tools, they are not in "
                 f"the stream: {hint}")


def _trees(outcomes: Sequence[TurnOutcome], stream: TextIO, screen: Screen, out: Out | None = None) -> None:
    if not outcomes:
        return
    if out is None:
        print_trees(outcomes, stream, screen)
        return
    with out.guard() as target:
        print_trees(outcomes, target, screen)


def replay(args: argparse.Namespace, ctx: Context) -> int:
    manifest = load_manifest(args.manifest)
    pipeline, _chain, recorder = start_telemetry(manifest, ctx)
    progress = Progress.maybe([Path(path) for path in args.files], sys.stderr, "replay")
    code = codes.OK
    replayed: list[TurnOutcome] = []
    try:
        for path in args.files:
            if progress is not None:
                progress.next_file()
            try:
                outcomes = _replay_one(path, recorder, args, ctx, progress)
            except StreamError as exc:
                warn_error(str(exc))
                if args.strict:
                    return codes.USAGE
                code = codes.INPUT  # one unreadable file loses nothing of the others
                continue
            finally:
                if progress is not None:
                    progress.finish()
            if not outcomes:
                code = codes.INPUT
            replayed.extend(outcomes)
            for outcome in outcomes:
                text = json.dumps(outcome.to_dict()) if args.format == "json" else \
                    format_outcome(outcome, ctx.screen.width)
                ctx.out.line(text)
    finally:
        finish_telemetry(pipeline)
    if args.format == "text":
        _trees(replayed, ctx.out.stream, ctx.screen, ctx.out)
    if any(outcome.stopped is not None for outcome in replayed) and code == codes.OK:
        code = codes.STOPPED
    return code


def _replay_one(path: str, recorder: AgentRecorder, args: argparse.Namespace, ctx: Context,
                progress: Progress | None) -> list[TurnOutcome]:
    if path != "-" and not Path(path).exists():
        raise StreamError("no such file or directory", source=path)
    outcomes = replay_path(path, recorder, harness=args.harness, strict=args.strict, progress=progress,
                           codex_home=codex_home(ctx))
    if not outcomes:
        if path != "-" and Path(path).is_dir():
            what = "no runs in this folder (looked for *.jsonl, *.jsonl.zst, OpenCode databases and storage/)"
        elif path == "-" or not _blank(Path(path)):
            what = "no turn read from it (see the warnings above)"
        else:
            what = "empty: no events in it"
        warn_error(f"{path}: {what}")
    hint_if_no_calls(path, outcomes)
    return outcomes


def _blank(path: Path) -> bool:
    """Whether the file holds nothing but blank lines (read up to the first that is not)."""
    try:
        with path.open("rb") as lines:
            return not any(line.strip() for line in lines)
    except OSError:
        return False


def warn_error(message: str) -> None:
    """An error that does not end the command (the other inputs are still read): one line on stderr."""
    print(terminal_safe(f"otel-toolchain: {message}"), file=sys.stderr, flush=True)


def run(args: argparse.Namespace, ctx: Context) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        warn_error("run needs a command after --")
        return codes.USAGE
    manifest = load_manifest(args.manifest)
    if args.telemetry:
        return _run_with_telemetry(args, command, manifest)
    pipeline, _chain, recorder = start_telemetry(manifest, ctx)
    try:
        result = run_harness(command, recorder, harness=args.harness, retries=args.retries,
                             log_path=Path(args.log) if args.log else None, grace_s=args.grace,
                             codex_home=codex_home(ctx, wait_s=LIVE_ROLLOUT_WAIT_S))
    except CannotRun as exc:
        warn_error(str(exc))
        return codes.NOT_FOUND
    finally:
        finish_telemetry(pipeline)
    hint_if_no_calls(command[0], result.outcomes)
    _trees(result.outcomes, sys.stderr, ctx.err_screen)  # stdout is the harness's own
    return result.exit_code


def _run_with_telemetry(args: argparse.Namespace, command: list[str], manifest: Manifest) -> int:
    from otel_toolchain.cli.telemetry import run_with_telemetry  # noqa: PLC0415  # the receiver, only here

    if args.retries or args.log or args.harness != "auto":
        warn_error("--retries, --log and --harness read the output stream; not with --telemetry")
        return codes.USAGE
    try:
        return run_with_telemetry(command, manifest, grace_s=args.grace)
    except CannotRun as exc:
        warn_error(str(exc))
        return codes.NOT_FOUND


def show(args: argparse.Namespace, ctx: Context) -> int:
    path = Path(args.file) if args.file else default_output_dir(ctx.environ)
    if path.is_dir():
        path = path / "traces.jsonl"
    if not path.exists():
        warn_error(f"{path}: no such file or directory")
        return codes.INPUT
    bad_lines: list[StreamError] = []
    try:
        turns = turns_from_otlp_file(path, bad_lines=bad_lines)
    except StreamError as exc:
        warn_error(str(exc))
        return codes.INPUT
    except (OSError, UnicodeDecodeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        warn_error(f"{path}: cannot read: {detail}")
        return codes.INPUT
    for bad in bad_lines:
        warn(f"{bad}; the line was skipped")
    if not turns:
        warn_error(f"{path}: no turns in it (no invoke_agent span)")
        return codes.INPUT
    if args.format == "json":
        for turn in turns:
            ctx.out.line(json.dumps(turn.to_dict(tree=True)))
    else:
        with ctx.out.guard() as target:
            print_trees(turns, target, ctx.screen, max_lines=args.max_calls)
    # a stopped turn is exit 75 wherever it is reported (run, replay, show); a shadow stop is not a stop
    return codes.STOPPED if any(turn.stopped is not None for turn in turns) else codes.OK


def _plain(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def check(args: argparse.Namespace, ctx: Context) -> int:
    manifest = Manifest.load(args.manifest)
    chain = manifest.plugins
    # Build and describe every plugin before printing anything: a plugin that cannot start is an
    # error (exit 2), never an "ok" followed by a traceback.
    described = [(spec.name, spec.describe(spec.build())) for spec in chain]
    if args.format == "json":
        ctx.out.line(json.dumps({"manifest": manifest.source,
                                 "chain": [{"plugin": name, **settings} for name, settings in described]},
                                default=str))
        return codes.OK
    ctx.out.line(f"{manifest.source}: ok, {len(chain)} plugin(s) in this order:")
    for position, (name, settings_of) in enumerate(described, 1):
        settings = ", ".join(f"{k} = {_plain(v)}" for k, v in settings_of.items())
        ctx.out.line(f"  {position}. {name}" + (f" ({settings})" if settings else ""))
    if not chain:
        ctx.out.line("  (none: tool_plugins = [] runs no plugins)")
    return codes.OK


def plugins(args: argparse.Namespace, ctx: Context) -> int:
    found = available_plugins()
    if args.format == "json":
        ctx.out.line(json.dumps([{"name": name, "object": entry.value,
                                  "distribution": entry.dist.name if entry.dist is not None else None}
                                 for name, entry in found.items()]))
        return codes.OK
    for name, entry in found.items():
        dist = entry.dist.name if entry.dist is not None else "?"
        ctx.out.line(f"{name}\t{entry.value}\t({dist})")
    return codes.OK
