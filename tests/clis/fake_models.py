"""Scripted fake model APIs on 127.0.0.1 for running real coding-agent CLIs offline.

One threaded HTTP server speaks three wire formats:

* Anthropic Messages (``POST /v1/messages``, SSE when ``stream`` is true): Claude Code;
* OpenAI Responses (``POST /v1/responses``, SSE): Codex;
* OpenAI chat completions (``POST /v1/chat/completions``, SSE): Pi and OpenCode.

Contract of every answer: the server is *stateless* about the conversation. The next move is decided
only from the request itself, by counting the tool results that its conversation already carries, so
client retries and parallel requests are harmless. The only state is the one-shot error of the
``retry`` scenario and the log of recorded requests.

A request that does not offer the shell tool (a title or summary side request) gets a short text.
Every answer waits ``delay`` seconds first, so an endless scenario makes a few calls per second
rather than dozens. The final text waits ``final_delay`` more: an agent that loses its last export
batch at exit (OpenCode) has exported its last call's span by the time it is told to finish.

Besides the built-in scenarios, every recording scenario of tests/clis/scenarios.py is served by
name: its script reads a :class:`moves.Turn` built from the request (tool results so far, the shell
tool's parameter names, the newest result's text). An optional ``observer`` sees each recorded
request, so a recording can change the workspace as the conversation goes (a build finishing), and
``scripts`` replaces some scenarios' scripts for one server (a shorter run for one CLI).
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from moves import FinalText, Move, Script, ToolCall, Turn
from scenarios import SCRIPTS

BUILT_IN = ("wedge", "failing", "healthy", "retry", "cycle2")
SCENARIOS = BUILT_IN + tuple(SCRIPTS)

WEDGE_COMMAND = "cat wedge.txt"
WEDGE_OUTPUT = "lock held by pid 4242; waiting\n"
FAILING_COMMAND = "cat missing-file.txt"
HEALTHY_COMMAND = "date +%s%N"
CYCLE_COMMANDS = ("cat cycle-a.txt", "cat cycle-b.txt")
CYCLE_OUTPUTS = ("cycle step A\n", "cycle step B\n")
FINAL_TEXT = "All done: the job finished."
SIDE_TEXT = "Fake session"

#: Files the scripted commands read; write them into the CLI's working directory.
WORKSPACE_FILES = {
    "wedge.txt": WEDGE_OUTPUT,
    "cycle-a.txt": CYCLE_OUTPUTS[0],
    "cycle-b.txt": CYCLE_OUTPUTS[1],
}

#: Shell tool name per wire format, as the CLIs name it in the request's tool list.
SHELL_TOOLS = {"anthropic": ("Bash",), "responses": ("exec_command", "shell"), "chat": ("bash",)}


def next_move(scenario: str, tool_results: int, healthy_calls: int, turn: Turn | None = None,
              scripts: Mapping[str, Script] | None = None) -> Move:
    """Return the scripted move after ``tool_results`` tool results for ``scenario``.

    ``wedge``, ``failing`` and ``cycle2`` never finish; ``healthy`` and ``retry`` run
    ``healthy_calls`` commands whose output changes every time, then answer with :data:`FINAL_TEXT`.
    A recording scenario's script decides from ``turn`` (default: only ``tool_results`` known);
    ``scripts`` overrides the scripts of some scenarios (a shorter run for one CLI).
    """
    script = (scripts or {}).get(scenario) or SCRIPTS.get(scenario)
    if script is not None:
        return script(turn if turn is not None else Turn(tool_results))
    if scenario == "wedge":
        return ToolCall(WEDGE_COMMAND)
    if scenario == "failing":
        return ToolCall(FAILING_COMMAND)
    if scenario == "cycle2":
        return ToolCall(CYCLE_COMMANDS[tool_results % 2])
    if scenario in ("healthy", "retry"):
        return ToolCall(HEALTHY_COMMAND) if tool_results < healthy_calls else FinalText(FINAL_TEXT)
    raise ValueError(f"unknown scenario {scenario!r}")


def scenario_for_model(model: str, default: str) -> str:
    """Map a model name ``fake-<scenario>`` to its scenario; any other name gives ``default``."""
    name = model.rsplit("/", 1)[-1]
    if name.startswith("fake-") and name[len("fake-") :] in SCENARIOS:
        return name[len("fake-") :]
    return default


@dataclass
class RecordedRequest:
    """One request the fake received, and what it answered (``tool``, ``text``, ``error``, ``json``)."""

    method: str
    path: str
    wire: str
    model: str
    scenario: str
    tool_results: int
    answer: str
    body: dict[str, Any] = field(repr=False)


@dataclass
class Reply:
    """An HTTP answer: status, headers and body chunks (SSE events are written and flushed one by one)."""

    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    answer: str


# --------------------------------------------------------------------------- helpers


_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    """Return a process-unique id such as ``toolu_fake000007``."""
    return f"{prefix}_fake{next(_ids):06d}"


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    """Encode one server-sent event (``event:`` line only when ``event`` is given)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _sse_reply(chunks: list[bytes], answer: str) -> Reply:
    """Wrap SSE chunks as a 200 ``text/event-stream`` reply."""
    return Reply(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, chunks, answer)


def _json_reply(payload: dict[str, Any], status: int = 200, answer: str = "json") -> Reply:
    """Return a JSON reply."""
    return Reply(status, {"Content-Type": "application/json"}, [json.dumps(payload).encode()], answer)


def _tool_names(tools: list[dict[str, Any]]) -> set[str]:
    """Names of the tools a request offers, in any of the three wire formats."""
    names = set()
    for tool in tools:
        fn = tool.get("function")
        names.add(fn.get("name") if isinstance(fn, dict) else tool.get("name"))
    return {n for n in names if isinstance(n, str)}


def _schema_props(tools: list[dict[str, Any]], name: str) -> set[str]:
    """Parameter names of tool ``name`` (chat-completions tool list), or an empty set."""
    for tool in tools:
        fn = tool.get("function") or {}
        if fn.get("name") == name:
            return set((fn.get("parameters") or {}).get("properties") or {})
    return set()


def count_tool_results(wire: str, body: dict[str, Any]) -> int:
    """Count the tool results in a request's conversation for ``wire``."""
    if wire == "anthropic":
        return sum(
            1
            for msg in body.get("messages") or []
            if isinstance(msg.get("content"), list)
            for block in msg["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
    if wire == "responses":
        items: list[Any] = body["input"] if isinstance(body.get("input"), list) else []
        return sum(1 for it in items if isinstance(it, dict) and str(it.get("type", "")).endswith("call_output"))
    return sum(1 for msg in body.get("messages") or [] if msg.get("role") == "tool")


def _content_text(content: Any) -> str:
    """The text of a tool result's content: a string, or a list of text blocks / output items."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def last_result_text(wire: str, body: dict[str, Any]) -> str:
    """The text of the newest tool result in a request's conversation for ``wire`` (or ``""``)."""
    texts: list[str] = []
    if wire == "anthropic":
        texts = [_content_text(block.get("content")) for msg in body.get("messages") or []
                 if isinstance(msg.get("content"), list) for block in msg["content"]
                 if isinstance(block, dict) and block.get("type") == "tool_result"]
    elif wire == "responses":
        items: list[Any] = body["input"] if isinstance(body.get("input"), list) else []
        texts = [_content_text(it.get("output")) for it in items
                 if isinstance(it, dict) and str(it.get("type", "")).endswith("call_output")]
    else:
        texts = [_content_text(msg.get("content")) for msg in body.get("messages") or [] if msg.get("role") == "tool"]
    return texts[-1] if texts else ""


def shell_params(wire: str, tools: list[dict[str, Any]]) -> frozenset[str]:
    """Parameter names of the shell tool a request offers (any of the three wire formats)."""
    for tool in tools:
        inner = tool.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else tool
        if fn.get("name") in SHELL_TOOLS.get(wire, ()):
            schema = fn.get("parameters") or fn.get("input_schema") or {}
            return frozenset(schema.get("properties") or {})
    return frozenset()


def request_turn(wire: str, body: dict[str, Any], results: int) -> Turn:
    """What a scripted scenario may read from one request."""
    return Turn(results, wire, shell_params(wire, body.get("tools") or []), last_result_text(wire, body))


# --------------------------------------------------------------------------- Anthropic Messages


def _anthropic_events(model: str, move: Move) -> list[bytes]:
    """SSE events of one Anthropic Messages answer carrying ``move``."""
    message: dict[str, Any] = {
        "id": _new_id("msg"), "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1},
    }
    if isinstance(move, ToolCall):
        block: dict[str, Any] = {"type": "tool_use", "id": _new_id("toolu"), "name": "Bash", "input": {}}
        args = json.dumps({"command": move.command, "description": move.note or "Run a scripted command"})
        delta = {"type": "input_json_delta", "partial_json": args}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": move.text}
        stop = "end_turn"
    return [
        _sse({"type": "message_start", "message": message}, "message_start"),
        _sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"),
        _sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        _sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
              "usage": {"output_tokens": 8}}, "message_delta"),
        _sse({"type": "message_stop"}, "message_stop"),
    ]


def _anthropic_plain(model: str, text: str) -> dict[str, Any]:
    """A non-streaming Anthropic text message."""
    return {
        "id": _new_id("msg"), "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


# --------------------------------------------------------------------------- OpenAI Responses


def _responses_args(call: ToolCall) -> dict[str, str]:
    """``exec_command`` arguments: ``cmd``, plus ``justification`` (free text) and ``workdir`` if set.

    Codex 0.171 refuses a ``justification`` without ``sandbox_permissions: "require_escalated"``, and
    refuses that too under ``approval_policy = "never"``: scripts that want the command to run leave
    ``note`` out on this wire.
    """
    args = {"cmd": call.command}
    if call.note is not None:
        args["justification"] = call.note
    if call.workdir is not None:
        args["workdir"] = call.workdir
    return args


def _responses_events(model: str, move: Move) -> list[bytes]:
    """SSE events of one OpenAI Responses answer carrying ``move`` (shell tool ``exec_command``)."""
    if isinstance(move, ToolCall):
        item: dict[str, Any] = {
            "type": "function_call", "id": _new_id("fc"), "call_id": _new_id("call"),
            "name": "exec_command", "arguments": json.dumps(_responses_args(move)), "status": "completed",
        }
    else:
        item = {
            "type": "message", "id": _new_id("msg"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": move.text, "annotations": []}],
        }
    response: dict[str, Any] = {
        "id": _new_id("resp"), "object": "response", "created_at": int(time.time()),
        "status": "in_progress", "model": model, "output": [],
    }
    usage = {
        "input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 20,
    }
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    return [
        _sse({"type": "response.created", "response": response}, "response.created"),
        _sse({"type": "response.output_item.added", "output_index": 0,
              "item": {**item, "status": "in_progress"}}, "response.output_item.added"),
        _sse({"type": "response.output_item.done", "output_index": 0, "item": item},
             "response.output_item.done"),
        _sse({"type": "response.completed", "response": done}, "response.completed"),
    ]


# --------------------------------------------------------------------------- OpenAI chat completions


def _chat_chunk(model: str, cid: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One ``chat.completion.chunk`` as an SSE ``data:`` line."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _sse({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": model, "choices": [choice]})


def _chat_events(model: str, move: Move, tools: list[dict[str, Any]]) -> list[bytes]:
    """SSE chunks of one chat-completions answer carrying ``move`` (shell tool ``bash``).

    The tool arguments hold ``command`` plus ``description`` when the client's schema asks for one
    (older OpenCode did; OpenCode 1.18 and Pi do not) and ``workdir`` when the move sets one; they are
    sent in two fragments like a real provider.
    """
    cid = _new_id("chatcmpl")
    chunks = [_chat_chunk(model, cid, {"role": "assistant", "content": ""})]
    if isinstance(move, ToolCall):
        args: dict[str, str] = {"command": move.command}
        if "description" in _schema_props(tools, "bash"):
            args["description"] = move.note or "Run a scripted command"
        if move.workdir is not None:
            args["workdir"] = move.workdir
        text = json.dumps(args)
        head = {"index": 0, "id": _new_id("call"), "type": "function",
                "function": {"name": "bash", "arguments": text[:10]}}
        chunks.append(_chat_chunk(model, cid, {"tool_calls": [head]}))
        tail = {"index": 0, "function": {"arguments": text[10:]}}
        chunks.append(_chat_chunk(model, cid, {"tool_calls": [tail]}))
        chunks.append(_chat_chunk(model, cid, {}, "tool_calls"))
    else:
        chunks.append(_chat_chunk(model, cid, {"content": move.text}))
        chunks.append(_chat_chunk(model, cid, {}, "stop"))
    usage = {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
    chunks.append(_sse({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": model, "choices": [], "usage": usage}))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


# --------------------------------------------------------------------------- server


WIRES = {"/v1/messages": "anthropic", "/v1/responses": "responses", "/v1/chat/completions": "chat"}


def _overloaded(wire: str) -> Reply:
    """HTTP 529 'overloaded' in the error shape of ``wire``."""
    if wire == "anthropic":
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    else:
        body = {"error": {"message": "Overloaded", "type": "server_error", "code": "overloaded"}}
    return _json_reply(body, status=529, answer="error")


class FakeModelServer(ThreadingHTTPServer):
    """Threaded fake model API on 127.0.0.1 (ephemeral port), driven by one scenario.

    ``scenario`` applies to every request unless the request's model is named ``fake-<scenario>``.
    All requests are appended to :attr:`requests` (thread-safe; read it through :meth:`snapshot`).
    """

    daemon_threads = True

    def __init__(self, scenario: str = "wedge", *, delay: float = 0.1, healthy_calls: int = 3,
                 observer: Callable[[RecordedRequest], None] | None = None,
                 scripts: Mapping[str, Script] | None = None, final_delay: float = 0.0) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}")
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = scenario
        self.delay = delay
        self.final_delay = final_delay
        self.healthy_calls = healthy_calls
        self.observer = observer
        self.scripts = dict(scripts or {})
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._retry_errors_left = 1

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def snapshot(self) -> list[RecordedRequest]:
        """A copy of the recorded requests so far."""
        with self._lock:
            return list(self.requests)

    def main_requests(self) -> list[RecordedRequest]:
        """Recorded requests that offered the shell tool (the agent loop's own model calls)."""
        return [r for r in self.snapshot() if r.answer in ("tool", "text", "error")]

    def answer(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        """Decide the reply for one request and record it."""
        wire = WIRES.get(path.split("?", 1)[0].rstrip("/"), "other")
        model = str(body.get("model", ""))
        scenario = scenario_for_model(model, self.scenario)
        results = count_tool_results(wire, body) if wire != "other" else 0
        reply = self._reply(method, path, wire, model, scenario, results, body)
        record = RecordedRequest(method, path, wire, model, scenario, results, reply.answer, body)
        with self._lock:
            self.requests.append(record)
        if self.observer is not None:
            self.observer(record)
        return reply

    def _take_retry_error(self) -> bool:
        """True exactly once per server: the one provider error of the ``retry`` scenario."""
        with self._lock:
            if self._retry_errors_left > 0:
                self._retry_errors_left -= 1
                return True
            return False

    def _reply(self, method: str, path: str, wire: str, model: str, scenario: str, results: int,
               body: dict[str, Any]) -> Reply:
        """Build the reply (see the module docstring for the contract)."""
        if path.startswith("/v1/messages/count_tokens"):
            return _json_reply({"input_tokens": 42})
        if wire == "other" or method != "POST":
            return _json_reply({"object": "list", "data": []}, answer="other")
        tools = body.get("tools") or []
        if not _tool_names(tools) & set(SHELL_TOOLS[wire]):
            return self._side_reply(wire, model, body)
        if scenario == "retry" and self._take_retry_error():
            return _overloaded(wire)
        move = next_move(scenario, results, self.healthy_calls, request_turn(wire, body, results), self.scripts)
        answer = "tool" if isinstance(move, ToolCall) else "text"
        if wire == "anthropic":
            return _sse_reply(_anthropic_events(model, move), answer)
        if wire == "responses":
            return _sse_reply(_responses_events(model, move), answer)
        return _sse_reply(_chat_events(model, move, tools), answer)

    def _side_reply(self, wire: str, model: str, body: dict[str, Any]) -> Reply:
        """Short text for a request without the shell tool (titles, summaries, probes)."""
        move = FinalText(SIDE_TEXT)
        if wire == "anthropic":
            if body.get("stream"):
                return _sse_reply(_anthropic_events(model, move), "side")
            return _json_reply(_anthropic_plain(model, SIDE_TEXT), answer="side")
        if wire == "responses":
            return _sse_reply(_responses_events(model, move), "side")
        return _sse_reply(_chat_events(model, move, []), "side")


def _decode_body(raw: bytes, encoding: str) -> dict[str, Any]:
    """Parse a JSON request body (optionally gzip/deflate encoded); ``{}`` when it is not JSON."""
    try:
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        data = json.loads(raw or b"{}")
    except (OSError, ValueError, zlib.error):
        return {}
    return data if isinstance(data, dict) else {}


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, waits the server's delay, writes the reply and closes the connection."""

    server: FakeModelServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr log."""

    def _read_body(self) -> bytes:
        """Read a Content-Length or chunked request body."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = _decode_body(self._read_body(), self.headers.get("Content-Encoding", ""))
        reply = self.server.answer(self.command, self.path, body)
        time.sleep(self.server.delay + (self.server.final_delay if reply.answer == "text" else 0.0))
        self.close_connection = True
        try:
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.headers.get("Content-Type") == "application/json":
                self.send_header("Content-Length", str(sum(map(len, reply.chunks))))
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed mid-answer; nothing to do


@contextmanager
def fake_model_server(scenario: str = "wedge", *, delay: float = 0.1, healthy_calls: int = 3,
                      observer: Callable[[RecordedRequest], None] | None = None,
                      scripts: Mapping[str, Script] | None = None,
                      final_delay: float = 0.0) -> Iterator[FakeModelServer]:
    """Start a :class:`FakeModelServer` in a thread; always shut it down and close its socket."""
    server = FakeModelServer(scenario, delay=delay, healthy_calls=healthy_calls, observer=observer, scripts=scripts,
                             final_delay=final_delay)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"fake-model-{scenario}", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
