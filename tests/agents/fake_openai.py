"""A scripted OpenAI-compatible chat-completions model on 127.0.0.1 for the Vercel AI SDK agent.

The agent of ``tests/agents/vercel-ai`` offers two real tools, ``read_file {path}`` and
``run_command {command}``. This server plays the model: it answers ``POST /v1/chat/completions``
(plain JSON, or SSE when the request says ``stream: true``) with the next scripted move.

Contract: the server is stateless about the conversation. The move is chosen only from the request,
by the model name (``fake-<scenario>``, else the server's default scenario) and the number of
``role: tool`` messages the request already carries, so retries and parallel requests are harmless.

Scenarios (``N`` = tool results so far):

* ``wedge``: ``read_file wedge.txt`` (same call, same result) :data:`WEDGE_CALLS` times, then a final text;
* ``healthy``: ``run_command date +%s%N`` :data:`HEALTHY_POLLS` times (the output changes every
  time), then ``read_file report.txt``, then a final text;
* ``failing``: a ``read_file`` of a missing file (the tool throws) and a ``run_command`` that exits 1,
  alternating, :data:`FAILING_CALLS` calls, then a final text.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCENARIOS = ("wedge", "healthy", "failing")
WEDGE_CALLS = 40
HEALTHY_POLLS = 4
FAILING_CALLS = 4
WEDGE_ARGS = {"path": "wedge.txt"}
WEDGE_OUTPUT = "lock held by pid 4242; waiting\n"
POLL_ARGS = {"command": "date +%s%N"}
REPORT_ARGS = {"path": "report.txt"}
REPORT_TEXT = "build finished: 12 targets, 0 failures\n"
MISSING_READ_ARGS = {"path": "missing-file.txt"}
MISSING_CAT_ARGS = {"command": "cat missing-file.txt"}
FINAL_TEXT = "All done: the job finished."

#: Files the scripted calls read; write them into the agent's working directory.
WORKSPACE_FILES = {"wedge.txt": WEDGE_OUTPUT, "report.txt": REPORT_TEXT}


@dataclass(frozen=True)
class Call:
    """The model asks for one tool call."""

    tool: str
    args: dict[str, str]


@dataclass(frozen=True)
class Final:
    """The model ends the run with a text answer."""

    text: str


Move = Call | Final


def next_move(scenario: str, tool_results: int) -> Move:
    """The scripted move of ``scenario`` after ``tool_results`` tool results (see the module doc)."""
    if scenario == "wedge":
        return Call("read_file", WEDGE_ARGS) if tool_results < WEDGE_CALLS else Final(FINAL_TEXT)
    if scenario == "healthy":
        if tool_results < HEALTHY_POLLS:
            return Call("run_command", POLL_ARGS)
        return Call("read_file", REPORT_ARGS) if tool_results == HEALTHY_POLLS else Final(FINAL_TEXT)
    if scenario == "failing":
        if tool_results >= FAILING_CALLS:
            return Final(FINAL_TEXT)
        return Call("read_file", MISSING_READ_ARGS) if tool_results % 2 == 0 else Call("run_command", MISSING_CAT_ARGS)
    raise ValueError(f"unknown scenario {scenario!r}")


def scenario_of(model: str, default: str) -> str:
    """``fake-<scenario>`` names its scenario; any other model name gives ``default``."""
    name = model.rsplit("/", 1)[-1]
    suffix = name.removeprefix("fake-")
    return suffix if name.startswith("fake-") and suffix in SCENARIOS else default


def count_tool_results(body: dict[str, Any]) -> int:
    """The number of ``role: tool`` messages in a chat-completions request."""
    return sum(1 for msg in body.get("messages") or [] if isinstance(msg, dict) and msg.get("role") == "tool")


_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    """A process-unique id such as ``call_fake000003``."""
    return f"{prefix}_fake{next(_ids):06d}"


_USAGE = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}


def completion(model: str, move: Move) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` carrying ``move``."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "tool_calls"
    if isinstance(move, Call):
        message["tool_calls"] = [{"id": _new_id("call"), "type": "function",
                                  "function": {"name": move.tool, "arguments": json.dumps(move.args)}}]
    else:
        message["content"] = move.text
        finish = "stop"
    return {"id": _new_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _USAGE}


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk``."""
    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def stream_chunks(model: str, move: Move) -> list[dict[str, Any]]:
    """The SSE chunks of a streamed answer carrying ``move`` (arguments in two fragments)."""
    cid = _new_id("chatcmpl")
    chunks = [_chunk(cid, model, {"role": "assistant", "content": ""})]
    if isinstance(move, Call):
        text = json.dumps(move.args)
        head = {"index": 0, "id": _new_id("call"), "type": "function",
                "function": {"name": move.tool, "arguments": text[:8]}}
        chunks.append(_chunk(cid, model, {"tool_calls": [head]}))
        chunks.append(_chunk(cid, model, {"tool_calls": [{"index": 0, "function": {"arguments": text[8:]}}]}))
        chunks.append(_chunk(cid, model, {}, "tool_calls"))
    else:
        chunks.append(_chunk(cid, model, {"content": move.text}))
        chunks.append(_chunk(cid, model, {}, "stop"))
    chunks.append({**_chunk(cid, model, {}), "choices": [], "usage": _USAGE})
    return chunks


class FakeOpenAI(ThreadingHTTPServer):
    """Threaded fake chat-completions API on 127.0.0.1 (ephemeral port).

    Every request body is appended to :attr:`requests` (read it through :meth:`snapshot`); each
    answer waits ``delay`` seconds first so a run makes tens of calls per second at most.
    """

    daemon_threads = True

    def __init__(self, scenario: str = "wedge", *, delay: float = 0.02) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}")
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = scenario
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the provider's base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def snapshot(self) -> list[dict[str, Any]]:
        """A copy of the request bodies received so far."""
        with self._lock:
            return list(self.requests)

    def record(self, body: dict[str, Any]) -> Move:
        """Record one request and return the move it gets."""
        with self._lock:
            self.requests.append(body)
        return next_move(scenario_of(str(body.get("model", "")), self.scenario), count_tool_results(body))


class _Handler(BaseHTTPRequestHandler):
    """Answers chat completions; anything else gets 404."""

    server: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr log."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, "application/json", b'{"error": {"message": "bad json"}}')
            return
        move = self.server.record(body)
        time.sleep(self.server.delay)
        model = str(body.get("model", "fake"))
        if body.get("stream"):
            events = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in stream_chunks(model, move))
            self._send(200, "text/event-stream", events + b"data: [DONE]\n\n")
        else:
            self._send(200, "application/json", json.dumps(completion(model, move)).encode())

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        """Write one whole answer and close the connection."""
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent was killed mid-answer


@contextmanager
def fake_openai(scenario: str = "wedge", *, delay: float = 0.02) -> Iterator[FakeOpenAI]:
    """Run a :class:`FakeOpenAI` in a thread; always shut it down and close its socket."""
    server = FakeOpenAI(scenario, delay=delay)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
