"""The Grafana dashboard and its provisioning, checked without a Grafana server.

No published dashboard JSON schema ships in a PyPI package (grafana-foundation-sdk's wheel has typed
models but not the schema files), so this is a structural check: unique panel ids, a sane non-overlapping
grid, every query on a provisioned data source, every PromQL expression valid (promtool parses them as
recording rules) and reading only the series names in collector-config/README.md, data links that open
Explore on a provisioned data source, and the panels the project needs. Each check is also run on a
broken copy of the dashboard, to show it can fail.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
GRAFANA = ROOT / "collector-config" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "otel_toolchain.json"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "otel_toolchain.yaml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "otel_toolchain.yaml"
COMPOSE = ROOT / "collector-config" / "docker-compose.yaml"
README = ROOT / "collector-config" / "README.md"
GRID_WIDTH = 24
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "bargauge", "table", "text", "heatmap", "traces"}

Dashboard = dict[str, Any]


def load_dashboard() -> Dashboard:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def provisioned_datasources() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(DATASOURCES.read_text(encoding="utf-8"))
    return {ds["uid"]: ds for ds in doc["datasources"]}


def all_panels(dashboard: Dashboard) -> list[dict[str, Any]]:
    """Top-level panels and those inside collapsed rows."""
    out = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


# -- series names (same crude parser as tests/test_alert_rules.py) ----------------------------------


def known_series() -> set[str]:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("<!-- series-table:start -->"):text.index("<!-- series-table:end -->")]
    names = set()
    for line in table.splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) >= 5 and cells[0].strip().startswith("`"):
            names.update(re.findall(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`", cells[-1]))
    return names


_NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                "unless", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)  # Grafana variables outside brackets, e.g. offset $__range
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:.$])[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        if word.lower() in _NOT_METRICS or e[m.end():].lstrip().startswith("("):
            continue
        names.add(word)
    return names


def as_promql(expr: str) -> str:
    """A Grafana expression with its variables replaced, so that Prometheus tools can parse it."""
    for var, value in (("$__rate_interval", "5m"), ("$__range", "1h"), ("$__interval", "1m")):
        expr = expr.replace(var, value)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


# -- checks: each returns a list of problems ------------------------------------------------------


def check_top_level(d: Dashboard) -> list[str]:
    problems = []
    for key, kind in (("uid", str), ("title", str), ("schemaVersion", int), ("panels", list)):
        if not isinstance(d.get(key), kind):
            problems.append(f"{key}: missing or not {kind.__name__}")
    if isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] < 36:
        problems.append(f"schemaVersion {d['schemaVersion']} predates Grafana 9")
    if isinstance(d.get("uid"), str) and not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", d["uid"]):
        problems.append(f"uid {d['uid']!r}: Grafana allows at most 40 of [A-Za-z0-9_-]")
    return problems


def check_panel_ids(d: Dashboard) -> list[str]:
    seen: dict[Any, str] = {}
    problems = []
    for panel in all_panels(d):
        pid = panel.get("id")
        if not isinstance(pid, int):
            problems.append(f"panel {panel.get('title')!r}: id {pid!r} is not an integer")
        elif pid in seen:
            problems.append(f"panel id {pid} used by {seen[pid]!r} and {panel.get('title')!r}")
        else:
            seen[pid] = panel.get("title", "")
        if panel.get("type") not in PANEL_TYPES:
            problems.append(f"panel {pid}: unexpected type {panel.get('type')!r}")
    return problems


def check_grid(d: Dashboard) -> list[str]:
    problems = []
    cells: dict[tuple[int, int], Any] = {}
    for panel in d.get("panels", []):
        grid = panel.get("gridPos")
        pid = panel.get("id")
        if not isinstance(grid, dict) or not all(isinstance(grid.get(k), int) for k in "xywh"):
            problems.append(f"panel {pid}: gridPos must have integer x, y, w, h; got {grid!r}")
            continue
        x, y, w, h = grid["x"], grid["y"], grid["w"], grid["h"]
        if x < 0 or y < 0 or w < 1 or h < 1 or x + w > GRID_WIDTH:
            problems.append(f"panel {pid}: gridPos {grid} is outside the {GRID_WIDTH}-column grid")
            continue
        if panel.get("type") == "row" and (w, h) != (GRID_WIDTH, 1):
            problems.append(f"row {pid}: must span the full width with height 1")
        for cx in range(x, x + w):
            for cy in range(y, y + h):
                if (cx, cy) in cells:
                    problems.append(f"panel {pid} overlaps panel {cells[(cx, cy)]} at x={cx}, y={cy}")
                    break
                cells[(cx, cy)] = pid
            else:
                continue
            break
    return problems


def check_datasources(d: Dashboard, uids: set[str]) -> list[str]:
    problems = []
    for panel in all_panels(d):
        if panel.get("type") == "row":
            continue
        pid = panel.get("id")
        refs = [panel.get("datasource")] + [t.get("datasource") for t in panel.get("targets", [])]
        for ref in refs:
            if not isinstance(ref, dict) or ref.get("uid") not in uids:
                problems.append(f"panel {pid}: data source {ref!r} is not provisioned (uids {sorted(uids)})")
        if not panel.get("targets"):
            problems.append(f"panel {pid}: no queries")
        ref_ids = [t.get("refId") for t in panel.get("targets", [])]
        if len(ref_ids) != len(set(ref_ids)) or None in ref_ids:
            problems.append(f"panel {pid}: refIds must be present and unique, got {ref_ids}")
    for var in d.get("templating", {}).get("list", []):
        ref = var.get("datasource")
        if var.get("type") == "query" and (not isinstance(ref, dict) or ref.get("uid") not in uids):
            problems.append(f"variable {var.get('name')}: data source {ref!r} is not provisioned")
    return problems


def expressions(d: Dashboard) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel query and query variable."""
    out = []
    for panel in all_panels(d):
        for target in panel.get("targets", []):
            out.append((f"panel {panel.get('id')} {target.get('refId')}", target.get("expr", "")))
    for var in d.get("templating", {}).get("list", []):
        query = var.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        inner = re.fullmatch(r"label_values\((.+),\s*\w+\)", text.strip())
        if inner:
            out.append((f"variable {var.get('name')}", inner.group(1)))
    return out


def check_metric_names(d: Dashboard, known: set[str]) -> list[str]:
    problems = []
    for where, expr in expressions(d):
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: no metric in {expr!r}")
        for name in sorted(names - known):
            problems.append(f"{where}: {name} is not in the README series table")
    return problems


def check_promql(d: Dashboard, tmp_path: Path) -> list[str]:
    """Every expression parses: promtool checks them as recording rules."""
    rules = [{"record": f"dashboard:expr_{i}", "expr": as_promql(expr)} for i, (_, expr) in enumerate(expressions(d))]
    path = tmp_path / "dashboard-exprs.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}), encoding="utf-8")
    result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True,
                            timeout=60, check=False)
    return [] if result.returncode == 0 else [f"promtool: {result.stdout}{result.stderr}"]


def explore_links(d: Dashboard) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for panel in all_panels(d):
        for link in panel.get("fieldConfig", {}).get("defaults", {}).get("links", []):
            out.append((panel.get("id"), link))
    return out


def check_links(d: Dashboard, uids: set[str]) -> list[str]:
    """Data links open Explore with valid JSON on a provisioned data source, filtered by the series' labels."""
    problems = []
    for pid, link in explore_links(d):
        url = link.get("url", "")
        if not link.get("title"):
            problems.append(f"panel {pid}: data link without a title")
        parsed = urllib.parse.urlsplit(url)
        if parsed.path != "/explore":
            problems.append(f"panel {pid}: link {url[:60]!r} does not open Explore")
            continue
        panes_raw = urllib.parse.parse_qs(parsed.query).get("panes", [""])[0]
        try:
            panes = json.loads(re.sub(r"\$\{[^}]+\}", "X", panes_raw))
        except json.JSONDecodeError as exc:
            problems.append(f"panel {pid}: link panes are not JSON: {exc}")
            continue
        for pane in panes.values():
            for query in pane.get("queries", []):
                if (query.get("datasource") or {}).get("uid") not in uids or pane.get("datasource") not in uids:
                    problems.append(f"panel {pid}: link queries a data source that is not provisioned")
        if "${__field.labels." not in url:
            problems.append(f"panel {pid}: link {link.get('title')!r} does not use the clicked series' labels")
    return problems


_AGENT_COUNTER = re.compile(r"\b(rate|increase)\(((?:otel_toolchain|traces_span_metrics)_\w+)(\{[^}]*\})?\[")


def check_new_series(d: Dashboard) -> list[str]:
    """Every read of an agent counter or histogram counts the first samples of a new series.

    A short CLI process (and any new process before its first scrape) exports its series already at its
    final value, so rate()/increase() over it are 0: the panel needs ``(X unless X offset W) or
    increase(X[W])``, like the alerts. rate() is not used at all: a raw count cannot be mixed with a rate.
    """
    problems = []
    for where, expr in expressions(d):
        for func, name, matchers in _AGENT_COUNTER.findall(expr):
            selector = re.escape(name + matchers)
            if func == "rate":
                problems.append(f"{where}: rate({name}...) misses new series; use increase() with the new-series term")
            elif not re.search(rf"{selector}\s+unless\s+{selector}\s+offset\s", expr):
                problems.append(f"{where}: increase({name}...) without '{name}{matchers} unless ... offset'")
    return problems


def check_all(d: Dashboard, tmp_path: Path) -> list[str]:
    uids = set(provisioned_datasources())
    return [*check_top_level(d), *check_panel_ids(d), *check_grid(d), *check_datasources(d, uids),
            *check_metric_names(d, known_series()), *check_promql(d, tmp_path), *check_links(d, uids),
            *check_new_series(d)]


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool not found: apt-get install -y --no-install-recommends prometheus")
    return path


# -- the real dashboard ---------------------------------------------------------------------------


def test_dashboard_passes_every_check(tmp_path: Path) -> None:
    assert check_all(load_dashboard(), tmp_path) == []


def _exprs_of(d: Dashboard, title_part: str) -> str:
    panels = [p for p in all_panels(d) if title_part.lower() in p.get("title", "").lower()]
    assert panels, f"no panel titled like {title_part!r}"
    return "\n".join(t["expr"] for p in panels for t in p.get("targets", []))


def test_dashboard_shows_what_the_project_needs() -> None:
    d = load_dashboard()
    assert "by (otel_toolchain_tool_class)" in _exprs_of(d, "calls by class")
    assert "by (gen_ai_tool_name)" in _exprs_of(d, "calls by tool")
    assert 'otel_toolchain_tool_failed="true"' in _exprs_of(d, "failure ratio")
    duration = _exprs_of(d, "tool duration")
    assert "histogram_quantile" in duration and "otel_toolchain_tool_duration_seconds_bucket" in duration
    assert "otel_toolchain_stop_reason" in _exprs_of(d, "stops by")
    streak = _exprs_of(d, "open max vs limit")
    assert "otel_toolchain_repeat_streak_open_max" in streak and "otel_toolchain_repeat_guard_limit" in streak
    assert "otel_toolchain_retries_total" in _exprs_of(d, "retries")
    assert "otel_toolchain_export_dropped_total" in _exprs_of(d, "dropped")


def test_stops_link_to_traces() -> None:
    d = load_dashboard()
    stops = next(p for p in all_panels(d) if p.get("title", "").lower().startswith("stops by"))
    links = stops["fieldConfig"]["defaults"]["links"]
    datasource_types: set[str] = set()
    for link in links:
        panes = json.loads(re.sub(r"\$\{[^}]+\}", "X", urllib.parse.parse_qs(
            urllib.parse.urlsplit(link["url"]).query)["panes"][0]))
        datasource_types.update(q["datasource"]["type"] for pane in panes.values() for q in pane["queries"])
        assert "tool_plugin." in urllib.parse.unquote(link["url"])  # the stopped turns' error.type
    assert datasource_types == {"jaeger", "tempo"}
    assert any(t.get("exemplar") for t in stops["targets"])
    prom = provisioned_datasources()["otel-prometheus"]
    destinations = prom["jsonData"]["exemplarTraceIdDestinations"]
    assert {dest["datasourceUid"] for dest in destinations} <= set(provisioned_datasources())
    assert {dest["name"] for dest in destinations} == {"trace_id"}


def test_provisioning_matches_compose() -> None:
    provider = yaml.safe_load(PROVIDERS.read_text(encoding="utf-8"))["providers"][0]
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    grafana = compose["services"]["grafana"]
    mounts = dict(v.rsplit(":", 1)[0].split(":", 1) for v in grafana["volumes"] if v.startswith("./"))
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    for uid, ds in provisioned_datasources().items():
        host = urllib.parse.urlsplit(ds["url"]).hostname
        assert host in compose["services"] or uid == "otel-tempo", f"{uid}: {host} is not a compose service"


# -- every check can fail -------------------------------------------------------------------------

Mutation = Callable[[Dashboard], None]


def _panel(d: Dashboard, pid: int) -> dict[str, Any]:
    return next(p for p in all_panels(d) if p["id"] == pid)


def _stops_panel(d: Dashboard) -> dict[str, Any]:
    return next(p for p in all_panels(d) if p.get("title", "").lower().startswith("stops by"))


BROKEN: list[tuple[str, Mutation, str]] = [
    ("no uid", lambda d: d.pop("uid"), "uid: missing"),
    ("old schema", lambda d: d.update(schemaVersion=16), "predates Grafana 9"),
    ("duplicate panel id", lambda d: _panel(d, 3).update(id=2), "panel id 2 used by"),
    ("missing gridPos", lambda d: _panel(d, 2).pop("gridPos"), "panel 2: gridPos must have"),
    ("off the grid", lambda d: _panel(d, 3)["gridPos"].update(x=20), "outside the 24-column grid"),
    ("overlapping panels", lambda d: _panel(d, 3)["gridPos"].update(x=6), "panel 3 overlaps panel 2"),
    ("unknown data source", lambda d: _panel(d, 2)["targets"][0].update(datasource={"uid": "prom-prod"}),
     "is not provisioned"),
    ("unknown metric", lambda d: _panel(d, 2)["targets"][0].update(
        expr="sum(rate(otel_toolchain_tool_call_total[5m]))"), "otel_toolchain_tool_call_total is not in the README"),
    ("duplicate refId", lambda d: _panel(d, 5)["targets"][1].update(refId="A"), "refIds must be present and unique"),
    ("invalid PromQL", lambda d: _panel(d, 2)["targets"][0].update(
        expr="sum(rate(otel_toolchain_tool_calls_total[5m])"), "promtool:"),
    ("link to a missing data source", lambda d: _stops_panel(d)["fieldConfig"]["defaults"]["links"][0].update(
        url=_stops_panel(d)["fieldConfig"]["defaults"]["links"][0]["url"].replace("otel-jaeger", "jaeger-prod")),
     "link queries a data source that is not provisioned"),
    ("link that is not Explore", lambda d: _stops_panel(d)["fieldConfig"]["defaults"]["links"][0].update(
        url="http://jaeger:16686/search"), "does not open Explore"),
    ("first stop of a new process invisible", lambda d: _stops_panel(d)["targets"][0].update(
        expr='sum(increase(otel_toolchain_turn_stops_total{job=~"$job"}[$__rate_interval]))'),
     "increase(otel_toolchain_turn_stops_total...) without"),
    ("rate over agent counters", lambda d: _panel(d, 2)["targets"][0].update(
        expr='sum(rate(otel_toolchain_tool_calls_total{job=~"$job"}[$__rate_interval]))'),
     "rate(otel_toolchain_tool_calls_total...) misses new series"),
]


@pytest.mark.parametrize(("what", "mutate", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_check_catches_broken_dashboard(what: str, mutate: Mutation, expected: str, tmp_path: Path) -> None:
    d = copy.deepcopy(load_dashboard())
    mutate(d)
    problems = check_all(d, tmp_path)
    assert any(expected in p for p in problems), problems


# -- the first samples of a new process, evaluated by promtool ------------------------------------

NEW_SERIES_INTERVAL = "2m"  # $__rate_interval in these cases: at 5m, "offset 2m" looks at 3m, before the series
_NEW = "_ _ _ _"  # no sample at 0m..3m: the process exported its first, already final, value at 4m
FIRST_SAMPLES: list[tuple[int, str, list[tuple[str, str]], list[tuple[dict[str, str], float]]]] = [
    (8, "A", [('otel_toolchain_turn_stops_total{job="agent",instance="i1",otel_toolchain_plugin="repeat_guard",'
               'otel_toolchain_stop_reason="repeated_cycle",otel_toolchain_stop_mode="enforce"}', "1")],
     [({"job": "agent", "otel_toolchain_plugin": "repeat_guard", "otel_toolchain_stop_reason": "repeated_cycle",
        "otel_toolchain_stop_mode": "enforce"}, 1)]),
    (15, "A", [('otel_toolchain_plugin_errors_total{job="agent",instance="i1",otel_toolchain_plugin="classify",'
                'otel_toolchain_hook="on_tool"}', "2"),
               ('otel_toolchain_plugin_errors_total{job="agent",instance="i1",otel_toolchain_plugin="repeat_guard",'
                'otel_toolchain_hook="listener.on_stop"}', "1")],
     [({"otel_toolchain_plugin": "classify", "otel_toolchain_hook": "on_tool"}, 2)]),
    (15, "B", [('otel_toolchain_plugin_errors_total{job="agent",instance="i1",otel_toolchain_plugin="classify",'
                'otel_toolchain_hook="on_tool"}', "2"),
               ('otel_toolchain_plugin_errors_total{job="agent",instance="i1",otel_toolchain_plugin="repeat_guard",'
                'otel_toolchain_hook="listener.on_stop"}', "1")],
     [({"otel_toolchain_plugin": "repeat_guard", "otel_toolchain_hook": "listener.on_stop"}, 1)]),
    (16, "A", [('otel_toolchain_export_dropped_total{job="agent",instance="i1",otel_toolchain_signal="traces"}', "5")],
     [({"otel_toolchain_signal": "traces"}, 5)]),
    (16, "B", [('otel_toolchain_turns_evicted_total{job="agent",instance="i1"}', "3")], [({}, 3)]),
    (2, "A", [('otel_toolchain_tool_calls_total{job="agent",instance="i1",gen_ai_tool_name="Bash",'
               'otel_toolchain_tool_class="exec",otel_toolchain_tool_failed="false"}', "4")],
     [({"otel_toolchain_tool_class": "exec"}, 4)]),
    (5, "A", [(f'otel_toolchain_tool_duration_seconds_bucket{{job="agent",instance="i1",gen_ai_tool_name="Bash",'
               f'otel_toolchain_tool_class="exec",le="{le}"}}', "4") for le in ("0.1", "1", "+Inf")],
     [({"otel_toolchain_tool_class": "exec"}, 0.05)]),  # p50 of 4 calls under 0.1 s: interpolated to 0.05
    (5, "A", [(f'traces_span_metrics_duration_seconds_bucket{{job="agent",instance="c1",span_name="execute_tool Bash",'
               f'gen_ai_operation_name="execute_tool",otel_toolchain_tool_class="exec",le="{le}"}}', n)
              for le, n in (("0.01", "0"), ("0.02", "2"), ("+Inf", "2"))],
     [({"otel_toolchain_tool_class": "exec"}, 0.015)]),  # the same panel from span metrics (the default)
]


def _first_samples_test(d: Dashboard) -> dict[str, Any]:
    """A promtool unit-test file evaluating each FIRST_SAMPLES panel query one minute after the first sample."""
    tests = []
    for pid, ref, series, expected in FIRST_SAMPLES:
        [expr] = [t["expr"] for t in _panel(d, pid)["targets"] if t["refId"] == ref]
        expr = expr.replace("$__rate_interval", NEW_SERIES_INTERVAL).replace("$job", ".*")
        tests.append({"name": f"panel {pid} {ref}", "interval": "1m",
                      "input_series": [{"series": s, "values": f"{_NEW} {v} {v} {v}"} for s, v in series],
                      "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": [
                          {"labels": "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "value": value}
                          for labels, value in expected]}]})
    return {"rule_files": [], "evaluation_interval": "1m", "tests": tests}


def _run_first_samples(d: Dashboard, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "first-samples.test.yaml"
    path.write_text(yaml.safe_dump(_first_samples_test(d), sort_keys=False), encoding="utf-8")
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=60,
                          check=False)


def test_panels_count_the_first_samples_of_a_new_process(tmp_path: Path) -> None:
    result = _run_first_samples(load_dashboard(), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_plain_increase_misses_them(tmp_path: Path) -> None:
    """The same cases fail on the panels as they were (increase() alone): the blind spot is real."""
    d = copy.deepcopy(load_dashboard())
    for pid, ref, _, _ in FIRST_SAMPLES:
        for target in _panel(d, pid)["targets"]:
            if target["refId"] == ref:
                target["expr"] = re.sub(r"\((\w+\{[^}]*\}) unless \1 offset \$__rate_interval\) or ", "",
                                        target["expr"])
    result = _run_first_samples(d, tmp_path)
    assert result.returncode != 0
    failed = re.findall(r"^\s+expr: ", result.stdout + result.stderr, re.M)
    assert len(failed) == len(FIRST_SAMPLES), result.stdout  # every case, each one alone
