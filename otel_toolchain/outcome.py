"""What became of a turn: its calls as a tree, its verdicts and its report, ready to print or serialise.

A :class:`TurnOutcome` is filled in as the turn runs, by the adapter that recorded it (the harness
writer, the OTLP receiver) or rebuilt from exported spans (``otel-toolchain show``); the tree the
CLI draws and ``replay --format json`` both come from it, in memory, whatever the export.
Plain values: safe to hand to another thread once the turn has ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.signals import NudgeSignal, StopSignal

__all__ = ["CallRecord", "TurnOutcome", "cycle_text", "evidence", "stop_line", "stop_to_dict", "summary"]


@dataclass(slots=True)
class CallRecord:
    """One call as the tree shows it."""

    index: int
    """1-based position in the order the chain saw the turn's calls (0 when unknown)."""
    tool: str
    cls: str
    ms: int
    failed: bool
    error_type: str | None
    call_id: str | None
    what: str = ""
    """The command or main argument where content is captured, else ``#`` and a short identity digest."""
    children: list[CallRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The call as ``show --format json`` prints it, sub-calls nested."""
        return {"index": self.index, "tool": self.tool, "class": self.cls, "ms": self.ms, "failed": self.failed,
                "error_type": self.error_type, "call_id": self.call_id, "what": self.what,
                "children": [child.to_dict() for child in self.children]}

    def same_as(self, other: CallRecord) -> bool:
        """Shown as one line with a count: the same call again, with no sub-calls (never when ``what`` is
        unknown: calls read back from spans without content cannot be told apart)."""
        return bool(self.what) and (self.tool, self.cls, self.what, self.failed, self.error_type) == (
            other.tool, other.cls, other.what, other.failed, other.error_type) and not (self.children or other.children)


@dataclass
class TurnOutcome:
    """What became of one turn of one run."""

    source: str
    harness: str
    session_id: str | None = None
    calls: int = 0
    failed: int = 0
    stopped: StopSignal | None = None
    shadow_stopped: StopSignal | None = None
    nudges: list[NudgeSignal] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each plugin's end-of-turn report, by plugin name (``tool_stats``: the seed's object)."""
    bad_lines: list[Any] = field(default_factory=list)
    tree: list[CallRecord] = field(default_factory=list)
    trace_id: int = 0
    span_id: int = 0
    attempt: int = 1
    """Which attempt of ``run --retries`` this turn was (1 for the first, and for replays)."""
    tokens: int | None = None
    """Input and output tokens of the turn, where the harness reports usage."""
    name: str = ""

    @property
    def tool_stats(self) -> dict[str, Any] | None:
        return self.reports.get("tool_stats")

    def to_dict(self, *, tree: bool = False) -> dict[str, Any]:
        """The JSON object ``otel-toolchain replay --format json`` prints for this turn (``tree``: with its calls)."""
        data = {
            "source": self.source, "harness": self.harness, "session_id": self.session_id, "attempt": self.attempt,
            "calls": self.calls, "failed": self.failed,
            "stopped": stop_to_dict(self.stopped) if self.stopped else None,
            "shadow_stopped": stop_to_dict(self.shadow_stopped) if self.shadow_stopped else None,
            "nudges": [{"plugin": n.plugin, "message": n.message, "period": n.period, "repeats": n.repeats,
                        "tools": list(n.tools)}
                       for n in self.nudges],
            "tool_stats": self.tool_stats, "tokens": self.tokens, "bad_lines": len(self.bad_lines),
        }
        if tree:
            data["trace_id"] = f"{self.trace_id:032x}"
            data["tree"] = [call.to_dict() for call in self.tree]
        return data


def evidence(stop: StopSignal) -> str:
    """A stop's evidence in words: where the loop began, what it cost, what identity left out.

    ``loop from call 2: 25 calls, 3.1 s, 8200 tokens; ignored description; masked duration, thread id``
    """
    cost = [f"{stop.loop_calls} calls", f"{stop.loop_seconds:.1f} s"]
    if stop.loop_tokens is not None:
        cost.append(f"{stop.loop_tokens} tokens")
    text = f"loop from call {stop.loop_start}: {', '.join(cost)}"
    if stop.ignored_fields:
        text += f"; ignored {', '.join(stop.ignored_fields)}"
    if stop.masks:
        text += f"; masked {', '.join(stop.masks)}"
    return text


def cycle_text(stop: StopSignal) -> str:
    """The stop's cycle as printed: ``Bash [toolu_01] -> Read [toolu_02]`` (``?`` for a call without an id)."""
    return " -> ".join(f"{c.tool} [{c.call_id or '?'}]" for c in stop.cycle)


def stop_line(stop: StopSignal, *, attempt: tuple[int, int] = (1, 1), trace: bool = False) -> str:
    """The one stderr line a stop prints (``run``, ``run --telemetry``, ``serve``), escaped for a terminal.

    ``attempt`` is (this attempt, of how many) when ``run --retries`` may start the agent again; ``trace``
    appends the turn's trace id, for a guard that serves many agents at once.
    """
    cycle = cycle_text(stop)
    which = f" (attempt {attempt[0]} of {attempt[1]})" if attempt[1] > 1 else ""
    text = (f"otel-toolchain: stopped by {stop.plugin} at call {stop.at_call}{which}: {stop.reason}; "
            f"cycle: {cycle}; {evidence(stop)}")
    if trace:
        text += f"; trace {stop.trace_id:032x}"
    return terminal_safe(text, lines=False)


def stop_to_dict(stop: StopSignal) -> dict[str, Any]:
    """A stop as printed: who, why, where the loop began and ended, what it cost, what identity ignored."""
    return {
        "plugin": stop.plugin, "reason": stop.reason, "at_call": stop.at_call, "period": stop.period,
        "repeats": stop.repeats, "loop_start": stop.loop_start, "loop_calls": stop.loop_calls,
        "loop_seconds": round(stop.loop_seconds, 3), "loop_tokens": stop.loop_tokens,
        "ignored_fields": list(stop.ignored_fields), "masked": stop.masked, "masks": list(stop.masks),
        "note": stop.note or None,
        "cycle": [{"tool": c.tool, "call_id": c.call_id, "digest": c.digest} for c in stop.cycle],
    }


_SUMMARY_KEYS = ("command", "cmd", "file_path", "filePath", "path", "pattern", "url", "query", "description")
_SUMMARY_WIDTH = 60


def summary(arguments: Any) -> str:
    """The argument a person recognises a call by: its command, path, pattern, URL or query, cut short."""
    text = ""
    if isinstance(arguments, str):
        text = arguments
    elif isinstance(arguments, dict):
        for key in _SUMMARY_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                text = value
                break
            if isinstance(value, list) and value and all(isinstance(word, str) for word in value):
                text = " ".join(value)
                break
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"
