"""Replaying a recorded framework fixture (tests/data/frameworks/*.json) through a real SDK provider.

Each recorded span is started with its recorded scope, its ``start_keys`` attributes given to
``start_span``, its children replayed inside it (in recorded start order), then its other
attributes, events and status set, and ended: children end before their parent, as the
frameworks end them. What is faked: only the timing (sequential, as the recordings ran). The
spans, attributes, events and statuses are the frameworks' own, as exported.

One timing the recordings do not give: when, after its start, an agent or workflow span got its
marker. Traceloop sets ``traceloop.span.kind`` right after ``start_span`` (before any child), and
so, taken here, do the others (CrewAI's ``execute crew``): an agent span's marker
(``gen_ai.operation.name`` invoke_agent/invoke_workflow, ``traceloop.span.kind`` agent/workflow)
is set before its children start. Tool spans keep every late attribute late.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

DATA = Path(__file__).resolve().parents[1] / "data" / "frameworks"
_TURN_MARKERS = {"gen_ai.operation.name": ("invoke_agent", "invoke_workflow"),
                 "traceloop.span.kind": ("agent", "workflow")}
_CODES = {"OK": StatusCode.OK, "ERROR": StatusCode.ERROR, "UNSET": StatusCode.UNSET}


def load(name: str) -> dict[str, Any]:
    """The fixture ``name`` (without ``.json``)."""
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return data


def replay(provider: TracerProvider, fixture: dict[str, Any]) -> None:
    """Emit every span of ``fixture`` on ``provider``, nested and ordered as recorded."""
    spans = fixture["spans"]
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        parent = span["parent_id"] if span["parent_id"] in ids else None
        children[parent].append(span)
    for root in children[None]:
        _emit(provider, root, children)


def _emit(provider: TracerProvider, span: dict[str, Any], children: dict[str | None, list[dict[str, Any]]]) -> None:
    tracer = provider.get_tracer(span["scope"] or "")
    attrs = span["attributes"]
    start = {k: attrs[k] for k in span["start_keys"] if k in attrs}
    kind = getattr(trace.SpanKind, span["kind"], trace.SpanKind.INTERNAL)
    live = tracer.start_span(span["name"], kind=kind, attributes=start)
    marker = {k: attrs[k] for k in _TURN_MARKERS if attrs.get(k) in _TURN_MARKERS[k] and k not in start}
    if marker:
        live.set_attributes(marker)
        start = {**start, **marker}
    with trace.use_span(live, end_on_exit=False):
        for child in children[span["span_id"]]:
            _emit(provider, child, children)
    live.set_attributes({k: v for k, v in attrs.items() if k not in start})
    for event in span["events"]:
        live.add_event(event["name"], event["attributes"])
    status = span["status"]
    code = _CODES.get(status.get("code", "UNSET"), StatusCode.UNSET)
    if code is not StatusCode.UNSET:
        live.set_status(Status(code, status.get("description") if code is StatusCode.ERROR else None))
    live.end()
