"""``otel-toolchain hook``'s first step: hand the call to a warm hook server, else run it here.

Claude Code starts the hook once per tool call and waits for it, so its cost is the interpreter's
start plus whatever the hook imports. Run here, the hook imports the chain (the OpenTelemetry SDK,
pydantic, the plugins): about 0.5 s. So this module, which imports the standard library only, first
asks a warm server (:mod:`otel_toolchain.cli.hook_server`) of the same installation to run the call
in a forked copy of itself, with this process's standard input, output and error, arguments,
environment and working folder: the same code runs with the same inputs and writes the same bytes,
only without importing anything. When there is no server yet, the call runs here, as before, and a
server is started beside it for the next calls (it exits after :data:`IDLE_S` without calls).

The server's socket is in the hook's state folder (0700, the socket 0600), named by a digest of
the interpreter, the ``PYTHON*`` variables, ``sys.path`` and the package's files, so an upgraded or
edited installation never meets an old server. ``OTEL_TOOLCHAIN_HOOK_SERVER=off`` keeps every call in
its own process (nothing started in the background); so does ``--no-server`` on the hook's command
line (``hooks install --no-server`` writes it), which works where the variable cannot reach the hook
(``OTEL_TOOLCHAIN_*`` variables set for Claude Code 2.1.332 did not reach its hooks).

A call is handed over at most once: the server forks only after the client says ``go``, and the
client says it only after the server said ``ready``; until then any failure (no server, a stale
socket, a refusal, 5 s of silence) runs the call here instead. Blocks while the call runs; never
raises for a server that is missing or broken.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from otel_toolchain.export.paths import default_output_dir

__all__ = ["IDLE_S", "NO_SERVER_FLAG", "PROTOCOL", "SERVER_ENV", "STATE_DIR_ENV", "ServerPlace", "ask_server", "main",
           "server_place", "start_server", "state_root"]

STATE_DIR_ENV: Final = "OTEL_TOOLCHAIN_HOOK_STATE_DIR"
SERVER_ENV: Final = "OTEL_TOOLCHAIN_HOOK_SERVER"
"""``off`` (or ``0``, ``false``, ``no``): no warm server; every call runs in its own process."""
NO_SERVER_FLAG: Final = "--no-server"
IDLE_ENV: Final = "OTEL_TOOLCHAIN_HOOK_SERVER_IDLE_S"
IDLE_S: Final = 600.0
"""Seconds a warm server waits for a call before it exits (``OTEL_TOOLCHAIN_HOOK_SERVER_IDLE_S``)."""
PROTOCOL: Final = 1
HEADER: Final = struct.Struct("!4sHI")  # magic, protocol, length of the JSON request that follows
MAGIC: Final = b"OTHK"
READY_TIMEOUT_S: Final = 5.0
_MAX_SOCKET_PATH: Final = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_OFF: Final = frozenset({"off", "0", "false", "no"})


class ServerPlace(NamedTuple):
    """Where the warm server of this installation and environment listens, and its lock and pid files."""

    socket: Path
    lock: Path
    pid: Path

    @classmethod
    def beside(cls, socket_path: Path) -> ServerPlace:
        """The place whose socket is ``socket_path`` (``<key>.sock``; the lock and pid files sit beside it)."""
        return cls(socket_path, socket_path.with_suffix(".lock"), socket_path.with_suffix(".pid"))


def state_root(environ: Mapping[str, str]) -> Path:
    """The hook's state folder: ``OTEL_TOOLCHAIN_HOOK_STATE_DIR``, else beside the embedded default's files."""
    configured = environ.get(STATE_DIR_ENV)
    return Path(configured) if configured else default_output_dir(environ) / "hook-sessions"


def _installation_digest(environ: Mapping[str, str]) -> str:
    """What the server's code depends on: a different value means a different server."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{PROTOCOL}\0{sys.executable}\0{sys.version}\0".encode())
    for name in sorted(environ):
        if name.startswith("PYTHON"):
            digest.update(f"{name}={environ[name]}\0".encode(errors="surrogateescape"))
    # A distribution installed or removed changes its folder's mtime (sys.path[0] is the script's or
    # the working folder, which changes all the time and holds no distributions).
    for entry in sys.path[1:]:
        with contextlib.suppress(OSError):
            digest.update(f"{entry}:{os.stat(entry or '.').st_mtime_ns}\0".encode(errors="surrogateescape"))
    package = Path(__file__).resolve().parent.parent
    for folder, _dirs, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    stat = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}:{stat.st_mtime_ns}:{stat.st_size}\0".encode())
    return digest.hexdigest()


def server_place(environ: Mapping[str, str]) -> ServerPlace | None:
    """The warm server's files for this environment, or None when it is switched off or its path is too long."""
    if environ.get(SERVER_ENV, "").strip().lower() in _OFF:
        return None
    folder = state_root(environ) / "warm"
    key = _installation_digest(environ)
    place = ServerPlace.beside(folder / f"{key}.sock")
    return place if len(os.fsencode(place.socket)) <= _MAX_SOCKET_PATH else None


def _request(argv: Sequence[str]) -> bytes:
    body = json.dumps({"argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd()},
                      ensure_ascii=False).encode(errors="surrogateescape")
    return HEADER.pack(MAGIC, PROTOCOL, len(body)) + body


def _read_line(conn: socket.socket) -> bytes:
    """One line the server sent (without its newline); b"" when the connection closed first."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            return b""
        line += chunk
    return line[:-1]


def ask_server(place: ServerPlace, argv: Sequence[str]) -> int | None:
    """The call's exit code, run by the warm server; None when the server did not take it (run it here)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(READY_TIMEOUT_S)
        try:
            conn.connect(str(place.socket))
            request = _request(argv)
            sent = socket.send_fds(conn, [request], [0, 1, 2])
            conn.sendall(request[sent:])
            if _read_line(conn) != b"ready":
                return None
            conn.sendall(b"go\n")
        except (OSError, ValueError):  # no server, a stale socket, a refusal, silence: not handed over
            return None
        conn.settimeout(None)  # the call may wait on its session's lock; Claude Code has its own timeout
        try:
            reply = _read_line(conn)
        except OSError:
            reply = b""
    if not reply.startswith(b"exit "):
        print("otel-toolchain hook: the warm hook server went away during the call; its answer, if any, "
              "came from the server's copy", file=sys.stderr)
        return 1
    return int(reply[5:])


def start_server(place: ServerPlace) -> None:
    """Start a warm server in the background (it exits at once if another one holds the lock)."""
    folder = place.socket.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder.parent, 0o700)
    os.chmod(folder, 0o700)
    with open(os.devnull, "rb") as nothing, open(folder / f"{place.socket.stem}.log", "wb") as log:
        subprocess.Popen(
            [sys.executable, "-m", "otel_toolchain.cli.hook_server", str(place.socket)],
            stdin=nothing, stdout=log, stderr=log, start_new_session=True, close_fds=True)


def main(argv: Sequence[str]) -> int:
    """``otel-toolchain hook ARGS``: through the warm server when there is one, else here (and start one)."""
    place = None if NO_SERVER_FLAG in argv else server_place(os.environ)
    if place is not None:
        code = ask_server(place, argv)
        if code is not None:
            return code
        with contextlib.suppress(OSError):  # no server is only slower, never a failed call
            start_server(place)
    from otel_toolchain.cli.hook import hook_main  # noqa: PLC0415 (the cold path: imports the chain)

    return hook_main(list(argv))
