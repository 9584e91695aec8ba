"""The dashboard survives a round trip through grafana-foundation-sdk's typed model (Grafana 11.6).

The SDK's ``Dashboard.from_json`` keeps only the fields the Grafana 11.6 schema defines, so a
misspelt key anywhere in the dashboard is missing after the round trip and fails this test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard

DASHBOARD = Path(__file__).resolve().parents[1] / "collector-config" / "grafana" / "dashboards" / "otel_toolchain.json"


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.to_json() if hasattr(o, "to_json") else str(o)))


def lost_keys(original: Any, kept: Any, path: str = "") -> list[str]:
    """Keys of ``original`` that are not in ``kept``, as dotted paths."""
    lost: list[str] = []
    if isinstance(original, dict) and isinstance(kept, dict):
        for key, value in original.items():
            lost += [f"{path}.{key}"] if key not in kept else lost_keys(value, kept[key], f"{path}.{key}")
    elif isinstance(original, list) and isinstance(kept, list):
        for index, (a, b) in enumerate(zip(original, kept, strict=False)):
            lost += lost_keys(a, b, f"{path}[{index}]")
    return lost


def round_trip(data: dict[str, Any]) -> dict[str, Any]:
    register_default_plugins()
    return _plain(Dashboard.from_json(data).to_json())  # type: ignore[no-any-return]


def test_every_key_is_known_to_the_typed_model() -> None:
    data = json.loads(DASHBOARD.read_text())
    assert lost_keys(data, round_trip(data)) == []


def test_a_typo_is_caught() -> None:
    data = json.loads(DASHBOARD.read_text())
    data["panels"][0]["titel"] = data["panels"][0].pop("title")
    assert lost_keys(data, round_trip(data)) == [".panels[0].titel"]
