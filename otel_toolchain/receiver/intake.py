"""The bounded intake queue between the receiving servers and the chain, and its worker.

Servers decode a request (on their own threads) and :meth:`Intake.offer` it; a full queue refuses
at once (the server answers 429 / RESOURCE_EXHAUSTED with a retry hint) instead of buffering
without bound. One worker thread hands each request to the receiver (so the chain sees calls in
arrival order) and then to the forwarder; a ticker runs the receiver's clock (held events, idle
turns). ``stop`` drains what was accepted, then closes every turn.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Final

from google.protobuf.message import Message

from otel_toolchain.receiver.core import Receiver
from otel_toolchain.receiver.forward import Forwarder

__all__ = ["RETRY_AFTER_S", "Intake"]

RETRY_AFTER_S: Final = 1
_TICK_S: Final = 0.1
_log = logging.getLogger("otel_toolchain.receiver")


class Intake:
    """Requests accepted in order, at most ``max_queue`` waiting. Thread-safe; ``offer`` never blocks."""

    def __init__(self, receiver: Receiver, forwarder: Forwarder | None, max_queue: int = 256) -> None:
        self.receiver = receiver
        self.forwarder = forwarder
        self.refused = 0
        self._queue: queue.Queue[tuple[str, Message] | None] = queue.Queue(max_queue)
        self._done = threading.Event()
        self._worker = threading.Thread(target=self._work, name="otel_toolchain-intake", daemon=True)
        self._ticker = threading.Thread(target=self._tick, name="otel_toolchain-tick", daemon=True)
        self._worker.start()
        self._ticker.start()

    def offer(self, signal: str, message: Message) -> bool:
        """Queue one decoded request; False when the queue is full (the sender should retry later)."""
        try:
            self._queue.put_nowait((signal, message))
        except queue.Full:
            self.refused += 1
            return False
        return True

    def wait_idle(self) -> None:
        """Block until every request accepted so far has been handled (tests, and run's end)."""
        self._queue.join()

    def stop(self) -> None:
        """Handle what was accepted, stop the threads, close every turn. Blocks; idempotent."""
        if self._done.is_set():
            return
        self._queue.put(None)
        self._worker.join()
        self._done.set()
        self._ticker.join()
        self.receiver.close()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                signal, message = item
                try:
                    self.receiver.ingest(signal, message)
                except Exception:  # noqa: BLE001 (one odd request must not end the guard for every later one)
                    _log.exception("otel_toolchain receiver: a %s request could not be read into calls", signal)
                if self.forwarder is not None:
                    self.forwarder.forward(signal, message)
            finally:
                self._queue.task_done()

    def _tick(self) -> None:
        while not self._done.wait(_TICK_S):
            try:
                self.receiver.tick()
            except Exception:  # noqa: BLE001 (as in _work)
                _log.exception("otel_toolchain receiver: closing idle turns failed")
