"""``validate`` of the real binaries on every config in collector-config/, and the build's component list.

``otelcol validate`` knows every component, field and OTTL *statement* of the pinned release (the tail
sampler's OTTL *conditions* are only parsed at start-up, which the stack tests do for every config).
The compose stack's command-line overrides are validated too, with the file path mapped to this checkout.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from .backends_stack import COLLECTOR_BIN, CONFIG_DIR, JAEGER_BIN, JAEGER_CONFIG, require_backends

pytestmark = pytest.mark.integration

COLLECTOR_CONFIGS = sorted(p.name for p in CONFIG_DIR.glob("otelcol-*.yaml"))
COMPOSE = CONFIG_DIR / "docker-compose.yaml"


@pytest.fixture(autouse=True)
def _binaries() -> None:
    require_backends()


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)


def test_there_are_four_collector_configs() -> None:
    assert COLLECTOR_CONFIGS == ["otelcol-agent.yaml", "otelcol-loadbalancer.yaml", "otelcol-sampler.yaml",
                                 "otelcol-serve-balancer.yaml"]


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_otelcol_validate(name: str) -> None:
    done = run(COLLECTOR_BIN, "validate", f"--config=file:{CONFIG_DIR / name}")
    assert done.returncode == 0, done.stdout + done.stderr


def test_otelcol_validate_rejects_a_broken_config(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    text = (CONFIG_DIR / "otelcol-agent.yaml").read_text()
    broken.write_text(text.replace("decision_wait: 30m", "decision_wiat: 30m"))
    done = run(COLLECTOR_BIN, "validate", f"--config=file:{broken}")
    assert done.returncode != 0 and "decision_wiat" in done.stderr, done.stderr


def test_the_compose_collector_command_validates() -> None:
    """docker-compose.yaml runs otelcol-agent.yaml with overrides; the same argv must validate here."""
    service = yaml.safe_load(COMPOSE.read_text())["services"]["otelcol"]
    argv = [arg.replace("/etc/otelcol-contrib/otelcol-agent.yaml", str(CONFIG_DIR / "otelcol-agent.yaml"))
            for arg in service["command"]]
    done = run(COLLECTOR_BIN, "validate", *argv)
    assert done.returncode == 0, f"{argv}\n{done.stderr}"
    assert service["image"].endswith(":" + _built_version()), service["image"]


def test_jaeger_validate() -> None:
    done = run(JAEGER_BIN, "validate", f"--config={JAEGER_CONFIG}")
    assert done.returncode == 0, done.stdout + done.stderr


def _built_version() -> str:
    return run(COLLECTOR_BIN, "--version").stdout.split()[-1]


def _configured_types() -> dict[str, set[str]]:
    """{kind: component types} over every config, plus compose's debug exporter."""
    kinds = {"receivers": set(), "processors": set(), "exporters": {"debug"}, "connectors": set(),
             "extensions": set()}
    for name in COLLECTOR_CONFIGS:
        config = yaml.safe_load((CONFIG_DIR / name).read_text())
        for kind, types in kinds.items():
            types.update(cid.split("/", 1)[0] for cid in config.get(kind) or {})
    return kinds


def test_the_build_has_exactly_the_components_the_configs_use() -> None:
    listing = yaml.safe_load(run(COLLECTOR_BIN, "components").stdout)
    built = {kind: {c["name"] for c in listing.get(kind) or []} for kind in _configured_types()}
    assert built == _configured_types()
    modules = {c["module"] for kind in built for c in listing.get(kind) or []}
    releases = {re.sub(r"^v(1\.\d+|0\.\d+)\.\d+$", r"\1", m.split()[-1]) for m in modules}
    assert releases == {"0.161"}, sorted(modules)  # one release for every component
    assert listing["buildinfo"]["version"] == _built_version() == "0.161.0"
