"""Which turn each span belongs to: the chain's span bookkeeping, bounded and thread-safe.

A turn is the outermost agent span above a span (``invoke_agent``, OpenInference AGENT, Traceloop
agent/workflow, ``claude_code.interaction``: see ``_spans``), else the trace's root span. Each live
span is remembered from its start to its end with the turn it belongs to; spans whose parent was
never seen (remote, or started before the chain was installed) open a turn of their own. Open turns
are bounded: beyond ``max_open_turns`` the oldest is evicted with the spans it still holds (their
calls then go unreported). Live spans are bounded too, as a backstop for spans that are never ended
after their turn closed: beyond ``64 * max_open_turns`` the oldest are forgotten.

All methods take one lock briefly and never block otherwise; they may be called from any thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import Span

from otel_toolchain import semconv
from otel_toolchain._recognise.spans import Role, attributes_of, role_of
from otel_toolchain.turn import Turn, TurnSink

__all__ = ["Live", "TurnIndex"]

Key = tuple[int, int]


class Live:
    """What is remembered of a span between its start and its end."""

    __slots__ = ("child_failure", "done", "key", "parent", "role", "span", "turn")

    def __init__(self, turn: Turn, role: Role, span: Span, key: Key, parent: Key | None) -> None:
        self.turn = turn
        self.role = role
        self.span = span
        self.key = key
        self.parent = parent
        self.done = False
        """The span's tool call already went through the plugins."""
        self.child_failure: str | None = None
        """The error type of a direct child that failed (Claude Code fails the child, not the tool)."""


class TurnIndex:
    """Live spans and open turns, keyed by (trace id, span id)."""

    def __init__(self, sink: TurnSink, max_open_turns: int) -> None:
        if max_open_turns < 1:
            raise ValueError("max_open_turns must be at least 1")
        self.max_open_turns = max_open_turns
        self.max_live_spans = 64 * max_open_turns
        self._sink = sink
        self._lock = threading.Lock()
        self._live: dict[Key, Live] = {}
        self._turns: OrderedDict[Key, Turn] = OrderedDict()
        self._members: dict[Key, set[Key]] = {}  # turn -> its live spans, to free them on eviction
        self.forgotten_spans = 0

    def start(self, span: Span, role: Role) -> tuple[Live, int]:
        """Remember a span that started; returns it and how many turns were evicted to make room."""
        context = span.get_span_context()
        key = (context.trace_id, context.span_id)
        parent = span.parent
        parent_key = (parent.trace_id, parent.span_id) if parent is not None else None
        evicted = 0
        with self._lock:
            owner = self._live.get(parent_key) if parent_key is not None else None
            turn = owner.turn if owner is not None else None
            if turn is None or (role is Role.TURN and not turn.is_agent):
                turn, evicted = self._open(span, key, is_agent=role is Role.TURN)
            live = self._live[key] = Live(turn, role, span, key, parent_key)
            members = self._members.get(turn.key)
            if members is not None:
                members.add(key)
            if len(self._live) > self.max_live_spans:
                self._forget_oldest_span()
        return live, evicted

    def end(self, key: Key) -> tuple[Live | None, Live | None]:
        """Forget a span that ended; returns it and its parent, if that is still live."""
        with self._lock:
            live = self._live.pop(key, None)
            if live is None:
                return None, None
            members = self._members.get(live.turn.key)
            if members is not None:
                members.discard(key)
            parent = self._live.get(live.parent) if live.parent is not None else None
        return live, parent

    def turn_of(self, live: Live) -> tuple[Turn, int]:
        """The turn of a span: its outermost ancestor that says by now that it is a turn.

        Some instrumentations mark the agent span just after starting it (Traceloop); the first
        tool below it finds the mark here, and that ancestor becomes the turn from then on.
        Returns the turn and how many turns were evicted to open it.
        """
        if live.turn.is_agent:
            return live.turn, 0
        with self._lock:
            outer, parent = None, live.parent
            while parent is not None and (node := self._live.get(parent)) is not None:
                if role_of(node.span.name, attributes_of(node.span)) is Role.TURN:
                    outer = node
                parent = node.parent
            if outer is None:
                return live.turn, 0
            if outer.turn.key == outer.key:
                mark_agent(outer.turn, attributes_of(outer.span))
                return outer.turn, 0
            outer.turn, evicted = self._open(outer.span, outer.key, is_agent=True)
            return outer.turn, evicted

    def close(self, turn: Turn) -> bool:
        """Forget a turn whose span ended; False if it had been evicted already."""
        with self._lock:
            self._members.pop(turn.key, None)  # spans still live end on their own; the backstop bounds them
            return self._turns.pop(turn.key, None) is not None

    def claim(self, live: Live) -> bool:
        """True once per span: the caller is the one to run its tool call through the plugins."""
        with self._lock:
            if live.done:
                return False
            live.done = True
            return True

    def turn_key_of(self, key: Key) -> Key:
        """The key of the turn an open span belongs to; any other span is taken as a turn."""
        with self._lock:
            live = self._live.get(key)
        return self.turn_of(live)[0].key if live is not None else key

    def open_turns(self) -> list[Turn]:
        with self._lock:
            return list(self._turns.values())

    def live_count(self) -> int:
        with self._lock:
            return len(self._live)

    def _open(self, span: Span, key: Key, *, is_agent: bool) -> tuple[Turn, int]:
        agent = attributes_of(span).get(semconv.GEN_AI_AGENT_NAME)
        turn = Turn(key[0], key[1], is_agent=is_agent, agent=str(agent) if agent else None, span=span,
                    sink=self._sink)
        self._turns[key] = turn
        self._members[key] = set()
        evicted = 0
        while len(self._turns) > self.max_open_turns:
            old_key, _old = self._turns.popitem(last=False)
            for member in self._members.pop(old_key, ()):
                self._live.pop(member, None)
            evicted += 1
        return turn, evicted

    def _forget_oldest_span(self) -> None:
        oldest = next(iter(self._live))
        live = self._live.pop(oldest)
        members = self._members.get(live.turn.key)
        if members is not None:
            members.discard(oldest)
        self.forgotten_spans += 1


def mark_agent(turn: Turn, attrs: Mapping[str, Any]) -> None:
    """A turn found to be an agent's after it opened (its mark came late)."""
    turn.is_agent = True
    if turn.agent is None:
        agent = attrs.get(semconv.GEN_AI_AGENT_NAME) or attrs.get(semconv.AGENT_NAME_OPENINFERENCE)
        turn.agent = str(agent) if agent else None
