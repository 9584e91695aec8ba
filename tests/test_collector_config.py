"""Static checks of the Collector configs in collector-config/ and of the builder manifest.

These run without any binary, in a fraction of a second: wiring (every component a pipeline names is
defined and used), component types against the pinned component list, connectors between pipelines,
duration strings, loopback listeners, and the project's own rules (memory_limiter first, tool arguments
redacted and secrets masked before anything leaves, span metrics before sampling, turns kept by the tail
sampler), and that builder-manifest.yaml builds exactly the components the configs use, at one release.
The real Collector built from that manifest validates and runs the configs in tests/e2e.

Every check is also fed a broken copy of a real config, so each one is known to be able to fail.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "collector-config"
CONFIG_FILES = ("otelcol-agent.yaml", "otelcol-loadbalancer.yaml", "otelcol-sampler.yaml")
COMPONENTS_FILE = CONFIG_DIR / "otelcol-contrib-components.txt"
MANIFEST = CONFIG_DIR / "builder-manifest.yaml"
INSTALL_SCRIPT = ROOT / ".ci" / "install-backends"
# Component types used only on a command line: the compose stack's (and run-stack's) debug exporter.
COMMAND_LINE_TYPES = {"exporter": {"debug"}}

SECTIONS = {"receivers": "receiver", "processors": "processor", "exporters": "exporter",
            "connectors": "connector", "extensions": "extension"}
SIGNALS = ("traces", "metrics", "logs", "profiles")
PIPELINE_ID = re.compile(r"^(traces|metrics|logs|profiles)(/[^/\s]+)?$")

# Which (exporting pipeline's signal, receiving pipeline's signal) pairs a connector supports.
CONNECTOR_PAIRS: dict[str, set[tuple[str, str]]] = {
    "span_metrics": {("traces", "metrics")},
    "forward": {(s, s) for s in SIGNALS},
    "routing": {(s, s) for s in SIGNALS},
    "failover": {(s, s) for s in SIGNALS},
    "count": {(s, "metrics") for s in ("traces", "metrics", "logs")},
}

# Attributes that may carry secrets and must never leave the first Collector.
SENSITIVE_KEYS = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value")
# OTTL contexts whose attributes must be scrubbed, per signal of an ingress pipeline.
REDACT_CONTEXTS = {"traces": ("span", "spanevent"), "logs": ("log",)}

_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$")
_DURATION_KEYS = {"timeout", "interval", "decision_wait", "max_elapsed_time"}
_DURATION_SUFFIXES = ("_interval", "_timeout", "_wait", "_expiration", "_after_root_received")
_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


# -- loading --------------------------------------------------------------------------------------


def load_config(name: str) -> dict[str, Any]:
    with open(CONFIG_DIR / name, encoding="utf-8") as f:
        return dict(yaml.safe_load(f))


def load_components(path: Path = COMPONENTS_FILE) -> tuple[str, dict[str, dict[str, str | None]]]:
    """(pinned version, {kind: {type: deprecated alias or None}}) from the components data file."""
    version = ""
    components: dict[str, dict[str, str | None]] = {kind: {} for kind in SECTIONS.values()}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        pinned = re.search(r"pinned: otelcol-contrib v(\d+\.\d+\.\d+)", line)
        if pinned and not version:
            version = pinned.group(1)
        if not line or line.startswith("#"):
            continue
        kind, type_, _module, *rest = line.split()
        deprecated = next((r.split("=", 1)[1] for r in rest if r.startswith("deprecated=")), None)
        components[kind][type_] = deprecated
    return version, components


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def resolve_env(value: str) -> str | None:
    """A config string with ${env:NAME:-default} references replaced by their defaults.

    None if a reference has no default: its value is unknown, so a check must assume the worst.
    """
    unresolved = False

    def default(match: re.Match[str]) -> str:
        nonlocal unresolved
        if match.group(2) is None:
            unresolved = True
            return ""
        return match.group(2)

    resolved = _ENV_REF.sub(default, value)
    return None if unresolved else resolved


def _walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, (*path, str(i)))


def _pipelines(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return ((cfg.get("service") or {}).get("pipelines")) or {}


def _signal(pipeline_id: str) -> str:
    return pipeline_id.split("/", 1)[0]


def _section(cfg: dict[str, Any], section: str) -> dict[str, Any]:
    return cfg.get(section) or {}


def _is_connector(cfg: dict[str, Any], component_id: str) -> bool:
    return component_id in _section(cfg, "connectors")


# -- checks: each returns a list of problems ------------------------------------------------------


def check_pipelines_defined(cfg: dict[str, Any]) -> list[str]:
    """Pipeline ids are well formed and every component a pipeline or the service names is defined."""
    problems = []
    pipelines = _pipelines(cfg)
    if not pipelines:
        problems.append("service.pipelines: no pipelines")
    for pid, raw in pipelines.items():
        if not PIPELINE_ID.match(pid):
            problems.append(f"pipeline {pid}: id must be traces|metrics|logs|profiles[/name]")
        pipeline = raw or {}
        if not pipeline.get("receivers") or not pipeline.get("exporters"):
            problems.append(f"pipeline {pid}: needs at least one receiver and one exporter")
        for role, sections in (("receivers", ("receivers", "connectors")), ("processors", ("processors",)),
                               ("exporters", ("exporters", "connectors"))):
            for cid in pipeline.get(role) or []:
                if not any(cid in _section(cfg, s) for s in sections):
                    problems.append(f"pipeline {pid}: {role[:-1]} '{cid}' is not defined")
            ids = pipeline.get(role) or []
            for cid in {c for c in ids if ids.count(c) > 1}:
                problems.append(f"pipeline {pid}: {role[:-1]} '{cid}' listed twice")
    for ext in (cfg.get("service") or {}).get("extensions") or []:
        if ext not in _section(cfg, "extensions"):
            problems.append(f"service.extensions: '{ext}' is not defined")
    return problems


def check_unused(cfg: dict[str, Any]) -> list[str]:
    """Every defined component is used by a pipeline (or, for extensions, by the service)."""
    used: set[str] = set()
    for pipeline in _pipelines(cfg).values():
        for role in ("receivers", "processors", "exporters"):
            used.update((pipeline or {}).get(role) or [])
    used.update((cfg.get("service") or {}).get("extensions") or [])
    return [f"{section}.{cid}: defined but not used"
            for section in SECTIONS for cid in _section(cfg, section) if cid not in used]


def check_component_types(cfg: dict[str, Any], components: dict[str, dict[str, str | None]]) -> list[str]:
    """Every defined component's type is in the pinned distribution, under its current name."""
    problems = []
    for section, kind in SECTIONS.items():
        known = components[kind]
        aliases = {alias: current for current, alias in known.items() if alias}
        for cid in _section(cfg, section):
            type_ = component_type(cid)
            if type_ in aliases:
                problems.append(f"{section}.{cid}: '{type_}' is a deprecated alias of '{aliases[type_]}'")
            elif type_ not in known:
                problems.append(f"{section}.{cid}: no {kind} type '{type_}' in the pinned otelcol-contrib")
    return problems


def check_connectors(cfg: dict[str, Any]) -> list[str]:
    """Each connector is an exporter in one pipeline and a receiver in another, for a supported signal pair."""
    problems = []
    pipelines = _pipelines(cfg)
    for cid in _section(cfg, "connectors"):
        exported_by = [p for p, v in pipelines.items() if cid in ((v or {}).get("exporters") or [])]
        received_by = [p for p, v in pipelines.items() if cid in ((v or {}).get("receivers") or [])]
        if not exported_by or not received_by:
            problems.append(f"connectors.{cid}: used as exporter in {exported_by} and receiver in {received_by};"
                            " a connector needs both")
            continue
        pairs = CONNECTOR_PAIRS.get(component_type(cid))
        if pairs is None:
            problems.append(f"connectors.{cid}: no known signal pairs for type '{component_type(cid)}'")
            continue
        for src in exported_by:
            for dst in received_by:
                if src == dst:
                    problems.append(f"connectors.{cid}: pipeline {src} both exports to and receives from it")
                elif (_signal(src), _signal(dst)) not in pairs:
                    problems.append(f"connectors.{cid}: {src} -> {dst} is not a supported signal pair"
                                    f" {sorted(pairs)}")
    return problems


def _is_duration_key(key: str) -> bool:
    return key in _DURATION_KEYS or key.endswith(_DURATION_SUFFIXES)


def check_durations(cfg: dict[str, Any]) -> list[str]:
    """Duration settings are Go duration strings (a bare number would be read as nanoseconds)."""
    problems = []
    for path, value in _walk(cfg):
        if not path or (path[0] == "service" and "pipelines" in path):
            continue
        is_bucket = len(path) >= 4 and path[-4:-1] == ("histogram", "explicit", "buckets")
        if not (_is_duration_key(path[-1]) and not isinstance(value, (dict, list))) and not is_bucket:
            continue
        text = resolve_env(value) if isinstance(value, str) else None
        if not isinstance(value, str) or text is None or not (text == "0" or _GO_DURATION.match(text)):
            problems.append(f"{'.'.join(path)}: {value!r} is not a duration like 15s or 1h30m")
    return problems


def _listen_endpoints(cfg: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(where, kind, value) for every address the Collector listens on."""
    for section in ("receivers", "extensions"):
        for cid, conf in _section(cfg, section).items():
            for path, value in _walk(conf):
                if path and path[-1] == "endpoint":
                    yield f"{section}.{cid}.{'.'.join(path)}", "endpoint", value
    for cid, conf in _section(cfg, "exporters").items():
        if component_type(cid) == "prometheus":
            yield f"exporters.{cid}.endpoint", "endpoint", (conf or {}).get("endpoint")
    readers = (((cfg.get("service") or {}).get("telemetry") or {}).get("metrics") or {}).get("readers") or []
    for i, reader in enumerate(readers):
        prom = (((reader or {}).get("pull") or {}).get("exporter") or {}).get("prometheus")
        if prom is not None:
            yield f"service.telemetry.metrics.readers.{i}.pull.exporter.prometheus.host", "host", prom.get("host")


def check_loopback(cfg: dict[str, Any]) -> list[str]:
    """Every listener binds loopback by default (an explicit endpoint; env overrides need a loopback default)."""
    problems = []
    for where, kind, value in _listen_endpoints(cfg):
        text = resolve_env(value) if isinstance(value, str) else None
        if text is None:
            problems.append(f"{where}: {value!r} has no explicit loopback default")
            continue
        host = text.rsplit(":", 1)[0] if kind == "endpoint" else text
        if host not in _LOOPBACK_HOSTS:
            problems.append(f"{where}: binds {host!r}, not loopback")
    for cid, conf in _section(cfg, "receivers").items():
        protocols = (conf or {}).get("protocols") or {}
        for proto, pconf in protocols.items():
            if not (pconf or {}).get("endpoint"):
                problems.append(f"receivers.{cid}.protocols.{proto}: no endpoint (the default may not be loopback)")
    return problems


def check_memory_limiter_first(cfg: dict[str, Any]) -> list[str]:
    """A pipeline fed by a receiver starts with memory_limiter."""
    problems = []
    for pid, raw in _pipelines(cfg).items():
        pipeline = raw or {}
        if all(_is_connector(cfg, r) for r in pipeline.get("receivers") or []):
            continue
        processors = pipeline.get("processors") or []
        if not processors or component_type(processors[0]) != "memory_limiter":
            problems.append(f"pipeline {pid}: memory_limiter must be the first processor, got {processors}")
    return problems


_OTTL_DELETE = re.compile(
    r'(delete_key|delete_matching_keys)\(\s*(\w+)\.attributes\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)')


def _ottl_string(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal)


def _deleted_keys(transform_conf: dict[str, Any]) -> dict[str, set[str]]:
    """{OTTL context: sensitive keys that the transform processor's statements delete}."""
    covered: dict[str, set[str]] = {}
    for group_key in ("trace_statements", "log_statements", "metric_statements"):
        for group in transform_conf.get(group_key) or []:
            if not isinstance(group, dict):
                continue  # the flat string form is not used in this project
            for statement in group.get("statements") or []:
                for func, ctx, literal in _OTTL_DELETE.findall(statement):
                    arg = _ottl_string(literal)
                    for key in SENSITIVE_KEYS:
                        if (func == "delete_key" and arg == key) or (
                                func == "delete_matching_keys" and re.search(arg, key)):
                            covered.setdefault(ctx, set()).add(key)
    return covered


def check_redaction(cfg: dict[str, Any]) -> list[str]:
    """Traces and logs entering from a receiver lose the sensitive attributes before they can leave."""
    problems = []
    for pid, raw in _pipelines(cfg).items():
        pipeline = raw or {}
        signal = _signal(pid)
        if signal not in REDACT_CONTEXTS or all(_is_connector(cfg, r) for r in pipeline.get("receivers") or []):
            continue
        covered: dict[str, set[str]] = {}
        for proc in pipeline.get("processors") or []:
            if component_type(proc) == "transform":
                for ctx, keys in _deleted_keys(_section(cfg, "processors").get(proc) or {}).items():
                    covered.setdefault(ctx, set()).update(keys)
        for ctx in REDACT_CONTEXTS[signal]:
            missing = [k for k in SENSITIVE_KEYS if k not in covered.get(ctx, set())]
            if missing:
                problems.append(f"pipeline {pid}: {missing} not deleted in OTTL context '{ctx}'")
    return problems


def check_secret_masking(cfg: dict[str, Any]) -> list[str]:
    """Traces and logs entering from a receiver pass a redaction processor (credential keys, token formats)
    after the transform: deleting the tool I/O keys does not catch a secret in the cwd or an error text."""
    problems = []
    for pid, raw in _pipelines(cfg).items():
        pipeline = raw or {}
        if _signal(pid) not in REDACT_CONTEXTS or all(_is_connector(cfg, r) for r in pipeline.get("receivers") or []):
            continue
        types = [component_type(p) for p in pipeline.get("processors") or []]
        if "redaction" not in types:
            problems.append(f"pipeline {pid}: no redaction processor")
        elif "transform" in types and types.index("redaction") < types.index("transform"):
            problems.append(f"pipeline {pid}: redaction must follow the transform")
    return problems


def _upstream(cfg: dict[str, Any], pid: str, seen: set[str] | None = None) -> set[str]:
    """The pipeline and every pipeline that feeds it through connectors."""
    seen = seen if seen is not None else set()
    if pid in seen:
        return seen
    seen.add(pid)
    pipelines = _pipelines(cfg)
    for receiver in (pipelines.get(pid) or {}).get("receivers") or []:
        if _is_connector(cfg, receiver):
            for other, conf in pipelines.items():
                if receiver in ((conf or {}).get("exporters") or []):
                    _upstream(cfg, other, seen)
    return seen


def check_span_metrics_before_sampling(cfg: dict[str, Any]) -> list[str]:
    """No sampling happens upstream of a span_metrics connector (the RED metrics must see every span)."""
    problems = []
    pipelines = _pipelines(cfg)
    samplers = {"tail_sampling", "probabilistic_sampler"}
    for pid, pipeline in pipelines.items():
        exporters = (pipeline or {}).get("exporters") or []
        if not any(component_type(e) == "span_metrics" for e in exporters):
            continue
        for up in sorted(_upstream(cfg, pid)):
            sampled = [p for p in (pipelines[up] or {}).get("processors") or [] if component_type(p) in samplers]
            if sampled:
                problems.append(f"pipeline {pid}: span_metrics is fed after sampling ({up}: {sampled})")
    return problems


def check_all(cfg: dict[str, Any], components: dict[str, dict[str, str | None]]) -> list[str]:
    return [*check_pipelines_defined(cfg), *check_unused(cfg), *check_component_types(cfg, components),
            *check_connectors(cfg), *check_durations(cfg), *check_loopback(cfg),
            *check_memory_limiter_first(cfg), *check_redaction(cfg), *check_secret_masking(cfg),
            *check_span_metrics_before_sampling(cfg)]


# -- the real configs -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def components() -> dict[str, dict[str, str | None]]:
    return load_components()[1]


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_config_passes_every_check(name: str, components: dict[str, dict[str, str | None]]) -> None:
    assert check_all(load_config(name), components) == []


def test_components_file_is_pinned_and_well_formed() -> None:
    version, components = load_components()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "header must pin 'otelcol-contrib vX.Y.Z'"
    for kind, types in components.items():
        assert types, f"no {kind} listed"
        for type_, alias in types.items():
            assert re.fullmatch(r"[a-z][a-z0-9_]*", type_), type_
            assert alias is None or alias not in types, f"{alias} is both a type and an alias"


def test_compose_runs_the_pinned_collector_with_our_config() -> None:
    version, _ = load_components()
    compose = yaml.safe_load((CONFIG_DIR / "docker-compose.yaml").read_text(encoding="utf-8"))
    collector = compose["services"]["otelcol"]
    assert collector["image"] == f"otel/opentelemetry-collector-contrib:{version}"
    assert any("otelcol-agent.yaml" in str(v) for v in collector.get("volumes", []))


def used_modules(components: dict[str, dict[str, str | None]]) -> set[str]:
    """Go modules of every component type the configs (and the command-line overrides) use."""
    modules = {}
    for raw in COMPONENTS_FILE.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            kind, type_, module, *_ = raw.split()
            modules[(kind, type_)] = module
    used = {(kind, t) for kind, types in COMMAND_LINE_TYPES.items() for t in types}
    for name in CONFIG_FILES:
        cfg = load_config(name)
        used |= {(kind, component_type(cid)) for section, kind in SECTIONS.items() for cid in _section(cfg, section)}
    missing = sorted(u for u in used if u not in modules)
    assert not missing, f"not in {COMPONENTS_FILE.name}: {missing}"
    return {modules[u] for u in used}


def test_builder_manifest_builds_exactly_the_used_components(components: dict[str, dict[str, str | None]]) -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    version, _ = load_components()
    gomods = [entry["gomod"].split() for section in SECTIONS for entry in manifest.get(section) or []]
    assert {module for module, _ in gomods} == used_modules(components)
    assert {release for _, release in gomods} == {f"v{version}"}, "every component at the pinned release"
    assert manifest["dist"]["version"] == version
    # confmap providers are stable (v1.x) modules of the same core release: env, file and yaml (compose)
    providers = {entry["gomod"].split()[0].rsplit("/", 1)[1]: entry["gomod"].split()[1]
                 for entry in manifest["providers"]}
    assert set(providers) == {"envprovider", "fileprovider", "yamlprovider"} and len(set(providers.values())) == 1
    # .ci/install-backends installs the builder of the same release
    pinned = re.search(r"^OCB_VERSION=(\S+)", INSTALL_SCRIPT.read_text(encoding="utf-8"), re.M)
    assert pinned and pinned.group(1) == version


def _tail_sampling(name: str) -> dict[str, Any]:
    return dict(load_config(name)["processors"]["tail_sampling"])


@pytest.mark.parametrize("name", ["otelcol-agent.yaml", "otelcol-sampler.yaml"])
def test_tail_sampling_keeps_stopped_and_failed_turns(name: str) -> None:
    ts = _tail_sampling(name)
    policies = {p["name"]: p for p in ts["policies"]}
    assert list(policies) == ["keep-stopped-turns", "keep-shadow-stops", "keep-failed-turns", "sample-healthy"]
    stopped = policies["keep-stopped-turns"]["string_attribute"]
    assert stopped["key"] == "error.type" and stopped["enabled_regex_matching"] is True
    assert any(re.search(v, "tool_plugin.repeat_guard") for v in stopped["values"])
    assert not any(re.search(v, "timeout") for v in stopped["values"])
    shadow = policies["keep-shadow-stops"]["ottl_condition"]["spanevent"]
    assert shadow == ['spanevent.name == "otel_toolchain.turn.stop.shadow"']
    # A failed TURN (its invoke_agent span is ERROR), not any failed tool call: no status_code policy,
    # which would match a tool span's ERROR anywhere in the trace.
    failed = policies["keep-failed-turns"]["ottl_condition"]["span"]
    assert failed == ['span.status.code == STATUS_CODE_ERROR and span.attributes["gen_ai.operation.name"] == '
                      '"invoke_agent"']
    assert "status_code" not in {p["type"] for p in ts["policies"]}
    assert 0 < policies["sample-healthy"]["probabilistic"]["sampling_percentage"] < 100
    # turns outlast the 30s default; the wait is explicit and long
    wait = ts["decision_wait"]
    assert _GO_DURATION.match(wait) and wait.endswith(("m", "h")), wait


def test_agent_and_sampler_sample_alike() -> None:
    assert _tail_sampling("otelcol-agent.yaml") == _tail_sampling("otelcol-sampler.yaml")


def test_loadbalancer_routes_by_trace_id() -> None:
    cfg = load_config("otelcol-loadbalancer.yaml")
    lb = [c for cid, c in cfg["exporters"].items() if component_type(cid) == "load_balancing"]
    assert len(lb) == 1 and lb[0]["routing_key"] == "traceID"
    traces = cfg["service"]["pipelines"]["traces"]
    assert [component_type(e) for e in traces["exporters"]] == ["load_balancing"]
    assert "tail_sampling" not in {component_type(p) for p in cfg.get("processors", {})}


def test_agent_exports_to_every_backend() -> None:
    exporters = load_config("otelcol-agent.yaml")["exporters"]
    assert {"otlp_grpc/jaeger", "otlp_grpc/tempo", "prometheus", "prometheus_remote_write/mimir"} <= set(exporters)


def test_resolve_env() -> None:
    assert resolve_env("${env:H:-127.0.0.1}:4317") == "127.0.0.1:4317"
    assert resolve_env("${env:H}:4317") is None
    assert resolve_env("plain:1") == "plain:1"


# -- every check can fail -------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _drop_redaction(cfg: dict[str, Any]) -> None:
    cfg["service"]["pipelines"]["traces/in"]["processors"].remove("transform/redact_tool_io")
    del cfg["processors"]["transform/redact_tool_io"]


def _weaken_redaction(cfg: dict[str, Any]) -> None:
    stmts = cfg["processors"]["transform/redact_tool_io"]["trace_statements"][1]["statements"]
    stmts[0] = 'delete_key(spanevent.attributes, "gen_ai.tool.call.arguments")'


def _sample_before_span_metrics(cfg: dict[str, Any]) -> None:
    cfg["service"]["pipelines"]["traces/in"]["processors"].append("tail_sampling")
    cfg["service"]["pipelines"]["traces/sampled"]["processors"] = []


BROKEN: list[tuple[str, str, Mutation, Callable[..., list[str]], str]] = [
    ("undefined exporter", "otelcol-agent.yaml",
     lambda c: c["service"]["pipelines"]["traces/sampled"]["exporters"].append("debug"),
     check_pipelines_defined, "exporter 'debug' is not defined"),
    ("undefined extension", "otelcol-agent.yaml",
     lambda c: c["service"]["extensions"].append("pprof"),
     check_pipelines_defined, "'pprof' is not defined"),
    ("bad pipeline id", "otelcol-agent.yaml",
     lambda c: c["service"]["pipelines"].update({"spans": c["service"]["pipelines"].pop("traces/in")}),
     check_pipelines_defined, "id must be"),
    ("unused component", "otelcol-agent.yaml",
     lambda c: c["exporters"].update({"otlp_grpc/spare": {"endpoint": "x:4317"}}),
     check_unused, "otlp_grpc/spare: defined but not used"),
    ("deprecated alias", "otelcol-agent.yaml",
     lambda c: c["exporters"].update({"otlp/tempo": c["exporters"].pop("otlp_grpc/tempo")}),
     check_component_types, "'otlp' is a deprecated alias of 'otlp_grpc'"),
    ("unknown type", "otelcol-agent.yaml",
     lambda c: c["processors"].update({"batchy": {}}),
     check_component_types, "no processor type 'batchy'"),
    ("connector never received", "otelcol-agent.yaml",
     lambda c: c["service"]["pipelines"]["metrics"]["receivers"].remove("span_metrics"),
     check_connectors, "connectors.span_metrics: used as exporter in ['traces/in'] and receiver in []"),
    ("connector wrong signals", "otelcol-agent.yaml",
     lambda c: c["service"]["pipelines"]["logs"]["receivers"].append("forward/sampling"),
     check_connectors, "traces/in -> logs is not a supported signal pair"),
    ("prose duration", "otelcol-agent.yaml",
     lambda c: c["processors"]["tail_sampling"].update(decision_wait="10 minutes"),
     check_durations, "processors.tail_sampling.decision_wait: '10 minutes'"),
    ("bare-number duration", "otelcol-sampler.yaml",
     lambda c: c["connectors"]["span_metrics"].update(metrics_flush_interval=15),
     check_durations, "connectors.span_metrics.metrics_flush_interval: 15"),
    ("bad bucket", "otelcol-agent.yaml",
     lambda c: c["connectors"]["span_metrics"]["histogram"]["explicit"]["buckets"].append("2 min"),
     check_durations, "histogram.explicit.buckets.14: '2 min'"),
    ("receiver on all interfaces", "otelcol-agent.yaml",
     lambda c: c["receivers"]["otlp"]["protocols"]["grpc"].update(endpoint="0.0.0.0:4317"),
     check_loopback, "binds '0.0.0.0', not loopback"),
    ("env endpoint without default", "otelcol-loadbalancer.yaml",
     lambda c: c["receivers"]["otlp"]["protocols"]["http"].update(endpoint="${env:LISTEN}:4318"),
     check_loopback, "has no explicit loopback default"),
    ("receiver with implicit endpoint", "otelcol-sampler.yaml",
     lambda c: c["receivers"]["otlp"]["protocols"].update(http={}),
     check_loopback, "protocols.http: no endpoint"),
    ("prometheus exporter on all interfaces", "otelcol-agent.yaml",
     lambda c: c["exporters"]["prometheus"].update(endpoint=":8889"),
     check_loopback, "exporters.prometheus.endpoint: binds ''"),
    ("telemetry on all interfaces", "otelcol-sampler.yaml",
     lambda c: c["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"].update(
         host="0.0.0.0"),
     check_loopback, "pull.exporter.prometheus.host: binds '0.0.0.0'"),
    ("memory_limiter not first", "otelcol-loadbalancer.yaml",
     lambda c: c["service"]["pipelines"]["logs"]["processors"].reverse(),
     check_memory_limiter_first, "pipeline logs: memory_limiter must be the first processor"),
    ("no redaction", "otelcol-agent.yaml", _drop_redaction,
     check_redaction, "pipeline traces/in: ['gen_ai.tool.call.arguments'"),
    ("partial redaction", "otelcol-agent.yaml", _weaken_redaction,
     check_redaction, "['gen_ai.tool.call.result', 'input.value', 'output.value'] not deleted in OTTL context"
                      " 'spanevent'"),
    ("sampler without secret masking", "otelcol-sampler.yaml",
     lambda c: c["service"]["pipelines"]["traces/in"]["processors"].remove("redaction/secrets"),
     check_secret_masking, "pipeline traces/in: no redaction processor"),
    ("span metrics after sampling", "otelcol-agent.yaml", _sample_before_span_metrics,
     check_span_metrics_before_sampling, "span_metrics is fed after sampling (traces/in: ['tail_sampling'])"),
]


@pytest.mark.parametrize(("what", "name", "mutate", "check", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_check_catches_broken_config(what: str, name: str, mutate: Mutation, check: Callable[..., list[str]],
                                     expected: str, components: dict[str, dict[str, str | None]]) -> None:
    cfg = copy.deepcopy(load_config(name))
    args = (components,) if check is check_component_types else ()
    assert check(cfg, *args) == [], "the unbroken config must pass this check"
    mutate(cfg)
    problems = check(cfg, *args)
    assert any(expected in p for p in problems), problems


def test_config_that_is_not_yaml_fails_to_load(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("receivers:\n  otlp:\n    protocols: [grpc\n", encoding="utf-8")
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(bad.read_text(encoding="utf-8"))
