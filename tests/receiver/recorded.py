"""Replaying the recorded OTLP bodies of tests/data/otlp into a Receiver, request by request.

The bodies are what the real agents sent (see tests/data/otlp/README.md); nothing is synthesised.
The clock is driven by the replay (0.2 s per request, the agents' export interval) so held log
events and idle turns behave as they would live, without sleeping.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolchain.calls import ToolCall
from otel_toolchain.chain import Toolchain
from otel_toolchain.manifest import Manifest
from otel_toolchain.receiver.core import Receiver
from otel_toolchain.receiver.decode import decode_body

DATA = Path(__file__).resolve().parents[1] / "data" / "otlp"
STEP_S = 0.2


@dataclass(frozen=True)
class Body:
    signal: str
    data: bytes
    content_type: str
    content_encoding: str


def bodies(scenario: str, *, only: str | None = None) -> Iterator[Body]:
    """The wire bodies of ``<agent>/<scenario>`` in arrival order (gunzipped when stored gzipped at rest)."""
    folder = DATA / scenario
    for line in (folder / "requests.jsonl").read_text().splitlines():
        row = json.loads(line)
        if only is not None and row["signal"] != only:
            continue
        data = (folder / row["file"]).read_bytes()
        if row.get("stored") == "gzip":
            data = gzip.decompress(data)
        yield Body(row["signal"], data, row["content_type"], row["content_encoding"])


@dataclass
class Replay:
    receiver: Receiver
    chain: Toolchain
    calls: list[ToolCall]
    spans: list[ReadableSpan]


def replay(scenario: str, *, only: str | None = None, hold_s: float = 1.5, close: bool = True) -> Replay:
    """Feed every recorded body of ``scenario`` to a Receiver on the default chain, then close it."""
    chain = Manifest.default().toolchain()
    calls: list[ToolCall] = []
    original = chain.tool_call

    def spy(turn, call, *, source=""):  # type: ignore[no-untyped-def]
        calls.append(call)
        return original(turn, call, source=source)

    chain.tool_call = spy  # type: ignore[method-assign]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    now = [0.0]
    receiver = Receiver(chain, provider, hold_s=hold_s, idle_s=30.0, clock=lambda: now[0])
    for body in bodies(scenario, only=only):
        now[0] += STEP_S
        receiver.ingest(body.signal, decode_body(body.signal, body.data, body.content_type, body.content_encoding))
    if close:
        receiver.close()
    provider.force_flush()
    return Replay(receiver, chain, calls, list(exporter.get_finished_spans()))
