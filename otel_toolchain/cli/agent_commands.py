"""The arguments of ``serve``, ``hook`` and ``hooks``: light to import, so that ``--help`` is quick.

The handlers live in :mod:`otel_toolchain.cli.serve` and :mod:`otel_toolchain.cli.hook` and are
imported when their command runs (they bring the receiver, gRPC, the chain and the exporters).
``otel-toolchain hook`` itself never comes through here: :func:`otel_toolchain.cli.main` hands it
straight to :func:`otel_toolchain.cli.hook.hook_main`.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, Final

from otel_toolchain.cli.options import non_negative

__all__ = ["HOOKED_AGENTS", "HOOK_CODES", "HOOK_DESCRIPTION", "hook_arguments", "parse_address", "register"]

HOOKED_AGENTS: Final = ("claude-code", "opencode", "pi")
"""Claude Code through its own hooks; OpenCode and Pi through the bridge file ``hooks install`` writes."""

HOOK_DESCRIPTION: Final = textwrap.fill(
    "The chain as a coding agent's hook command: read one hook event as JSON on standard input, run the chain on "
    "the session's calls so far, print the agent's answer (a stop, a nudge, or nothing).", 78)
HOOK_CODES: Final = """exit codes:
  0    the event was answered (a stop is an answer on standard output, not an exit code)
  1    the event or the manifest could not be read: said on standard error; the agent logs it and goes on"""


def parse_address(text: str, default_port: int) -> tuple[str, int]:
    """``HOST:PORT`` (or ``HOST``, or ``:PORT``) as a pair; raises argparse's error on a bad one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, str(default_port)
    try:
        number = int(port)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}") from exc
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range: {text!r}")
    return host or "127.0.0.1", number


def _handler(module: str, name: str) -> Callable[..., int]:
    def handler(args: argparse.Namespace, ctx: object = None) -> int:
        result: int = getattr(import_module(f"otel_toolchain.cli.{module}"), name)(args, ctx)
        return result

    handler.__name__ = name
    return handler


def hook_arguments(hook: argparse.ArgumentParser) -> None:
    """The arguments of ``otel-toolchain hook`` (here and in its own quick parser)."""
    hook.add_argument("agent", choices=HOOKED_AGENTS)
    hook.add_argument("--manifest", help="the pack's TOML manifest (default: the default chain)")
    hook.add_argument("--no-server", action="store_true",
                      help="run every call in its own process, with no warm hook server in the background")
    hook.set_defaults(handler=_handler("hook", "_hook"))


def register(commands: Any, *, formatter: type[argparse.HelpFormatter] = argparse.HelpFormatter,
             parents: Sequence[argparse.ArgumentParser] = (), epilog: str | None = None) -> None:
    """Add ``serve``, ``hook`` and ``hooks`` to the command line's subcommands (``formatter``, ``parents``
    and ``epilog`` as the other sub-commands have them)."""
    common: dict[str, Any] = {"formatter_class": formatter, "parents": list(parents)}
    serve = commands.add_parser("serve", help="receive agents' own OTLP, run the chain on their tool calls, "
                                "forward everything", epilog=epilog, **common,
                                description="A local OTLP receiver that guards every agent sending to it, and "
                                "forwards\neverything it receives.")
    serve.add_argument("--manifest", help="the pack's TOML manifest (default: the default chain)")
    serve.add_argument("--listen", type=lambda t: parse_address(t, 4318), default=("127.0.0.1", 4318),
                       metavar="HOST:PORT", help="OTLP/HTTP address (default 127.0.0.1:4318)")
    serve.add_argument("--grpc", type=lambda t: parse_address(t, 4317), default=None, metavar="HOST:PORT",
                       help="also receive OTLP/gRPC here (e.g. 127.0.0.1:4317)")
    serve.add_argument("--on-stop", metavar="CMD", help="run CMD (through the shell) with the StopSignal JSON "
                       "on its standard input at every stop")
    serve.add_argument("--idle", type=non_negative(float), default=300.0, metavar="SECONDS",
                       help="close a turn whose turn span never came after this long without news (default 300)")
    serve.add_argument("--linger", type=non_negative(float), default=None, metavar="SECONDS",
                       help="keep a turn open this long after its turn span, for calls whose requests it "
                       "overtook (default 10)")
    serve.set_defaults(handler=_handler("serve", "_serve"))
    hook_arguments(commands.add_parser("hook", help="the chain as an agent's hook command (reads the event on "
                                       "stdin)", description=HOOK_DESCRIPTION, epilog=HOOK_CODES, **common))
    hooks = commands.add_parser("hooks", help="add the hook to an agent's settings, or remove it", epilog=epilog,
                                description=textwrap.fill("Add otel-toolchain's hook to an agent's settings file, "
                                                          "or remove exactly the entries it added.", 78), **common)
    hooks.add_argument("action", choices=("install", "uninstall"))
    hooks.add_argument("agent", choices=HOOKED_AGENTS)
    hooks.add_argument("--scope", choices=("project", "user"), default="project",
                       help="project (default): ./.claude/settings.json, ./.opencode/plugin/, ./.pi/extensions/; "
                       "user: ~/.claude/settings.json, ~/.config/opencode/plugin/, ~/.pi/agent/extensions/")
    hooks.add_argument("--manifest", help="the manifest the installed hook runs with")
    hooks.add_argument("--no-server", action="store_true", help="install the hook with --no-server")
    hooks.set_defaults(handler=_handler("hook", "_hooks"))
