"""Zero-code attach: under opentelemetry-instrument the chain joins the provider the distro set up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

INSTRUMENT = shutil.which("opentelemetry-instrument")
if INSTRUMENT is None or not any(ep.name == "distro" for ep in entry_points(group="opentelemetry_distro")):
    pytest.skip("opentelemetry-instrument and opentelemetry-distro are needed", allow_module_level=True)

ENTRY_POINT = "otel_toolchain = otel_toolchain.integrations._autoattach:attach"

PLAIN_APP = """
    import json
    from opentelemetry import trace
    from otel_toolchain.integrations._autoattach import attached
    chain = attached()
    print(json.dumps({"provider": type(trace.get_tracer_provider()).__name__,
                      "plugins": [p.name for p in chain.plugins] if chain else None}))
"""

PYDANTIC_AI_APP = """
    import json
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from otel_toolchain import TurnStopped
    from otel_toolchain.integrations.pydantic_ai import ToolchainCapability

    exported = InMemorySpanExporter()
    trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(exported))
    Agent.instrument_all()  # pydantic-ai's spans on the global provider the distro set up
    ran = []
    wedged = FunctionModel(lambda m, i: ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})]))
    agent = Agent(wedged, name="weather_agent", capabilities=[ToolchainCapability()])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        ran.append(city)
        return "sunny"

    try:
        agent.run_sync("weather?")
        stop = None
    except TurnStopped as stopped:
        stop = stopped.signal.to_dict()
    turn = [s for s in exported.get_finished_spans() if s.name == "invoke_agent weather_agent"]
    print(json.dumps({"ran": len(ran), "at_call": stop and stop["at_call"],
                      "turn_status": turn[0].status.status_code.name, "turn_events": [e.name for e in turn[0].events]}))
"""


def run_instrumented(tmp_path: Path, app: str, **env: str) -> tuple[dict[str, Any] | None, str]:
    """Run ``app`` under opentelemetry-instrument; returns its last JSON line and its stderr."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(app))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI"))}
    environ.update(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none",
                   OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="*", OTEL_SERVICE_NAME="autoattach-test", **env)
    if not any(ep.value == ENTRY_POINT.split(" = ")[1] for ep in entry_points(group="opentelemetry_post_instrument")):
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(registered(tmp_path)), environ.get("PYTHONPATH")]))
    done = subprocess.run([INSTRUMENT, sys.executable, str(script)], capture_output=True, text=True, env=environ,
                          timeout=120, check=False, cwd=tmp_path)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return (json.loads(lines[-1]) if lines else None), done.stderr


def registered(tmp_path: Path) -> Path:
    """The package's entry point, as an installed distribution would declare it (until pyproject does)."""
    site = tmp_path / "site"
    info = site / "otel_toolchain_autoattach-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-toolchain-autoattach\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[opentelemetry_post_instrument]\n{ENTRY_POINT}\n")
    return site


def test_default_chain_joins_the_distros_provider(tmp_path: Path) -> None:
    out, _ = run_instrumented(tmp_path, PLAIN_APP)
    assert out == {"provider": "TracerProvider", "plugins": ["repeat_guard", "classify", "tool_stats"]}


def test_manifest_chain_stops_a_pydantic_ai_agent_with_no_code(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai")
    manifest = tmp_path / "pack.toml"
    manifest.write_text('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 3\n')
    out, stderr = run_instrumented(tmp_path, PYDANTIC_AI_APP, OTEL_TOOLCHAIN_MANIFEST=str(manifest))
    assert out == {"ran": 3, "at_call": 3, "turn_status": "ERROR",
                   "turn_events": ["otel_toolchain.turn.stop", "exception"]}, stderr


@pytest.mark.parametrize(("env", "said"), [
    ({"OTEL_TOOLCHAIN_DISABLED": "true"}, ""),
    ({"OTEL_TOOLCHAIN_MANIFEST": "/nonexistent/pack.toml"}, "nothing attached: /nonexistent/pack.toml"),
])
def test_disabled_or_broken_attaches_nothing_and_the_app_runs(tmp_path: Path, env: dict[str, str],
                                                             said: str) -> None:
    out, stderr = run_instrumented(tmp_path, PLAIN_APP, **env)
    assert out == {"provider": "TracerProvider", "plugins": None}
    assert said in stderr
