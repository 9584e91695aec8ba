"""Render turns as a readable tree: from an OTLP JSON lines traces file, or from replay outcomes.

::

    turn claude-code  session 3f2c…  12 calls, 2 failed  STOPPED by repeat_guard at call 12
    ├─ Bash        exec     1.2 s   git status
    ├─ Read        read     0 ms
    └─ Bash        exec     0.3 s   FAILED exit_code_1
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_toolchain import semconv
from otel_toolchain.export.otlp_json import read_otlp_json_lines

__all__ = ["RenderedTurn", "render_turns", "turns_from_otlp_file"]

_STATUS_ERROR = 2


@dataclass
class _Call:
    tool: str
    cls: str
    ms: int
    failed: bool
    error_type: str | None
    children: list[_Call] = field(default_factory=list)


@dataclass
class RenderedTurn:
    """A turn as the tree shows it."""

    name: str
    session_id: str | None
    calls: list[_Call]
    stop: dict[str, Any] | None
    trace_id: str = ""


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    values = {}
    for attribute in span.get("attributes", []):
        value = attribute.get("value", {})
        values[attribute["key"]] = next(iter(value.values()), None) if value else None
    return values


def _spans(path: Path, offset: int) -> Iterator[dict[str, Any]]:
    for request in read_otlp_json_lines(path, offset=offset):
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                yield from scope_spans.get("spans", [])


def turns_from_otlp_file(path: Path, *, offset: int = 0) -> list[RenderedTurn]:
    """The turns (``invoke_agent`` spans) in an OTLP JSON lines traces file, in the order they ended.

    ``offset`` skips the bytes before it: what earlier runs appended to the same file.
    """
    spans = list(_spans(path, offset))
    by_id = {span["spanId"]: span for span in spans}
    children: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        children.setdefault(span.get("parentSpanId", ""), []).append(span)

    def calls_under(span_id: str) -> list[_Call]:
        calls = []
        for child in sorted(children.get(span_id, []), key=lambda s: int(s.get("startTimeUnixNano", 0))):
            attrs = _attributes(child)
            if attrs.get(semconv.GEN_AI_OPERATION_NAME) != semconv.OPERATION_EXECUTE_TOOL:
                calls.extend(calls_under(child["spanId"]))
                continue
            ms = (int(child.get("endTimeUnixNano", 0)) - int(child.get("startTimeUnixNano", 0))) // 1_000_000
            failed = child.get("status", {}).get("code") == _STATUS_ERROR
            calls.append(_Call(str(attrs.get(semconv.GEN_AI_TOOL_NAME, "?")), str(attrs.get(semconv.TOOL_CLASS, "")),
                               ms, failed, attrs.get(semconv.ERROR_TYPE), calls_under(child["spanId"])))
        return calls

    turns = []
    for span in spans:
        attrs = _attributes(span)
        if attrs.get(semconv.GEN_AI_OPERATION_NAME) != semconv.OPERATION_INVOKE_AGENT:
            continue
        parent = by_id.get(span.get("parentSpanId", ""))
        if parent is not None and _attributes(parent).get(semconv.GEN_AI_OPERATION_NAME) == "invoke_agent":
            continue  # a sub-agent is shown inside its turn
        stop = next((_attributes(e) for e in span.get("events", []) if e.get("name") == semconv.STOP_EVENT),
                    None)
        turns.append(RenderedTurn(span.get("name", "turn"), attrs.get(semconv.GEN_AI_CONVERSATION_ID),
                                  calls_under(span["spanId"]), stop, span.get("traceId", "")))
    return turns


def _count(calls: Iterable[_Call]) -> tuple[int, int]:
    total = failed = 0
    for call in calls:
        sub_total, sub_failed = _count(call.children)
        total += 1 + sub_total
        failed += call.failed + sub_failed
    return total, failed


def _duration(ms: int) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms} ms"


def render_turns(turns: Iterable[RenderedTurn], *, max_calls: int = 40) -> str:
    """The tree text; long turns show their first and last calls."""
    lines: list[str] = []
    for turn in turns:
        total, failed = _count(turn.calls)
        head = f"{turn.name}  trace {turn.trace_id[:8]}"
        if turn.session_id:
            head += f"  session {turn.session_id}"
        head += f"  {total} calls, {failed} failed"
        if turn.stop:
            head += (f"  STOPPED by {turn.stop.get(semconv.PLUGIN)}: {turn.stop.get(semconv.STOP_MESSAGE)}")
        lines.append(head)
        lines.extend(_tree(turn.calls, "", max_calls))
    return "\n".join(lines)


def _tree(calls: list[_Call], indent: str, max_calls: int) -> list[str]:
    shown: list[_Call | None] = list(calls)
    if len(calls) > max_calls:
        shown = [*calls[: max_calls // 2], None, *calls[-max_calls // 2:]]
    lines = []
    for position, call in enumerate(shown):
        last = position == len(shown) - 1
        branch = "└─ " if last else "├─ "
        if call is None:
            lines.append(f"{indent}{branch}… {len(calls) - max_calls} more calls …")
            continue
        fail = f"  FAILED {call.error_type or ''}".rstrip() if call.failed else ""
        lines.append(f"{indent}{branch}{call.tool:<14} {call.cls:<8} {_duration(call.ms):>8}{fail}")
        lines.extend(_tree(call.children, indent + ("   " if last else "│  "), max_calls))
    return lines
