"""``otel-toolchain serve``: a local OTLP receiver guarding whatever agent exports to it.

The chain runs on the calls the receiver reads (see :mod:`otel_toolchain.receiver`); what arrives
is forwarded unchanged, with the chain's own telemetry, to the configured export. A stop prints one
line on standard error, reaches ``on_stop`` listeners and, with ``--on-stop CMD``, runs ``CMD``
through the shell with the StopSignal as JSON on its standard input.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Any

from otel_toolchain.cli import commands as cli_commands
from otel_toolchain.errors import ToolchainError
from otel_toolchain.export.pipeline import Pipeline
from otel_toolchain.manifest import Manifest
from otel_toolchain.outcome import stop_line
from otel_toolchain.receiver.core import LINGER_S, Receiver
from otel_toolchain.receiver.forward import Forwarder, forwarder_for
from otel_toolchain.receiver.grpc_server import OtlpGrpcServer
from otel_toolchain.receiver.http_server import OtlpHttpServer
from otel_toolchain.receiver.intake import Intake
from otel_toolchain.signals import StopSignal

__all__ = ["Guard", "start_guard"]

ON_STOP_TIMEOUT_S = 60.0


@dataclass
class Guard:
    """A running receiver: the export pipeline, the chain, the servers. ``close`` once, at the end."""

    pipeline: Pipeline
    receiver: Receiver
    intake: Intake
    forwarder: Forwarder
    http: OtlpHttpServer
    grpc: OtlpGrpcServer | None
    commands: list[threading.Thread]
    """The ``--on-stop`` commands started; ``close`` waits for them."""

    def close(self) -> None:
        """Stop the servers, handle what was accepted, close every turn, flush export. Blocks."""
        self.http.close()
        if self.grpc is not None:
            self.grpc.close()
        self.intake.stop()
        self.forwarder.close()
        for command in self.commands:
            command.join(ON_STOP_TIMEOUT_S)


def _run_on_stop(command: str, stop: StopSignal) -> None:
    try:
        subprocess.run(command, shell=True, input=json.dumps(stop.to_dict()).encode(),
                       timeout=ON_STOP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"otel-toolchain: --on-stop command failed: {exc}", file=sys.stderr, flush=True)


def start_guard(manifest: Manifest, listen: tuple[str, int], grpc_address: tuple[str, int] | None,
                on_stop_command: str | None = None, *, idle_s: float = 300.0, linger_s: float = LINGER_S,
                quiet: bool = False) -> Guard:
    """Start the pipeline, the chain, the receiver and its servers; raises ToolchainError when it cannot listen."""
    pipeline, chain, _recorder = cli_commands.start_telemetry(manifest, cli_commands.context_of(os.environ))
    forwarder = forwarder_for(manifest.export, os.environ, pipeline.output_dir)
    if f"{listen[0]}:{listen[1]}" in forwarder.destination and listen[1] != 0:
        raise ToolchainError(f"the export goes to the receiver itself ({forwarder.destination}): it would loop; "
                             "point OTEL_EXPORTER_OTLP_ENDPOINT or [export] elsewhere")
    receiver = Receiver(chain, pipeline.tracer_provider, idle_s=idle_s, linger_s=linger_s)
    commands: list[threading.Thread] = []

    def on_stop(stop: StopSignal) -> None:
        if not quiet:
            print(stop_line(stop, trace=True), file=sys.stderr, flush=True)
        if on_stop_command:
            command = threading.Thread(target=_run_on_stop, args=(on_stop_command, stop), daemon=True)
            commands.append(command)
            command.start()

    chain.on_stop(on_stop)
    intake = Intake(receiver, forwarder)
    try:
        http = OtlpHttpServer(intake, *listen)
        grpc_server = OtlpGrpcServer(intake, *grpc_address) if grpc_address is not None else None
    except OSError as exc:
        intake.stop()
        forwarder.close()
        raise ToolchainError(f"cannot listen on {listen[0]}:{listen[1]}: {exc.strerror or exc}") from exc
    return Guard(pipeline, receiver, intake, forwarder, http, grpc_server, commands)


def _serve(args: argparse.Namespace, _ctx: object = None) -> int:
    manifest = cli_commands.load_manifest(args.manifest)
    guard = start_guard(manifest, args.listen, args.grpc, args.on_stop, idle_s=args.idle,
                        linger_s=LINGER_S if args.linger is None else args.linger)
    grpc_text = f" and OTLP/gRPC on {guard.grpc.host}:{guard.grpc.port}" if guard.grpc else ""
    print(f"otel-toolchain: receiving OTLP/HTTP on {guard.http.endpoint}{grpc_text}; forwarding to "
          f"{guard.forwarder.destination}", file=sys.stderr, flush=True)
    done = threading.Event()

    def end(signo: int, frame: FrameType | None) -> None:
        done.set()

    previous: dict[int, Any] = {s: signal.signal(s, end) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        done.wait()
    finally:
        for signo, handler in previous.items():
            signal.signal(signo, handler)
        guard.close()
        cli_commands.finish_telemetry(guard.pipeline)
    return 0
