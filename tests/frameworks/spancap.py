"""What the capture and seam scripts share: an SDK set-up that keeps every span, and the fixture format.

A capture runs one framework under one instrumentation family in one scenario, in its own process
(instrumentors patch globally, and some keep the first tracer provider for good), and writes
``tests/data/frameworks/<framework>-<family>-<scenario>.json``:

- ``meta``: framework, family, scenario, package versions, the settings used, what the run did
  (tool calls made, model requests, the outcome);
- ``spans``: every exported span in start order: name, kind, ids, parent, scope, the attribute keys
  present at ``on_start`` (``start_keys``), attributes, events with attributes, status.

Model-call spans carry the whole conversation on each call (quadratic in the run's length), so
on spans that are model calls (and only there) long strings are cut and the indexed message
attributes of all but the last few messages are dropped; ``trimmed`` says what went. Tool spans,
agent/turn spans and every other span are kept whole.

Scenarios: ``wedged`` (the tool gives the same result every call), ``healthy`` (a new result each
call); both ask for ``CALLS`` tool calls, then a final answer. ``failing`` asks for
``PROBE_CALLS`` calls and the tool raises ``ValueError`` each time (where a failure shows).
``probe`` is a short healthy run in which a processor sets status ERROR on every span as it
starts, to see which spans the framework sets to OK as they end (summarised in ``probe.json``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "frameworks"
CALLS = 40
PROBE_CALLS = 2
SCENARIOS = ("wedged", "healthy", "failing")
PROBE_DESCRIPTION = "set by the probe at on_start"

# -- the one real tool ---------------------------------------------------------------------------


@dataclass
class Weather:
    """The tool's body: counts its calls; wedged it always says the same, healthy it says something new."""

    healthy: bool
    calls: int = 0
    seen: list[str] = field(default_factory=list)
    failing: bool = False

    @classmethod
    def of(cls, scenario: str) -> Weather:
        return cls(healthy=scenario in ("healthy", "probe"), failing=scenario == "failing")

    def __call__(self, city: str) -> str:
        self.calls += 1
        self.seen.append(city)
        if self.failing:
            raise ValueError(f"no weather station in {city}")
        if self.healthy:
            return f"{city}: reading {self.calls}, {self.calls * 2}% cloud"
        return f"{city}: sunny, 20C"


def calls_for(scenario: str) -> int:
    """How many tool calls the scripted model asks for in ``scenario``."""
    return PROBE_CALLS if scenario in ("probe", "failing") else CALLS


# -- the SDK set-up ------------------------------------------------------------------------------


class StartKeys(SpanProcessor):
    """Remembers which attribute keys each span had at on_start (keyed by span id)."""

    def __init__(self) -> None:
        self.keys: dict[int, list[str]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.keys[span.get_span_context().span_id] = sorted((span.attributes or {}).keys())


class ErrorProbe(SpanProcessor):
    """Sets status ERROR on every span as it starts (as a stop sets it on the turn span)."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span.set_status(Status(StatusCode.ERROR, PROBE_DESCRIPTION))


@dataclass
class Recorder:
    provider: TracerProvider
    exporter: InMemorySpanExporter
    start_keys: StartKeys

    def spans(self) -> list[ReadableSpan]:
        self.provider.force_flush()
        return sorted(self.exporter.get_finished_spans(), key=lambda s: (s.start_time or 0, s.end_time or 0))


def install(*, probe: bool = False, processors: Iterable[SpanProcessor] = (), set_global: bool = True) -> Recorder:
    """A TracerProvider that keeps every span in memory (set as the global provider by default).

    ``processors`` (e.g. a family's span-rewriting processor) run after the probe and before the
    in-memory exporter, so what is kept is what an exporter would get.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": "framework-capture"}))
    keys = StartKeys()
    provider.add_span_processor(keys)
    if probe:
        provider.add_span_processor(ErrorProbe())
    for processor in processors:
        provider.add_span_processor(processor)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return Recorder(provider, exporter, keys)


# -- the fixture format --------------------------------------------------------------------------

_MODEL_OPS = {"chat", "text_completion", "generate_content", "completion"}
_INDEXED = re.compile(r"^(?P<head>.+?\.)(?P<i>\d+)\.")
_LONG = 600
_KEEP_MESSAGES = 4
_KEEP_EVENTS = 6


def is_model_span(span: ReadableSpan) -> bool:
    """A model call: its attributes carry the conversation so far."""
    attrs = span.attributes or {}
    if attrs.get("openinference.span.kind") == "LLM" or attrs.get("gen_ai.operation.name") in _MODEL_OPS:
        return True
    if attrs.get("traceloop.span.kind") == "llm" or attrs.get("llm.request.type") in ("chat", "completion"):
        return True
    name = span.name.lower()
    return name.startswith(("chat ", "call_llm", "generate_content")) or name.endswith((".chat", ".completion"))


def _value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _LONG:
        return value[:_LONG] + f"…[{len(value) - _LONG} more chars trimmed]"
    return value


def _trim_attributes(attrs: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Drops the indexed message attributes of all but the last messages; cuts long strings."""
    last: dict[str, int] = {}
    for key in attrs:
        m = _INDEXED.match(key)
        if m:
            last[m["head"]] = max(last.get(m["head"], 0), int(m["i"]))
    kept: dict[str, Any] = {}
    dropped = 0
    for key, value in attrs.items():
        m = _INDEXED.match(key)
        if m and int(m["i"]) <= last[m["head"]] - _KEEP_MESSAGES:
            dropped += 1
            continue
        kept[key] = _cut(value)
    return kept, dropped


def span_record(span: ReadableSpan, start_keys: dict[int, list[str]]) -> dict[str, Any]:
    """One span as plain data (trimmed only if it is a model call)."""
    context = span.get_span_context()
    attrs = {k: _value(v) for k, v in (span.attributes or {}).items()}
    events = [{"name": e.name, "attributes": {k: _value(v) for k, v in (e.attributes or {}).items()}}
              for e in span.events]
    record: dict[str, Any] = {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "start_keys": start_keys.get(context.span_id, []),
        "attributes": attrs,
        "events": events,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
    }
    if is_model_span(span):
        record["attributes"], dropped = _trim_attributes(attrs)
        dropped_events = 0
        if len(events) > _KEEP_EVENTS:
            dropped_events = len(events) - _KEEP_EVENTS
            events = events[:1] + events[-(_KEEP_EVENTS - 1):]
        record["events"] = [{"name": e["name"], "attributes": {k: _cut(v) for k, v in e["attributes"].items()}}
                            for e in events]
        record["trimmed"] = {"model_span": True, "attributes_dropped": dropped, "events_dropped": dropped_events}
    return record


def versions(names: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def write_fixture(framework: str, family: str, scenario: str, meta: dict[str, Any], recorder: Recorder) -> Path:
    spans = [span_record(s, recorder.start_keys.keys) for s in recorder.spans()]
    path = DATA / f"{framework}-{family}-{scenario}.json"
    DATA.mkdir(parents=True, exist_ok=True)
    body = {"meta": {"framework": framework, "family": family, "scenario": scenario, **meta,
                     "span_count": len(spans)}, "spans": spans}
    path.write_text(json.dumps(body, indent=1, sort_keys=False, default=str) + "\n")
    return path


def probe_summary(recorder: Recorder) -> list[dict[str, Any]]:
    """Per exported span of a probe run: name, kind marker and the status the framework left."""
    out = []
    for span in recorder.spans():
        attrs = span.attributes or {}
        marker = {k: attrs[k] for k in ("openinference.span.kind", "gen_ai.operation.name", "traceloop.span.kind")
                  if k in attrs}
        out.append({"name": span.name, "marker": marker, "status": span.status.status_code.name,
                    "description": span.status.description})
    return out


# -- the command line ----------------------------------------------------------------------------

RunFn = Callable[[str, str, Recorder], dict[str, Any]]


def main(framework: str, families: tuple[str, ...], run: RunFn, *,
         setup: Callable[[str], Iterable[SpanProcessor]] | None = None, extra: tuple[str, ...] = ()) -> None:
    """``capture_X.py`` (every family and scenario, each in a child process) or ``capture_X.py FAMILY SCENARIO``.

    ``extra`` names scenarios of this framework only (run and written like the common ones).
    """
    parser = argparse.ArgumentParser(description=f"capture {framework}'s spans under each instrumentation family")
    parser.add_argument("family", nargs="?", choices=families)
    parser.add_argument("scenario", nargs="?", choices=(*SCENARIOS, *extra, "probe"))
    args = parser.parse_args()
    if args.family is None:
        failed = 0
        for family in families:
            for scenario in (*SCENARIOS, *extra, "probe"):
                done = subprocess.run([sys.executable, sys.argv[0], family, scenario], check=False,
                                      env={**os.environ, "PYTHONPATH": str(HERE)})
                failed += done.returncode != 0
        sys.exit(1 if failed else 0)
    processors = list(setup(args.family)) if setup is not None else []  # before the framework is imported
    recorder = install(probe=args.scenario == "probe", processors=processors)
    meta = run(args.family, args.scenario, recorder)
    if args.scenario == "probe":
        path = DATA / "probe.json"
        probes = json.loads(path.read_text()) if path.exists() else {}
        probes[f"{framework}-{args.family}"] = {"meta": meta, "spans": probe_summary(recorder)}
        DATA.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(probes.items())), indent=1) + "\n")
        print(f"{framework}-{args.family}-probe: {len(recorder.spans())} spans -> {path.name}")
    else:
        path = write_fixture(framework, args.family, args.scenario, meta, recorder)
        print(f"{framework}-{args.family}-{args.scenario}: {len(recorder.spans())} spans, "
              f"{meta.get('tool_calls')} tool calls, outcome {meta.get('outcome')!r} -> {path.name}")
