"""A third-party plugin distribution, really installed, is found and configured from a manifest."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO


def test_installed_plugin_runs_from_a_manifest(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    str(REPO / "examples" / "custom_plugin")], check=True, capture_output=True)
    manifest = tmp_path / "pack.toml"
    manifest.write_text('[[agent.tool_plugins]]\nplugin = "call_budget"\nmax_calls = 2\n'
                        '[[agent.tool_plugins]]\nplugin = "tool_stats"\n')
    script = textwrap.dedent(f"""
        import json
        from otel_toolchain.manifest import Manifest
        from otel_toolchain.recorder import AgentRecorder
        from otel_toolchain.testing import Capture
        cap = Capture()
        chain = cap.install(Manifest.load({str(manifest)!r}).toolchain(strict=True))
        with AgentRecorder(cap.tracer_provider, toolchain=chain).turn("a") as turn:
            for i in range(3):
                turn.tool_call("Read", {{"i": i}})
        print(json.dumps([type(p).__module__ for p in chain.plugins] + [turn.stop_signal.to_dict()["code"],
                         turn.stop_signal.at_call]))
    """)
    out = subprocess.run([str(python), "-c", script], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == ["toolchain_budget", "otel_toolchain.plugins.tool_stats", "over_budget", 2]
    listed = subprocess.run([str(python), "-m", "otel_toolchain", "plugins"], capture_output=True, text=True,
                            check=True)
    assert "call_budget\ttoolchain_budget:CallBudget\t(toolchain-budget)" in listed.stdout.splitlines()
