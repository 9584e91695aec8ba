"""The generic guard: the typed stop for any Python agent, and the mailbox every integration shares.

A plugin stops a turn while a tool span ends, deep inside the framework, where raising would
only reach the chain's own guard. The guard hears of the stop (and of nudges) through the
chain's listeners and hands them to code that can end the run: the caller's own check, a
decorator on tool functions, or a framework integration::

    guard = Guard.of(toolchain)        # or Guard.of() under opentelemetry-instrument

    @guard.tool                        # raises TurnStopped when called in a stopped turn
    def read_file(path: str) -> str: ...

    guard.check()                      # the same, anywhere inside the agent's spans

Which turn is "mine" is found, in order, from: the watches open in this context
(:meth:`watch`, used by integrations around a run or a tool call), the extra keys integrations
register (:meth:`add_key_source`, e.g. the OpenAI Agents SDK trace), and the current OTel span.

Threads: signals are filed on whatever thread ended the span (under a lock, bounded to
``max_keys`` turns); checks run on the caller's thread. Nothing blocks; only ``check`` and the
decorated functions raise, and only :class:`~otel_toolchain.TurnStopped`.

A nudge is shown to the model as one note (:func:`nudge_note`) that frames it as the harness
speaking; every integration puts the note beside the tool result (its own part, block, item or
paragraph), never into it, so a JSON result stays parseable. A nudge names tools, never arguments.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, ParamSpec, TypeVar, cast

from opentelemetry import trace

from otel_toolchain.chain import Toolchain
from otel_toolchain.errors import ToolchainError, TurnStopped
from otel_toolchain.integrations._autoattach import attached
from otel_toolchain.signals import NudgeSignal, StopSignal

__all__ = ["NOTE_PREFIX", "Guard", "Watch", "nudge_note"]

NOTE_PREFIX: Final = "[otel_toolchain note]"

_P = ParamSpec("_P")
_R = TypeVar("_R")
_SHARED: weakref.WeakKeyDictionary[Toolchain, Guard] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


class _Pending:
    """A nudge filed in several places (a turn, a watch, a key): whoever takes it first, takes it."""

    __slots__ = ("signal", "taken")

    def __init__(self, signal: NudgeSignal) -> None:
        self.signal = signal
        self.taken = False


class Watch:
    """Signals delivered while this watch was open in the current context (see :meth:`Guard.watch`)."""

    __slots__ = ("nudges", "stop")

    def __init__(self) -> None:
        self.stop: StopSignal | None = None
        self.nudges: list[_Pending] = []


_WATCHES: ContextVar[tuple[Watch, ...]] = ContextVar("otel_toolchain_watches", default=())


class Guard:
    """Files each stop and nudge of ``toolchain`` where the agent's code can find it again."""

    def __init__(self, toolchain: Toolchain, *, max_keys: int = 1024) -> None:
        self.toolchain = toolchain
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._boxes: OrderedDict[Hashable, Watch] = OrderedDict()
        self._sources: list[Callable[[], Hashable | None]] = []
        self._nudged = False
        toolchain.on_stop(self._deliver_stop)
        toolchain.on_nudge(self._deliver_nudge)

    @classmethod
    def of(cls, toolchain: Toolchain | None = None) -> Guard:
        """The guard shared by every integration on ``toolchain`` (default: the auto-attached chain).

        Raises:
            ToolchainError: no toolchain was given and none was attached by ``opentelemetry-instrument``.
        """
        chain = toolchain if toolchain is not None else attached()
        if chain is None:
            raise ToolchainError("no toolchain: pass one, or run under opentelemetry-instrument with "
                                 "otel_toolchain installed (see otel_toolchain.integrations._autoattach)")
        with _SHARED_LOCK:
            guard = _SHARED.get(chain)
            if guard is None:
                guard = _SHARED[chain] = cls(chain)
            return guard

    def add_key_source(self, source: Callable[[], Hashable | None]) -> None:
        """Also file signals under ``source()`` as it is when they are delivered, and look there."""
        if source not in self._sources:
            self._sources.append(source)

    @contextmanager
    def watch(self) -> Iterator[Watch]:
        """Collect the signals delivered in this context (and contexts copied from it) until exit."""
        watch = Watch()
        token = _WATCHES.set((*_WATCHES.get(), watch))
        try:
            yield watch
        finally:
            _WATCHES.reset(token)

    # -- what the agent's code asks ---------------------------------------------------------------
    def stop_signal(self, key: Hashable | None = None) -> StopSignal | None:
        """The stop of the turn under ``key``, or of the current context's turn."""
        for box in self._boxes_for(key):
            if box.stop is not None:
                return box.stop
        if key is None:
            turn = self._current_turn()
            return self.toolchain.stop_signal(*turn) if turn is not None else None
        return None

    def check(self, key: Hashable | None = None) -> None:
        """Raise :class:`TurnStopped` if that turn was stopped; return otherwise."""
        signal = self.stop_signal(key)
        if signal is not None:
            raise TurnStopped(signal)

    def take_nudges(self, key: Hashable | None = None) -> list[NudgeSignal]:
        """The nudges for that turn not taken yet, oldest first; each is handed out once."""
        if not self._nudged:
            return []  # the common case costs nothing: no nudge was ever filed
        taken: list[NudgeSignal] = []
        boxes = self._boxes_for(key)
        with self._lock:
            for box in boxes:
                for pending in box.nudges:
                    if not pending.taken:
                        pending.taken = True
                        taken.append(pending.signal)
                box.nudges.clear()
        return taken

    def tool(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """Decorate a tool function (sync or async): it raises TurnStopped when its turn was stopped."""
        if inspect.iscoroutinefunction(fn):
            async def checked_async(*args: Any, **kwargs: Any) -> Any:
                self.check()
                return await fn(*args, **kwargs)

            return cast("Callable[_P, _R]", functools.wraps(fn)(checked_async))

        @functools.wraps(fn)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            self.check()
            return fn(*args, **kwargs)

        return checked

    # -- where signals are filed ----------------------------------------------------------------
    def _boxes_for(self, key: Hashable | None) -> list[Watch]:
        if key is not None:
            box = self._boxes.get(key)
            return [box] if box is not None else []
        boxes = list(reversed(_WATCHES.get()))
        for source in self._sources:
            extra = self._boxes.get(source())
            if extra is not None:
                boxes.append(extra)
        turn = self._current_turn()
        if turn is not None and (box := self._boxes.get(turn)) is not None:
            boxes.append(box)
        return boxes

    def _current_turn(self) -> tuple[int, int] | None:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return self.toolchain.turn_key_of(context.trace_id, context.span_id)

    def _filing(self, turn: tuple[int, int]) -> list[Watch]:
        keys: list[Hashable] = [turn, *(k for k in (source() for source in self._sources) if k is not None)]
        boxes = list(_WATCHES.get())
        with self._lock:
            for key in keys:
                box = self._boxes.get(key)
                if box is None:
                    box = self._boxes[key] = Watch()
                    while len(self._boxes) > self.max_keys:
                        self._boxes.popitem(last=False)
                boxes.append(box)
        return boxes

    def _deliver_stop(self, signal: StopSignal) -> None:
        for box in self._filing((signal.trace_id, signal.span_id)):
            if box.stop is None:
                box.stop = signal

    def _deliver_nudge(self, signal: NudgeSignal) -> None:
        pending = _Pending(signal)
        boxes = self._filing((signal.trace_id, signal.span_id))
        self._nudged = True
        with self._lock:
            for box in boxes:
                box.nudges.append(pending)


def nudge_note(nudges: Sequence[NudgeSignal]) -> str | None:
    """One note for the nudges not yet shown, or None when there are none. Pure; never raises."""
    messages = list(dict.fromkeys(n.message for n in nudges))
    if not messages:
        return None
    return f"{NOTE_PREFIX} " + " ".join(messages)
