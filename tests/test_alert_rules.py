"""The Prometheus alert rules: promtool's own checks and unit tests, plus what promtool cannot see.

promtool and amtool come from Debian's ``prometheus`` and ``prometheus-alertmanager`` packages (CI
installs them). A missing promtool or amtool FAILS these tests: a skipped rules test would hide a broken
alert. Also checked here: every rule carries summary, description and runbook annotations and a severity;
paging rules ignore shadow-mode stops; every metric an expression reads is a series name from the table
in collector-config/README.md; and that table follows the OTel -> Prometheus naming rules measured in
shared/reference/backends.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROM_DIR = ROOT / "collector-config" / "prometheus"
RULES = PROM_DIR / "otel_toolchain-rules.yaml"
RULE_TESTS = PROM_DIR / "otel_toolchain-rules.test.yaml"
README = ROOT / "collector-config" / "README.md"
SEMCONV = ROOT / "otel_toolchain" / "semconv.py"
SEVERITIES = {"critical", "warning", "info"}
PAGING = {"critical", "warning"}
STOPS = "otel_toolchain_turn_stops_total"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool not found: apt-get install -y --no-install-recommends prometheus")
    return path


def run_promtool(*args: str, cwd: Path = PROM_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def load_rules(path: Path = RULES) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    return [rule for group in doc["groups"] for rule in group["rules"]]


# -- series names: the README table ---------------------------------------------------------------


def series_table(readme: Path = README) -> list[dict[str, Any]]:
    """Rows of the table between the series-table markers: OTel name, type, unit, Prometheus series."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.index("<!-- series-table:start -->"), text.index("<!-- series-table:end -->")
    rows = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[0].startswith("`"):
            continue
        rows.append({
            "otel": cells[0].strip("`"),
            "type": cells[1],
            "unit": cells[2].strip("`"),
            "series": re.findall(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`", cells[-1]),
        })
    return rows


def known_series() -> set[str]:
    return {name for row in series_table() for name in row["series"]}


_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "%": "percent"}


def prometheus_names(otel_name: str, kind: str, unit: str) -> list[str]:
    """The series an OTel instrument becomes (UnderscoreEscapingWithSuffixes, as measured in backends.md)."""
    name = re.sub(r"[^a-zA-Z0-9_:]+", "_", otel_name).strip("_")
    unit_word = "" if "{" in unit or unit in ("", "1") else _UNIT_WORDS.get(unit, unit)
    if unit_word and not name.endswith("_" + unit_word):
        name += "_" + unit_word
    if kind == "counter":
        return [name if name.endswith("_total") else name + "_total"]
    if kind == "histogram":
        return [f"{name}_bucket", f"{name}_sum", f"{name}_count"]
    if kind == "gauge" and unit == "1":
        return [name + "_ratio"]  # the Collector's translator; opentelemetry-exporter-prometheus adds nothing
    return [name]


_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                "unless", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads, found crudely: identifiers that are not functions,
    keywords, label names or durations."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = _LABEL_LISTS.sub(" ", e)
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:.$])[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        if word.lower() in _NOT_METRICS or e[m.end():].lstrip().startswith("("):
            continue
        names.add(word)
    return names


def test_metric_names_parser() -> None:
    expr = ('sum by (job, le) (rate(a_bucket{x="y(z)"}[5m])) / on (job) group_left max(b_total offset 5m)'
            ' unless c > 0.6 and bool d')
    assert metric_names(expr) == {"a_bucket", "b_total", "c", "d"}


def test_series_table_covers_semconv_and_follows_the_naming_rules() -> None:
    rows = series_table()
    by_otel = {row["otel"]: row for row in rows}
    declared = re.findall(r'^METRIC_\w+: Final = "([^"]+)"', SEMCONV.read_text(encoding="utf-8"), re.M)
    assert declared, "no METRIC_* constants found in otel_toolchain/semconv.py"
    missing = [name for name in declared if name not in by_otel]
    assert not missing, f"metrics in semconv.py missing from the README series table: {missing}"
    for row in rows:
        if row["otel"].startswith("otel_toolchain."):
            assert row["series"] == prometheus_names(row["otel"], row["type"], row["unit"]), row


def test_naming_rules_as_measured() -> None:
    # The examples measured in shared/reference/backends.md, section 1.
    assert prometheus_names("agent.turn.stops", "counter", "{stop}") == ["agent_turn_stops_total"]
    assert prometheus_names("agent.tool.duration", "histogram", "s")[0] == "agent_tool_duration_seconds_bucket"
    assert prometheus_names("agent.bytes.read", "counter", "By") == ["agent_bytes_read_bytes_total"]
    assert prometheus_names("agent.turn.stops.total", "counter", "{stop}") == ["agent_turn_stops_total"]
    assert prometheus_names("agent.tool.inflight", "updowncounter", "1") == ["agent_tool_inflight"]


# -- promtool -------------------------------------------------------------------------------------


def test_promtool_check_rules() -> None:
    result = run_promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(load_rules())} rules found" in result.stdout


def test_promtool_unit_tests() -> None:
    result = run_promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_check_rules_rejects_a_broken_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: Bad\n"
                   "        expr: sum(rate(otel_toolchain_turn_stops_total[5m])\n", encoding="utf-8")
    result = run_promtool("check", "rules", str(bad))
    assert result.returncode != 0
    assert "parse error" in result.stdout + result.stderr


def test_promtool_check_config_loads_the_rules() -> None:
    """prometheus.yml of the compose stack is valid and loads the rules file beside it."""
    result = run_promtool("check", "config", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


def test_amtool_check_config() -> None:
    amtool = shutil.which("amtool")
    if amtool is None:
        pytest.fail("amtool not found: apt-get install -y --no-install-recommends prometheus-alertmanager")
    config = ROOT / "collector-config" / "alertmanager" / "alertmanager.yml"
    result = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    routed = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert any("webhook_configs" in receiver for receiver in routed["receivers"])


def _write_variant(tmp_path: Path, rules: dict[str, Any]) -> Path:
    """A copy of the rules and the unit tests in tmp_path, with the rules replaced."""
    (tmp_path / RULES.name).write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    return tmp_path


def _rules_doc() -> dict[str, Any]:
    with open(RULES, encoding="utf-8") as f:
        return dict(yaml.safe_load(f))


def test_unit_tests_fail_on_the_naive_stop_rule(tmp_path: Path) -> None:
    """Without the new-series term the first stop of a new process is missed, and the tests say so."""
    doc = _rules_doc()
    for rule in doc["groups"][0]["rules"]:
        if rule.get("alert") == "OtelToolchainTurnStopped":
            rule["expr"] = ('sum by (job, otel_toolchain_plugin, otel_toolchain_stop_reason) ('
                            f'increase({STOPS}{{otel_toolchain_stop_mode!="shadow"}}[5m])) > 0')
    result = run_promtool("test", "rules", RULE_TESTS.name, cwd=_write_variant(tmp_path, doc))
    assert result.returncode != 0
    assert "alertname: OtelToolchainTurnStopped, time: 5m" in result.stdout + result.stderr


def test_unit_tests_fail_when_shadow_stops_page(tmp_path: Path) -> None:
    doc = _rules_doc()
    for rule in doc["groups"][0]["rules"]:
        rule["expr"] = rule["expr"].replace('{otel_toolchain_stop_mode!="shadow"}', "")
    result = run_promtool("test", "rules", RULE_TESTS.name, cwd=_write_variant(tmp_path, doc))
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "alertname: OtelToolchainTurnStopRateHigh" in out and "alertname: OtelToolchainTurnStopped" in out


def test_every_rule_has_a_firing_unit_test(tmp_path: Path) -> None:
    """Silence every rule at once: promtool must then report a failure for each alert name."""
    doc = _rules_doc()
    for rule in doc["groups"][0]["rules"]:
        rule["expr"] = f"({rule['expr'].strip()}) and on() (vector(0) > 1)"
    result = run_promtool("test", "rules", RULE_TESTS.name, cwd=_write_variant(tmp_path, doc))
    assert result.returncode != 0
    out = result.stdout + result.stderr
    silent = [r["alert"] for r in load_rules() if f"alertname: {r['alert']}," not in out]
    assert not silent, f"no unit test expects these alerts to fire: {silent}"


def test_every_rule_has_a_quiet_and_a_firing_case() -> None:
    with open(RULE_TESTS, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    assert doc["rule_files"] == [RULES.name]
    cases: dict[str, set[bool]] = {}
    for test in doc["tests"]:
        for case in test.get("alert_rule_test") or []:
            cases.setdefault(case["alertname"], set()).add(bool(case.get("exp_alerts")))
    for rule in load_rules():
        assert cases.get(rule["alert"]) == {True, False}, f"{rule['alert']}: needs firing and quiet cases"


# -- what promtool does not check ------------------------------------------------------------------


@pytest.mark.parametrize("rule", load_rules(), ids=lambda r: r.get("alert", r.get("record")))
def test_rule_annotations_and_severity(rule: dict[str, Any]) -> None:
    assert "alert" in rule, "this file holds alerts only"
    annotations = rule.get("annotations") or {}
    for key in ("summary", "description", "runbook"):
        assert len(str(annotations.get(key, "")).strip()) >= 20, f"{rule['alert']}: {key} missing or too short"
    assert (rule.get("labels") or {}).get("severity") in SEVERITIES


@pytest.mark.parametrize("rule", load_rules(), ids=lambda r: r["alert"])
def test_rule_reads_only_known_series(rule: dict[str, Any]) -> None:
    names = metric_names(rule["expr"])
    assert names, f"{rule['alert']}: no metric found in the expression"
    unknown = names - known_series()
    assert not unknown, f"{rule['alert']}: not in the README series table: {sorted(unknown)}"


def test_known_series_check_catches_a_typo() -> None:
    assert metric_names("increase(otel_toolchain_turn_stop_total[5m]) > 0") - known_series() == {
        "otel_toolchain_turn_stop_total"}


def test_paging_rules_ignore_shadow_stops() -> None:
    selector = re.compile(rf"{STOPS}(\{{[^}}]*\}})?")
    for rule in load_rules():
        for match in selector.finditer(rule["expr"]):
            matchers = match.group(1) or ""
            if rule["labels"]["severity"] in PAGING:
                assert 'otel_toolchain_stop_mode!="shadow"' in matchers, (rule["alert"], match.group(0))
            else:
                assert 'otel_toolchain_stop_mode="shadow"' in matchers, (rule["alert"], match.group(0))


def test_counter_alerts_catch_new_series() -> None:
    """Every alert on a counter's increase also has the 'unless ... offset' term for new series."""
    for rule in load_rules():
        for counter in re.findall(r"increase\((\w+_total)", rule["expr"]):
            assert re.search(rf"unless\s+{counter}\b[^\n]*offset", rule["expr"]), rule["alert"]


LISTENER_MATCH = 'otel_toolchain_hook=~"listener\\\\..*"'
NOT_LISTENER = 'otel_toolchain_hook!~"listener\\\\..*"'


def test_listener_errors_do_not_blame_the_plugin() -> None:
    """A raising on_stop/on_nudge/on_report listener is counted with hook listener.<name> and the plugin
    whose signal it received: its own alert, whose runbook points at the listener, not at the plugin."""
    rules = {rule["alert"]: rule for rule in load_rules()}
    plugin, listener = rules["OtelToolchainPluginErrors"], rules["OtelToolchainListenerErrors"]
    errors = re.findall(r"otel_toolchain_plugin_errors_total\{([^}]*)\}", plugin["expr"] + listener["expr"])
    assert errors == [NOT_LISTENER] * 3 + [LISTENER_MATCH] * 3, errors
    assert "Fix the listener, not the plugin" in listener["annotations"]["runbook"]
    assert "listener" not in plugin["annotations"]["description"]


def test_unit_tests_fail_when_listener_errors_blame_the_plugin(tmp_path: Path) -> None:
    doc = _rules_doc()
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "OtelToolchainPluginErrors":
                rule["expr"] = rule["expr"].replace("{" + NOT_LISTENER + "}", "")
    result = run_promtool("test", "rules", RULE_TESTS.name, cwd=_write_variant(tmp_path, doc))
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "alertname: OtelToolchainPluginErrors, time: 6m" in out and 'otel_toolchain_hook="listener.on_stop"' in out


# -- the series table against what the CLI really exports -----------------------------------------


def _table_labels() -> dict[str, set[str]]:
    """{OTel instrument: label names the table gives it, without le}."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index("<!-- series-table:start -->"):text.index("<!-- series-table:end -->")]
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0].startswith("`otel_toolchain."):
            out[cells[0].strip("`")] = set(re.findall(r"`([a-z_][a-z0-9_]*)`", cells[3])) - {"le"}
    return out


def test_series_table_labels_match_what_the_cli_exports(tmp_path: Path) -> None:
    """Replay the wedged recording with the CLI (OTLP JSON lines, no server) and compare each exported
    instrument's attribute names, turned into label names, with the table's Labels column."""
    wedge = ROOT / "examples" / "streams" / "claude-code-wedge.jsonl"
    done = subprocess.run([sys.executable, "-m", "otel_toolchain", "replay", str(wedge)], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "OTEL_TOOLCHAIN_OUTPUT_DIR": str(tmp_path)},
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 75, done.stderr  # the wedge is stopped: replay's code for a stopped turn
    exported: dict[str, set[str]] = {}
    for line in (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        for rm in json.loads(line)["resourceMetrics"]:
            for sm in rm["scopeMetrics"]:
                for metric in sm["metrics"]:
                    data = next(metric[k] for k in ("sum", "gauge", "histogram") if k in metric)
                    labels = exported.setdefault(metric["name"], set())
                    for point in data["dataPoints"]:
                        labels.update(re.sub(r"[^a-zA-Z0-9_]", "_", a["key"]) for a in point.get("attributes", []))
    table = _table_labels()
    assert len(exported) >= 10, sorted(exported)
    assert {name: table.get(name) for name in exported} == exported
