"""Manifests are strictly typed and bounded; every load-time failure is one line and exit 2.

The failing plugins are real modules written to a temporary folder and registered as real
``importlib.metadata`` entry points of the ``otel_toolchain.plugins`` group; only the listing of
installed entry points is replaced (installing a distribution per case would take a venv each).
``main`` runs in-process, so a traceback would surface as the test's own exception.
"""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from otel_toolchain import registry
from otel_toolchain.cli import main
from otel_toolchain.errors import ManifestError
from otel_toolchain.manifest import Manifest

GUARD = '[[agent.tool_plugins]]\nplugin = "repeat_guard"\n'


@pytest.mark.parametrize(("text", "message"), [
    (GUARD + "limit = true\n", "agent.tool_plugins[0] (repeat_guard): limit: Input should be a valid integer"),
    (GUARD + 'limit = "25"\n', "agent.tool_plugins[0] (repeat_guard): limit: Input should be a valid integer"),
    (GUARD + "limit = 3\nmask_failures = 1\n",
     "agent.tool_plugins[0] (repeat_guard): mask_failures: Input should be a valid boolean"),
    ('[agent]\ncapture_content = "yes"\n', "agent.capture_content: Input should be a valid boolean"),
    ("[agent]\nmax_open_turns = true\n", "agent.max_open_turns: Input should be a valid integer"),
    ("[agent]\nmax_open_turns = 100000000000\n",
     "agent.max_open_turns: Input should be less than or equal to 10000000"),
    ("[export]\nprometheus_port = true\n", "export.prometheus_port: Input should be a valid integer"),
    ('[export]\nprometheus_port = "9464"\n', "export.prometheus_port: Input should be a valid integer"),
    ("[export]\nmetric_interval_ms = 9223372036854775807\n",
     "export.metric_interval_ms: Input should be less than or equal to 86400000"),
    ("[export]\nmax_queue_size = 9223372036854775807\n",
     "export.max_queue_size: Input should be less than or equal to 1000000"),
    ('[[agent.tool_plugins]]\nplugin = "classify"\n[[agent.tool_plugins.rules]]\ntool = true\nclass = "read"\n',
     "agent.tool_plugins[0] (classify): rules.0.tool: Input should be a valid string"),
    ("[[agent.tool_plugins]]\nplugin = 5\n", "agent.tool_plugins.0.plugin: Input should be a valid string"),
])
def test_a_mistyped_or_unbounded_value_is_refused_naming_the_key_and_the_file(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        Manifest.from_text(text, source="pack.toml")
    assert str(raised.value) == f"pack.toml: {message}"


def test_well_typed_values_still_load() -> None:
    manifest = Manifest.from_text(
        '[agent]\ncapture_content = true\nmax_open_turns = 8\n[export]\nprometheus_port = 0\n'
        'metric_interval_ms = 86400000\n' + GUARD + "limit = 4\nmask_failures = false\n")
    assert manifest.agent.capture_content is True and manifest.export.metric_interval_ms == 86_400_000
    assert manifest.plugins[0].settings == {"limit": 4, "mask_failures": False}


@pytest.mark.parametrize(("content", "message"), [
    (b"\xff\xfe[agent]\n", "not valid UTF-8 (byte 0); TOML must be UTF-8"),
    (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply to read"),
    (b"a = " + b"{b = " * 5000 + b"1" + b"}" * 5000 + b"\n", "nested too deeply to read"),
])
def test_an_unreadable_manifest_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "pack.toml"
    path.write_bytes(content)
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"otel-toolchain: {path}: {message}\n"


# -- plugins that fail while loading -----------------------------------------------------------------

_MODULES = {
    "imports_badly": "import not_a_module_anywhere_xyz\n",
    "exits_at_import": "raise SystemExit(3)\n",
    "interrupts_at_import": "raise KeyboardInterrupt\n",
    "fails_to_start": (
        "from otel_toolchain import ToolPlugin\n"
        "class Plugin(ToolPlugin):\n"
        "    name = 'fails_to_start'\n"
        "    def __init__(self):\n"
        "        raise RuntimeError('no licence')\n"
    ),
    "exits_to_start": (
        "from otel_toolchain import ToolPlugin\n"
        "class Plugin(ToolPlugin):\n"
        "    name = 'exits_to_start'\n"
        "    def __init__(self):\n"
        "        raise SystemExit(0)\n"
    ),
    "fails_to_describe": (
        "from otel_toolchain import ToolPlugin\n"
        "class Plugin(ToolPlugin):\n"
        "    name = 'fails_to_describe'\n"
        "    def describe(self):\n"
        "        raise KeyboardInterrupt\n"
    ),
}


@pytest.fixture
def failing_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins_src"
    folder.mkdir()
    for name, source in _MODULES.items():
        (folder / f"otp_{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    for name in _MODULES:
        monkeypatch.delitem(sys.modules, f"otp_{name}", raising=False)
    real = registry.available_plugins()
    extra = {name: EntryPoint(name, f"otp_{name}:Plugin", registry.ENTRY_POINT_GROUP) for name in _MODULES}
    monkeypatch.setattr(registry, "available_plugins", lambda: dict(sorted({**real, **extra}.items())))
    return tmp_path


@pytest.mark.parametrize(("plugin", "problem"), [
    ("imports_badly", "failed to import: ModuleNotFoundError(\"No module named 'not_a_module_anywhere_xyz'\")"),
    ("exits_at_import", "failed to import: SystemExit(3)"),
    ("interrupts_at_import", "failed to import: KeyboardInterrupt()"),
])
def test_a_plugin_that_fails_to_import_is_exit_2_naming_the_plugin_and_entry_point(
    failing_plugins: Path, capsys: pytest.CaptureFixture[str], plugin: str, problem: str
) -> None:
    path = failing_plugins / "pack.toml"
    path.write_text(f'[[agent.tool_plugins]]\nplugin = "{plugin}"\n')
    for command in (["check", str(path)], ["replay", "--manifest", str(path), str(path)]):
        assert main(command) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (f"otel-toolchain: {path}: agent.tool_plugins[0]: plugin '{plugin}' "
                                f"(otp_{plugin}:Plugin) {problem}\n")


@pytest.mark.parametrize(("plugin", "problem"), [
    ("fails_to_start", "failed to start: RuntimeError('no licence')"),
    ("exits_to_start", "failed to start: SystemExit(0)"),
    ("fails_to_describe", "failed to describe itself: KeyboardInterrupt()"),
])
@pytest.mark.parametrize("output", ["text", "json"])
def test_a_plugin_that_fails_to_start_or_describe_makes_check_exit_2_without_ok(
    failing_plugins: Path, capsys: pytest.CaptureFixture[str], plugin: str, problem: str, output: str
) -> None:
    path = failing_plugins / "pack.toml"
    path.write_text(f'[[agent.tool_plugins]]\nplugin = "classify"\n[[agent.tool_plugins]]\nplugin = "{plugin}"\n')
    assert main(["check", "--format", output, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"otel-toolchain: plugin '{plugin}' (otp_{plugin}:Plugin) {problem}\n"


def test_a_plugin_that_fails_to_start_stops_replay_with_exit_2(
    failing_plugins: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = failing_plugins / "pack.toml"
    path.write_text('[[agent.tool_plugins]]\nplugin = "fails_to_start"\n')
    assert main(["replay", "--manifest", str(path), str(path)]) == 2
    assert capsys.readouterr().err == ("otel-toolchain: plugin 'fails_to_start' (otp_fails_to_start:Plugin) "
                                       "failed to start: RuntimeError('no licence')\n")
