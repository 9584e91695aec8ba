"""End to end: a recorded wedged Claude Code run pages through real Prometheus and Alertmanager.

The recording ``examples/streams/claude-code-wedge.jsonl`` (a real Claude Code run against the fake
model, killed after 30 identical calls) is replayed in-process through the default chain, whose
metrics are exposed on a Prometheus pull endpoint (``ExportSettings(prometheus_port=...)``). Debian's
Prometheus scrapes it every second and evaluates the shipped ``otel_toolchain-rules.yaml``; Debian's
Alertmanager routes with the shipped ``alertmanager.yml`` (webhook URLs and group waits changed, see
:func:`e2e_alert_stack.write_alertmanager_config`) to a webhook sink in this process.

The replay runs *before* Prometheus starts, so the first sample Prometheus ever scrapes of the stop
counter is already 1: ``increase()`` over it stays 0, and only the rule's "new series" term
(``X unless X offset 5m``) can fire. That is the case of a short-lived agent process whose first stop
comes before its first scrape (collector-config/README.md, "The first stop of a new process").

Everything listens on 127.0.0.1, on free ports; every process and listener is stopped in ``finally``.
Prometheus and Alertmanager come from ``apt-get install prometheus prometheus-alertmanager``; the test
fails (never skips) without them, like tests/test_alert_rules.py. Typical wall time: about 8 s, most of
it Prometheus' 5 s target-discovery throttle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_toolchain.cli.replay import replay_path
from otel_toolchain.export.pipeline import ExportSettings, Pipeline, build_pipeline
from otel_toolchain.manifest import Manifest
from otel_toolchain.recorder import AgentRecorder

from .e2e_alert_stack import (
    LOOPBACK,
    Deadline,
    Server,
    WebhookSink,
    alertmanager,
    api,
    http_get,
    prometheus,
    wait_for,
    write_alertmanager_config,
    write_prometheus_config,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WEDGE = ROOT / "examples" / "streams" / "claude-code-wedge.jsonl"
RULES = ROOT / "collector-config" / "prometheus" / "otel_toolchain-rules.yaml"
ALERTMANAGER_CONFIG = ROOT / "collector-config" / "alertmanager" / "alertmanager.yml"

ALERT = "OtelToolchainTurnStopped"
JOB = "otel-toolchain-e2e"  # the scrape job; opentelemetry-exporter-prometheus series carry it as `job`
STOP_SERIES = 'otel_toolchain_turn_stops_total{otel_toolchain_plugin="repeat_guard"}'
BUDGET_S = 50.0  # the whole test, start-up to webhook; a run takes about 8 s


def _rule(name: str) -> dict[str, Any]:
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == name:
                return dict(rule)
    raise AssertionError(f"{RULES.name} has no alert {name}")


def _firing(prom: Server) -> list[dict[str, Any]]:
    alerts = api(prom.base_url, "/api/v1/alerts")["alerts"]
    return [a for a in alerts if a["labels"].get("alertname") == ALERT and a["state"] == "firing"]


def _stop_deliveries(sink: WebhookSink) -> list[Any]:
    return [d for d in sink.deliveries()
            if any(a["labels"].get("alertname") == ALERT for a in d.payload.get("alerts", []))]


def test_wedged_replay_pages_through_prometheus_and_alertmanager(tmp_path: Path) -> None:
    # The shipped rule has no `for:`, so it fires on the first evaluation that sees the stop, and its 5m
    # windows do not slow a test down (a fresh TSDB has nothing 5m back). If a `for:` is ever added,
    # write a copy of the rule file here with it shortened instead of waiting it out.
    assert "for" not in _rule(ALERT), f"{ALERT} got a `for:`; shorten it in a test copy of {RULES.name}"

    deadline = Deadline(BUDGET_S)
    sink = WebhookSink().start()
    servers: list[Server] = []
    pipeline: Pipeline | None = None

    def diagnostics() -> str:
        return "\n".join(server.log_tail() for server in servers)

    try:
        # 1. Replay the wedged run through the default chain, metrics on a pull endpoint.
        pipeline = build_pipeline(ExportSettings(prometheus_port=0, output_dir=str(tmp_path / "otlp")), environ={})
        assert pipeline.prometheus_address is not None
        metrics_port = pipeline.prometheus_address[1]
        chain = Manifest.default().toolchain()
        chain.install(pipeline.tracer_provider, pipeline.meter_provider, pipeline.logger_provider)
        recorder = AgentRecorder(pipeline.tracer_provider, toolchain=chain)
        outcomes = replay_path(str(WEDGE), recorder)
        assert len(outcomes) == 1 and outcomes[0].calls == 30, outcomes
        stop = outcomes[0].stopped
        assert stop is not None and (stop.plugin, stop.at_call) == ("repeat_guard", 25), stop

        status, body = http_get(f"http://{LOOPBACK}:{metrics_port}/metrics")
        exposed = [line for line in body.decode().splitlines()
                   if line.startswith("otel_toolchain_turn_stops_total{") and 'stop_mode="enforce"' in line]
        assert status == 200 and any(line.endswith(" 1.0") for line in exposed), exposed

        # 2. Alertmanager (shipped routes, webhook to the sink), then Prometheus (shipped rules).
        am_config = write_alertmanager_config(tmp_path / "alertmanager.yml", shipped=ALERTMANAGER_CONFIG,
                                              webhook_base=sink.url)
        am = alertmanager(tmp_path, am_config)
        servers.append(am.start())
        wait_for("Alertmanager /-/ready", am.ready, deadline, limit=15, explain=diagnostics)
        prom_config = write_prometheus_config(
            tmp_path / "prometheus.yml", rule_file=RULES, job=JOB,
            scrape_target=f"{LOOPBACK}:{metrics_port}", alertmanager_target=am.base_url.removeprefix("http://"))
        prom = prometheus(tmp_path, prom_config)
        servers.append(prom.start())
        wait_for("Prometheus /-/ready", prom.ready, deadline, limit=15, explain=diagnostics)
        rules = api(prom.base_url, "/api/v1/rules")["groups"]
        assert ALERT in {r.get("name") for g in rules for r in g["rules"]}, rules

        # 3. The alert fires in Prometheus, on the new-series term alone.
        firing = wait_for(f"{ALERT} firing in Prometheus", lambda: _firing(prom), deadline, explain=diagnostics)
        assert len(firing) == 1, firing
        labels = firing[0]["labels"]
        assert labels == {"alertname": ALERT, "job": JOB, "otel_toolchain_plugin": "repeat_guard",
                          "otel_toolchain_stop_reason": "repeated_cycle", "severity": "warning"}, labels
        assert float(firing[0]["value"]) == 1.0, firing
        assert "repeat_guard stopped 1 wedged turn(s) on otel-toolchain-e2e" in firing[0]["annotations"]["summary"]

        scraped = api(prom.base_url, "/api/v1/query", query=STOP_SERIES)["result"]
        assert [float(s["value"][1]) for s in scraped if s["metric"]["otel_toolchain_stop_mode"] == "enforce"] \
            == [1.0], scraped
        # Two or more scraped samples, all 1: increase() is 0, so only "X unless X offset 5m" fired.
        increase = wait_for("two samples of the stop counter", lambda: api(
            prom.base_url, "/api/v1/query", query=f"increase({STOP_SERIES}[5m])")["result"], deadline)
        assert {float(s["value"][1]) for s in increase} == {0.0}, increase

        # 4. Alertmanager delivers it to the webhook receiver of warning alerts.
        deliveries = wait_for(f"{ALERT} at the webhook", lambda: _stop_deliveries(sink), deadline,
                              explain=diagnostics)
        delivery = deliveries[0]
        payload = delivery.payload
        assert delivery.path == "/alerts", delivery  # otel-toolchain-webhook, not the info receiver
        assert payload["status"] == "firing" and payload["receiver"] == "otel-toolchain-webhook", payload
        assert payload["groupLabels"] == {"alertname": ALERT, "job": JOB}, payload
        [alert] = payload["alerts"]
        assert alert["status"] == "firing", alert
        assert alert["labels"] == labels, alert
        assert alert["annotations"]["summary"] == firing[0]["annotations"]["summary"], alert
        assert alert["annotations"]["runbook"].startswith("Open the stopped turn"), alert
        assert deadline.elapsed() < BUDGET_S
    finally:
        for server in reversed(servers):  # Prometheus first, so it stops sending to Alertmanager
            server.stop()
        sink.stop()
        if pipeline is not None:
            pipeline.shutdown()  # also closes the pull endpoint
