"""Metrics through the real Collector (otelcol-agent.yaml) into a real Prometheus, read as the dashboard reads them.

After a live ``otel-toolchain run`` (metrics exported every 500 ms, spans continuously) and the synthetic
replay mix: the span_metrics connector's series reach Prometheus by scrape and by remote write; every
dashboard query returns series, the two duration panels finite numbers; the series table of
collector-config/README.md names exactly the labels Prometheus stores.
"""

from __future__ import annotations

import json
import math
import re
from functools import partial
from typing import Any

import pytest

from .agent_stack import SERVICE, AgentStack
from .backends_stack import CONFIG_DIR
from .e2e_alert_stack import Deadline, api, wait_for
from .runs import Replayed

pytestmark = pytest.mark.integration

DASHBOARD = CONFIG_DIR / "grafana" / "dashboards" / "otel_toolchain.json"
README = CONFIG_DIR / "README.md"
# Labels every series has besides those of the table (see the table's header).
COMMON_LABELS = {"__name__", "job", "instance", "otel_scope_name", "otel_scope_version", "otel_scope_schema_url"}


def panels() -> list[dict[str, Any]]:
    doc = json.loads(DASHBOARD.read_text())
    return [p for top in doc["panels"] for p in (top, *top.get("panels", [])) if p.get("targets")]


def as_query(expr: str) -> str:
    """A panel expression as Grafana would send it for the last hour, with the job variable on our service."""
    for var, value in (("$__rate_interval", "1m"), ("$__range", "1h"), ("$__interval", "15s"), ("$job", SERVICE)):
        expr = expr.replace(var, value)
    return expr


def values(result: list[dict[str, Any]]) -> list[float]:
    return [float(r["value"][1]) for r in result]


def finite(stack: AgentStack, query: str) -> list[dict[str, Any]]:
    """The query's samples whose value is a number (histogram_quantile over no rise gives NaN)."""
    return [r for r in stack.prom_query(stack.scrape, query) if math.isfinite(float(r["value"][1]))]


def test_span_metrics_reach_prometheus_and_the_duration_panels_show_numbers(
        agent_stack: AgentStack, live_run: dict[str, Any], mixed_replay: Replayed) -> None:
    deadline = Deadline(40)
    for title in ("Tool span latency", "Tool duration by class"):
        [panel] = [p for p in panels() if p["title"].startswith(title)]
        for target in panel["targets"]:
            query = as_query(target["expr"])
            result = wait_for(f"{title}: finite values for {query}", partial(finite, agent_stack, query),
                              deadline, explain=agent_stack.diagnostics)
            assert all(0 <= v < 100 for v in values(result)), result
    # the latency panel groups by tool: the stand-in agent's only tool
    latency = agent_stack.prom_query(agent_stack.scrape, as_query(
        next(p for p in panels() if p["title"].startswith("Tool span latency"))["targets"][0]["expr"]))
    assert {r["metric"]["gen_ai_tool_name"] for r in latency} == {"Bash"}, latency
    # remote write (the Mimir path) got the same connector output
    calls = wait_for("span metrics by remote write", lambda: agent_stack.prom_query(
        agent_stack.mimir, 'sum(traces_span_metrics_calls_total{span_name="execute_tool Bash"})'), deadline)
    assert values(calls)[0] >= 27, calls


# Queries that may rightly be empty after these runs, and why.
MAY_BE_EMPTY = {
    "Retries/A": "otel_toolchain.retries is created at the first retry (not added at 0 at start), and no run retried",
}


def test_every_dashboard_query_returns_series(agent_stack: AgentStack, live_run: dict[str, Any],
                                              mixed_replay: Replayed) -> None:
    deadline = Deadline(30)
    empty = []
    for panel in panels():
        for target in panel["targets"]:
            key = f"{panel['title']}/{target['refId']}"
            query = as_query(target["expr"])
            try:
                wait_for(query, partial(agent_stack.prom_query, agent_stack.scrape, query), deadline,
                         limit=1 if key in MAY_BE_EMPTY else 10)
            except AssertionError:
                empty.append(key)
    assert sorted(empty) == sorted(MAY_BE_EMPTY)
    jobs = api(agent_stack.scrape.base_url, "/api/v1/label/job/values")  # the dashboard's job variable
    assert SERVICE in jobs, jobs


# Series of the table that these runs do not produce, and why.
NOT_EXPORTED = {
    "otel_toolchain_export_repaired_total": "created at the first item the exporter repairs; these runs send none",
    "otel_toolchain_retries_total": "created at the first retry; no run retried",
    "otel_toolchain_tool_duration_seconds_bucket": "tool_stats records durations only with duration_histogram = true",
    "otel_toolchain_tool_duration_seconds_sum": "(the same)",
    "otel_toolchain_tool_duration_seconds_count": "(the same)",
}


def table_labels() -> dict[str, set[str]]:
    """{Prometheus series: labels the README table gives it} ("as above" repeats the row before)."""
    text = README.read_text()
    table = text[text.index("<!-- series-table:start -->"):text.index("<!-- series-table:end -->")]
    out: dict[str, set[str]] = {}
    previous: set[str] = set()
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[0].startswith("`"):
            continue
        labels = set(re.findall(r"`([a-z_][a-z0-9_*]*)`", cells[3]))
        if cells[3].startswith("as above"):
            labels |= previous
        previous = labels - {"le"}
        for series in re.findall(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`", cells[-1]):
            out[series] = labels if series.endswith("_bucket") else labels - {"le"}
    return out


def test_readme_series_table_names_the_labels_prometheus_stores(agent_stack: AgentStack, live_run: dict[str, Any],
                                                                mixed_replay: Replayed) -> None:
    stored: dict[str, set[str]] = {}
    for name in api(agent_stack.scrape.base_url, "/api/v1/label/__name__/values"):
        for series in api(agent_stack.scrape.base_url, "/api/v1/series", **{"match[]": name}):
            stored.setdefault(name, set()).update(set(series) - COMMON_LABELS)
    documented = table_labels()
    ours = {n for n in stored if n.startswith(("otel_toolchain_", "traces_span_metrics_"))}
    absent = sorted(n for n in documented if n not in stored)
    assert absent == sorted(NOT_EXPORTED), "every other series of the table is in Prometheus after these runs"
    wrong = {n: (sorted(documented.get(n, {"(not in the table)"})), sorted(stored[n]))
             for n in sorted(ours) if documented.get(n) != stored[n]}
    assert wrong == {}, "README table (documented, stored) differ"
    sdk = {label for label in stored.get("target_info", set()) if label.startswith("telemetry_sdk_")}
    assert sdk and "telemetry_sdk_*" in documented["target_info"], stored.get("target_info")
