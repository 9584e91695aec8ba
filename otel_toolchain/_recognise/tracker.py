"""The chain as a span processor: which turn each span belongs to, and tool spans read as calls.

A turn is the outermost agent span above a span (``invoke_agent``, OpenInference AGENT, Traceloop
agent/workflow, ``claude_code.interaction``: see ``spans``), else the trace's root span. Each live
span is remembered from its start to its end with the turn it belongs to; spans whose parent was
never seen (remote, or started before the chain was installed) open a turn of their own. A tool
span is read into a :class:`~otel_toolchain.calls.ToolCall` as it ends and handed to
:meth:`Toolchain.tool_call`, the same entry point every other source uses. Live spans are bounded,
as a backstop for spans that are never ended: beyond ``max_live_spans`` the oldest are forgotten.
An evicted turn leaves a tombstone (a bounded number are kept, the oldest dropped first): spans
started under it later still belong to it, so their calls are counted as the evicted turn's
calls instead of opening turns of their own.

Spans started while :data:`DIRECT` is set (the recorder's, whose calls it hands in directly) are
skipped at once.
All methods take one lock briefly and never block otherwise; they may be called from any thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import Span as ApiSpan

from otel_toolchain import semconv
from otel_toolchain._recognise.spans import (
    Role,
    attributes_of,
    failure_of,
    is_decided,
    read_tool_call,
    retries_from,
    role_of,
)

if TYPE_CHECKING:
    from otel_toolchain.calls import Retry, ToolCall
    from otel_toolchain.turn import Turn

__all__ = ["DIRECT", "Live", "SpanPath", "mark_agent"]

Key = tuple[int, int]

_TOMBSTONES = 4096
"""Evicted turns remembered, so that their late spans are not taken for new turns."""

DIRECT: ContextVar[bool] = ContextVar("otel_toolchain_direct", default=False)
"""Set around ``start_span`` by code that hands its calls to the chain itself."""


class Live:
    """What is remembered of a span between its start and its end."""

    __slots__ = ("child_failure", "done", "key", "parent", "role", "span", "turn")

    def __init__(self, turn: Turn, role: Role, span: ApiSpan, key: Key, parent: Key | None) -> None:
        self.turn = turn
        self.role = role
        self.span = span
        self.key = key
        self.parent = parent
        self.done = False
        """The span's tool call already went through the plugins."""
        self.child_failure: str | None = None
        """The error type of a direct child that failed (Claude Code fails the child, not the tool)."""


class Chain(Protocol):
    """What the span path hands its calls and turns to: :class:`otel_toolchain.Toolchain`."""

    def open_turn(self, trace_id: int, span_id: int, *, agent: str | None = None, is_agent: bool = True) -> Turn: ...
    def tool_call(self, turn: Turn, call: ToolCall, *, source: str = "") -> Mapping[str, str]: ...
    def retry(self, turn: Turn, retry: Retry) -> None: ...
    def close_turn(self, turn: Turn) -> None: ...
    def _guarded(self, name: str, hook: str, fn: Callable[..., Any], *args: Any) -> None: ...


class SpanPath:
    """Live spans keyed by (trace id, span id), and the turns they belong to."""

    def __init__(self, chain: Chain, max_live_spans: int) -> None:
        self._chain = chain
        self.max_live_spans = max_live_spans
        self._lock = threading.Lock()
        self._live: dict[Key, Live] = {}
        self._members: dict[Key, set[Key]] = {}  # turn -> its live spans, to free them when it is evicted
        self._evicted: OrderedDict[Key, Turn] = OrderedDict()  # tombstones: evicted turn's span -> the turn
        self.forgotten_spans = 0

    def adopt(self, key: Key, turn: Turn, span: ApiSpan) -> None:
        """A turn opened directly whose span other instrumentations' spans may nest under."""
        with self._lock:
            self._live[key] = Live(turn, Role.TURN, span, key, None)
            self._members[key] = set()

    def forget(self, key: Key) -> None:
        """A turn closed: forget it (its spans still live end on their own; the backstop bounds them)."""
        with self._lock:
            self._live.pop(key, None)
            self._members.pop(key, None)

    def drop_turn(self, key: Key) -> None:
        """A turn evicted: forget it and the spans it still holds, which may never end."""
        with self._lock:
            own = self._live.pop(key, None)
            for member in self._members.pop(key, ()):
                self._live.pop(member, None)
            if own is not None:
                self._evicted[key] = own.turn
                while len(self._evicted) > _TOMBSTONES:
                    self._evicted.popitem(last=False)

    # -- on_start / on_end ----------------------------------------------------------------------------
    def tracks(self, span: ReadableSpan) -> bool:
        """Whether ``span`` is one of the live spans (a lock-free read: an entry only leaves on its end)."""
        context = span.get_span_context()
        return context is not None and (context.trace_id, context.span_id) in self._live

    def start(self, span: Span) -> None:
        attrs = attributes_of(span)
        role = role_of(span.name, attrs)
        context = span.get_span_context()
        key = (context.trace_id, context.span_id)
        parent = span.parent
        parent_key = (parent.trace_id, parent.span_id) if parent is not None else None
        with self._lock:
            owner = self._live.get(parent_key) if parent_key is not None else None
            tomb = self._evicted.get(parent_key) if owner is None and parent_key is not None else None
        turn = owner.turn if owner is not None else tomb
        if turn is None or (role is Role.TURN and not turn.is_agent):
            turn = self._open(span, key, attrs, is_agent=role is Role.TURN)
        live = Live(turn, role, span, key, parent_key)
        with self._lock:
            self._live[key] = live
            members = self._members.get(turn.key)
            if members is not None:
                members.add(key)
            if len(self._live) > self.max_live_spans:
                self._forget_oldest_span()
        if role is Role.TOOL or (role is Role.OTHER and not is_decided(attrs)):
            self._wrap_end(span, live)

    def end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        key = (context.trace_id, context.span_id)
        with self._lock:
            live = self._live.pop(key, None)
            if live is None:
                self._evicted.pop(key, None)  # an evicted turn's own span ended: nothing more comes under it
            parent = self._live.get(live.parent) if live is not None and live.parent is not None else None
            if live is not None and (members := self._members.get(live.turn.key)) is not None:
                members.discard(key)
        if live is None:
            return
        role = live.role if live.role is not Role.OTHER else role_of(span.name, attributes_of(span))
        if role is Role.TOOL:
            if self._claim(live):  # not yet run: its end hook did not see it as a tool in time
                self._run(self._turn_of(live), span, read_tool_call(span, child_failure=live.child_failure))
        else:
            if parent is not None and role is not Role.TURN and parent.child_failure is None:
                parent.child_failure = failure_of(span)
            for retry in retries_from(span):
                self._chain.retry(self._turn_of(live), retry)
        if live.turn.key == key:
            if role is Role.TURN:  # marked late (OpenInference marks at end): say so in the report
                mark_agent(live.turn, attributes_of(span))
            self._chain.close_turn(live.turn)

    def _wrap_end(self, span: Span, live: Live) -> None:
        # The SDK freezes attributes before any processor's on_end; wrapping the instance's end()
        # runs the plugins while the span is still live, after late attributes were set, so a tag
        # still reaches the exporters. Every end path looks ``end`` up on the instance.
        original = span.end

        def end(end_time: int | None = None) -> None:
            try:
                self._chain._guarded("<chain>", "on_tool", self._tool_ending, span, live, end_time)
            finally:  # even a strict chain that re-raises must not leave the span unended
                original(end_time)

        span.end = end  # type: ignore[method-assign]

    def _tool_ending(self, span: Span, live: Live, end_time: int | None) -> None:
        if live.done or not span.is_recording():
            return
        if live.role is not Role.TOOL:  # it said nothing at start; it may say it is a tool by now
            if role_of(span.name, attributes_of(span)) is not Role.TOOL:
                return
            live.role = Role.TOOL
        if self._claim(live):  # another thread may be ending the same span
            call = read_tool_call(span, end_ns=end_time, child_failure=live.child_failure)
            tags = self._run(self._turn_of(live), span, call)
            if tags and span.is_recording():
                span.set_attributes({semconv.TOOL_TAG_PREFIX + k: v for k, v in tags.items()})

    def _run(self, turn: Turn, span: ReadableSpan, call: Any) -> Mapping[str, str]:
        scope = span.instrumentation_scope
        return self._chain.tool_call(turn, call, source=scope.name if scope is not None else "")

    def _claim(self, live: Live) -> bool:
        with self._lock:
            if live.done:
                return False
            live.done = True
            return True

    # -- turns ----------------------------------------------------------------------------------------
    def _open(self, span: ApiSpan, key: Key, attrs: Mapping[str, Any], *, is_agent: bool) -> Turn:
        agent = attrs.get(semconv.GEN_AI_AGENT_NAME)
        turn = self._chain.open_turn(key[0], key[1], agent=str(agent) if agent else None, is_agent=is_agent)
        turn.span = span
        with self._lock:
            self._members.setdefault(turn.key, set())
        return turn

    def _turn_of(self, live: Live) -> Turn:
        """The turn of a span: its outermost ancestor that says by now that it is a turn.

        Some instrumentations mark the agent span just after starting it (Traceloop); the first
        tool below it finds the mark here, and that ancestor becomes the turn from then on.
        """
        if live.turn.is_agent:  # the common case, without the lock
            return live.turn
        with self._lock:
            outer, parent = None, live.parent
            while parent is not None and (node := self._live.get(parent)) is not None:
                if node.role is Role.TURN or _says_turn(node.span):
                    outer = node
                parent = node.parent
        if outer is None:
            return live.turn
        span = outer.span
        attrs = attributes_of(span) if isinstance(span, ReadableSpan) else {}
        if outer.turn.key == outer.key:
            mark_agent(outer.turn, attrs)
            return outer.turn
        outer.turn = self._open(span, outer.key, attrs, is_agent=True)
        return outer.turn

    def turn_key_of(self, key: Key) -> Key:
        """The key of the turn a live span belongs to; any other span is taken as a turn."""
        with self._lock:
            live = self._live.get(key)
        return self._turn_of(live).key if live is not None else key

    def live_count(self) -> int:
        with self._lock:
            return len(self._live)

    def _forget_oldest_span(self) -> None:
        oldest = next(iter(self._live))
        live = self._live.pop(oldest)
        members = self._members.get(live.turn.key)
        if members is not None:
            members.discard(oldest)
        self.forgotten_spans += 1


def _says_turn(span: ApiSpan) -> bool:
    return isinstance(span, ReadableSpan) and role_of(span.name, attributes_of(span)) is Role.TURN


def mark_agent(turn: Turn, attrs: Mapping[str, Any]) -> None:
    """A turn found to be an agent's after it opened (its mark came late)."""
    turn.is_agent = True
    if turn.agent is None:
        agent = attrs.get(semconv.GEN_AI_AGENT_NAME) or attrs.get(semconv.AGENT_NAME_OPENINFERENCE)
        turn.agent = str(agent) if agent else None
