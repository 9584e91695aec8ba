"""Draw turns for a person: repeated calls folded, the loop and the stop marked, fitted to a width.

::

    invoke_agent claude-code  trace be610818  session cd36c0d6-86e9-4896-9397-4ddcab5bfb3d
      30 calls, 0 failed
      STOPPED by repeat_guard at call 25: the same call (Bash) repeated 25 times in a row …
    └─ 1-30  Bash  read  0 ms  #9f3a61c2 x30 (drawn with a multiplication sign)  ◀ loop from 1, STOP at 25

Runs of the same call (or of the same cycle of up to three calls) are one line with a count; a long
turn keeps its first and last lines and every marked one. Lines are :class:`rich.text.Text`, styled;
:class:`Screen` says whether to colour, how wide to draw and whether the output can take box
characters. Pure: nothing here reads the environment or writes anywhere but the stream it is given.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.text import Text

from otel_toolchain._terminal import terminal_safe
from otel_toolchain.cli.folding import Group, fold
from otel_toolchain.outcome import CallRecord, TurnOutcome

__all__ = ["ASCII", "UNICODE", "Glyphs", "Screen", "print_trees", "render_lines"]

_MAX_TOOL = 24
_MAX_CLASS = 10
_MIN_WHAT = 8


@dataclass(frozen=True)
class Glyphs:
    """The characters the tree is drawn with."""

    tee: str
    last: str
    pipe: str
    blank: str
    times: str
    ellipsis: str
    mark: str
    cycle: str


UNICODE = Glyphs("├─ ", "└─ ", "│  ", "   ", "\u00d7", "…", "◀", "↻")
ASCII = Glyphs("|- ", "`- ", "|  ", "   ", "x", "...", "<", "@")


@dataclass(frozen=True)
class Screen:
    """How to draw: ``width`` None draws lines as long as they need (a pipe); ``color`` adds ANSI styles."""

    width: int | None = None
    color: bool = False
    glyphs: Glyphs = UNICODE


def _cut(text: str, room: int | None, glyphs: Glyphs) -> str:
    """``text`` from a stream, made harmless to the terminal, cut to ``room`` columns (None: whole)."""
    text = terminal_safe(text, lines=False)
    if room is None or len(text) <= room:
        return text
    keep = max(0, room - len(glyphs.ellipsis))
    return text[:keep] + glyphs.ellipsis if room > len(glyphs.ellipsis) else text[:room]


def _duration(ms: int) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms} ms"


def _counts(calls: Iterable[CallRecord]) -> tuple[int, int]:
    total = failed = 0
    for call in calls:
        sub_total, sub_failed = _counts(call.children)
        total += 1 + sub_total
        failed += call.failed + sub_failed
    return total, failed


def _header(turn: TurnOutcome, screen: Screen) -> list[Text]:
    g = screen.glyphs
    name = terminal_safe(turn.name or "turn", lines=False)
    first = f"{name}  trace {turn.trace_id:032x}"[: len(name) + 16]
    line = Text()
    line.append(first, style="bold")
    if turn.session_id:
        room = None if screen.width is None else max(8, screen.width - len(first) - len("  session "))
        line.append(f"  session {_cut(turn.session_id, room, g)}", style="dim")
    total, failed = _counts(turn.tree)
    second = Text(f"  {total} calls, ")
    second.append(f"{failed} failed", style="red" if failed else "")
    if turn.attempt > 1:
        second.append(f", attempt {turn.attempt}")
    lines = [line, second]
    for label, stop, style in (("STOPPED", turn.stopped, "bold red"), ("SHADOW STOP (not enforced)",
                                                                          turn.shadow_stopped, "bold yellow")):
        if stop is not None:
            lines.extend(_wrapped(f"{label} by {stop.plugin} at call {stop.at_call}", stop.reason, style, screen))
    for nudge in turn.nudges:
        lines.extend(_wrapped(f"nudged by {nudge.plugin}", nudge.message, "yellow", screen))
    return lines


def _wrapped(label: str, text: str, style: str, screen: Screen) -> list[Text]:
    """``label: text`` indented by two, wrapped to the width with four-space continuation lines."""
    whole = terminal_safe(f"  {label}: {text}", lines=False)  # a stop's reason names the stream's tools
    pieces = [whole] if screen.width is None else textwrap.wrap(
        whole, screen.width, subsequent_indent="    ", break_on_hyphens=False) or [whole]
    lines = [Text(piece) for piece in pieces]
    lines[0].stylize(style, 2, 2 + len(label))
    return lines


@dataclass(frozen=True)
class _Columns:
    index: int
    tool: int
    cls: int
    duration: int


def _span(group: Group) -> str:
    return str(group.first) if group.first == group.last else f"{group.first}-{group.last}"


def _columns(groups: Sequence[Group | None], depth_tools: Iterable[CallRecord]) -> _Columns:
    real = [g for g in groups if g is not None]
    tools = list(depth_tools)
    return _Columns(
        index=max((len(_span(g)) for g in real), default=1),
        tool=min(_MAX_TOOL, max((len(c.tool) for c in tools), default=1)),
        cls=min(_MAX_CLASS, max((len(c.cls) for c in tools), default=0)),
        duration=max((len(_duration(sum(c.ms for c in g.calls) * g.repeats)) for g in real), default=4),
    )


def _marks(group: Group, turn: TurnOutcome) -> list[tuple[str, str]]:
    marks: list[tuple[str, str]] = []
    for stop, style, word in ((turn.stopped, "bold red", "STOP"), (turn.shadow_stopped, "bold yellow", "shadow stop")):
        if stop is None or not stop.at_call:
            continue
        if stop.loop_start and group.first <= stop.loop_start <= group.last:
            marks.append((f"loop from {stop.loop_start}", "yellow"))
        if group.first <= stop.at_call <= group.last:
            marks.append((f"{word} at {stop.at_call}", style))
    return marks


def _call_line(prefix: str, index: str, call: CallRecord, *, repeats: int, cols: _Columns,
               marks: list[tuple[str, str]], screen: Screen) -> Text:
    g = screen.glyphs
    line = Text()
    line.append(prefix, style="dim")
    if cols.index:
        line.append(f"{index:>{cols.index}}  ", style="dim")
    line.append(f"{_cut(call.tool, cols.tool, g):<{cols.tool}}  ", style="bold")
    if cols.cls:
        line.append(f"{_cut(call.cls, cols.cls, g):<{cols.cls}}  ", style="cyan")
    line.append(f"{_duration(call.ms * repeats):>{cols.duration}}", style="dim")
    tail = Text()
    if repeats > 1:
        tail.append(f" {g.times}{repeats}", style="bold magenta")
    if call.failed:
        tail.append(f"  FAILED {call.error_type or ''}".rstrip(), style="red")
    for number, (mark, style) in enumerate(marks):
        tail.append(f"  {g.mark} " if number == 0 else ", ")
        tail.append(mark, style=style)
    if call.what:
        room = None if screen.width is None else screen.width - len(line) - len(tail) - 2
        if room is None or room >= _MIN_WHAT:
            line.append("  ")
            line.append(_cut(call.what, room, g))
    line.append_text(tail)
    return line


def _cycle_line(prefix: str, group: Group, cols: _Columns, marks: list[tuple[str, str]], screen: Screen) -> Text:
    g = screen.glyphs
    line = Text()
    line.append(prefix, style="dim")
    line.append(f"{_span(group):>{cols.index}}  ", style="dim")
    line.append(f"{g.cycle} cycle of {len(group.calls)} calls", style="bold")
    line.append(f" {g.times}{group.repeats}", style="bold magenta")
    for number, (mark, style) in enumerate(marks):
        line.append(f"  {g.mark} " if number == 0 else ", ")
        line.append(mark, style=style)
    return line


def _elide(groups: list[Group], turn: TurnOutcome, max_lines: int) -> list[Group | None]:
    """At most ``max_lines`` groups, first and last halves and every marked one; None stands for a gap."""
    if len(groups) <= max_lines:
        return list(groups)
    head = max(1, max_lines // 2)
    tail = max(0, max_lines - head)
    keep = set(range(head)) | set(range(len(groups) - tail, len(groups)))
    keep |= {i for i, group in enumerate(groups) if _marks(group, turn)}
    shown: list[Group | None] = []
    for i, group in enumerate(groups):
        if i in keep:
            shown.append(group)
        elif not shown or shown[-1] is not None:
            shown.append(None)
    return shown


def _tree(calls: list[CallRecord], turn: TurnOutcome, prefix: str, max_lines: int, screen: Screen) -> list[Text]:
    g = screen.glyphs
    groups = fold(calls)
    shown = _elide(groups, turn, max_lines)
    cols = _columns(shown, (c for grp in shown if grp is not None for c in grp.calls))
    lines: list[Text] = []
    for position, group in enumerate(shown):
        last = position == len(shown) - 1
        branch = prefix + (g.last if last else g.tee)
        below = prefix + (g.blank if last else g.pipe)
        if group is None:
            hidden = _hidden(shown, groups, position)
            lines.append(Text(f"{branch}{g.ellipsis} {hidden} more calls {g.ellipsis}", style="dim"))
            continue
        marks = _marks(group, turn)
        if len(group.calls) == 1:
            call = group.calls[0]
            lines.append(_call_line(branch, _span(group), call, repeats=group.repeats, cols=cols, marks=marks,
                                    screen=screen))
            lines.extend(_tree(call.children, turn, below, max_lines, screen))
            continue
        lines.append(_cycle_line(branch, group, cols, marks, screen))
        members = _Columns(0, cols.tool, cols.cls, cols.duration)
        for member, call in enumerate(group.calls):
            end = member == len(group.calls) - 1
            lines.append(_call_line(below + (g.last if end else g.tee), "", call, repeats=1, cols=members, marks=[],
                                    screen=screen))
    return lines


def _hidden(shown: list[Group | None], groups: list[Group], position: int) -> int:
    before = next((grp for grp in reversed(shown[:position]) if grp is not None), None)
    after = next((grp for grp in shown[position + 1:] if grp is not None), None)
    start = groups.index(before) + 1 if before is not None else 0
    end = groups.index(after) if after is not None else len(groups)
    return sum(len(grp.calls) * grp.repeats for grp in groups[start:end])


def render_lines(turns: Iterable[TurnOutcome], screen: Screen, *, max_lines: int = 40) -> list[Text]:
    """Every turn's header and tree, as styled lines no wider than ``screen.width`` (where it has one)."""
    lines: list[Text] = []
    for turn in turns:
        lines.extend(_header(turn, screen))
        lines.extend(_tree(turn.tree, turn, "", max_lines, screen))
    if screen.width is not None:
        for line in lines:
            line.truncate(screen.width, overflow="ellipsis")
    return lines


class _PipeConsole(Console):
    """A Console that lets a gone reader's BrokenPipeError through, as the rest of the CLI's output does.

    rich's own answer is ``SystemExit(1)``, which would turn ``replay WEDGE | head`` (exit 75) and ``show |
    head`` (exit 0) into failures; the CLI's entry point decides what a closed pipe means instead.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def print_trees(turns: Iterable[TurnOutcome], stream: TextIO, screen: Screen, *, max_lines: int = 40) -> None:
    """Write the trees to ``stream``, in colour when ``screen.color``.

    May raise: BrokenPipeError when the reader has gone (the caller decides what that means).
    """
    console = _PipeConsole(file=stream, width=screen.width or 100_000,
                           color_system="standard" if screen.color else None, force_terminal=screen.color,
                           no_color=not screen.color, highlight=False, markup=False, emoji=False, soft_wrap=True,
                           legacy_windows=False)
    for line in render_lines(turns, screen, max_lines=max_lines):
        console.print(line)
    stream.flush()
