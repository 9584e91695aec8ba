"""What the chain tells the harness: stop signals, nudges and end-of-turn reports.

All three are frozen value objects, safe to hand to another thread and to serialise with ``to_dict``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CycleCall", "NudgeSignal", "StopSignal", "TurnReport"]


@dataclass(frozen=True, slots=True)
class CycleCall:
    """One call of a repeated cycle, as it leaves the process (no arguments, no result)."""

    tool: str
    call_id: str | None
    digest: str
    """Keyed digest of the call's identity (tool, arguments, result, failure); see ``Toolchain(digest_key=)``."""


@dataclass(frozen=True, slots=True)
class StopSignal:
    """A plugin's verdict that the turn must end.

    ``reason`` is one human line; ``code`` is the short, fixed label metrics and alerts group by.
    ``period``, ``repeats``, ``at_call`` and ``cycle`` describe a repeated cycle and stay empty for
    plugins that stop for other reasons.
    """

    plugin: str
    code: str
    reason: str
    trace_id: int
    span_id: int
    period: int = 0
    repeats: int = 0
    at_call: int = 0
    """1-based index, within the turn, of the call that completed the cycle."""
    cycle: tuple[CycleCall, ...] = ()
    shadow: bool = False
    """A shadow verdict is recorded and counted but sent to no listener."""
    loop_start: int = 0
    """1-based index of the loop's first call: the first call of its first repetition."""
    loop_calls: int = 0
    """Calls the loop took, from ``loop_start`` to ``at_call``."""
    loop_seconds: float = 0.0
    """Time the loop took, from its first call's start to the stopping call's end."""
    loop_tokens: int | None = None
    """Input and output tokens the turn used during the loop (from the end of the call before it to
    the end of the stopping call), where the harness reports usage as it goes; None elsewhere."""
    ignored_fields: tuple[str, ...] = ()
    """Argument fields left out of the cycle's identity (annotations such as ``description``)."""
    masked: bool = False
    """Volatile tokens of a failed result were masked to find the repetition."""
    masks: tuple[str, ...] = ()
    """What was masked in the cycle's failed results: kinds of volatile token (``duration``, ``time``,
    ``thread id``...) and ``line order`` (see :data:`otel_toolchain.identity.MASK_KINDS`)."""
    note: str = ""
    """Why a verdict is shadow-only when the plugin runs in enforce mode (no content to compare)."""

    def to_dict(self) -> dict[str, Any]:
        """The signal as JSON-ready data, with the ids in W3C hex form."""
        data = asdict(self)
        data["trace_id"] = f"{self.trace_id:032x}"
        data["span_id"] = f"{self.span_id:016x}"
        return data


@dataclass(frozen=True, slots=True)
class NudgeSignal:
    """A plugin's suggestion to redirect the agent before stopping it.

    ``message`` never echoes the repeated arguments: it is safe to show the model.
    """

    plugin: str
    message: str
    trace_id: int
    span_id: int
    period: int
    repeats: int
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnReport:
    """A plugin's end-of-turn report: a label and a JSON-ready value (tool_stats: the seed's object)."""

    plugin: str
    label: str
    trace_id: int
    span_id: int
    value: dict[str, Any] = field(default_factory=dict)
