"""Plugin discovery: one scan of the installed distributions per process, whatever asks."""

from __future__ import annotations

import pytest

from otel_toolchain import registry
from otel_toolchain.manifest import Manifest


def test_loading_a_manifest_scans_the_installed_distributions_once(monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[str] = []
    real = registry.entry_points

    def counting(*, group: str) -> object:
        scans.append(group)
        return real(group=group)

    monkeypatch.setattr(registry, "entry_points", counting)
    registry._installed.cache_clear()
    try:
        Manifest.default().toolchain()  # three plugins: each is looked up, loaded and named
        assert sorted(registry.available_plugins()) == ["classify", "repeat_guard", "tool_stats"]
        assert registry.entry_point_of("repeat_guard") == "otel_toolchain.plugins.repeat_guard:RepeatGuard"
    finally:
        registry._installed.cache_clear()  # the next test scans for real again
    assert scans == [registry.ENTRY_POINT_GROUP]


def test_each_caller_gets_its_own_dict() -> None:
    first = registry.available_plugins()
    first.clear()
    assert "repeat_guard" in registry.available_plugins()
