"""The warm hook server: ``python -m otel_toolchain.cli.hook_server SOCKET`` (started by the hook's client).

It imports the hook once (the chain, the SDK, pydantic, the plugins' entry points), then for each
call a client hands it forks a copy of itself that takes on the client's standard input, output
and error, environment, working folder and arguments and runs :func:`~otel_toolchain.cli.hook.hook_main`
exactly as the client would have, then tells the client the exit code. A fork per call keeps calls
apart (no state but the session files, which are locked as before) and the server itself small: it
runs no plugin code and keeps nothing between calls.

One server per socket: it holds ``<key>.lock`` for its whole life (a second one exits at once),
writes its pid to ``<key>.pid``, accepts only its own user (the folder is 0700; on Linux the peer's
uid is checked too), and exits, removing its socket and pid file, after ``IDLE_S`` seconds without a
call or on SIGTERM (it waits up to 10 s for calls in flight). Single-threaded, so forking is safe.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, Final

from otel_toolchain.cli.hook_client import HEADER, IDLE_ENV, IDLE_S, MAGIC, PROTOCOL, ServerPlace

__all__ = ["serve"]

_MAX_REQUEST: Final = 4 << 20
_HANDSHAKE_S: Final = 2.0
_DRAIN_S: Final = 10.0


def _warm_up() -> None:
    """Import what every call needs and scan the plugins' entry points once, before the first fork."""
    import otel_toolchain.cli.hook  # noqa: F401, PLC0415
    from otel_toolchain.manifest import Manifest  # noqa: PLC0415

    Manifest.default().toolchain()


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The client's request and its three file descriptors; ValueError for anything else."""
    head, fds, _flags, _addr = socket.recv_fds(conn, HEADER.size, 3)
    try:
        if len(head) < HEADER.size:
            head += _exactly(conn, HEADER.size - len(head))
        magic, protocol, length = HEADER.unpack(head)
        if magic != MAGIC or protocol != PROTOCOL or length > _MAX_REQUEST or len(fds) != 3:
            raise ValueError("not a request of this protocol")
        request = json.loads(_exactly(conn, length).decode(errors="surrogateescape"))
        if not (isinstance(request, dict) and isinstance(request.get("argv"), list)
                and isinstance(request.get("env"), dict) and isinstance(request.get("cwd"), str)):
            raise ValueError("a request without argv, env and cwd")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 16))
        if not chunk:
            raise ValueError("the client hung up mid-request")
        data += chunk
    return data


def _same_user(conn: socket.socket) -> bool:
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # elsewhere the folder's 0700 is the whole check
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return bool(struct.unpack("3i", creds)[1] == os.getuid())


def _run_call(request: dict[str, Any], fds: list[int]) -> int:
    """In the forked child: become the client's process as far as the hook can tell, and run it."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    os.chdir(request["cwd"])
    from otel_toolchain.cli.hook import hook_main  # noqa: PLC0415 (imported already by the warm-up)

    try:
        return hook_main([str(arg) for arg in request["argv"]], server_pid=os.getppid())
    except SystemExit as exc:  # argparse's --help and usage errors
        return exc.code if isinstance(exc.code, int) else 2


def _child(request: dict[str, Any], fds: list[int], inherited: list[socket.socket | int]) -> None:
    signal.set_wakeup_fd(-1)
    for held in inherited:  # the server's listener, pipe and other clients are none of this call's business
        with contextlib.suppress(OSError):
            held.close() if isinstance(held, socket.socket) else os.close(held)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    code = 1
    try:
        code = _run_call(request, fds)
    except BaseException:  # noqa: BLE001 (whatever it was, the client gets an exit code and the text)
        import traceback  # noqa: PLC0415

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class _Server:
    """The accept loop; children are reaped on SIGCHLD (a wake-up pipe in the selector)."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.calls: dict[int, socket.socket] = {}  # child pid -> the client waiting for its exit code
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    def run(self, listener: socket.socket) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self.selector.register(listener, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        last = time.monotonic()
        while not self.stopping:
            timeout = None if self.calls else max(0.0, last + self.idle_s - time.monotonic())
            if timeout == 0.0:
                return
            for key, _events in self.selector.select(timeout):
                if key.fileobj is listener and not self.stopping:
                    self._accept(listener)
                    last = time.monotonic()
                elif key.fileobj is self.wake_r:
                    self._reap()
            if self.calls:
                last = time.monotonic()
        self._drain()

    def _stop(self, *_: object) -> None:
        """SIGTERM or SIGINT: stop accepting, let calls in flight end (the wake-up pipe ends the select)."""
        self.stopping = True

    def _accept(self, listener: socket.socket) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            conn, _addr = listener.accept()
            conn.setblocking(True)
            conn.settimeout(_HANDSHAKE_S)
            try:
                self._start_call(listener, conn)
            except (OSError, ValueError):
                conn.close()

    def _start_call(self, listener: socket.socket, conn: socket.socket) -> None:
        if not _same_user(conn):
            raise ValueError("another user")
        request, fds = _receive(conn)
        try:
            conn.sendall(b"ready\n")
            if _exactly(conn, 3) != b"go\n":
                raise ValueError("the client did not say go")
            pid = os.fork()
            if pid == 0:
                _child(request, fds, [listener, conn, *self.calls.values(), self.wake_r, self.wake_w])
        finally:
            for fd in fds:  # the child has them; the client must see its output end when the child's ends
                os.close(fd)
        self.calls[pid] = conn

    def _reap(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 512):
                pass
        while self.calls:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.calls.pop(pid, None)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                with contextlib.suppress(OSError):
                    conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
                conn.close()

    def _drain(self) -> None:
        deadline = time.monotonic() + _DRAIN_S
        while self.calls and time.monotonic() < deadline:
            self.selector.select(0.1)
            self._reap()


def serve(place: ServerPlace, idle_s: float) -> int:
    """Serve hook calls on ``place`` until idle for ``idle_s`` seconds; 0 also when another server has it."""
    lock_fd = os.open(place.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock_fd)
        return 0
    try:
        _warm_up()
    except Exception:  # noqa: BLE001 (each call meets the same error in its own fork and reports it)
        import traceback  # noqa: PLC0415

        traceback.print_exc()
    with contextlib.suppress(FileNotFoundError):
        place.socket.unlink()  # a dead server's: we hold the lock, so no live one has it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(str(place.socket))
    finally:
        os.umask(old_mask)
    listener.listen(64)
    listener.setblocking(False)
    place.pid.write_text(f"{os.getpid()}\n", encoding="ascii")
    try:
        _Server(idle_s).run(listener)
    finally:
        for path in (place.socket, place.pid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        listener.close()
        os.close(lock_fd)
    return 0


def main(argv: list[str]) -> int:
    place = ServerPlace.beside(Path(argv[0]))
    try:
        idle_s = float(os.environ.get(IDLE_ENV, IDLE_S))
    except ValueError:
        idle_s = IDLE_S
    return serve(place, idle_s)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
