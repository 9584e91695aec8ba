"""The manifest: the chain a pack declares, checked loudly at load time."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_toolchain.errors import ManifestError
from otel_toolchain.manifest import Manifest
from otel_toolchain.plugins.repeat_guard import RepeatGuard

VALID = "classify, repeat_guard, tool_stats"


def chain_of(manifest: Manifest) -> list[tuple[str, dict[str, object]]]:
    return [(spec.name, spec.settings) for spec in manifest.plugins]


def test_leaving_tool_plugins_out_runs_the_default_chain() -> None:
    assert chain_of(Manifest.from_text("")) == [("repeat_guard", {"limit": 25}), ("classify", {}),
                                                 ("tool_stats", {})]


def test_an_empty_list_runs_no_plugins() -> None:
    manifest = Manifest.from_text("[agent]\ntool_plugins = []\n")
    assert chain_of(manifest) == [] and manifest.toolchain().plugins == ()


def test_entries_keep_their_order_and_parameters() -> None:
    text = """
[[agent.tool_plugins]]
plugin = "tool_stats"

[[agent.tool_plugins]]
plugin = "repeat_guard"
limit = 7
mode = "shadow"
"""
    manifest = Manifest.from_text(text)
    assert chain_of(manifest) == [("tool_stats", {}), ("repeat_guard", {"limit": 7, "mode": "shadow"})]
    guard = manifest.toolchain().plugins[1]
    assert isinstance(guard, RepeatGuard) and (guard.limit, guard.mode) == (7, "shadow")


@pytest.mark.parametrize(("text", "message"), [
    ('[[agent.tool_plugins]]\nplugin = "repeat_gaurd"\n',
     f"pack.toml: agent.tool_plugins[0]: unknown plugin 'repeat_gaurd'; the plugins that exist are: {VALID}"),
    ('[[agent.tool_plugins]]\nplugin = "repeat_guard"\n',
     "pack.toml: agent.tool_plugins[0] (repeat_guard): limit: Field required"),
    ('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = 0\n',
     "pack.toml: agent.tool_plugins[0] (repeat_guard): limit: Input should be greater than or equal to 1"),
    ('[[agent.tool_plugins]]\nplugin = "repeat_guard"\nlimit = "many"\n',
     "pack.toml: agent.tool_plugins[0] (repeat_guard): limit: Input should be a valid integer"),
    ('[[agent.tool_plugins]]\nplugin = "tool_stats"\n[[agent.tool_plugins]]\nplugin = "repeat_guard"\n'
     'limit = 3\nlimt = 4\n',
     "pack.toml: agent.tool_plugins[1] (repeat_guard): limt: unknown parameter"),
    ("[agent]\ntool_plugin = []\n", "pack.toml: agent.tool_plugin: unknown parameter"),
    ("[agents]\n", "pack.toml: agents: unknown parameter"),
    ("[[agent.tool_plugins]]\nlimit = 3\n", "pack.toml: agent.tool_plugins.0.plugin: Field required"),
])
def test_a_bad_manifest_names_the_file_the_entry_and_the_problem(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        Manifest.from_text(text, source="pack.toml")
    assert str(raised.value) == message


def test_bad_toml_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"^pack.toml: not valid TOML: "):
        Manifest.from_text("[agent", source="pack.toml")
    with pytest.raises(ManifestError, match="cannot read the manifest"):
        Manifest.load(tmp_path / "absent.toml")


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "pack.toml"
    path.write_text('[agent]\nmax_open_turns = 8\n[[agent.tool_plugins]]\nplugin = "classify"\n')
    manifest = Manifest.load(path)
    assert manifest.source == str(path) and chain_of(manifest) == [("classify", {})]
    assert manifest.toolchain().max_open_turns == 8
