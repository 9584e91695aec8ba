"""``otel-toolchain hook AGENT`` (the hook command) and ``otel-toolchain hooks install|uninstall AGENT``.

The hook reads one event as JSON on standard input and prints its answer (see
:mod:`otel_toolchain.hooks.session`; Claude Code's events as the CLI sends them, OpenCode's and
Pi's as our bridge files hand them over); it exits 0 whatever the chain says. Bad input is reported
on standard error with exit 1, which the agent records and otherwise ignores (a hook must never
end a session by crashing). A stop is also exported as a span (``otel_toolchain.turn.stopped``) in
the trace whose id is the session's, as the run's ``[export]`` / ``OTEL_*`` settings say, and so
is what the plugins report when a turn closes (Claude Code's ``Stop`` or ``SessionEnd``, OpenCode's
``session.idle`` or exit, Pi's ``agent_end`` or ``session_shutdown``): tool_stats' counts and its
end-of-turn event, once per turn. A session killed before its end reports nothing (its state is
removed as stale later).
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_toolchain import semconv
from otel_toolchain._input.lines import decode_line
from otel_toolchain.chain import Toolchain, stop_event_attributes
from otel_toolchain.cli.agent_commands import HOOK_CODES, HOOK_DESCRIPTION, hook_arguments
from otel_toolchain.cli.hook_client import NO_SERVER_FLAG, state_root
from otel_toolchain.cli.options import common_options
from otel_toolchain.cli.output import setup_logging
from otel_toolchain.errors import ManifestError, ToolchainError
from otel_toolchain.hooks import bridges, claude_code, opencode, pi, settings
from otel_toolchain.hooks.session import HookReader, answer_json, handle_event
from otel_toolchain.hooks.state import remove_stale
from otel_toolchain.manifest import Manifest
from otel_toolchain.signals import StopSignal

if TYPE_CHECKING:
    from otel_toolchain.export.pipeline import Pipeline

__all__ = ["hook_command", "hook_main"]

_log = logging.getLogger(__name__)
_READERS: dict[str, HookReader] = {reader.agent: reader for reader in (claude_code.READER, opencode.READER, pi.READER)}

def _export_stop(manifest: Manifest, stop: StopSignal, agent: str, session: str) -> None:
    from opentelemetry.trace import (  # noqa: PLC0415 (only on a stop)
        NonRecordingSpan,
        SpanContext,
        Status,
        StatusCode,
        TraceFlags,
        set_span_in_context,
    )

    from otel_toolchain.export.pipeline import build_pipeline  # noqa: PLC0415 (only on a stop)

    pipeline = build_pipeline(manifest.export)
    parent = SpanContext(stop.trace_id, stop.span_id or 1, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    span = pipeline.tracer_provider.get_tracer("otel_toolchain.hook").start_span(
        semconv.STOP_MARK_SPAN, context=set_span_in_context(NonRecordingSpan(parent)),
        attributes={semconv.HARNESS: agent, semconv.GEN_AI_CONVERSATION_ID: session})
    span.set_attribute(semconv.ERROR_TYPE, semconv.ERROR_TYPE_PLUGIN_PREFIX + stop.plugin)
    span.add_event(semconv.STOP_EVENT, stop_event_attributes(stop))
    span.set_status(Status(StatusCode.ERROR, stop.reason))
    span.end()
    pipeline.shutdown(timeout_s=3.0)


class _Reports:
    """The export for a closed turn's report, built only when a turn closes (most calls close none)."""

    def __init__(self, manifest: Manifest) -> None:
        self._manifest = manifest
        self._pipeline: Pipeline | None = None

    def wire(self, chain: Toolchain) -> None:
        from otel_toolchain.export.pipeline import build_pipeline  # noqa: PLC0415 (only when a turn closes)

        pipeline = self._pipeline = build_pipeline(self._manifest.export)
        chain.install(meter_provider=pipeline.meter_provider, logger_provider=pipeline.logger_provider)

    def flush(self) -> None:
        if self._pipeline is not None:
            self._pipeline.shutdown(timeout_s=3.0)


def _hook(args: argparse.Namespace, _ctx: object = None) -> int:
    manifest = Manifest.load(args.manifest) if args.manifest else Manifest.default()
    raw = sys.stdin.read()
    try:
        payload: Any = decode_line(raw)
    except ValueError as exc:
        print(f"otel-toolchain hook: standard input is not JSON ({exc}); the call was not checked", file=sys.stderr)
        return 1
    if not isinstance(payload, dict):
        print("otel-toolchain hook: standard input is not a JSON object; the call was not checked", file=sys.stderr)
        return 1
    root = state_root(os.environ)
    reader = _READERS[args.agent]
    reports = _Reports(manifest)
    try:
        answer = handle_event(payload, reader, manifest, root, reporting=reports.wire)
    except (ToolchainError, OSError) as exc:
        print(f"otel-toolchain hook: {exc}; the call was not checked", file=sys.stderr)
        return 1
    finally:
        reports.flush()  # after the session's lock is released: a slow Collector holds up no other call
    line = answer_json(answer)
    if line:
        print(line, flush=True)
    if answer.stop is not None:
        _export_stop(manifest, answer.stop, reader.agent, answer.session)
    if answer.closed:
        remove_stale(root)  # sessions killed before their end leave state behind: a closing turn sweeps it
    return 0


def hook_argv(agent: str, manifest: str | None, *, no_server: bool = False) -> list[str]:
    """The hook's command line for ``agent``, as installed: this installation's executable, absolute."""
    program = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0].endswith("otel-toolchain") else None
    base = [str(program)] if program is not None else [sys.executable, "-m", "otel_toolchain"]
    extra = ["--manifest", str(Path(manifest).resolve())] if manifest else []
    if no_server:
        extra.append(NO_SERVER_FLAG)
    return [*base, "hook", agent, *extra]


def hook_command(manifest: str | None, *, no_server: bool = False) -> str:
    """The command line Claude Code's settings.json gets."""
    return shlex.join(hook_argv("claude-code", manifest, no_server=no_server))


def _hooks(args: argparse.Namespace, _ctx: object = None) -> int:
    if args.action == "install" and args.manifest:
        Manifest.load(args.manifest)  # a bad manifest fails here, not on every call of the session
    try:
        return _bridge(args) if args.agent in bridges.BRIDGED else _settings(args)
    except OSError as exc:  # a folder where the file goes, a file where a folder goes, no permission
        raise ManifestError(f"{exc.filename or 'the hook'}: {exc.strerror or exc}; nothing was changed") from None


def _settings(args: argparse.Namespace) -> int:
    path = settings.settings_path(args.scope, Path.cwd(), Path.home(), os.environ.get("CLAUDE_CONFIG_DIR"))
    if args.action == "install":
        command = hook_command(args.manifest, no_server=args.no_server)
        settings.install(path, command)
        print(f"otel-toolchain: added the hook to {path} ({', '.join(settings.HOOK_EVENTS)}): {command}")
    elif settings.uninstall(path):
        print(f"otel-toolchain: removed the hook from {path}")
    else:
        print(f"otel-toolchain: no otel-toolchain hook in {path}")
    return 0


def _bridge(args: argparse.Namespace) -> int:
    path = bridges.bridge_path(args.agent, args.scope, Path.cwd(), Path.home(), os.environ)
    if args.action == "install":
        command = hook_argv(args.agent, args.manifest, no_server=args.no_server)
        bridges.install(args.agent, path, command)
        print(f"otel-toolchain: wrote the {args.agent} bridge {path}: {shlex.join(command)}")
    elif bridges.uninstall(args.agent, path):
        print(f"otel-toolchain: removed the {args.agent} bridge {path}")
    else:
        print(f"otel-toolchain: no otel-toolchain bridge at {path}")
    return 0


def hook_main(argv: list[str], *, server_pid: int | None = None) -> int:
    """``otel-toolchain hook …`` without the rest of the command line (it runs on every tool call).

    ``server_pid``: this process is the warm hook server's fork for one call (said at ``-v``).
    """
    parser = argparse.ArgumentParser(prog="otel-toolchain hook", description=HOOK_DESCRIPTION, epilog=HOOK_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common_options()])
    hook_arguments(parser)
    args = parser.parse_args(argv)
    setup_logging(getattr(args, "verbosity", 0))
    _log.debug(f"answered in a fork of the warm hook server (pid {server_pid})" if server_pid
               else "answered in its own process")
    try:
        return _hook(args)
    except ToolchainError as exc:  # a bad manifest: said on stderr, the session goes on
        print(f"otel-toolchain hook: {exc}", file=sys.stderr)
        return 1
