"""Read the recorded OTLP fixtures of tests/data/otlp, and find each agent's per-call records in them.

A fixture folder is what :mod:`otlp_capture` and ``record_fixtures.py`` wrote: ``requests.jsonl``
(one row per request; ``stored`` says whether the body file is as received or gzip at rest), the
body files, their ``.summary.json`` and ``run.json``.

:func:`tool_records` turns the decoded requests into one :class:`ToolRecord` per tool call record
an agent sent, by the rules the fixtures' README documents (span ``ai.toolCall`` for the Vercel AI
SDK and OpenCode, span ``claude_code.tool`` and log event ``tool_result`` for Claude Code, log event
``codex.tool_result`` for Codex), with the delay from the call's end to the request's arrival.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from otlp_decode import decode, dump_summary, summarize

DATA = Path(__file__).resolve().parents[1] / "data" / "otlp"
_EXIT_LINE = re.compile(r"Process exited with code (\d+)")


@dataclass(frozen=True)
class Request:
    """One captured request: its index row, the exact wire body and the decoded message."""

    row: dict[str, Any]
    body: bytes
    message: Message

    @property
    def signal(self) -> str:
        """``traces``, ``logs`` or ``metrics``."""
        return str(self.row["signal"])


def scenario_dirs() -> list[Path]:
    """Every recorded ``<agent>/<scenario>`` folder, sorted."""
    return sorted(p.parent for p in DATA.glob("*/*/requests.jsonl"))


def wire_body(folder: Path, row: dict[str, Any]) -> bytes:
    """The body exactly as it came on the wire (gunzipped when it was gzipped at rest)."""
    data = (folder / row["file"]).read_bytes()
    return gzip.decompress(data) if row.get("stored") == "gzip" else data


def load(folder: Path) -> list[Request]:
    """Decode every request of a fixture folder with the real protobufs (raises on a bad body)."""
    rows = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    out = []
    for row in rows:
        body = wire_body(folder, row)
        out.append(Request(row, body, decode(row["signal"], body, row["content_type"], row["content_encoding"])))
    return out


def summary_path(folder: Path, row: dict[str, Any]) -> Path:
    """The ``NNNN-<signal>.summary.json`` of a row."""
    return folder / f"{row['seq']:04d}-{row['signal']}.summary.json"


def resummarize(folder: Path) -> None:
    """Rewrite every summary of ``folder`` from its body (after a change of the summary format)."""
    for req in load(folder):
        summary_path(folder, req.row).write_text(dump_summary(summarize(req.signal, req.message)))


@dataclass(frozen=True)
class ToolRecord:
    """One per-call record an agent exported (a span or a log event), as the README's tables describe it."""

    source: str  # "span <name>" or "log <event.name>"
    tool: str
    call_id: str
    arguments: str | None
    result: str | None
    failed: bool | None
    exit_code: int | None
    trace_id: str
    session_id: str | None
    end_ns: int
    arrived: float

    @property
    def delay_s(self) -> float:
        """Seconds from the call's end (as the record states it) to the request's arrival."""
        return self.arrived - self.end_ns / 1e9


def _json_exit(text: str | None, *path: str) -> int | None:
    """The integer at ``path`` inside a JSON string, or ``None``."""
    try:
        node: Any = json.loads(text or "")
        for key in path:
            node = node[key]
    except (ValueError, KeyError, TypeError):
        return None
    return node if isinstance(node, int) else None


def _ai_tool_call(span: dict[str, Any], arrived: float) -> ToolRecord:
    """A Vercel AI SDK ``ai.toolCall`` span (the Vercel agent and OpenCode)."""
    attrs = span["attributes"]
    result = attrs.get("ai.toolCall.result")
    exit_code = _json_exit(result, "exit_code")
    if exit_code is None:
        exit_code = _json_exit(result, "metadata", "exit")
    return ToolRecord(f"span {span['name']}", attrs["ai.toolCall.name"], attrs["ai.toolCall.id"],
                      attrs.get("ai.toolCall.args"), result, span["status"] == "ERROR", exit_code,
                      span["trace_id"], attrs.get("session.id"), span["end_ns"], arrived)


def _claude_tool_span(span: dict[str, Any], children: list[dict[str, Any]], arrived: float) -> ToolRecord:
    """A Claude Code ``claude_code.tool`` span; failure sits on its ``claude_code.tool.execution`` child."""
    attrs = span["attributes"]
    outputs = [e["attributes"].get("output") for e in span["events"] if e["name"] == "tool.output"]
    execution = [c for c in children if c["name"] == "claude_code.tool.execution"]
    failed = any(c["status"] == "ERROR" for c in execution) if execution else None
    return ToolRecord(f"span {span['name']}", attrs["gen_ai.tool.name"], attrs["gen_ai.tool.call.id"],
                      attrs.get("full_command"), outputs[0] if outputs else None, failed, None,
                      span["trace_id"], attrs.get("session.id"), span["end_ns"], arrived)


def _log_record(log: dict[str, Any], arrived: float) -> ToolRecord | None:
    """Claude Code's ``tool_result`` or Codex's ``codex.tool_result`` log event, else ``None``."""
    attrs = log["attributes"]
    name = attrs.get("event.name")
    # Codex leaves time_unix_nano at 0 and sets only the observed time.
    end_ns = log["time_ns"] or log["observed_ns"]
    if name == "tool_result":
        return ToolRecord("log tool_result", attrs["tool_name"], attrs["tool_use_id"], attrs.get("tool_input"),
                          None, attrs["success"] != "true", None, log["trace_id"], attrs.get("session.id"),
                          end_ns, arrived)
    if name == "codex.tool_result":
        match = _EXIT_LINE.search(attrs.get("output", ""))
        return ToolRecord("log codex.tool_result", attrs["tool_name"], attrs["call_id"], attrs.get("arguments"),
                          attrs.get("output"), attrs["success"] != "true", int(match.group(1)) if match else None,
                          log["trace_id"], attrs.get("conversation.id"), end_ns, arrived)
    return None


def tool_records(requests: list[Request]) -> list[ToolRecord]:
    """Every per-call record in ``requests``, in arrival order (see the module docstring)."""
    out: list[ToolRecord] = []
    summaries = [(req.row["arrived"], summarize(req.signal, req.message)) for req in requests]
    spans = [s for _, summary in summaries if summary["signal"] == "traces" for s in summary["items"]]
    for arrived, summary in summaries:
        for item in summary["items"]:
            if summary["signal"] == "logs":
                record = _log_record(item, arrived)
                if record is not None:
                    out.append(record)
            elif summary["signal"] == "traces" and item["name"] == "ai.toolCall":
                out.append(_ai_tool_call(item, arrived))
            elif summary["signal"] == "traces" and item["name"] == "claude_code.tool":
                children = [s for s in spans if s["parent_span_id"] == item["span_id"]]
                out.append(_claude_tool_span(item, children, arrived))
    return out


def items(requests: list[Request]) -> list[tuple[str, dict[str, Any], float]]:
    """Every span (``span <name>``) and log record (``log <event.name>``) with its arrival time."""
    out = []
    for req in requests:
        summary = summarize(req.signal, req.message)
        for item in summary["items"]:
            if summary["signal"] == "traces":
                out.append((f"span {item['name']}", item, float(req.row["arrived"])))
            elif summary["signal"] == "logs":
                out.append((f"log {item['attributes'].get('event.name', '')}", item, float(req.row["arrived"])))
    return out


#: Per agent and record: the attribute keys the README documents, present on every such record, and
#: those present on every successful one (a call that threw has no result).
DOCUMENTED: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "vercel-ai": {
        "span ai.toolCall": (("ai.operationId", "ai.toolCall.name", "ai.toolCall.id", "ai.toolCall.args"),
                             ("ai.toolCall.result",)),
        "span ai.generateText": (("ai.operationId", "ai.model.id", "ai.response.finishReason"), ()),
    },
    "opencode": {
        "span ai.toolCall": (("ai.operationId", "ai.toolCall.name", "ai.toolCall.id", "ai.toolCall.args",
                              "session.id"), ("ai.toolCall.result",)),
        "span Tool.execute": (("tool.name", "tool.call_id", "session.id", "message.id"), ()),
        "span ai.streamText": (("ai.operationId", "session.id"), ()),
    },
    "claude-code": {
        "span claude_code.tool": (("gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "tool_use_id",
                                   "full_command", "duration_ms", "session.id", "gen_ai.conversation.id"), ()),
        "span claude_code.tool.execution": (("success", "gen_ai.tool.call.id", "duration_ms"), ()),
        "span claude_code.interaction": (("gen_ai.operation.name", "session.id", "interaction.sequence"), ()),
        "log tool_result": (("event.name", "tool_name", "tool_use_id", "success", "duration_ms", "tool_input",
                             "session.id", "prompt.id"), ("tool_result_size_bytes",)),
        "log tool_decision": (("tool_name", "tool_use_id", "decision", "session.id"), ()),
    },
    "codex": {
        "log codex.tool_result": (("event.name", "tool_name", "call_id", "arguments", "output", "success",
                                   "duration_ms", "conversation.id"), ()),
    },
}
