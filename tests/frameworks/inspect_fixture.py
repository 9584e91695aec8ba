"""Print what a captured fixture shows: span names, the tool spans, their ancestry and the root.

    python tests/frameworks/inspect_fixture.py tests/data/frameworks/strands-native-wedged.json [--full]

A reading aid for the README table (no framework needed: plain JSON). A span counts as a tool span
here when it is not a model call and its name, attributes or events mention the tool's name.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

TOOL = "get_weather"


def mentions_tool(span: dict[str, Any]) -> bool:
    if "trimmed" in span:
        return False
    blob = json.dumps([span["name"], span["attributes"], span["events"]])
    return TOOL in blob


def ancestry(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    chain = []
    parent = span["parent_id"]
    while parent is not None and parent in by_id:
        up = by_id[parent]
        marker = {k: v for k, v in up["attributes"].items()
                  if k in ("openinference.span.kind", "gen_ai.operation.name", "traceloop.span.kind")}
        chain.append(f"{up['name']} {marker} status={up['status']['code']}")
        parent = up["parent_id"]
    if parent is not None:
        chain.append(f"<parent {parent} not exported>")
    return chain


def main() -> None:
    path, full = sys.argv[1], "--full" in sys.argv
    with open(path) as file:
        data = json.load(file)
    spans = data["spans"]
    by_id = {s["span_id"]: s for s in spans}
    print(json.dumps(data["meta"], indent=1))
    print("names:", Counter(s["name"] for s in spans).most_common(12))
    tools = [s for s in spans if mentions_tool(s)]
    print("spans mentioning the tool:", Counter(s["name"] for s in tools))
    seen: set[str] = set()
    for span in tools:
        if span["name"] in seen and not full:
            continue
        seen.add(span["name"])
        print("-" * 80)
        print(json.dumps({k: span[k] for k in ("name", "kind", "scope", "start_keys", "attributes", "events",
                                                "status")}, indent=1)[:6000])
        print("ancestry:", *ancestry(span, by_id), sep="\n  ")
    roots = [s for s in spans if s["parent_id"] is None or s["parent_id"] not in by_id]
    print("=" * 80)
    for root in roots:
        print("root:", root["name"], root["status"], "start_keys:", root["start_keys"])
        print("  attributes:", {k: (v if len(str(v)) < 200 else str(v)[:200] + "…")
                                for k, v in root["attributes"].items()})


if __name__ == "__main__":
    main()
