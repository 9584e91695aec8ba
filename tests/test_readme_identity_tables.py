"""The README's repeat_guard tables say what the code does: ignored arguments, masks, parameters, evidence."""

from __future__ import annotations

import re
from dataclasses import fields

from conftest import REPO

from otel_toolchain.identity import IGNORED_ARGS, LINE_ORDER, MASK_KINDS
from otel_toolchain.plugins.repeat_guard import RepeatGuardConfig
from otel_toolchain.signals import StopSignal

SECTION = REPO.joinpath("README.md").read_text().split("## The plugins", 1)[1].split("\n## ", 1)[0]


def table(header: str) -> list[list[str]]:
    """The rows of the table whose header row starts with ``header``, as cells."""
    lines = SECTION.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_ignored_arguments_table_is_identity_s() -> None:
    shown: dict[str, set[str]] = {}
    for tools, fields_, _ in table("tool (CLI)"):
        for tool in names(tools):
            shown.setdefault(tool, set()).update(names(fields_))
    assert shown == {tool: set(ignored) for tool, ignored in IGNORED_ARGS.items()}


def test_the_mask_table_names_every_mask() -> None:
    assert [names(row[0])[0] for row in table("mask")] == [*MASK_KINDS, LINE_ORDER]


def test_the_limits_table_names_every_parameter() -> None:
    shown = [name for row in table("parameter") for name in names(row[0])]
    assert shown == list(RepeatGuardConfig.model_fields)


def test_the_evidence_table_names_every_stop_field() -> None:
    shown = {name for row in table("field (`StopSignal`, JSON)") for name in names(row[0])}
    assert shown == {f.name for f in fields(StopSignal)} - {"plugin", "code", "reason", "trace_id", "span_id", "shadow"}
