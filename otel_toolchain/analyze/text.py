"""The analysis as text for a terminal: totals, distributions, the chart, the limits, what to look at."""

from __future__ import annotations

from typing import Any

from otel_toolchain.analyze.chart import render_chart
from otel_toolchain.analyze.engine import Analysis
from otel_toolchain.analyze.report import to_dict

__all__ = ["render_text"]

_NAMES = {"calls": "calls", "identical_in_a_row": "identical calls in a row", "repeats": "repeats of a cycle (any)",
          "longest_fail_streak": "failures in a row", "retries": "provider retries"}
_LISTED = 10


def _turn(turn: dict[str, Any]) -> str:
    text = f"    {turn['turn']}  ({turn['harness']}"
    text += f", session {turn['session_id']}" if turn["session_id"] else ""
    text += f"): {turn['repeats']} repeats of {turn['cycle'] or '?'}"
    text += f", reached at call {turn['at_call']} of {turn['calls']}"
    if turn["stop_at"] is not None:
        text += f"; the chain stops it at call {turn['stop_at']}"
    if turn["label"]:
        text += f"  [{turn['label']}]"
    return text


def _distributions(data: dict[str, Any]) -> list[str]:
    lines = [f"  {'per turn':<28}{'p50':>6}{'p90':>6}{'p99':>6}{'max':>7}"]
    rows = [(_NAMES[name], data["distributions"][name]) for name in _NAMES]
    rows[3:3] = [(f"  cycles of {period} call{'s' if period != '1' else ''}", summary)
                 for period, summary in data["distributions"]["repeats_by_period"].items()]
    for name, summary in rows:
        lines.append(f"  {name:<28}{summary['p50']:>6}{summary['p90']:>6}{summary['p99']:>6}{summary['max']:>7}")
    return lines


def _candidates(data: dict[str, Any], chain: int | None, suggested: int | None) -> list[str]:
    labelled = bool(data["labels"]["healthy"] or data["labels"]["wedged"])
    head = f"  {'limit':>6}{'stops':>8}{'polling':>9}"
    head += f"{'healthy':>9}{'wedged':>8}{'missed':>8}" if labelled else ""
    lines = [head]
    for row in data["candidates"]:
        line = f"  {row['limit']:>6}{row['stops']:>8}{row['polling']:>9}"
        if labelled:
            line += f"{row['healthy']:>9}{row['wedged']:>8}{row['wedged_missed']:>8}"
        marks = [name for name, value in (("chain limit", chain), ("suggested", suggested)) if value == row["limit"]]
        lines.append(line + (f"   ◀ {', '.join(marks)}" if marks else ""))
    return lines


def _verdict(data: dict[str, Any]) -> list[str]:
    labels, suggested = data["labels"], data["suggested_limit"]
    if not labels["healthy"] and not labels["wedged"]:
        seed = data["seed_range"]
        lines = ["No turn is labelled wedged or healthy (--labels FILE, or runs that record the chain's stops), so "
                 "no limit is suggested.",
                 f"Any limit of {data['distributions']['repeats']['max'] + 1} or more stops none of these turns."]
        if not seed["turns"]:
            return [*lines, f"No turn repeats a cycle {seed['low']} times, so no limit from {seed['low']} to "
                            f"{seed['high']} (the seed's range, where the default 25 sits) stops any of them."]
        lines.append(f"{seed['turns']} turn(s) repeat a cycle {seed['low']} times or more, so a limit from "
                     f"{seed['low']} to {seed['high']} (the seed's range) could stop them. Look at them:")
        return lines + [_turn(turn) for turn in seed["examples"][:_LISTED]]
    lines = [f"Labelled ({labels['source']}): {labels['healthy']} healthy, {labels['wedged']} wedged."]
    if labels["presumed_healthy"]:
        lines.append("No turn is labelled healthy: the unlabelled turns are presumed healthy.")
    if suggested is not None:
        high = data["separating_range"]["high"]
        lines.append(f"Limits from {data['separating_range']['low']} to {high if high is not None else 'any'} stop "
                     f"every wedged turn and no healthy one.")
        text = (f"Suggested limit: {suggested['limit']} ({suggested['margin_below']} above the most repetitive "
                f"healthy turn's {suggested['healthy_peak']}")
        if suggested["margin_above"] is not None:
            text += f", {suggested['margin_above']} below the mildest wedge's {suggested['wedged_floor']}"
        lines.append(text + ").")
    elif data["overlap"] is not None:
        lines.append("No limit separates them: a healthy turn repeats as much as a wedged one. The turns that overlap:")
        lines += [_turn(turn) for turn in data["overlap"]["healthy"][:_LISTED] + data["overlap"]["wedged"][:_LISTED]]
    if labels["unused"]:
        lines.append(f"Labels that named no run read: {', '.join(labels['unused'][:_LISTED])}")
    return lines


def _polling(data: dict[str, Any], chain: int | None) -> list[str]:
    polling = data["polling"]
    if not polling["turns"]:
        return ["No turn's most repeated cycle is a poll."]
    lines = [f"Polling (benign repetition): in {polling['turns']} turn(s) the most repeated cycle waits on something "
             "whose output had not changed yet. What a limit would cost:"]
    for group in polling["groups"][:_LISTED]:
        line = f"    {group['cycle']}: {group['turns']} turn(s), up to {group['max_repeats']} repeats"
        if chain:
            line += f"; limit {chain} stops {group['stopped_by_chain_limit']}"
        if group["stopped_by_suggested"] is not None:
            line += f", the suggested limit {group['stopped_by_suggested']}"
        lines.append(line)
    return lines


def _periods(data: dict[str, Any]) -> list[str]:
    """The per-period limits and the poll limit, each with the turns it would have stopped."""
    found = data["suggested_limits"]
    if found is None:
        return []
    shape = ", ".join(f"{period} = {limit}" for period, limit in found["limits"].items())
    lines = [f"Suggested per-period limits: limits = {{ {shape} }}, poll_limit = {found['poll_limit']}"
             + (" (the unlabelled turns presumed healthy)" if found["presumed_healthy"] else "")]
    names = {period: f"period {period} limit {limit}" for period, limit in found["limits"].items()}
    names["poll"] = f"poll limit {found['poll_limit']}"
    for key, name in names.items():
        stops = found["stops"][key]
        lines.append(f"  {name:<20} would stop {sum(stops.values())} turn(s): {stops['wedged']} wedged, "
                     f"{stops['healthy']} healthy, {stops['unlabelled']} unlabelled")
    return lines


def render_text(analysis: Analysis) -> str:
    """The whole report as text."""
    data = to_dict(analysis)
    chain = data["chain"]["repeat_guard"]
    limit = chain["limit"] if chain else None
    suggested = data["suggested_limit"]["limit"] if data["suggested_limit"] else None
    inputs = ", ".join(f"{kind} {count}" for kind, count in data["inputs"].items()) or "nothing read"
    lines = [f"{data['runs']} runs, {data['turns']} turns, {data['calls']} calls ({data['failed_calls']} failed); "
             f"read: {inputs}"]
    lines.append(f"chain: {data['chain']['manifest']}: " + (
        f"repeat_guard limit {limit}, cycles of up to {chain['max_period']} calls, {chain['mode']}" if chain
        else "no repeat_guard (no stop is computed)"))
    if data["turns"]:
        aggregate = analysis.aggregate
        lines += ["", *_distributions(data), "", "Turns by most repeats of one cycle:"]
        lines += render_chart(aggregate.figures["repeats"], healthy=aggregate.labelled["healthy"],
                              wedged=aggregate.labelled["wedged"], polling=aggregate.polling,
                              marks={"chain limit": limit, "suggested": suggested})
        lines += ["", "What each limit would stop:", *_candidates(data, limit, suggested)]
        periods = _periods(data)
        lines += ["", *_verdict(data), *(["", *periods] if periods else []), "", *_polling(data, limit)]
    if data["notes"]:
        lines += ["", *(f"note: {note}" for note in data["notes"])]
    lines += [f"error: {error}" for error in data["errors"]]
    if data["bad_lines"]:
        lines.append(f"note: {data['bad_lines']} line(s) could not be read and were passed over")
    return "\n".join(lines)
